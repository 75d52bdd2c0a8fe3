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
# Beside the rates, the CPU time of both ends per transaction (the
# floor's whole process; netbisect's data threads, -c -C), and the
# floor's over the tool's: on a loaded machine, where the rate follows
# whatever else runs, this is the steadier measure of what the tool
# adds to a round trip. On a shared host, running the whole script
# under `chrt -f 1` (root) keeps other work off the pinned CPU, so the
# rates are the ping-pong's and not the scheduler's share of the CPU.
#
# The rate of a round moves by tens of percent on a shared host, and
# medians of RUNS rounds are not enough to judge 1%: the script also
# prints, per round, the tool's figure over the floor's of the same
# round (its runs follow each other, in an order that alternates from
# round to round so that neither side always runs first), and the
# median, quartiles and extremes of these paired ratios.
#
# The CPU time per transaction moves with the load too. With PERF_RUNS
# above 0 (perf installed, root), that many more rounds run each side
# under `perf record -e cpu-clock` and keep the share of its samples
# spent in the kernel. Tool and floor make the same system calls per
# transaction (strace -c), so the kernel's work per transaction is the
# same and the tool's share over the floor's is the floor's CPU per
# transaction over the tool's, measured within each run and so mostly
# free of what else the host does: 1.000 means the tool adds nothing.
#
# Usage: scripts/bench-floor.sh   (env: RUNS, LENGTH, PINS, TESTS,
#        NETBISECT, BEFORE, PERF_RUNS)
set -euo pipefail

RUNS=${RUNS:-5}
LENGTH=${LENGTH:-2}
PINS=${PINS:-"0,0 0,1"}
TESTS=${TESTS:-"TCP_RR UDP_RR"}
HERE=$(cd "$(dirname "$0")/.." && pwd)
NETBISECT=${NETBISECT:-$HERE/target/release/netbisect}
BEFORE=${BEFORE:-}
PERF_RUNS=${PERF_RUNS:-0}

for tool in cc jq; do
    command -v "$tool" >/dev/null || { echo "bench-floor: $tool not found" >&2; exit 2; }
done
if [ "$PERF_RUNS" -gt 0 ]; then
    command -v perf >/dev/null || { echo "bench-floor: perf not found" >&2; exit 2; }
fi
[ -x "$NETBISECT" ] || { echo "bench-floor: $NETBISECT not found (cargo build --release)" >&2; exit 2; }
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cc -O2 -pthread -o "$build/rr-floor" "$HERE/scripts/rr-floor.c"

# floor TEST PIN -> tr/s
floor() {
    local proto=tcp cpus=(${2/,/ })
    [ "$1" = UDP_RR ] && proto=udp
    RR_FLOOR_CPU=1 "$build/rr-floor" "$proto" 1 1 "$LENGTH" "${cpus[0]}" "${cpus[1]}"
}
# nb BINARY TEST PIN -> "tr/s cpu_us_per_transaction"
nb() {
    local pin=()
    [ "$3" != "-1,-1" ] && pin=(-T "$3")
    "$1" --json bench -l "$LENGTH" "${pin[@]}" -c -C --no-archive -t "$2" -- -r 1,1 \
        | jq -r '.iterations[0] as $i | $i.cpu_detail as $c
            | "\(.summary.transaction_rate.mean) \(($c.local.process_user_s
                + $c.local.process_system_s + $c.remote.process_user_s
                + $c.remote.process_system_s) * 1e6 / $i.transactions)"'
}
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A runs cpu pair_rate pair_cpu
# keep KEY "RATE CPU"
keep() {
    local figures=($2)
    runs[$1]+="${figures[0]} "
    cpu[$1]+="${figures[1]} "
}
# measure WHO TEST PIN -> "RATE CPU"
measure() {
    case $1 in
        floor) floor "$2" "$3" ;;
        after) nb "$NETBISECT" "$2" "$3" ;;
        before) nb "$BEFORE" "$2" "$3" ;;
    esac
}
sides=(floor after)
[ -n "$BEFORE" ] && sides+=(before)
for run in $(seq 1 "$RUNS"); do
    echo "bench-floor: round $run of $RUNS" >&2
    order=("${sides[@]}")
    if [ $((run % 2)) = 0 ]; then
        order=()
        for ((k = ${#sides[@]} - 1; k >= 0; k--)); do order+=("${sides[k]}"); done
    fi
    for pin in $PINS; do
        for test in $TESTS; do
            declare -A this=()
            for who in "${order[@]}"; do
                this[$who]=$(measure "$who" "$test" "$pin")
                keep "$test/$pin/$who" "${this[$who]}"
            done
            for who in "${sides[@]:1}"; do
                read -r fr fc <<<"${this[floor]}"
                read -r tr tc <<<"${this[$who]}"
                pair_rate[$test/$pin/$who]+="$(awk -v a="$tr" -v b="$fr" 'BEGIN { print a / b }') "
                pair_cpu[$test/$pin/$who]+="$(awk -v a="$fc" -v b="$tc" 'BEGIN { print a / b }') "
            done
        done
    done
done

echo
echo "RR against the C floor: medians of $RUNS interleaved rounds of $LENGTH s," \
     "-r 1,1"
echo "rate: tr/s and its ratio to the floor's; cpu: us of CPU (both ends) per"
echo "transaction and the floor's over it (1.000: the tool adds nothing)"
echo
printf '%-7s %-6s %9s %9s %6s %9s %6s  %6s %6s %6s %6s %6s\n' Test CPUs floor after ratio \
    before ratio "cpu fl" after ratio before ratio
for pin in $PINS; do
    for test in $TESTS; do
        f=$(median ${runs[$test/$pin/floor]})
        a=$(median ${runs[$test/$pin/after]})
        fc=$(median ${cpu[$test/$pin/floor]})
        ac=$(median ${cpu[$test/$pin/after]})
        b="" bc=""
        if [ -n "$BEFORE" ]; then
            b=$(median ${runs[$test/$pin/before]})
            bc=$(median ${cpu[$test/$pin/before]})
        fi
        awk -v t="$test" -v p="$pin" -v f="$f" -v a="$a" -v b="$b" \
            -v fc="$fc" -v ac="$ac" -v bc="$bc" 'BEGIN {
            printf "%-7s %-6s %9.0f %9.0f %6.3f", t, p, f, a, a / f
            if (b != "") printf " %9.0f %6.3f", b, b / f
            else printf " %9s %6s", "-", "-"
            printf "  %6.2f %6.2f %6.3f", fc, ac, fc / ac
            if (bc != "") printf " %6.2f %6.3f", bc, fc / bc
            printf "\n" }'
    done
done
# quartiles VALUES... -> "median q1 q3 min max"
quartiles() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        function at(q,   h, i) {
            h = (NR - 1) * q + 1; i = int(h)
            return i >= NR ? v[NR] : v[i] + (h - i) * (v[i + 1] - v[i])
        }
        END { print at(0.5), at(0.25), at(0.75), v[1], v[NR] }'
}
echo
echo "Per-round ratios to the floor (rate: tool/floor; cpu: floor/tool):" \
     "median [quartiles] (extremes)"
for pin in $PINS; do
    for test in $TESTS; do
        for who in "${sides[@]:1}"; do
            r=$(quartiles ${pair_rate[$test/$pin/$who]})
            c=$(quartiles ${pair_cpu[$test/$pin/$who]})
            awk -v t="$test" -v p="$pin" -v w="$who" -v r="$r" -v c="$c" 'BEGIN {
                split(r, a, " "); split(c, b, " ")
                printf "%-7s %-6s %-6s rate %.3f [%.3f %.3f] (%.2f %.2f)" \
                    "  cpu %.3f [%.3f %.3f] (%.2f %.2f)\n", t, p, w,
                    a[1], a[2], a[3], a[4], a[5], b[1], b[2], b[3], b[4], b[5] }'
        done
    done
done
if [ "$PERF_RUNS" -gt 0 ]; then
    # share WHO TEST PIN -> percent of the run's CPU samples in the kernel
    share() {
        local command=() proto=tcp cpus=(${3/,/ })
        [ "$2" = UDP_RR ] && proto=udp
        case $1 in
            floor) command=("$build/rr-floor" "$proto" 1 1 "$LENGTH" "${cpus[0]}" "${cpus[1]}") ;;
            after) command=("$NETBISECT" --json bench -l "$LENGTH" -T "$3" --no-archive
                            -t "$2" -- -r 1,1) ;;
            before) command=("$BEFORE" --json bench -l "$LENGTH" -T "$3" --no-archive
                             -t "$2" -- -r 1,1) ;;
        esac
        perf record -q -e cpu-clock -F 5000 -o "$build/perf.data" -- "${command[@]}" \
            >/dev/null 2>&1
        perf report -i "$build/perf.data" --no-children --sort dso -q -g none 2>/dev/null \
            | awk '/\[kernel\.kallsyms\]/ { sub("%", "", $1); print $1 }'
    }
    declare -A pair_share
    for run in $(seq 1 "$PERF_RUNS"); do
        echo "bench-floor: perf round $run of $PERF_RUNS" >&2
        for pin in $PINS; do
            for test in $TESTS; do
                declare -A this=()
                for who in "${sides[@]}"; do
                    this[$who]=$(share "$who" "$test" "$pin")
                done
                for who in "${sides[@]:1}"; do
                    pair_share[$test/$pin/$who]+="$(awk -v a="${this[$who]}" \
                        -v b="${this[floor]}" 'BEGIN { print a / b }') "
                done
            done
        done
    done
    echo
    echo "Kernel share of the CPU samples, tool's over the floor's ($PERF_RUNS" \
         "perf rounds): the floor's CPU"
    echo "per transaction over the tool's; median [quartiles] (extremes)"
    for pin in $PINS; do
        for test in $TESTS; do
            for who in "${sides[@]:1}"; do
                q=$(quartiles ${pair_share[$test/$pin/$who]})
                awk -v t="$test" -v p="$pin" -v w="$who" -v q="$q" 'BEGIN {
                    split(q, a, " ")
                    printf "%-7s %-6s %-6s cpu %.4f [%.4f %.4f] (%.4f %.4f)\n",
                        t, p, w, a[1], a[2], a[3], a[4], a[5] }'
            done
        done
    done
fi
echo
for key in "${!runs[@]}"; do
    echo "runs: $key: ${runs[$key]}"
    echo "cpu:  $key: ${cpu[$key]}"
done | sort -k2
