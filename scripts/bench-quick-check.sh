#!/bin/sh
# What the check before the first write costs on a large SQLite archive
# (not a test): SQLite's `PRAGMA quick_check`, which reads every page of
# the file, runs once per process before its first write. Fills an
# archive with RUNS generated runs (default 100000), then times, each
# from process start to exit and five times (median, min, max):
#
# - `netbisect archive import` of one record into that archive (the
#   record is stored by the first, already there for the others: each
#   still checks the file before its write);
# - the same into an archive of one run, where the check costs nothing;
# - `PRAGMA quick_check(1)` alone, through the sqlite3 shell when it is
#   installed.
#
# The file is read from the page cache (it was just written, and each
# attempt reads it again): a file read cold from disk costs its read on
# top. On a shared host the figures follow the load, which is printed.
#
# Usage: scripts/bench-quick-check.sh [RUNS [WORKDIR]]
# (needs about 3 KiB per run free in WORKDIR, a temporary directory
# removed at the end when none is given; CARGO_TARGET_DIR is honoured)
set -eu
cd "$(dirname "$0")/.."
runs=${1:-100000}
if [ -n "${2:-}" ]; then
    work=$2
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi

cargo build --release --quiet --bin netbisect
cargo build --release --quiet -p archive --example bench_archive
bin=${CARGO_TARGET_DIR:-target}/release/netbisect
helper=${CARGO_TARGET_DIR:-target}/release/examples/bench_archive

time_ms() {
    start=$(date +%s%N)
    "$@" >/dev/null || { echo "failed: $*" >&2; exit 1; }
    end=$(date +%s%N)
    echo "$(( (end - start) / 1000000 ))"
}

summary() {
    sort -n | awk '{ ms[NR] = $1 } END {
        printf "median %d ms (min %d, max %d, %d runs)\n",
            ms[(NR + 1) / 2], ms[1], ms[NR], NR }'
}

large=$work/large.db
small=$work/small.db
rm -f "$large" "$large-wal" "$large-shm" "$small" "$small-wal" "$small-shm"
"$helper" gen 1 "$work/one.jsonl"
"$helper" fill "$large" 1 "$runs" | sed 's/^/large: /'
"$helper" fill "$small" 1 1 | sed 's/^/small: /'
echo "large archive: $(du -m "$large" | cut -f1) MiB"

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "import of one record, large archive: $(for attempt in 1 2 3 4 5; do
    time_ms env NETBISECT_ARCHIVE="$large" "$bin" -q archive import "$work/one.jsonl"
done | summary)"
echo "import of one record, archive of one run: $(for attempt in 1 2 3 4 5; do
    time_ms env NETBISECT_ARCHIVE="$small" "$bin" -q archive import "$work/one.jsonl"
done | summary)"
if command -v sqlite3 >/dev/null; then
    echo "PRAGMA quick_check(1), sqlite3 $(sqlite3 --version | cut -d' ' -f1): $(
        for attempt in 1 2 3 4 5; do
            time_ms sqlite3 "$large" 'PRAGMA quick_check(1)'
        done | summary)"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
