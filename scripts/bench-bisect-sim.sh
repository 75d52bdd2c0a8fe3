#!/bin/sh
# Bisects simulated noisy histories with the bisect crate's two methods
# (sequential and posterior) and with a naive fixed-repeat bisection, and
# prints the accuracy (culprit found) and the mean number of measurements
# of each (the ends included, the confirmation excluded), and for the two
# methods how often the ends were refused and the median repeats of each
# end before the steps or the refusal. STEP_PCT 0 simulates ends that do
# not differ.
#
# Usage: scripts/bench-bisect-sim.sh N_COMMITS STEP_PCT CV_PCT SHAPE TRIALS SEED \
#            [NAIVE_REPEATS] [MAX_REPEATS]
#   SHAPE          normal, heavy (Student t, 3 degrees of freedom),
#                  outliers (2% of repeats lose 10-40%), bimodal (two
#                  levels one noise scale either side, as CPU placement
#                  makes them) or drift (1% down per hundred repeats)
#   NAIVE_REPEATS  comma-separated fixed repeat counts (default 3,10)
#   MAX_REPEATS    both methods' cap per commit (default 100)
#
# Example: scripts/bench-bisect-sim.sh 1024 5 2 normal 1000 1
set -eu
if [ "$#" -lt 6 ]; then
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
cd "$(dirname "$0")/.."
exec cargo run --quiet --release -p bisect --example simulate -- "$@"
