#!/bin/sh
# Archive benchmark (not a test), on a SQLite file and on PostgreSQL:
# import 100k generated run records with `netbisect archive import`,
# grow the archive to 1M runs (900k more generated runs stored into the
# file directly, then copied from it into PostgreSQL with binary COPY),
# then time the real `netbisect compare` (all runs of two commits: 2 x
# 100 runs in 20 configurations) and `netbisect history` (one metric of
# one config_key under one label: 5000 runs across 1000 commits, in time
# order), each process from start to exit, on both archives in turns,
# and the selections they make in-process.
#
# The PostgreSQL figures come from a cluster of the script's own: made
# with the newest installed server (/usr/lib/postgresql/*/bin) in a
# temporary directory, as the postgres user when run as root, listening
# on 127.0.0.1 on a free port with the server's default settings, and
# stopped and removed when the script ends. Without a PostgreSQL server
# installed, only the SQLite figures are measured.
#
# Usage: scripts/bench-archive.sh [WORKDIR]
# (needs about 3.5 GB free in WORKDIR and 5 GB in the temporary
# directory; CARGO_TARGET_DIR is honoured)
#
# Environment:
#   IMPORT_ONLY=1    measure the two imports and stop (no 1M archive)
#   IMPORT_RUNS=N    import N times into each archive, each time a new
#                    one, the backends taking turns, and quote the median
#                    (default 1)
#   BEFORE=BINARY    time the imports of another netbisect build too, in
#                    turns with this one's (each into a new archive), and
#                    print the ratio of the medians
# Each import's peak RSS is printed when /usr/bin/time is installed.
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
bin=${CARGO_TARGET_DIR:-target}/release/netbisect
helper=${CARGO_TARGET_DIR:-target}/release/examples/bench_archive

# Prints the wall time of a command in milliseconds; its output is
# discarded, and a failure stops the script.
time_ms() {
    start=$(date +%s%N)
    "$@" >/dev/null || { echo "failed: $*" >&2; exit 1; }
    end=$(date +%s%N)
    echo "$(( (end - start) / 1000000 ))"
}

# Prints the wall time of a command in seconds, to a tenth.
time_s() {
    start=$(date +%s%N)
    "$@" >/dev/null || { echo "failed: $*" >&2; exit 1; }
    end=$(date +%s%N)
    echo "$(( (end - start) / 1000000 ))" | awk '{ printf "%.1f", $1 / 1000 }'
}

# Reads milliseconds, one a line; prints their median, min and max.
summary() {
    sort -n | awk '{ ms[NR] = $1 } END {
        printf "median %d ms (min %d, max %d, %d runs)\n",
            ms[(NR + 1) / 2], ms[1], ms[NR], NR }'
}

# The PostgreSQL cluster: its directory, binaries and address.
pg_dir=
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
pg_archive=

# Runs a command as the cluster's owner: the postgres user when root.
as_pg() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

stop_cluster() {
    if [ -n "$pg_dir" ]; then
        if [ -f "$pg_dir/data/postmaster.pid" ]; then
            as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null || true
        fi
        rm -rf "$pg_dir"
        pg_dir=
    fi
}
trap stop_cluster EXIT
trap 'stop_cluster; exit 130' INT TERM

start_cluster() {
    pg_dir=$(mktemp -d)
    chmod 700 "$pg_dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$pg_dir"
    as_pg sh -c "echo bench-password >'$pg_dir/password'"
    as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U netbisect -E UTF8 --locale=C \
        --auth-local=trust --auth-host=scram-sha-256 \
        --pwfile="$pg_dir/password" >/dev/null
    port=$("$helper" free-port)
    as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w \
        -o "-p $port -k $pg_dir -c listen_addresses=127.0.0.1" start >/dev/null
    as_pg "$pg_bin/createdb" -h "$pg_dir" -p "$port" -U netbisect bench
    pg_archive=postgres://netbisect:bench-password@127.0.0.1:$port/bench
    echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{ print $3 }') on port $port"
}

# The median of the milliseconds in file $1.
median() {
    sort -n "$1" | awk '{ ms[NR] = $1 } END { print ms[int((NR + 1) / 2)] }'
}

# Times a netbisect command ($2...) 11 times on each archive, after one
# run on each that warms the caches, the SQLite file and PostgreSQL
# taking turns so that a change of load falls on both; prints the
# summary of each and the ratio of their medians. $1 names the command.
in_turns() {
    name=$1
    shift
    : >"$work/$name.sqlite"
    : >"$work/$name.postgres"
    time_ms env NETBISECT_ARCHIVE="$db" "$bin" "$@" >/dev/null
    if [ -n "$pg_archive" ]; then
        time_ms env NETBISECT_ARCHIVE="$pg_archive" "$bin" "$@" >/dev/null
    fi
    for attempt in 1 2 3 4 5 6 7 8 9 10 11; do
        time_ms env NETBISECT_ARCHIVE="$db" "$bin" "$@" >>"$work/$name.sqlite"
        if [ -n "$pg_archive" ]; then
            time_ms env NETBISECT_ARCHIVE="$pg_archive" "$bin" "$@" \
                >>"$work/$name.postgres"
        fi
    done
    echo "  $name, SQLite:     $(summary <"$work/$name.sqlite")"
    if [ -n "$pg_archive" ]; then
        echo "  $name, PostgreSQL: $(summary <"$work/$name.postgres")," \
            "$(echo "$(median "$work/$name.postgres") $(median "$work/$name.sqlite")" |
                awk '{ printf "%.2f", $1 / $2 }')x SQLite's"
    fi
}

echo "generating 100000 records..."
"$helper" gen 100000 "$work/runs.jsonl"
ls -l "$work/runs.jsonl" | awk '{printf "  %.0f MB\n", $5 / 1e6}'

IMPORT_ONLY=${IMPORT_ONLY:-}
IMPORT_RUNS=${IMPORT_RUNS:-1}
BEFORE=${BEFORE:-}
if [ -n "$BEFORE" ] && [ ! -x "$BEFORE" ]; then
    echo "bench-archive: BEFORE=$BEFORE is not an executable" >&2
    exit 2
fi

# Imports the generated records with binary $1 into archive $2 (an empty
# one); appends the wall time in milliseconds to file $3 and prints the
# time and the peak RSS.
timed_import() {
    if [ -x /usr/bin/time ]; then
        start=$(date +%s%N)
        NETBISECT_ARCHIVE="$2" /usr/bin/time -f %M -o "$work/rss" \
            "$1" archive import "$work/runs.jsonl" >/dev/null ||
            { echo "failed: import with $1" >&2; exit 1; }
        end=$(date +%s%N)
        rss=", peak RSS $(awk '{ printf "%.0f", $1 / 1024 }' "$work/rss") MiB"
    else
        start=$(date +%s%N)
        NETBISECT_ARCHIVE="$2" "$1" archive import "$work/runs.jsonl" >/dev/null ||
            { echo "failed: import with $1" >&2; exit 1; }
        end=$(date +%s%N)
        rss=
    fi
    ms=$(( (end - start) / 1000000 ))
    echo "$ms" >>"$3"
    echo "$ms" | awk -v rss="$rss" '{ printf "%.1f s%s", $1 / 1000, rss }'
}

# An empty archive of each backend for the next import.
fresh_sqlite() {
    rm -f "$db" "$db-wal" "$db-shm"
}
fresh_postgres() {
    as_pg "$pg_bin/dropdb" -h "$pg_dir" -p "$port" -U netbisect --if-exists bench
    as_pg "$pg_bin/createdb" -h "$pg_dir" -p "$port" -U netbisect bench
}

# The median of file $1 in seconds, to a tenth.
median_s() {
    median "$1" | awk '{ printf "%.1f", $1 / 1000 }'
}

[ -n "$pg_bin" ] && start_cluster
: >"$work/import.sqlite"
: >"$work/import.postgres"
: >"$work/import-before.sqlite"
: >"$work/import-before.postgres"
echo "import of 100000 records into a SQLite file (target: under 20 s)"
echo "and into PostgreSQL (target: within 2x of SQLite's), $IMPORT_RUNS time(s) each:"
for attempt in $(seq "$IMPORT_RUNS"); do
    echo "  load: $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ -n "$BEFORE" ]; then
        fresh_sqlite
        echo "  SQLite, before:     $(timed_import "$BEFORE" "$db" "$work/import-before.sqlite")"
        if [ -n "$pg_archive" ]; then
            fresh_postgres
            echo "  PostgreSQL, before: $(timed_import "$BEFORE" "$pg_archive" \
                "$work/import-before.postgres")"
        fi
    fi
    fresh_sqlite
    echo "  SQLite:             $(timed_import "$bin" "$db" "$work/import.sqlite")"
    if [ -n "$pg_archive" ]; then
        fresh_postgres
        echo "  PostgreSQL:         $(timed_import "$bin" "$pg_archive" "$work/import.postgres")"
    fi
done
sqlite_import=$(median_s "$work/import.sqlite")
echo "  import, SQLite: $sqlite_import s (median)"
if [ -n "$pg_archive" ]; then
    pg_import=$(median_s "$work/import.postgres")
    echo "  import, PostgreSQL: $pg_import s (median, $(echo "$pg_import $sqlite_import" |
        awk '{ printf "%.2f", $1 / $2 }')x SQLite's)"
else
    echo "no PostgreSQL server installed (/usr/lib/postgresql/*/bin): SQLite only"
fi
# "this build's median over the median before", of backend $1.
ratio_before() {
    echo "$(median "$work/import.$1") $(median "$work/import-before.$1")" |
        awk '{ printf "%.2f", $1 / $2 }'
}
if [ -n "$BEFORE" ]; then
    echo "  before, SQLite: $(median_s "$work/import-before.sqlite") s" \
        "(median; this build takes $(ratio_before sqlite)x of it)"
    if [ -n "$pg_archive" ]; then
        echo "  before, PostgreSQL: $(median_s "$work/import-before.postgres") s" \
            "(median; this build takes $(ratio_before postgres)x of it)"
    fi
fi
[ -n "$IMPORT_ONLY" ] && exit 0

# Generated commit ids share their first 24 digits, so give them whole.
first=$("$helper" commit 10)
second=$("$helper" commit 9000)
config_key=$("$helper" config-key)

echo "growing the SQLite archive to 1000000 runs..."
"$helper" fill "$db" 100000 900000
ls -l "$db" | awk '{printf "  archive file: %.0f MB\n", $5 / 1e6}'

if [ -n "$pg_archive" ]; then
    # The same 900000 runs as the file's, copied from the file with
    # binary COPY: stored in batches of INSERT statements, as `archive
    # import` stores them, they took over half an hour.
    echo "growing the PostgreSQL archive to 1000000 runs (copied from the file)..."
    echo "  copy: $(time_s "$helper" copy "$db" "$pg_archive" 100000) s"
    # What autovacuum would do in its own time: the planner's statistics
    # and the visibility map after the bulk load.
    as_pg "$pg_bin/vacuumdb" -h "$pg_dir" -p "$port" -U netbisect --analyze bench \
        >/dev/null
    echo "  database: $(as_pg "$pg_bin/psql" -h "$pg_dir" -p "$port" -U netbisect -At \
        -c "SELECT pg_size_pretty(pg_database_size('bench'))" bench)"
fi

echo "netbisect compare A B (two commits: 2 x 100 runs) on 1000000 runs"
echo "(target: under 100 ms):"
echo "  load: $(cut -d' ' -f1-3 /proc/loadavg)"
in_turns compare compare "$first" "$second"
in_turns "compare --json" compare --json "$first" "$second"
echo "netbisect history --metric throughput_bps --label step3 --config-key ..."
echo "(5000 runs in time order) on 1000000 runs (target: under 100 ms):"
echo "  load: $(cut -d' ' -f1-3 /proc/loadavg)"
in_turns history history --metric throughput_bps --label step3 \
    --config-key "$config_key"
echo "  load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "selections alone, in-process, SQLite:"
"$helper" query "$db"
if [ -n "$pg_archive" ]; then
    echo "selections alone, in-process, PostgreSQL:"
    "$helper" query "$pg_archive"
fi
NETBISECT_ARCHIVE="$db" "$bin" compare "$first" "$second" | head -12
