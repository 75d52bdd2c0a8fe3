#!/usr/bin/env bash
# Peak memory (maximum resident set size, from GNU time's %M) of netbisect
# reading each kind of input at or past its documented ceiling, one row
# per reader:
#
#   measure stdout   verdict whose --measure prints 500 MB (kept: 64 MiB)
#   bzImage header   bench --kernel of a 1.5 GB file with a bzImage header
#                    (refused from its size, before it is read)
#   vm-settings      bench --kernel --vm-settings /dev/zero (refused: not a
#                    regular file) and a file of 64 KiB + 1 (refused)
#   plan --commits   plan at its limit, 100000 commits (PLAN_COMMITS), and
#                    2^64-1 (refused before anything is allocated)
#   JSON record      archive import of a 16 MB line of 8 million values
#                    (refused: over 1000000 values and members), and of a
#                    line at that ceiling (read whole, then refused as no
#                    record)
#   iperf3 JSON      archive import of iperf3's output padded with 8
#                    million values (16 MB; the padding is skipped)
#   netperf mail     archive import of a netperf table of 200000
#                    labelled rows (refused at the row that starts run
#                    100001, before any run is built)
#   stdin, 1 GB      `yes | head -c 1G | netbisect archive import -`
#                    (refused at its first ceiling, read as a stream)
#   histograms       archive import of 100 TCP_RR records at the layout's
#                    ceiling (30 iterations and the summary, 2240 buckets
#                    each: imported, in batches), and of 100 records of
#                    330000 buckets each, two histograms of 165000
#                    (refused by the record check)
#   long side names  archive import of a mail of 99990 rows whose side
#                    names are 1000 bytes long (104 MB; imported)
#
# Each row says the exit code too: 2 is a refusal of the input, 125 is
# verdict's "cannot tell". Runs on loopback in a temporary directory.
# Needs GNU time (/usr/bin/time).
# The records are made by archive's example memory_inputs (MEMORY_INPUTS,
# built by `cargo build -p archive --example memory_inputs`).
# Usage: scripts/bench-memory.sh   (env: NETBISECT, PLAN_COMMITS, MEMORY_INPUTS)
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
NETBISECT=${NETBISECT:-$HERE/target/release/netbisect}
PLAN_COMMITS=${PLAN_COMMITS:-100000}
[ -x "$NETBISECT" ] || { echo "no $NETBISECT: cargo build --release, or set NETBISECT" >&2; exit 2; }
MEMORY_INPUTS=${MEMORY_INPUTS:-$(dirname "$NETBISECT")/examples/memory_inputs}
[ -x "$MEMORY_INPUTS" ] || { echo "no $MEMORY_INPUTS: cargo build -p archive --example memory_inputs" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ARCHIVE=$WORK/archive.db
NB=("$NETBISECT" --archive "$ARCHIVE")

# A file with an x86 boot header ("HdrS" at 0x202) and nothing else.
fake_kernel() {
    head -c 4096 /dev/zero > "$1"
    printf 'HdrS' | dd of="$1" bs=1 seek=514 conv=notrunc status=none
}

# row NAME COMMAND...: the command's peak RSS in MiB and its exit code.
row() {
    local name=$1
    shift
    local code=0
    /usr/bin/time -f '%M' -o "$WORK/rss" "$@" > /dev/null 2> "$WORK/err" || code=$?
    local kib
    kib=$(tail -n 1 "$WORK/rss")
    printf '%-34s %9.1f %5s\n' "$name" "$(echo "$kib / 1024" | bc -l)" "$code"
}

"${NB[@]}" bench -t TCP_STREAM -l 0.2 --commit cccc1111 > /dev/null 2>&1
"${NB[@]}" bench -t TCP_STREAM -l 0.2 --commit dddd2222 > /dev/null 2>&1
fake_kernel "$WORK/huge-bzImage"
truncate -s 1536M "$WORK/huge-bzImage"
fake_kernel "$WORK/bzImage"
head -c 65537 /dev/zero | tr '\0' '#' > "$WORK/long.conf"
# zeros N: N copies of "0," on one line.
zeros() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "0," }'; }
{ printf '{"schema":"netbisect.run/1.1","x":['; zeros 8000000; printf '0]}\n'; } > "$WORK/line16.jsonl"
{ printf '{"schema":"netbisect.run/1.1","x":['; zeros 999000; printf '0]}\n'; } > "$WORK/line1m.jsonl"
{ printf '{"padding":['; zeros 8000000; printf '0],'
  tail -c +2 "$HERE/tests/data/peer-outputs/iperf3-tcp-t10.json"; } > "$WORK/iperf3.json"
awk -v n=200000 'BEGIN {
    print "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () port 0 AF_INET : demo"
    print "Recv   Send    Send"
    print "Socket Socket  Message  Elapsed"
    print "Size   Size    Size     Time     Throughput"
    print "bytes  bytes   bytes    secs.    10^6bits/sec"
    print ""
    for (i = 0; i < n; i++)
        printf "%s 131072  16384  16384    10.00    11967.53\n", (i % 2 ? "patched" : "current")
}' > "$WORK/mail200k.txt"
awk -v n=99990 'BEGIN {
    long = sprintf("%990s", ""); gsub(/ /, "s", long)
    print "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () port 0 AF_INET : demo"
    print "Recv   Send    Send"
    print "Socket Socket  Message  Elapsed"
    print "Size   Size    Size     Time     Throughput"
    print "bytes  bytes   bytes    secs.    10^6bits/sec"
    print ""
    for (i = 0; i < n; i++)
        printf "%s%d 131072  16384  16384    10.00    11967.53\n", long, i
}' > "$WORK/mail-long-names.txt"
"$MEMORY_INPUTS" histograms 100 30 2240 > "$WORK/histograms-legal.jsonl"
"$MEMORY_INPUTS" histograms 100 1 165000 > "$WORK/histograms-330k.jsonl"

printf '%-34s %9s %5s\n' "reader" "peak MiB" "exit"
row "measure stdout, 500 MB" "${NB[@]}" verdict --good-run cccc1111 --bad-run dddd2222 \
    --measure "head -c 500000000 /dev/zero"
row "bzImage header, 1.5 GB file" "${NB[@]}" bench --kernel "$WORK/huge-bzImage"
row "vm-settings /dev/zero" "${NB[@]}" bench --kernel "$WORK/bzImage" --vm-settings /dev/zero
row "vm-settings 64 KiB + 1" "${NB[@]}" bench --kernel "$WORK/bzImage" --vm-settings "$WORK/long.conf"
row "plan --commits $PLAN_COMMITS" "${NB[@]}" plan --test "-t TCP_RR" --effect 5 --cv 2 \
    --seconds 10 --commits "$PLAN_COMMITS"
row "plan --commits 2^64-1" "${NB[@]}" plan --test "-t TCP_RR" --effect 5 --cv 2 \
    --seconds 10 --commits 18446744073709551615
row "JSON record line, 16 MB" "${NB[@]}" archive import "$WORK/line16.jsonl"
row "JSON record line, 1e6 values" "${NB[@]}" archive import "$WORK/line1m.jsonl"
row "iperf3 JSON padded to 16 MB" "${NB[@]}" archive import "$WORK/iperf3.json"
row "netperf mail, 200000 labelled rows" "${NB[@]}" archive import "$WORK/mail200k.txt"
row "stdin, 1 GB of yes" bash -c 'yes | head -c 1G | "$@" archive import -' - "${NB[@]}"
row "100 records at 2240 buckets x 31" "${NB[@]}" archive import "$WORK/histograms-legal.jsonl"
row "100 records of 330000 buckets" "${NB[@]}" archive import "$WORK/histograms-330k.jsonl"
row "mail, 99990 rows, long side names" "${NB[@]}" archive import "$WORK/mail-long-names.txt"
