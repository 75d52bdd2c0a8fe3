//! One look of a tracker at its branch: from the commits tracked, the
//! samples the archive holds of each, the track's jobs and regressions,
//! what to do now ([`look`]): which commits to measure (the newest new
//! commit first, then the middle of the widest stretch not measured, as
//! many as the queue has room for, so that commits that land faster than
//! they are measured are measured with a stride whose gaps fill later),
//! which repeats a suspicion at the head asks for, and which regression
//! to open, suspicion to dismiss or regression to mark fixed.
//!
//! Pure: the same inputs give the same plan, so that a tracker that
//! restarts, or two that watch one branch, ask for the same jobs (whose
//! keys then make them one) and open the same regression. The window
//! detection compares with starts after the last level change the track
//! knows of: the first bad commit of its latest regression (open,
//! bisecting or bisected), or the commit at which one was found fixed.

use archive::lab::{Regression, RegressionState};
use bisect::head::{HeadConfig, HeadNext, Suspicion, next_at_head};
use serde::Serialize;
use std::collections::BTreeMap;

/// Priority of a repeat a suspicion asks for: an answer waits on it.
pub const PRIORITY_CONFIRM: i64 = 40;
/// Priority of a bisection's slot.
pub const PRIORITY_BISECT: i64 = 30;
/// Priority of the newest commit's first measurement.
pub const PRIORITY_HEAD: i64 = 20;
/// Priority of a commit measured to fill a gap.
pub const PRIORITY_FILL: i64 = 10;

/// The suffix of a track's key under which its fix suspicions are
/// dismissed (a range of the track's own regressions says "worse").
pub const FIX_SUFFIX: &str = "#fix";

/// What the track's jobs say of one commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitJobs {
    /// Jobs ever asked for it (their repeats are 1 to this).
    pub n_jobs: u32,
    /// Of those, queued or taken and not finished.
    pub n_pending: u32,
}

/// What a look is given.
pub struct Inputs<'a> {
    /// The commits tracked, oldest first.
    pub commits: &'a [String],
    /// The samples of each commit, oldest first.
    pub samples: &'a BTreeMap<String, Vec<f64>>,
    /// The track's point jobs, by commit.
    pub jobs: &'a BTreeMap<String, CommitJobs>,
    /// The track's regressions, and its dismissed fix suspicions.
    pub regressions: &'a [Regression],
    /// Detection's options.
    pub config: &'a HeadConfig,
    /// How many point jobs may wait in the queue at once.
    pub capacity: usize,
}

/// Something to do.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Measure `commit` once more: its job number `repeat`.
    Measure {
        /// The commit.
        commit: String,
        /// The job's number among the commit's.
        repeat: u32,
        /// Its priority in the queue.
        priority: i64,
    },
    /// Open the regression between `good` and `bad`.
    Open {
        /// The last point before the change.
        good: String,
        /// The head, measured to differ.
        bad: String,
        /// What detection found (JSON).
        detail: String,
    },
    /// Record that the suspicion between `good` and `bad` is being
    /// confirmed, under the track's key with `suffix`: every look goes on
    /// with it until it is confirmed or dismissed.
    Suspect {
        /// Empty for a regression's suspicion, [`FIX_SUFFIX`] for a fix's.
        suffix: &'static str,
        /// The last point before the suspected change.
        good: String,
        /// The point compared with it.
        bad: String,
        /// What detection found (JSON).
        detail: String,
    },
    /// Record a suspicion that measuring again did not confirm, under
    /// the track's key with `suffix`.
    Dismiss {
        /// Empty for a regression's suspicion, [`FIX_SUFFIX`] for a fix's.
        suffix: &'static str,
        /// The last point before the suspected change.
        good: String,
        /// The head.
        bad: String,
        /// What detection found (JSON).
        detail: String,
    },
    /// Mark regression `id` fixed at `commit`.
    Fixed {
        /// The regression.
        id: i64,
        /// The head at which the metric was found back.
        commit: String,
    },
}

/// Where the head stands, for the tracker's progress.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum HeadState {
    /// No commit measured yet, or too few samples to compare with.
    Warming,
    /// Nothing suspected.
    Steady,
    /// A suspicion is being confirmed.
    Confirming {
        /// Its figures.
        suspicion: Suspicion,
    },
    /// A change was confirmed (a regression opened, or one fixed).
    Confirmed {
        /// Its figures.
        suspicion: Suspicion,
    },
}

/// What one look decided.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// What to do, in order.
    pub actions: Vec<Action>,
    /// Where the head stands.
    pub head: HeadState,
}

/// The index of the commit after which the window starts: the last level
/// change of `regressions` among `commits`, or 0.
fn window_start(commits: &[String], regressions: &[Regression]) -> usize {
    let index = |commit: &str| commits.iter().position(|tracked| tracked == commit);
    regressions
        .iter()
        .filter_map(|regression| match regression.state {
            RegressionState::Open | RegressionState::Bisecting | RegressionState::Bisected => {
                index(&regression.bad)
            }
            RegressionState::Fixed => regression
                .fixed_by
                .as_deref()
                .and_then(index)
                .or_else(|| index(&regression.bad)),
            RegressionState::Suspected | RegressionState::Refused | RegressionState::Dismissed => {
                None
            }
        })
        .max()
        .unwrap_or(0)
}

/// Whether the regression of track `track` is one of `suffix`'s: a fix's
/// suspicion ([`FIX_SUFFIX`]) or a regression's (no suffix).
fn under_suffix(track: &str, suffix: &str) -> bool {
    track.ends_with(FIX_SUFFIX) == (suffix == FIX_SUFFIX)
}

/// The suspicion of `regressions` under way among `suffix`'s, as indices
/// of `commits` after `start`: its last good point and the point it
/// compares.
fn pinned(
    commits: &[String],
    start: usize,
    regressions: &[Regression],
    suffix: &str,
) -> Option<(usize, usize)> {
    let index = |commit: &str| {
        commits[start..]
            .iter()
            .position(|tracked| tracked == commit)
    };
    regressions
        .iter()
        .filter(|regression| regression.state == RegressionState::Suspected)
        .filter(|regression| under_suffix(&regression.track, suffix))
        .filter_map(|regression| Some((index(&regression.good)?, index(&regression.bad)?)))
        .next_back()
}

/// The plan of one look.
pub fn look(inputs: &Inputs<'_>) -> Plan {
    let commits = inputs.commits;
    let start = window_start(commits, inputs.regressions);
    let window: Vec<Vec<f64>> = commits[start..]
        .iter()
        .map(|commit| inputs.samples.get(commit).cloned().unwrap_or_default())
        .collect();
    let mut actions = Vec::new();
    let mut head = match detect(inputs, start, &window, "", &mut actions) {
        Detected::Nothing(state) => state,
        Detected::Confirmed(suspicion, difference) => {
            actions.push(Action::Open {
                good: commits[start + suspicion.last_good].clone(),
                bad: commits[start + suspicion.compared].clone(),
                detail: detail(&suspicion, Some(&difference)),
            });
            HeadState::Confirmed { suspicion }
        }
    };
    if head == HeadState::Steady
        && let Some(state) = look_for_fix(inputs, start, &window, &mut actions)
    {
        head = state;
    }
    if head == HeadState::Warming {
        warm(inputs, start, &mut actions);
    }
    measure_new(inputs, &mut actions);
    Plan { actions, head }
}

/// What detection at the head found for the plan.
enum Detected {
    /// No change confirmed: where the head stands.
    Nothing(HeadState),
    /// A change confirmed, of this size.
    Confirmed(Suspicion, Box<bisect::ends::Difference>),
}

/// Detection at the head of `window` (the commits after `start`), the
/// suspicions under `suffix` (a regression's, or a fix's with the
/// direction turned round): repeats asked, a suspicion recorded or
/// dismissed.
fn detect(
    inputs: &Inputs<'_>,
    start: usize,
    window: &[Vec<f64>],
    suffix: &'static str,
    actions: &mut Vec<Action>,
) -> Detected {
    let commits = inputs.commits;
    let commit_at = |idx: usize| commits[start + idx].clone();
    let recorded = |good: usize, head: usize| {
        let (good, bad) = (&commits[start + good], &commits[start + head]);
        inputs.regressions.iter().any(|regression| {
            under_suffix(&regression.track, suffix)
                && &regression.good == good
                && &regression.bad == bad
        })
    };
    let reversed;
    let config = if suffix.is_empty() {
        inputs.config
    } else {
        reversed = inputs.config.reversed();
        &reversed
    };
    let pinned = pinned(commits, start, inputs.regressions, suffix);
    match next_at_head(window, config, &recorded, pinned) {
        HeadNext::Warming => Detected::Nothing(HeadState::Warming),
        HeadNext::Steady => Detected::Nothing(HeadState::Steady),
        HeadNext::Measure(suspicion, wanted) => {
            if pinned.is_none() {
                actions.push(Action::Suspect {
                    suffix,
                    good: commit_at(suspicion.last_good),
                    bad: commit_at(suspicion.compared),
                    detail: detail(&suspicion, None),
                });
            }
            for idx in wanted {
                repeat(inputs, &commit_at(idx), PRIORITY_CONFIRM, actions);
            }
            Detected::Nothing(HeadState::Confirming { suspicion })
        }
        HeadNext::Confirmed(suspicion, difference) => Detected::Confirmed(suspicion, difference),
        HeadNext::Dismissed(suspicion) => {
            actions.push(Action::Dismiss {
                suffix,
                good: commit_at(suspicion.last_good),
                bad: commit_at(suspicion.compared),
                detail: detail(&suspicion, None),
            });
            Detected::Nothing(HeadState::Steady)
        }
    }
}

/// After a regression was bisected, whether the metric came back: a
/// change for the better at the head, confirmed as a regression is,
/// that brings the metric back nearer its level before the regression
/// than its level after (more than half the loss made good). The
/// halfway mark, not the minimum effect, decides: a handful of repeats
/// each side measures the level back only to within the noise, and a
/// fix should not be missed for a wobble of a percent.
fn look_for_fix(
    inputs: &Inputs<'_>,
    start: usize,
    window: &[Vec<f64>],
    actions: &mut Vec<Action>,
) -> Option<HeadState> {
    let commits = inputs.commits;
    let regression = inputs
        .regressions
        .iter()
        .rfind(|regression| regression.state == RegressionState::Bisected)
        .filter(|regression| commits.get(start) == Some(&regression.bad))?;
    let before = inputs.samples.get(&regression.good)?;
    let after = inputs.samples.get(&regression.bad)?;
    match detect(inputs, start, window, FIX_SUFFIX, actions) {
        Detected::Nothing(HeadState::Confirming { suspicion }) => {
            Some(HeadState::Confirming { suspicion })
        }
        Detected::Nothing(_) => None,
        Detected::Confirmed(suspicion, difference) => {
            let back = difference.new_mean;
            let level = bisect::robust::mean_var(before).0;
            let regressed = bisect::robust::mean_var(after).0;
            let worse_pct = |value: f64| match inputs.config.direction {
                run_record::record::Direction::HigherIsBetter => (level - value) / level * 100.0,
                run_record::record::Direction::LowerIsBetter => (value - level) / level * 100.0,
            };
            let still_worse_pct = worse_pct(back);
            let lost_pct = worse_pct(regressed);
            let (good, bad) = (
                commits[start + suspicion.last_good].clone(),
                commits[start + suspicion.compared].clone(),
            );
            if still_worse_pct < lost_pct / 2.0 {
                actions.push(Action::Fixed {
                    id: regression.id,
                    commit: bad,
                });
                Some(HeadState::Confirmed { suspicion })
            } else {
                // Better, but not back: a change of its own, not the fix.
                actions.push(Action::Dismiss {
                    suffix: FIX_SUFFIX,
                    good,
                    bad,
                    detail: detail(&suspicion, Some(&difference)),
                });
                None
            }
        }
    }
}

/// What detection found, as a regression's detail keeps it.
fn detail(suspicion: &Suspicion, difference: Option<&bisect::ends::Difference>) -> String {
    serde_json::json!({
        "suspicion": suspicion,
        "difference": difference,
    })
    .to_string()
}

/// One more repeat of `commit`, unless one is waiting already.
fn repeat(inputs: &Inputs<'_>, commit: &str, priority: i64, actions: &mut Vec<Action>) {
    let jobs = inputs.jobs.get(commit).copied().unwrap_or_default();
    let asked = actions
        .iter()
        .any(|action| matches!(action, Action::Measure { commit: asked, .. } if asked == commit));
    if jobs.n_pending == 0 && !asked {
        actions.push(Action::Measure {
            commit: commit.to_string(),
            repeat: jobs.n_jobs + 1,
            priority,
        });
    }
}

/// Too few samples in the window to compare the head with. Commits never
/// measured come first ([`measure_new`]); then one more sample of the
/// newest point before the head, which the head is compared with. When
/// the head is the window's only point (a level change was just found
/// there), the head is measured again until it holds the window's
/// fewest samples, so that the commit after it is compared at once, and
/// no more: a branch where nothing lands must leave the workers idle.
fn warm(inputs: &Inputs<'_>, start: usize, actions: &mut Vec<Action>) {
    let commits = &inputs.commits[start..];
    if commits.iter().any(|commit| !tried(inputs, commit)) {
        return;
    }
    let n_samples = |commit: &String| inputs.samples.get(commit).map_or(0, Vec::len);
    let Some((head, before)) = commits.split_last() else {
        return;
    };
    let wanted = before
        .iter()
        .rev()
        .find(|commit| n_samples(commit) > 0)
        .unwrap_or(head);
    let n_wanted = n_samples(wanted);
    if n_wanted > 0 && n_wanted < inputs.config.min_baseline_samples {
        repeat(inputs, wanted, PRIORITY_HEAD, actions);
    }
}

/// Whether `commit` was ever asked for.
fn tried(inputs: &Inputs<'_>, commit: &str) -> bool {
    inputs.jobs.get(commit).is_some_and(|jobs| jobs.n_jobs > 0)
}

/// The first measurement of commits never measured: the newest first,
/// then the middle of the widest stretch of such commits, newest
/// stretches first among equals, while the queue has room.
fn measure_new(inputs: &Inputs<'_>, actions: &mut Vec<Action>) {
    let commits = inputs.commits;
    let pending: usize = inputs
        .jobs
        .values()
        .map(|jobs| jobs.n_pending as usize)
        .sum();
    let mut room = inputs.capacity.saturating_sub(pending);
    let mut chosen: Vec<usize> = Vec::new();
    let untried =
        |idx: usize, chosen: &[usize]| !tried(inputs, &commits[idx]) && !chosen.contains(&idx);
    if let Some(head) = commits.len().checked_sub(1)
        && untried(head, &chosen)
    {
        if room == 0 {
            // The newest commit waits for no gap: it takes the room of
            // the next look.
            room = 1;
        }
        chosen.push(head);
        room -= 1;
    }
    while room > 0 {
        // The widest stretch of untried commits; the newest of equals.
        let mut best: Option<(usize, usize)> = None;
        let mut idx = 0;
        while idx < commits.len() {
            if !untried(idx, &chosen) {
                idx += 1;
                continue;
            }
            let first = idx;
            while idx < commits.len() && untried(idx, &chosen) {
                idx += 1;
            }
            let len = idx - first;
            if best.is_none_or(|(_, best_len)| len >= best_len) {
                best = Some((first, len));
            }
        }
        let Some((first, len)) = best else {
            break;
        };
        chosen.push(first + len / 2);
        room -= 1;
    }
    for idx in chosen {
        let priority = if idx + 1 == commits.len() {
            PRIORITY_HEAD
        } else {
            PRIORITY_FILL
        };
        actions.push(Action::Measure {
            commit: commits[idx].clone(),
            repeat: 1,
            priority,
        });
    }
}

#[cfg(test)]
mod tests;
