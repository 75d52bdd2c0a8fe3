#!/bin/sh
# Archive benchmark (not a test): import 100k generated run records with
# `netbisect archive import`, grow the archive to 1M runs, then time the
# real `netbisect compare` (all runs of two commits: 2 x 100 runs in 20
# configurations) and `netbisect history` (one metric of one config_key
# under one label: 5000 runs across 1000 commits, in time order), each
# process from start to exit, and the selections they make in-process.
#
# Usage: scripts/bench-archive.sh [WORKDIR]   (needs about 3.5 GB free)
#
# On a shared host the figures follow the load: run it at a quiet
# moment, or as root under `chrt -f 1 scripts/bench-archive.sh`, and
# quote the medians with the load average it prints.
set -eu
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
mkdir -p "$work"
db=$work/bench.db
rm -f "$db" "$db-wal" "$db-shm"

cargo build --release --quiet --bin netbisect
cargo build --release --quiet -p archive --example bench_archive
bin=target/release/netbisect
helper=target/release/examples/bench_archive

# Prints the wall time of a command in milliseconds; its output is
# discarded, and a failure stops the script.
time_ms() {
    start=$(date +%s%N)
    "$@" >/dev/null || { echo "failed: $*" >&2; exit 1; }
    end=$(date +%s%N)
    echo "$(( (end - start) / 1000000 )) ms"
}

echo "generating 100000 records..."
"$helper" gen 100000 "$work/runs.jsonl"
ls -l "$work/runs.jsonl" | awk '{printf "  %.0f MB\n", $5 / 1e6}'

echo "import of 100000 records (target: under 20 s):"
echo "  load: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
NETBISECT_ARCHIVE=$db "$bin" archive import "$work/runs.jsonl"
end=$(date +%s.%N)
echo "  import: $(echo "$end - $start" | bc) s"

echo "growing the archive to 1000000 runs..."
"$helper" fill "$db" 100000 900000

# Generated commit ids share their first 24 digits, so give them whole.
first=$("$helper" commit 10)
second=$("$helper" commit 9000)
config_key=$("$helper" config-key)
export NETBISECT_ARCHIVE="$db"

echo "netbisect compare A B (two commits) on 1000000 runs (target: under 100 ms):"
for attempt in 1 2 3; do
    elapsed=$(time_ms "$bin" compare "$first" "$second")
    echo "  compare: $elapsed"
done
elapsed=$(time_ms "$bin" compare --json "$first" "$second")
echo "  compare --json: $elapsed"

echo "netbisect history --metric throughput_bps --label step3 --config-key ..."
echo "(5000 runs in time order) on 1000000 runs (target: under 100 ms):"
echo "  load: $(cut -d' ' -f1-3 /proc/loadavg)"
# A first run warms the page cache; the median of the next 11 is
# printed.
time_ms "$bin" history --metric throughput_bps --label step3 \
    --config-key "$config_key" >/dev/null
times=$(for attempt in 1 2 3 4 5 6 7 8 9 10 11; do
    time_ms "$bin" history --metric throughput_bps \
        --label step3 --config-key "$config_key"
done)
echo "$times" | sort -n | awk '{ ms[NR] = $1 } END {
    printf "  history: median %d ms (min %d, max %d, %d runs)\n",
        ms[(NR + 1) / 2], ms[1], ms[NR], NR }'

echo "selections alone, in-process:"
"$helper" query "$db"
ls -l "$db" | awk '{printf "archive file: %.0f MB\n", $5 / 1e6}'
"$bin" compare "$first" "$second" | head -12
