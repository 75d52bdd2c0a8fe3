#!/bin/sh
# Archive benchmark (not a test): import 100k generated run records with
# `netbisect archive import`, grow the archive to 1M runs, then time the
# selections `compare` (all runs of two commits under one config_key) and
# `history` (one metric of one config_key across commits) read.
#
# Usage: scripts/bench-archive.sh [WORKDIR]   (needs about 3 GB free)
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

echo "generating 100000 records..."
"$helper" gen 100000 "$work/runs.jsonl"
ls -l "$work/runs.jsonl" | awk '{printf "  %.0f MB\n", $5 / 1e6}'

echo "import of 100000 records (target: under 20 s):"
start=$(date +%s.%N)
NETBISECT_ARCHIVE=$db "$bin" archive import "$work/runs.jsonl"
end=$(date +%s.%N)
echo "  import: $(echo "$end - $start" | bc) s"

echo "growing the archive to 1000000 runs..."
"$helper" fill "$db" 100000 900000

echo "queries on 1000000 runs (target: compare under 100 ms):"
"$helper" query "$db"
"$helper" query "$db"
ls -l "$db" | awk '{printf "archive file: %.0f MB\n", $5 / 1e6}'
