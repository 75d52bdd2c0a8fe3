#!/bin/sh
# Detection at the head (netbisect track) over simulated branches: each
# trial follows a branch whose metric drops by STEP_PCT at a commit 40 to
# 59 commits in (20 commits measured before tracking starts, then one
# measurement per commit as it lands, and the repeats that confirm or
# dismiss a suspicion before the next lands), and a branch of 1000
# commits without a step. For each noise level it prints how often the
# step was confirmed as its commit landed (at_K), within one and two
# commits after it, how often it was never confirmed (within 30 commits),
# the mean delay in commits, the measurements per commit of the branch
# with the step, the false alarms per 1000 commits of the quiet branch
# (ranges confirmed that hold no step), its measurements per commit, and
# its suspicions per 1000 commits.
#
# Usage: scripts/bench-track-sim.sh STEP_PCT CV_PCT[,CV_PCT...] SHAPE TRIALS SEED \
#            [--min-effect PCT] [--sigmas Z] [--suspect-points N] [--flat-commits N]
#   SHAPE  normal, heavy, outliers, bimodal or drift, as bench-bisect-sim.sh
#
# Examples: scripts/bench-track-sim.sh 5 2,5 normal 2000 1
#           scripts/bench-track-sim.sh 12.5 5 normal 2000 1
set -eu
if [ "$#" -lt 5 ]; then
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
cd "$(dirname "$0")/.."
exec cargo run --quiet --release -p bisect --example track -- "$@"
