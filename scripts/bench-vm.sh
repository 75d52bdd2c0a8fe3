#!/usr/bin/env bash
# What testing a kernel in a VM costs, and how steady its figures are:
# for each kernel, BOOTS boots of `netbisect bench --kernel` running a
# TCP_STREAM test of LENGTH seconds over the guest's loopback, and per
# kernel:
#
#   overhead    seconds from the start of the boot (netbisect starts
#               preparing the guest, qemu next) to the first byte of the test (the guest's marker just before
#               `netbisect bench` starts): the env.vm.boot_to_test_s of
#               each record; median, min and max
#   wall        seconds of the whole bench --kernel command, mean
#   TCP_STREAM  10^6bits/s inside the guest: mean, and the spread across
#               boots (standard deviation in percent of the mean)
#
# The accelerator is what netbisect decides (KVM when it works, else
# TCG), or ACCEL=kvm|tcg. Targets: overhead <= 10 s under TCG, <= 3 s
# with KVM.
#
# Needs qemu-system-x86_64, busybox-static and jq.
# Usage: scripts/bench-vm.sh [KERNEL...]
#        (env: BOOTS, LENGTH, ACCEL, CPUS, NETBISECT)
#        default kernels: the two newest /boot/vmlinuz-*
set -euo pipefail

BOOTS=${BOOTS:-5}
LENGTH=${LENGTH:-2}
ACCEL=${ACCEL:-auto}
CPUS=${CPUS:-2}
HERE=$(cd "$(dirname "$0")/.." && pwd)
NETBISECT=${NETBISECT:-$HERE/target/release/netbisect}

for tool in qemu-system-x86_64 jq; do
    command -v "$tool" >/dev/null || { echo "bench-vm: $tool not found" >&2; exit 2; }
done
[ -x "$NETBISECT" ] || { echo "bench-vm: build first: cargo build --release" >&2; exit 2; }

if (($#)); then
    kernels=("$@")
else
    mapfile -t kernels < <(ls -1v /boot/vmlinuz-* | tail -n 2)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '%-28s %5s %-5s %8s %8s %8s %8s %11s %6s\n' \
    kernel boots accel "boot med" min max "wall s" "10^6bits/s" "+-%"
for kernel in "${kernels[@]}"; do
    : > "$work/records"
    : > "$work/walls"
    for ((boot = 1; boot <= BOOTS; boot++)); do
        start=$(date +%s.%N)
        "$NETBISECT" -q --json bench --kernel "$kernel" --no-archive \
            --vm-accel "$ACCEL" --vm-cpus "$CPUS" -t TCP_STREAM -l "$LENGTH" \
            >> "$work/records"
        end=$(date +%s.%N)
        awk -v a="$start" -v b="$end" 'BEGIN { print b - a }' >> "$work/walls"
    done
    jq -rs --arg kernel "$(basename "$kernel")" --argjson boots "$BOOTS" \
        --argjson wall "$(jq -s 'add / length' "$work/walls")" '
        def mean: add / length;
        def median: sort | if length % 2 == 1 then .[length / 2 | floor]
            else (.[length / 2 - 1] + .[length / 2]) / 2 end;
        def sd: (mean) as $m | (map(. - $m | . * .) | add / ((length - 1) | if . < 1 then 1 else . end)) | sqrt;
        (map(.env.vm.boot_to_test_s)) as $boot
        | (map(.summary.throughput_bps.mean / 1e6)) as $tput
        | [$kernel, $boots, .[0].env.vm.accelerator,
           ($boot | median), ($boot | min), ($boot | max), $wall,
           ($tput | mean), (($tput | sd) / ($tput | mean) * 100)]
        | "\(.[0]) \(.[1]) \(.[2]) \(.[3]) \(.[4]) \(.[5]) \(.[6]) \(.[7]) \(.[8])"
        ' "$work/records" |
        while read -r name boots accel boot min max wall tput spread; do
            printf '%-28s %5s %-5s %8.2f %8.2f %8.2f %8.2f %11.2f %6.1f\n' \
                "$name" "$boots" "$accel" "$boot" "$min" "$max" "$wall" "$tput" "$spread"
        done
done
