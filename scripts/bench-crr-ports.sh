#!/usr/bin/env bash
# TCP_CRR run to run. Each TCP_CRR transaction leaves a client socket in
# TIME_WAIT for 60 s. Left to the kernel, connect() searches the
# ephemeral range for a port whose TIME_WAIT socket it may take over
# (tcp_tw_reuse: older than tcp_tw_reuse_delay) and searches longer as
# the range fills, so a run's rate would depend on how fast, how long
# and after what it runs. netbisect's TCP_CRR client binds each
# connection to the next port of the top quarter of the range (at most
# 1024 ports) itself (SO_REUSEADDR), which takes over that port's
# TIME_WAIT socket at once: no search.
#
# Runs ROUNDS back-to-back TCP_CRR runs of LENGTH s in a network
# namespace of its own (root: ip netns), with the port range RANGE
# (empty: the namespace's default, 32768-60999), and prints per run the
# TIME_WAIT sockets it started with, its rate and the CPU time of both
# ends per transaction (-c -C), then the median rate and the spread:
# (max - min) / median and the median absolute deviation over the
# median. With BEFORE naming another netbisect binary, that binary runs
# too, in a second namespace, its runs interleaved with the first's: each
# binary's runs follow each other in its own port space, while both see
# the same load of the host. A small RANGE shows in seconds on a slow
# host what the default range does on a fast one: the port space wraps
# within a run. On a shared host, run the script under `chrt -f 1`.
#
# Usage: sudo scripts/bench-crr-ports.sh   (env: RANGE, ROUNDS, LENGTH,
#        PIN, NETBISECT, BEFORE)
set -euo pipefail

RANGE=${RANGE:-}
ROUNDS=${ROUNDS:-7}
LENGTH=${LENGTH:-2}
PIN=${PIN:-0,1}
HERE=$(cd "$(dirname "$0")/.." && pwd)
NETBISECT=${NETBISECT:-$HERE/target/release/netbisect}
BEFORE=${BEFORE:-}

for tool in ip ss jq awk; do
    command -v "$tool" >/dev/null || { echo "bench-crr-ports: $tool not found" >&2; exit 2; }
done
labels=(after)
declare -A binary=([after]=$NETBISECT) rates=()
if [ -n "$BEFORE" ]; then
    labels=(before after)
    binary[before]=$BEFORE
fi
namespaces=()
trap 'for ns in "${namespaces[@]}"; do ip netns delete "$ns"; done' EXIT
for label in "${labels[@]}"; do
    ns=netbisect-crr-$label-$$
    ip netns add "$ns"
    namespaces+=("$ns")
    ip -n "$ns" link set lo up
    if [ -n "$RANGE" ]; then
        ip netns exec "$ns" sh -c "echo $RANGE > /proc/sys/net/ipv4/ip_local_port_range"
    fi
done
range=$(ip netns exec "${namespaces[0]}" cat /proc/sys/net/ipv4/ip_local_port_range \
    | tr -s '\t ' ' ')
echo "TCP_CRR, ports $range, $ROUNDS runs of $LENGTH s back to back per" \
     "binary, CPUs $PIN"
for run in $(seq 1 "$ROUNDS"); do
    for label in "${labels[@]}"; do
        ns=netbisect-crr-$label-$$
        tw=$(ip netns exec "$ns" ss -tan state time-wait | tail -n +2 | wc -l)
        if out=$(ip netns exec "$ns" "${binary[$label]}" --json bench -l "$LENGTH" \
            -T "$PIN" -c -C --no-archive -t TCP_CRR 2>&1); then
            line=$(echo "$out" | jq -r '.iterations[0] as $i
                | $i.cpu_detail as $c
                | (($c.local.process_user_s + $c.local.process_system_s
                    + $c.remote.process_user_s + $c.remote.process_system_s)
                   * 1e6 / $i.transactions) as $cpu
                | "\(.summary.transaction_rate.mean | floor)
                   \($cpu * 10 | floor / 10)"')
            read -r rate cpu <<<"$(echo $line)"
            rates[$label]+="$rate "
            printf '%-6s run %d, time-wait at start %6d: %6d tr/s, %6.1f us CPU per tr\n' \
                "$label" "$run" "$tw" "$rate" "$cpu"
        else
            echo "$label run $run, time-wait at start $tw: failed: $(echo "$out" | tail -1)"
        fi
    done
done
echo
for label in "${labels[@]}"; do
    [ -n "${rates[$label]:-}" ] || { echo "$label: no run succeeded"; continue; }
    printf '%s\n' ${rates[$label]} | sort -g | awk -v label="$label" '
        { v[NR] = $1 }
        function median(a, n) {
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END {
            m = median(v, NR)
            for (i = 1; i <= NR; i++) d[i] = v[i] > m ? v[i] - m : m - v[i]
            # insertion sort of the deviations, for their median
            for (i = 2; i <= NR; i++) {
                x = d[i]
                for (j = i - 1; j >= 1 && d[j] > x; j--) d[j + 1] = d[j]
                d[j + 1] = x
            }
            printf "%-6s median %.0f tr/s, min %.0f, max %.0f, spread %.1f%%," \
                " mad %.1f%% (%d runs)\n", label, m, v[1], v[NR],
                100 * (v[NR] - v[1]) / m, 100 * median(d, NR) / m, NR
        }'
done
