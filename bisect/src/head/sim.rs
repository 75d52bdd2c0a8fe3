//! Detection at the head over simulated branches: commits land one at
//! a time, each is measured once as it lands, and a suspicion at the
//! head is confirmed or dismissed by measuring again before the next
//! commit lands ([`super::next_at_head`]), as a tracker with its workers
//! free does. A branch has a step of `step_pct` at commit `step_at`, or
//! none; its noise is that of the bisection's simulated histories
//! ([`History`], [`NoiseShape`]).
//!
//! [`track`] follows one branch and says when the step was confirmed
//! (the commit that had just landed), how many confirmations named a
//! range without the step (false alarms), and how many measurements it
//! took. A false alarm is treated as the tracker treats one: its
//! regression's bisection refuses it, and the same range is not
//! suspected again.

use super::{HeadConfig, HeadNext, next_at_head};
use crate::sim::{History, NoiseShape, Rng};
use std::collections::BTreeSet;

/// A simulated branch.
#[derive(Clone, Debug)]
pub struct Branch {
    /// Commits that land, one after the other.
    pub n_commits: usize,
    /// The first commit after the step (none: no step).
    pub step_at: Option<usize>,
    /// The step, percent lower.
    pub step_pct: f64,
    /// Noise of one measurement, percent.
    pub cv_pct: f64,
    /// Its shape.
    pub shape: NoiseShape,
    /// Commits measured once before tracking starts (the window's
    /// first points).
    pub n_before: usize,
}

/// What following one branch gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrackResult {
    /// The commit that had just landed when the step was confirmed.
    pub confirmed_at: Option<usize>,
    /// Confirmations of ranges without the step.
    pub false_alarms: u32,
    /// Suspicions, confirmed or dismissed.
    pub n_suspicions: u32,
    /// Measurements taken, the first points' included.
    pub n_measurements: u64,
    /// Commits measured (landed, and the first points).
    pub n_commits: u64,
}

impl TrackResult {
    /// Commits landed after the step when it was confirmed: 0 when it
    /// was confirmed as the step's commit landed.
    pub fn delay(&self, branch: &Branch) -> Option<usize> {
        Some(self.confirmed_at? - branch.step_at?)
    }
}

/// Follows `branch` until its step is confirmed or its commits run out.
pub fn track(branch: &Branch, config: &HeadConfig, rng: &mut Rng) -> TrackResult {
    let history = History {
        n_commits: branch.n_commits,
        culprit_idx: branch.step_at.unwrap_or(usize::MAX),
        old_value: 1e9,
        step_pct: branch.step_pct,
        cv_pct: branch.cv_pct,
        shape: branch.shape,
    };
    let mut result = TrackResult::default();
    let mut points: Vec<Vec<f64>> = Vec::new();
    let mut dismissed: BTreeSet<(usize, usize)> = BTreeSet::new();
    let measure = |commit: usize, rng: &mut Rng, result: &mut TrackResult| {
        result.n_measurements += 1;
        history.draw_at(Some(commit), 0, rng)
    };
    for commit in 0..branch.n_commits {
        points.push(vec![measure(commit, rng, &mut result)]);
        result.n_commits += 1;
        if commit < branch.n_before {
            continue;
        }
        // The suspicion under way, confirmed or dismissed before the
        // next commit lands.
        let mut pinned = None;
        loop {
            let next = next_at_head(
                &points,
                config,
                &|good, head| dismissed.contains(&(good, head)),
                pinned,
            );
            match next {
                HeadNext::Steady => break,
                HeadNext::Warming => {
                    let sample = measure(commit, rng, &mut result);
                    points[commit].push(sample);
                }
                HeadNext::Measure(suspicion, wanted) => {
                    if pinned.is_none() {
                        pinned = Some((suspicion.last_good, suspicion.compared));
                        result.n_suspicions += 1;
                    }
                    for point in wanted {
                        let sample = measure(point, rng, &mut result);
                        points[point].push(sample);
                    }
                }
                HeadNext::Dismissed(suspicion) => {
                    pinned = None;
                    dismissed.insert((suspicion.last_good, suspicion.compared));
                }
                HeadNext::Confirmed(suspicion, _) => {
                    let holds_step = branch.step_at.is_some_and(|step_at| {
                        suspicion.last_good < step_at && step_at <= suspicion.compared
                    });
                    if holds_step {
                        result.confirmed_at = Some(commit);
                        return result;
                    }
                    pinned = None;
                    result.false_alarms += 1;
                    dismissed.insert((suspicion.last_good, suspicion.compared));
                }
            }
        }
    }
    result
}

/// The results of many branches.
#[derive(Clone, Debug, Default)]
pub struct TrackTally {
    /// Branches followed.
    pub n_branches: u32,
    /// By delay: how many were confirmed that many commits after the
    /// step landed.
    pub by_delay: Vec<u32>,
    /// Branches whose step was not confirmed.
    pub n_missed: u32,
    /// False alarms, all branches.
    pub false_alarms: u64,
    /// Suspicions, all branches.
    pub n_suspicions: u64,
    /// Measurements, all branches.
    pub n_measurements: u64,
    /// Commits measured, all branches.
    pub n_commits: u64,
}

impl TrackTally {
    /// Adds one branch's result.
    pub fn add(&mut self, branch: &Branch, result: &TrackResult) {
        self.n_branches += 1;
        match result.delay(branch) {
            Some(delay) => {
                if self.by_delay.len() <= delay {
                    self.by_delay.resize(delay + 1, 0);
                }
                self.by_delay[delay] += 1;
            }
            None if branch.step_at.is_some() => self.n_missed += 1,
            None => {}
        }
        self.false_alarms += u64::from(result.false_alarms);
        self.n_suspicions += u64::from(result.n_suspicions);
        self.n_measurements += result.n_measurements;
        self.n_commits += result.n_commits;
    }

    /// Percent of the branches confirmed within `delay` commits after
    /// the step.
    pub fn within_pct(&self, delay: usize) -> f64 {
        let n_within: u32 = self.by_delay.iter().take(delay + 1).sum();
        percent(u64::from(n_within), u64::from(self.n_branches))
    }

    /// Mean commits after the step when it was confirmed.
    pub fn mean_delay(&self) -> f64 {
        let n_confirmed: u32 = self.by_delay.iter().sum();
        let total: u64 = self
            .by_delay
            .iter()
            .enumerate()
            .map(|(delay, &n)| delay as u64 * u64::from(n))
            .sum();
        total as f64 / f64::from(n_confirmed.max(1))
    }

    /// False alarms per 1000 commits.
    pub fn false_alarms_per_1000(&self) -> f64 {
        self.false_alarms as f64 * 1000.0 / self.n_commits.max(1) as f64
    }

    /// Suspicions per 1000 commits.
    pub fn suspicions_per_1000(&self) -> f64 {
        self.n_suspicions as f64 * 1000.0 / self.n_commits.max(1) as f64
    }

    /// Measurements per commit.
    pub fn measurements_per_commit(&self) -> f64 {
        self.n_measurements as f64 / self.n_commits.max(1) as f64
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    part as f64 * 100.0 / whole.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use run_record::record::Direction;

    fn branch(step_pct: f64, cv_pct: f64, step_at: Option<usize>) -> Branch {
        Branch {
            n_commits: step_at.map_or(500, |step_at| step_at + 30),
            step_at,
            step_pct,
            cv_pct,
            shape: NoiseShape::Normal,
            n_before: 20,
        }
    }

    /// Pins the figures of docs/benchmarks.md's detection at the head,
    /// on fewer branches: a 5% step in 2% noise is confirmed within the
    /// first commit after it nearly always, and false alarms are rare.
    #[test]
    fn a_step_is_confirmed_at_once_and_false_alarms_are_rare() {
        let config = HeadConfig::new(Direction::HigherIsBetter, 1.0);
        let mut rng = Rng::new(1);
        let mut steps = TrackTally::default();
        for trial in 0..100 {
            let branch = branch(5.0, 2.0, Some(40 + trial % 20));
            steps.add(&branch, &track(&branch, &config, &mut rng));
        }
        assert!(steps.within_pct(1) >= 90.0, "{steps:?}");
        assert!(steps.n_missed <= 2, "{steps:?}");
        let mut flat = TrackTally::default();
        for _ in 0..10 {
            let branch = branch(0.0, 2.0, None);
            flat.add(&branch, &track(&branch, &config, &mut rng));
        }
        assert!(flat.false_alarms_per_1000() < 1.5, "{flat:?}");
        assert!(flat.measurements_per_commit() < 1.6, "{flat:?}");
    }
}
