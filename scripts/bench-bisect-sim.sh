#!/bin/sh
# Bisects simulated noisy histories with the bisect crate's two methods
# (sequential and posterior) and with a naive fixed-repeat bisection, and
# prints the accuracy (culprit found) and the mean number of measurements
# of each (the ends included, the confirmation excluded), and for the two
# methods how often the ends were refused and the median repeats of each
# end before the steps or the refusal. STEP_PCT 0 simulates ends that do
# not differ. With --jobs K,... it runs the posterior method alone with K
# measurements at once for each K (bisect run --jobs K), and prints the
# rounds (wall-clock in units of one measurement, each taking one unit)
# beside the measurements, both as a share of one job's measurements.
# With --min-effect PCT the ends' futility bound is built against that
# effect, as `bisect start --min-effect PCT` builds it (a promise: ends
# that differ by that much are refused at most 2% of the time); without
# it, against the larger of the default 1% and 1.5 noise scales.
#
# Usage: scripts/bench-bisect-sim.sh [--min-effect PCT] [--jobs K,...] \
#            N_COMMITS STEP_PCT CV_PCT SHAPE TRIALS SEED [NAIVE_REPEATS] \
#            [MAX_REPEATS]
#   SHAPE          normal, heavy (Student t, 3 degrees of freedom),
#                  outliers (2% of repeats lose 10-40%), bimodal (two
#                  levels one noise scale either side, as CPU placement
#                  makes them) or drift (1% down per hundred repeats)
#   NAIVE_REPEATS  comma-separated fixed repeat counts (default 3,10)
#   MAX_REPEATS    both methods' cap per commit (default 100)
#
# Examples: scripts/bench-bisect-sim.sh 1024 5 2 normal 1000 1
#           scripts/bench-bisect-sim.sh --jobs 1,2,4,8 1024 5 5 normal 1000 1
#           scripts/bench-bisect-sim.sh --min-effect 5 1024 5 5 normal 1000 1
set -eu
n_args="$#"
for option in "${1:-}" "${3:-}"; do
    case "$option" in
    --jobs | --min-effect) n_args=$((n_args - 2)) ;;
    *) break ;;
    esac
done
if [ "$n_args" -lt 6 ]; then
    sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
cd "$(dirname "$0")/.."
exec cargo run --quiet --release -p bisect --example simulate -- "$@"
