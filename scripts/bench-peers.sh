#!/usr/bin/env bash
# Compares netbisect with established peers on loopback, in one run:
#
#   TCP_STREAM  netbisect -m 128K          vs  iperf3 -l 128K
#   TCP_RR      netbisect -r 14,14 (tr/s)  vs  sockperf ping-pong -m 14, whose
#               reported latency is half the round trip: tr/s = 1e6 / (2 x us)
#   UDP_STREAM  netbisect -m 1472          vs  iperf3 -u -b 0 -l 1472
#               (both: throughput at the receiver)
#
# Each pair runs RUNS times, interleaved, both ends pinned (-T / -A /
# taskset) to CPUs LOCAL_CPU and REMOTE_CPU; the medians and the ratios
# netbisect/peer are printed. A ratio >= 1.0 means netbisect is not the
# bottleneck of its own measurement.
#
# Peers: apt-get install iperf3 sockperf jq
# Usage: scripts/bench-peers.sh   (env: RUNS, LENGTH, LOCAL_CPU, REMOTE_CPU,
#        NETBISECT, IPERF_PORT, SOCKPERF_PORT)
set -euo pipefail

RUNS=${RUNS:-5}
LENGTH=${LENGTH:-2}
LOCAL_CPU=${LOCAL_CPU:-0}
REMOTE_CPU=${REMOTE_CPU:-1}
IPERF_PORT=${IPERF_PORT:-15201}
SOCKPERF_PORT=${SOCKPERF_PORT:-15202}
HERE=$(cd "$(dirname "$0")/.." && pwd)
NETBISECT=${NETBISECT:-$HERE/target/release/netbisect}

for tool in iperf3 sockperf jq taskset; do
    if ! command -v "$tool" >/dev/null; then
        echo "bench-peers: $tool not found (apt-get install iperf3 sockperf jq)" >&2
        exit 2
    fi
done
if [ ! -x "$NETBISECT" ]; then
    echo "bench-peers: $NETBISECT not found (cargo build --release)" >&2
    exit 2
fi

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT

taskset -c "$REMOTE_CPU" iperf3 -s -B 127.0.0.1 -p "$IPERF_PORT" >/dev/null 2>&1 &
pids+=($!)
taskset -c "$REMOTE_CPU" sockperf server --tcp -i 127.0.0.1 -p "$SOCKPERF_PORT" \
    >/dev/null 2>&1 &
pids+=($!)
sleep 1

pin="$LOCAL_CPU,$REMOTE_CPU"
netbisect_json() {
    "$NETBISECT" --json bench -l "$LENGTH" -T "$pin" --no-archive "$@"
}

nb_stream=() ; ip_stream=() ; nb_rr=() ; sp_rr=() ; nb_udp=() ; ip_udp=()
for run in $(seq 1 "$RUNS"); do
    echo "bench-peers: run $run of $RUNS" >&2
    nb_stream+=("$(netbisect_json -t TCP_STREAM -m 128K \
        | jq '.summary.throughput_bps.mean')")
    ip_stream+=("$(iperf3 -c 127.0.0.1 -p "$IPERF_PORT" -t "$LENGTH" -l 128K \
        -A "$pin" -J | jq '.end.sum_received.bits_per_second')")

    nb_rr+=("$(netbisect_json -t TCP_RR -r 14,14 \
        | jq '.summary.transaction_rate.mean')")
    latency=$(taskset -c "$LOCAL_CPU" sockperf ping-pong --tcp -i 127.0.0.1 \
        -p "$SOCKPERF_PORT" -m 14 -t "$LENGTH" 2>&1 \
        | sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' | tail -1)
    if [ -z "$latency" ]; then
        echo "bench-peers: no avg-latency in sockperf's output" >&2
        exit 3
    fi
    sp_rr+=("$(awk -v us="$latency" 'BEGIN { printf "%.2f", 1e6 / (2 * us) }')")

    nb_udp+=("$(netbisect_json -t UDP_STREAM -m 1472 \
        | jq '.summary.throughput_bps.mean')")
    ip_udp+=("$(iperf3 -c 127.0.0.1 -p "$IPERF_PORT" -t "$LENGTH" -u -b 0 \
        -l 1472 -A "$pin" -J \
        | jq '.end.sum_received.bits_per_second
              // (.end.sum.bits_per_second * (100 - .end.sum.lost_percent) / 100)')")
done

median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

row() {
    # test, unit divisor, unit, netbisect median, peer name, peer median
    awk -v t="$1" -v d="$2" -v u="$3" -v a="$4" -v p="$5" -v b="$6" 'BEGIN {
        printf "%-11s %12.2f %-6s %-9s %12.2f %-6s %6.2f\n", t, a / d, u, p, b / d, u, a / b }'
}

echo
echo "netbisect vs peers on loopback: median of $RUNS interleaved runs of" \
     "$LENGTH s, CPUs $pin"
echo
printf '%-11s %19s %-9s %19s %6s\n' "Test" "netbisect" "Peer" "" "Ratio"
row TCP_STREAM 1e6 Mb/s "$(median "${nb_stream[@]}")" iperf3 "$(median "${ip_stream[@]}")"
row TCP_RR 1 tr/s "$(median "${nb_rr[@]}")" sockperf "$(median "${sp_rr[@]}")"
row UDP_STREAM 1e6 Mb/s "$(median "${nb_udp[@]}")" iperf3 "$(median "${ip_udp[@]}")"
echo
echo "runs: netbisect TCP_STREAM bits/s: ${nb_stream[*]}"
echo "runs: iperf3 TCP bits/s:           ${ip_stream[*]}"
echo "runs: netbisect TCP_RR tr/s:       ${nb_rr[*]}"
echo "runs: sockperf implied tr/s:       ${sp_rr[*]}"
echo "runs: netbisect UDP_STREAM bits/s: ${nb_udp[*]}"
echo "runs: iperf3 UDP bits/s:           ${ip_udp[*]}"
