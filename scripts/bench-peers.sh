#!/usr/bin/env bash
# Compares netbisect with established peers on loopback, in one run:
#
#   TCP_STREAM  netbisect -m 128K          vs  iperf3 -l 128K
#   TCP_RR      netbisect -r 14,14 (tr/s)  vs  sockperf ping-pong -m 14: its
#               messages answered over its valid run time (tr/s); the rate
#               implied by its mean latency (half a round trip) is printed
#               beside it, as a check
#   UDP_STREAM  netbisect -m 1472          vs  iperf3 -u -b 0 -l 1472
#               (both: throughput at the receiver)
#
# and against the floor, scripts/rr-floor.c built here with cc -O2 (a
# blocking loop in C: ping-pong for TCP_RR, send loop for TCP_STREAM):
#
#   TCP_STREAM  netbisect -m 128K          vs  rr-floor stream 128K
#   TCP_RR      netbisect -r 14,14         vs  rr-floor tcp 14 14
#
# Each pair runs RUNS times, interleaved, both ends pinned (-T / -A /
# taskset) to CPUs LOCAL_CPU and REMOTE_CPU; the medians and the ratios
# netbisect/peer are printed. A ratio >= 1.0 means netbisect is not the
# bottleneck of its own measurement.
#
# Then, once each:
#
#   confidence  TCP_STREAM -m 128K -I 95,5 -i 30,3 -l CI_LENGTH: the wall
#               time and iterations needed to reach +-2.5% at 95%
#   CPU cost    TCP_STREAM -c -C: system-wide service demand (us/KB) of
#               both ends, and the CPU of netbisect's own data threads next
#               to iperf3's own CPU figure (-J cpu_utilization_percent,
#               its process's CPU time), both also per KB moved
#   flows       TCP_STREAM -m 128K --flows FLOWS aggregate (a thread per
#               flow, and all flows in one epoll thread: --threads 1) vs
#               iperf3 -l 128K -P FLOWS, which runs all its streams in one
#               thread (3.12); all pinned to the same CPUs (-T / -A),
#               interleaved, RUNS times; the ratios to iperf3 and of
#               --threads 1 to a thread per flow are printed, of the
#               medians and per round (the median of each round's own
#               ratio, which a change of the host's speed between rounds
#               does not move)
#
# On a shared host, RT_PRIO=1 runs every tool (and the iperf3 and
# sockperf servers) under chrt -f 1, so that other work does not take
# their CPUs; FLOWS_ONLY=1 runs the flows comparison alone; BEFORE=PATH
# adds an older netbisect build to the flows runs, interleaved, and its
# ratios.
#
# Peers: apt-get install iperf3 sockperf jq
# Usage: scripts/bench-peers.sh   (env: RUNS, LENGTH, CI_LENGTH, LOCAL_CPU,
#        REMOTE_CPU, FLOWS, RT_PRIO, FLOWS_ONLY, BEFORE, NETBISECT,
#        IPERF_PORT, SOCKPERF_PORT)
set -euo pipefail

RUNS=${RUNS:-5}
LENGTH=${LENGTH:-2}
CI_LENGTH=${CI_LENGTH:-1}
LOCAL_CPU=${LOCAL_CPU:-0}
REMOTE_CPU=${REMOTE_CPU:-1}
FLOWS=${FLOWS:-8}
RT_PRIO=${RT_PRIO:-}
FLOWS_ONLY=${FLOWS_ONLY:-}
BEFORE=${BEFORE:-}
IPERF_PORT=${IPERF_PORT:-15201}
SOCKPERF_PORT=${SOCKPERF_PORT:-15202}
HERE=$(cd "$(dirname "$0")/.." && pwd)
NETBISECT=${NETBISECT:-$HERE/target/release/netbisect}

for tool in iperf3 sockperf jq taskset cc; do
    if ! command -v "$tool" >/dev/null; then
        echo "bench-peers: $tool not found (apt-get install iperf3 sockperf jq)" >&2
        exit 2
    fi
done
if [ ! -x "$NETBISECT" ]; then
    echo "bench-peers: $NETBISECT not found (cargo build --release)" >&2
    exit 2
fi
if [ -n "$BEFORE" ] && [ ! -x "$BEFORE" ]; then
    echo "bench-peers: BEFORE=$BEFORE is not an executable" >&2
    exit 2
fi

build=$(mktemp -d)
cc -O2 -pthread -o "$build/rr-floor" "$HERE/scripts/rr-floor.c"

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$build"
}
trap cleanup EXIT

# Every tool runs under the same scheduling policy: none, or SCHED_FIFO.
rt=()
if [ -n "$RT_PRIO" ]; then
    rt=(chrt -f "$RT_PRIO")
fi

"${rt[@]}" taskset -c "$REMOTE_CPU" iperf3 -s -B 127.0.0.1 -p "$IPERF_PORT" \
    >/dev/null 2>&1 &
pids+=($!)
"${rt[@]}" taskset -c "$REMOTE_CPU" sockperf server --tcp -i 127.0.0.1 \
    -p "$SOCKPERF_PORT" >/dev/null 2>&1 &
pids+=($!)
sleep 1

pin="$LOCAL_CPU,$REMOTE_CPU"
netbisect_json() {
    "${rt[@]}" "$NETBISECT" --json bench -l "$LENGTH" -T "$pin" --no-archive "$@"
}
before_json() {
    "${rt[@]}" "$BEFORE" --json bench -l "$LENGTH" -T "$pin" --no-archive "$@"
}
iperf3_bin=$(command -v iperf3)
iperf3() {
    "${rt[@]}" "$iperf3_bin" "$@"
}

median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

gbps() {
    # bits/s -> "min-max: each run" in Gb/s
    printf '%s\n' "$@" | awk '{ g = $1 / 1e9; runs = runs sprintf(" %.2f", g)
            if (NR == 1 || g < lo) lo = g; if (NR == 1 || g > hi) hi = g }
        END { printf "%.2f-%.2f:%s", lo, hi, runs }'
}

row() {
    # test, unit divisor, unit, netbisect median, peer name, peer median
    awk -v t="$1" -v d="$2" -v u="$3" -v a="$4" -v p="$5" -v b="$6" 'BEGIN {
        printf "%-11s %12.2f %-6s %-9s %12.2f %-6s %6.2f\n", t, a / d, u, p, b / d, u, a / b }'
}

# ------------------------------------------------------------ flows
flows_runs() {
    echo >&2 "bench-peers: $FLOWS-flow runs"
    nb_flows=() ; nb_flows1=() ; ip_flows=() ; bf_flows=() ; bf_flows1=()
    r_one_flow=() ; r_flow_ip=() ; r_one_ip=()
    for run in $(seq 1 "$RUNS"); do
        if [ -n "$BEFORE" ]; then
            bf_flows+=("$(before_json -t TCP_STREAM -m 128K --flows "$FLOWS" \
                | jq '.summary.throughput_bps.mean')")
            bf_flows1+=("$(before_json -t TCP_STREAM -m 128K --flows "$FLOWS" \
                --threads 1 | jq '.summary.throughput_bps.mean')")
        fi
        # The order alternates from round to round, so that a slow
        # spell of the host does not always fall on the same tool.
        if [ $((run % 2)) -eq 1 ]; then
            flows_threads
            flows_one
        else
            flows_one
            flows_threads
        fi
        ip_flows+=("$(iperf3 -c 127.0.0.1 -p "$IPERF_PORT" -t "$LENGTH" -l 128K \
            -P "$FLOWS" -A "$pin" -J | jq '.end.sum_received.bits_per_second')")
        # This round's ratios: a change of the host's speed between
        # rounds cancels out of them.
        r_one_flow+=("$(ratio "${nb_flows1[-1]}" "${nb_flows[-1]}")")
        r_flow_ip+=("$(ratio "${nb_flows[-1]}" "${ip_flows[-1]}")")
        r_one_ip+=("$(ratio "${nb_flows1[-1]}" "${ip_flows[-1]}")")
    done
}

flows_threads() {
    nb_flows+=("$(netbisect_json -t TCP_STREAM -m 128K --flows "$FLOWS" \
        | jq '.summary.throughput_bps.mean')")
}

flows_one() {
    nb_flows1+=("$(netbisect_json -t TCP_STREAM -m 128K --flows "$FLOWS" --threads 1 \
        | jq '.summary.throughput_bps.mean')")
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f\n", a / b }'
}

spread() {
    # ratios -> "median (min-max)"
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "%.3f (%.3f-%.3f)", m, v[1], v[NR] }'
}

flows_report() {
    local t_flow t_one peer
    t_flow=$(median "${nb_flows[@]}")
    t_one=$(median "${nb_flows1[@]}")
    peer=$(median "${ip_flows[@]}")
    echo
    echo "$FLOWS flows: TCP_STREAM -m 128K vs iperf3 -l 128K -P $FLOWS, median of"
    echo "$RUNS interleaved runs of $LENGTH s, both ends pinned to CPUs $pin" \
         "(-T, -A)${RT_PRIO:+,}"
    [ -z "$RT_PRIO" ] || echo "all under chrt -f $RT_PRIO;"
    echo "iperf3 $("$iperf3_bin" -v | awk 'NR == 1 { print $2 }') runs all its" \
         "streams in one thread; flows: a thread per flow,"
    echo "T1: --threads 1, all flows in one epoll thread"
    echo
    printf '%-11s %19s %-9s %19s %6s\n' "Test" "netbisect" "Peer" "" "Ratio"
    row "flows" 1e6 Mb/s "$t_flow" "iperf3-P$FLOWS" "$peer"
    row "flows T1" 1e6 Mb/s "$t_one" "iperf3-P$FLOWS" "$peer"
    row "flows T1" 1e6 Mb/s "$t_one" "flows" "$t_flow"
    if [ -n "$BEFORE" ]; then
        local b_flow b_one
        b_flow=$(median "${bf_flows[@]}")
        b_one=$(median "${bf_flows1[@]}")
        row "flows" 1e6 Mb/s "$t_flow" "before" "$b_flow"
        row "flows T1" 1e6 Mb/s "$t_one" "before" "$b_one"
        row "before" 1e6 Mb/s "$b_flow" "iperf3-P$FLOWS" "$peer"
        row "before T1" 1e6 Mb/s "$b_one" "iperf3-P$FLOWS" "$peer"
    fi
    echo
    echo "per-round ratios, median (min-max) of $RUNS rounds"
    printf '  %-22s %s\n' "flows / iperf3" "$(spread "${r_flow_ip[@]}")" \
        "flows T1 / iperf3" "$(spread "${r_one_ip[@]}")" \
        "flows T1 / flows" "$(spread "${r_one_flow[@]}")"
    echo
    echo "runs, Gb/s, min-max: each run"
    printf '  %-22s %s\n' "netbisect --flows $FLOWS" "$(gbps "${nb_flows[@]}")" \
        "--threads 1" "$(gbps "${nb_flows1[@]}")" \
        "iperf3 -P $FLOWS" "$(gbps "${ip_flows[@]}")"
    if [ -n "$BEFORE" ]; then
        printf '  %-22s %s\n' "before --flows $FLOWS" "$(gbps "${bf_flows[@]}")" \
            "before --threads 1" "$(gbps "${bf_flows1[@]}")"
    fi
}

if [ -n "$FLOWS_ONLY" ]; then
    flows_runs
    flows_report
    echo
    echo "load: $(uptime | sed 's/.*load average/load average/')"
    exit 0
fi

nb_stream=() ; ip_stream=() ; nb_rr=() ; sp_rr=() ; sp_lat_rr=() ; nb_udp=() ; ip_udp=()
fl_stream=() ; fl_rr=()
for run in $(seq 1 "$RUNS"); do
    echo "bench-peers: run $run of $RUNS" >&2
    nb_stream+=("$(netbisect_json -t TCP_STREAM -m 128K \
        | jq '.summary.throughput_bps.mean')")
    ip_stream+=("$(iperf3 -c 127.0.0.1 -p "$IPERF_PORT" -t "$LENGTH" -l 128K \
        -A "$pin" -J | jq '.end.sum_received.bits_per_second')")

    nb_rr+=("$(netbisect_json -t TCP_RR -r 14,14 \
        | jq '.summary.transaction_rate.mean')")
    # The rate is read, not derived: "[Valid Duration] RunTime=1.551 sec;
    # SentMessages=7840; ReceivedMessages=7840", the run after sockperf's
    # warm-up. Its mean latency is dominated by a few slow round trips
    # and is only a cross-check.
    sp_out=$("${rt[@]}" taskset -c "$LOCAL_CPU" sockperf ping-pong --tcp -i 127.0.0.1 \
        -p "$SOCKPERF_PORT" -m 14 -t "$LENGTH" --mps=max 2>&1 \
        | sed 's/\x1b\[[0-9;]*m//g')
    rate=$(sed -n 's/.*\[Valid Duration\] RunTime=\([0-9.]*\) sec;.*ReceivedMessages=\([0-9]*\).*/\1 \2/p' \
        <<<"$sp_out" | tail -1 | awk 'NF == 2 && $1 > 0 { printf "%.2f", $2 / $1 }')
    latency=$(sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' <<<"$sp_out" | tail -1)
    if [ -z "$rate" ] || [ -z "$latency" ]; then
        echo "bench-peers: no valid run time or avg-latency in sockperf's output" >&2
        exit 3
    fi
    sp_rr+=("$rate")
    sp_lat_rr+=("$(awk -v us="$latency" 'BEGIN { printf "%.2f", 1e6 / (2 * us) }')")
    fl_rr+=("$("${rt[@]}" "$build/rr-floor" tcp 14 14 "$LENGTH" "$LOCAL_CPU" "$REMOTE_CPU")")
    fl_stream+=("$("${rt[@]}" "$build/rr-floor" stream 131072 131072 "$LENGTH" "$LOCAL_CPU" \
        "$REMOTE_CPU")")

    nb_udp+=("$(netbisect_json -t UDP_STREAM -m 1472 \
        | jq '.summary.throughput_bps.mean')")
    ip_udp+=("$(iperf3 -c 127.0.0.1 -p "$IPERF_PORT" -t "$LENGTH" -u -b 0 \
        -l 1472 -A "$pin" -J \
        | jq '.end.sum_received.bits_per_second
              // (.end.sum.bits_per_second * (100 - .end.sum.lost_percent) / 100)')")
done

echo
echo "netbisect vs peers on loopback: median of $RUNS interleaved runs of" \
     "$LENGTH s, CPUs $pin"
echo
printf '%-11s %19s %-9s %19s %6s\n' "Test" "netbisect" "Peer" "" "Ratio"
row TCP_STREAM 1e6 Mb/s "$(median "${nb_stream[@]}")" iperf3 "$(median "${ip_stream[@]}")"
row TCP_RR 1 tr/s "$(median "${nb_rr[@]}")" sockperf "$(median "${sp_rr[@]}")"
row UDP_STREAM 1e6 Mb/s "$(median "${nb_udp[@]}")" iperf3 "$(median "${ip_udp[@]}")"
row TCP_STREAM 1e6 Mb/s "$(median "${nb_stream[@]}")" "C floor" "$(median "${fl_stream[@]}")"
row TCP_RR 1 tr/s "$(median "${nb_rr[@]}")" "C floor" "$(median "${fl_rr[@]}")"
echo
echo "runs: netbisect TCP_STREAM bits/s: ${nb_stream[*]}"
echo "runs: iperf3 TCP bits/s:           ${ip_stream[*]}"
echo "runs: netbisect TCP_RR tr/s:       ${nb_rr[*]}"
echo "runs: sockperf tr/s:               ${sp_rr[*]}"
echo "runs: sockperf from mean latency:  ${sp_lat_rr[*]}"
echo "runs: C floor TCP_STREAM bits/s:   ${fl_stream[*]}"
echo "runs: C floor TCP_RR tr/s:         ${fl_rr[*]}"
echo "runs: netbisect UDP_STREAM bits/s: ${nb_udp[*]}"
echo "runs: iperf3 UDP bits/s:           ${ip_udp[*]}"

# ------------------------------------------------------------ confidence
echo >&2 "bench-peers: confidence run"
ci_start=$(date +%s.%N)
ci_json=$("${rt[@]}" "$NETBISECT" --json bench -l "$CI_LENGTH" -T "$pin" --no-archive \
    -t TCP_STREAM -m 128K -I 95,5 -i 30,3)
ci_end=$(date +%s.%N)
ci_wall=$(awk -v a="$ci_start" -v b="$ci_end" 'BEGIN { printf "%.1f", b - a }')
ci_line=$(jq -r '"\(.summary.n_iterations) iterations of \(.spec.duration_s) s," +
    " interval \(.summary.confidence.width_pct * 1000 | round / 1000)% wide," +
    " met: \(.summary.confidence.met)"' <<<"$ci_json")

# ------------------------------------------------------------ CPU cost
echo >&2 "bench-peers: CPU runs"
cpu_json=$(netbisect_json -t TCP_STREAM -m 128K -c -C)
ip_cpu_json=$(iperf3 -c 127.0.0.1 -p "$IPERF_PORT" -t "$LENGTH" -l 128K -A "$pin" -J)
# Own CPU as percent of one CPU and as us per KB moved.
nb_cpu=$(jq -r '.iterations[-1] as $i | ($i.throughput_bps / 8 / 1024) as $kbs |
    ($i.cpu_detail.local) as $l | ($i.cpu_detail.remote) as $r |
    (($l.process_user_s + $l.process_system_s) / $l.window_s * 100) as $lp |
    (($r.process_user_s + $r.process_system_s) / $r.window_s * 100) as $rp |
    "\($i.throughput_bps / 1e6 | round) Mb/s;" +
    " system-wide util local \($l.util_pct * 100 | round / 100)% remote" +
    " \($r.util_pct * 100 | round / 100)% of \($l.n_cpus) CPUs," +
    " S.dem local \($i.cpu.local_service_demand * 1000 | round / 1000)" +
    " remote \($i.cpu.remote_service_demand * 1000 | round / 1000) us/KB\n" +
    "  own data threads: local \($lp * 100 | round / 100)%" +
    " remote \($rp * 100 | round / 100)% of one CPU =" +
    " \($lp / 100 * 1e6 / $kbs * 1000 | round / 1000) /" +
    " \($rp / 100 * 1e6 / $kbs * 1000 | round / 1000) us/KB"' <<<"$cpu_json")
ip_cpu=$(jq -r '.end as $e | ($e.sum_received.bits_per_second / 8 / 1024) as $kbs |
    "\($e.sum_received.bits_per_second / 1e6 | round) Mb/s;" +
    " own process: sender \($e.cpu_utilization_percent.host_total * 100 | round / 100)%" +
    " receiver \($e.cpu_utilization_percent.remote_total * 100 | round / 100)% of one CPU =" +
    " \($e.cpu_utilization_percent.host_total / 100 * 1e6 / $kbs * 1000 | round / 1000) /" +
    " \($e.cpu_utilization_percent.remote_total / 100 * 1e6 / $kbs * 1000 | round / 1000)" +
    " us/KB"' <<<"$ip_cpu_json")

flows_runs

echo
echo "TCP_STREAM to +-2.5% at 95%: $ci_wall s wall; $ci_line"
echo
echo "CPU, TCP_STREAM -m 128K, $LENGTH s, CPUs $pin:"
echo "  netbisect -c -C: $nb_cpu"
echo "  iperf3 -J:       $ip_cpu"
flows_report
echo
echo "load: $(uptime | sed 's/.*load average/load average/')"
