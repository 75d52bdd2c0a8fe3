#!/usr/bin/env bash
# TCP_CRR against the state of the ephemeral port space. Each TCP_CRR
# transaction leaves a client socket in TIME_WAIT for 60 s; once the
# ports a connect() may pick are mostly held by TIME_WAIT sockets younger
# than tcp_tw_reuse allows to take over, connect() searches longer (and
# at the end fails with EADDRNOTAVAIL), so a run's rate depends on how
# fast, how long and after what it runs.
#
# Runs, in a network namespace of its own (root: unshare -n) with the
# port range RANGE, ROUNDS back-to-back TCP_CRR runs of LENGTH s and
# prints, per run, the TIME_WAIT sockets it started with, its rate and
# the CPU time of both ends per transaction (-c -C). A small RANGE
# shows in seconds on a slow host what the default range does on a fast
# one: the port space wraps within a run.
#
# Usage: sudo scripts/bench-crr-ports.sh   (env: RANGE, ROUNDS, LENGTH,
#        PIN, NETBISECT)
set -euo pipefail

RANGE=${RANGE:-"40000 45999"}
ROUNDS=${ROUNDS:-3}
LENGTH=${LENGTH:-3}
PIN=${PIN:-0,1}
HERE=$(cd "$(dirname "$0")/.." && pwd)
NETBISECT=${NETBISECT:-$HERE/target/release/netbisect}

if [ "${1:-}" != --inside ]; then
    for tool in unshare ip ss jq sysctl; do
        command -v "$tool" >/dev/null || { echo "bench-crr-ports: $tool not found" >&2; exit 2; }
    done
    exec unshare -n "$0" --inside
fi

ip link set lo up
sysctl -qw net.ipv4.ip_local_port_range="$RANGE"
echo "TCP_CRR, ports $RANGE, $LENGTH s runs, CPUs $PIN"
for run in $(seq 1 "$ROUNDS"); do
    tw=$(ss -tan state time-wait | tail -n +2 | wc -l)
    if out=$("$NETBISECT" --json bench -l "$LENGTH" -T "$PIN" -c -C --no-archive \
        -t TCP_CRR 2>&1); then
        echo "$out" | jq -r --arg tw "$tw" '.iterations[0] as $i
            | $i.cpu_detail as $c
            | (($c.local.process_user_s + $c.local.process_system_s
                + $c.remote.process_user_s + $c.remote.process_system_s)
               * 1e6 / $i.transactions) as $cpu
            | "time-wait at start \($tw): \(.summary.transaction_rate.mean
                | floor) tr/s, \($cpu * 10 | floor / 10) us CPU per tr"'
    else
        echo "time-wait at start $tw: failed: $(echo "$out" | tail -1)"
    fi
done
