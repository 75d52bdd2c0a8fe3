//! What the machine tells of itself before each fresh measurement: the
//! progress of the walk.

use super::{Machine, Target};
use crate::ends::{self, Difference};
use crate::graph;
use crate::progress::{EndsProgress, Phase, Progress};

impl Machine<'_> {
    pub(crate) fn progress(&self, target: Target) -> Progress<'_> {
        let left = graph::steps_left(self.candidates_left as usize);
        let (step, est_steps_total, est_samples_left) = match (&self.posterior, self.phase) {
            (_, Phase::Ends) => (0, left, None),
            // The probabilistic method has no steps of its own: count the
            // commits it has visited, and estimate the samples left from
            // the posterior's entropy.
            (Some(state), Phase::Steps) => {
                let visited = state.visited.len() as u32 + 1;
                (visited, visited + left, Some(state.est_samples_left))
            }
            (Some(state), Phase::Confirm) => {
                let visited = state.visited.len() as u32;
                (visited, visited, Some(0))
            }
            (None, Phase::Steps) => (
                self.steps.len() as u32 + 1,
                self.steps.len() as u32 + left,
                None,
            ),
            (None, Phase::Confirm) => (self.steps.len() as u32, self.steps.len() as u32, None),
        };
        let ends = (self.phase == Phase::Ends).then(|| {
            let (good, bad) = self.ends_samples();
            EndsProgress {
                wait: self.ends_wait,
                n_each: good.len().min(bad.len()) as u32,
                max_each: ends::end_cap(&self.config.decision),
                difference: Difference::yuen(good, bad, ends::END_CONFIDENCE),
            }
        });
        Progress {
            phase: self.phase,
            ends,
            step,
            est_steps_total,
            est_samples_left,
            commit: self.info(target),
            n_samples: self.samples(target).len() as u32,
            n_measurements: self.n_measurements(),
            candidates_left: self.candidates_left,
            estimate: self.estimate.as_ref(),
        }
    }
}
