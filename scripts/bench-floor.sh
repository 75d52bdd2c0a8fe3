#!/usr/bin/env bash
# netbisect's TCP_RR and UDP_RR against their floor: scripts/rr-floor.c, a
# blocking ping-pong in C with no clock read and no histogram, built here
# with cc -O2. Same sizes (-r 1,1), same pinning, latency histogram on
# (netbisect always keeps it).
#
# Each round runs, interleaved, the floor, netbisect and (if BEFORE names
# another netbisect binary) that one, for every pinning in PINS; medians
# of RUNS rounds of LENGTH s and the ratios to the floor are printed. The
# bar is >= 0.99 pinned; "-1,-1" (unpinned) is reported, not targeted.
#
# Usage: scripts/bench-floor.sh   (env: RUNS, LENGTH, PINS, TESTS,
#        NETBISECT, BEFORE)
set -euo pipefail

RUNS=${RUNS:-5}
LENGTH=${LENGTH:-2}
PINS=${PINS:-"0,0 0,1"}
TESTS=${TESTS:-"TCP_RR UDP_RR"}
HERE=$(cd "$(dirname "$0")/.." && pwd)
NETBISECT=${NETBISECT:-$HERE/target/release/netbisect}
BEFORE=${BEFORE:-}

for tool in cc jq; do
    command -v "$tool" >/dev/null || { echo "bench-floor: $tool not found" >&2; exit 2; }
done
[ -x "$NETBISECT" ] || { echo "bench-floor: $NETBISECT not found (cargo build --release)" >&2; exit 2; }
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cc -O2 -pthread -o "$build/rr-floor" "$HERE/scripts/rr-floor.c"

# floor TEST PIN -> tr/s
floor() {
    local proto=tcp cpus=(${2/,/ })
    [ "$1" = UDP_RR ] && proto=udp
    "$build/rr-floor" "$proto" 1 1 "$LENGTH" "${cpus[0]}" "${cpus[1]}"
}
# nb BINARY TEST PIN -> tr/s
nb() {
    local pin=()
    [ "$3" != "-1,-1" ] && pin=(-T "$3")
    "$1" --json bench -l "$LENGTH" "${pin[@]}" --no-archive -t "$2" -- -r 1,1 \
        | jq '.summary.transaction_rate.mean'
}
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A runs
for run in $(seq 1 "$RUNS"); do
    echo "bench-floor: round $run of $RUNS" >&2
    for pin in $PINS; do
        for test in $TESTS; do
            runs[$test/$pin/floor]+="$(floor "$test" "$pin") "
            runs[$test/$pin/after]+="$(nb "$NETBISECT" "$test" "$pin") "
            if [ -n "$BEFORE" ]; then
                runs[$test/$pin/before]+="$(nb "$BEFORE" "$test" "$pin") "
            fi
        done
    done
done

echo
echo "RR against the C floor: medians of $RUNS interleaved rounds of $LENGTH s," \
     "-r 1,1"
echo
printf '%-7s %-6s %12s %12s %7s %12s %7s\n' Test CPUs "floor tr/s" netbisect ratio \
    before ratio
for pin in $PINS; do
    for test in $TESTS; do
        f=$(median ${runs[$test/$pin/floor]})
        a=$(median ${runs[$test/$pin/after]})
        b=""
        [ -n "$BEFORE" ] && b=$(median ${runs[$test/$pin/before]})
        awk -v t="$test" -v p="$pin" -v f="$f" -v a="$a" -v b="$b" 'BEGIN {
            printf "%-7s %-6s %12.0f %12.0f %7.3f", t, p, f, a, a / f
            if (b != "") printf " %12.0f %7.3f", b, b / f
            printf "\n" }'
    done
done
echo
for key in "${!runs[@]}"; do echo "runs: $key: ${runs[$key]}"; done | sort
