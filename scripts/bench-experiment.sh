#!/usr/bin/env bash
# What an experiment across kernels costs: `netbisect ab` of CONFIGS
# configurations (the product of the SWEEPS axes) on two kernels, ROUNDS
# rounds, tests of LENGTH seconds, and how its wall time splits:
#
#   boots        boots made (counted from ab's own log; the target is
#                exactly 2 x ROUNDS) and their boot-to-test seconds (each
#                record's env.vm.boot_to_test_s, one per boot): median,
#                min, max
#   tests        the tests' own time: CONFIGS x 2 x ROUNDS x LENGTH (x the
#                iterations of -i, when given in EXTRA)
#   per config   seconds from one configuration's end to the next in a
#                boot, from ab's timestamped log: median
#   wall         the whole ab command
#   overhead     wall - tests - boot-to-test of every boot, in percent of
#                tests + boots: the target is <= 5%
#
# The accelerator is what netbisect decides, or ACCEL=kvm|tcg.
# Needs qemu-system-x86_64, busybox-static and jq.
# Usage: scripts/bench-experiment.sh [KERNEL_A KERNEL_B]
#        (env: ROUNDS, LENGTH, SWEEPS, EXTRA, ACCEL, NETBISECT)
#        default kernels: the two newest /boot/vmlinuz-*
set -euo pipefail

ROUNDS=${ROUNDS:-2}
LENGTH=${LENGTH:-2}
SWEEPS=${SWEEPS:-"m=1472,65507 S=212992,425984"}
EXTRA=${EXTRA:-}
ACCEL=${ACCEL:-auto}
HERE=$(cd "$(dirname "$0")/.." && pwd)
NETBISECT=${NETBISECT:-$HERE/target/release/netbisect}

for tool in qemu-system-x86_64 jq; do
    command -v "$tool" >/dev/null || { echo "bench-experiment: $tool not found" >&2; exit 2; }
done
[ -x "$NETBISECT" ] || { echo "bench-experiment: build first: cargo build --release" >&2; exit 2; }

if (($# == 2)); then
    kernels=("$@")
else
    mapfile -t kernels < <(ls -1v /boot/vmlinuz-* | tail -n 2)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sweep_args=()
configs=1
for sweep in $SWEEPS; do
    sweep_args+=(--sweep "$sweep")
    values=${sweep#*=}
    configs=$((configs * $(tr ',' '\n' <<< "$values" | wc -l)))
done

start=$(date +%s.%N)
# shellcheck disable=SC2086 # EXTRA holds several words on purpose
"$NETBISECT" --archive "$work/archive.db" --progress always ab \
    --kernel-a "${kernels[0]}" --kernel-b "${kernels[1]}" -n "$ROUNDS" \
    --vm-accel "$ACCEL" -l "$LENGTH" "${sweep_args[@]}" $EXTRA \
    > "$work/table" 2> "$work/log"
end=$(date +%s.%N)

"$NETBISECT" --archive "$work/archive.db" archive export > "$work/records"
boots=$(grep -c ': booting ' "$work/log" || true)
iterations=$(jq -s 'map(.summary.n_iterations) | add / length' "$work/records")
# Each boot's boot-to-test, once per boot (the runs of a boot share it).
jq -r '[.experiment.round, .subject.label, .env.vm.boot_to_test_s] | @tsv' \
    "$work/records" | sort -u | cut -f3 | sort -n > "$work/boot_s"
# Seconds between consecutive run lines within a boot.
awk '/: booting /{ prev = "" }
     / done in /{ split($2, t, ":"); now = t[1] * 3600 + t[2] * 60 + t[3];
                  if (prev != "") print now - prev; prev = now }' \
    "$work/log" | sort -n > "$work/config_s"

median() { awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }' "$1"; }

awk -v start="$start" -v end="$end" -v configs="$configs" -v rounds="$ROUNDS" \
    -v test_s="$LENGTH" -v iterations="$iterations" -v boots="$boots" \
    -v boot_med="$(median "$work/boot_s")" -v config_med="$(median "$work/config_s")" \
    -v boot_sum="$(awk '{ s += $1 } END { print s + 0 }' "$work/boot_s")" \
    -v boot_min="$(head -n 1 "$work/boot_s")" -v boot_max="$(tail -n 1 "$work/boot_s")" \
    -v runs="$(wc -l < "$work/records")" '
BEGIN {
    wall = end - start
    tests = configs * 2 * rounds * test_s * iterations
    overhead = wall - tests - boot_sum
    printf "configurations %d x 2 kernels x %d rounds = %d runs (%d archived)\n", configs, rounds, configs * 2 * rounds, runs
    printf "boots          %d (target %d); boot-to-test median %.2f s, min %.2f, max %.2f\n", boots, 2 * rounds, boot_med, boot_min, boot_max
    printf "tests          %.1f s of tests (%g s x %g iterations each)\n", tests, test_s, iterations
    printf "per config     median %.2f s from one run to the next in a boot\n", config_med
    printf "wall           %.1f s\n", wall
    printf "overhead       %.1f s beyond tests and boots: %.1f%% (target <= 5%%)\n", overhead, 100 * overhead / (tests + boot_sum)
}'
