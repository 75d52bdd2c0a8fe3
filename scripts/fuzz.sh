#!/usr/bin/env bash
# Fuzzes what netbisect reads from outside, SECONDS per target (default
# 60): the control-frame decoder, the netperf and iperf3 importers, format
# detection, the run-record reader, and the reading of what a VM guest
# hands back for a run. Uses libFuzzer through
# libfuzzer-sys with the flags cargo-fuzz passes, on the stable toolchain
# (RUSTC_BOOTSTRAP lets it take the nightly-only sanitizer flag).
# Corpora live in fuzz/corpus/TARGET (seeded from tests/data), crashes in
# fuzz/artifacts/TARGET; every crash found is kept as a regression test.
#
#   scripts/fuzz.sh 600             # ten minutes per target
#   scripts/fuzz.sh 60 record_reader
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-60}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
    targets=(control_frame netperf_import iperf3_import import_any mail_import record_reader guest_output)
fi

export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares \
--cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# With an explicit target, RUSTFLAGS leave build scripts alone.
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --bins --target "$host"

seed() {
    local target=$1 dir=corpus/$1
    mkdir -p "$dir" "artifacts/$target"
    case $target in
        netperf_import) cp ../tests/data/peer-outputs/netperf* "$dir"/ 2>/dev/null || true ;;
        iperf3_import) cp ../tests/data/peer-outputs/iperf3* "$dir"/ 2>/dev/null || true ;;
        import_any | mail_import) cp ../tests/data/peer-outputs/* "$dir"/ 2>/dev/null || true ;;
        record_reader) cp ../run-record/tests/data/record-fixture.json "$dir"/ ;;
        guest_output) printf '0\n\0\0' | cat - ../run-record/tests/data/record-fixture.json >"$dir"/record-fixture ;;
    esac
}

status=0
for target in "${targets[@]}"; do
    seed "$target"
    echo "== $target: ${seconds} s"
    log=artifacts/$target/last-run.log
    if ! ./target/"$host"/release/"$target" "corpus/$target" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="artifacts/$target/" -print_final_stats=1 2>"$log"; then
        status=1
        echo "   CRASH: see fuzz/artifacts/$target/"
    fi
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$log" | sed 's/^/   /'
done
exit $status
