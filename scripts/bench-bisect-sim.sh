#!/bin/sh
# Bisects simulated noisy histories with the sequential method of the
# bisect crate and with a naive fixed-repeat bisection, and prints the
# accuracy (culprit found) and the mean number of measurements of each.
#
# Usage: scripts/bench-bisect-sim.sh N_COMMITS STEP_PCT CV_PCT SHAPE TRIALS SEED \
#            [NAIVE_REPEATS] [MAX_REPEATS]
#   SHAPE          normal, heavy (Student t, 3 degrees of freedom) or
#                  outliers (2% of repeats lose 10-40%)
#   NAIVE_REPEATS  comma-separated fixed repeat counts (default 3,10)
#   MAX_REPEATS    the sequential method's cap per commit (default 100)
#
# Example: scripts/bench-bisect-sim.sh 1024 5 2 normal 1000 1
set -eu
if [ "$#" -lt 6 ]; then
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
cd "$(dirname "$0")/.."
exec cargo run --quiet --release -p bisect --example simulate -- "$@"
