//! The bisection state machine: measure the ends, refuse or bisect, step
//! through the range one commit at a time with the sequential decision,
//! confirm the culprit, and build the report.
//!
//! The engine takes its measurements through [`Measurer`] and keeps its
//! journal through [`Journal`]; it is deterministic given the
//! measurements. [`run`] replays the journal first (feeding journaled
//! samples instead of measuring), so a bisection resumed after a crash
//! walks the same path, measures nothing it already has, and reaches the
//! same answer. [`status`] replays without measuring anything.

use crate::decision::{
    self, DecisionConfig, Difference, EndsDecision, Method, Model, StepDecision, Verdict,
};
use crate::graph::{self, CommitGraph, CommitInfo, GraphError};
use crate::journal::{BoxError, JOURNAL_SCHEMA, Journal, JournalEvent, JournalSample};
use crate::posterior::{self, Ancestry, Moments};
use crate::report::{self, BisectReport, BisectResult, EndSummary, Refusal, StepReport};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Posterior certainty at which the probabilistic method lets a commit's
/// samples join the reference they resemble.
const REFERENCE_CERTAINTY: f64 = 0.999;

/// A commit whose `P(new)` lies within this of 0 or 1 cannot move the
/// posterior: measuring it again is pointless.
const UNMOVABLE: f64 = 1e-4;

/// The probabilistic method clips samples this many noise scales beyond
/// the farther mean: looser than the sequential test, whose clipping
/// would shrink the within-group spread the posterior learns the noise
/// from and make it overconfident (measured with `bisect-sim`).
const POSTERIOR_CLIP_SIGMAS: f64 = 2.0;

/// Which way is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Larger values are better (throughput, transaction rate).
    HigherIsBetter,
    /// Smaller values are better (latency, CPU).
    LowerIsBetter,
}

/// Options of a bisection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BisectConfig {
    /// Name of the metric bisected on (for the report).
    pub metric: String,
    /// Which way is better (for the report: regression or improvement).
    pub direction: Direction,
    /// The statistical decision's options.
    pub decision: DecisionConfig,
}

/// One fresh repeat from a [`Measurer`].
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The metric's value.
    pub value: f64,
    /// Id of the run record, when there is one.
    pub run_id: Option<String>,
}

/// What measuring a commit once gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Measurement {
    /// A value.
    Sample(Sample),
    /// The commit cannot be measured (build failed, timed out, exit 125):
    /// it is skipped, as `git bisect run` skips on exit 125.
    Skip(String),
}

/// Takes measurements of commits.
pub trait Measurer {
    /// Samples of `commit` measured before, under the same configuration
    /// (the archive's runs with the same commit and config_key). Asked
    /// once per commit per bisection.
    fn archived(&mut self, commit: &CommitInfo) -> Result<Vec<Sample>, BoxError> {
        let _ = commit;
        Ok(Vec::new())
    }

    /// Measures `commit` once (one repeat: one build if needed, one run).
    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError>;
}

/// Where the bisection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Measuring the good and bad ends.
    Ends,
    /// Walking the range.
    Steps,
    /// Extra repeats on the culprit and its parent.
    Confirm,
}

/// Progress, reported before every fresh measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress<'a> {
    /// Where the bisection is.
    pub phase: Phase,
    /// Number of the step (the commit being classified), from 1; 0 while
    /// measuring the ends.
    pub step: u32,
    /// Estimated total number of steps (steps so far + log2 of what is
    /// left).
    pub est_steps_total: u32,
    /// Estimated samples left before the culprit is named (confirmation
    /// excluded), when the method can tell.
    pub est_samples_left: Option<u32>,
    /// The commit about to be measured.
    pub commit: &'a CommitInfo,
    /// Samples of that commit so far.
    pub n_samples: u32,
    /// Samples taken over the whole bisection so far.
    pub n_measurements: u32,
    /// Commits that may still be the culprit.
    pub candidates_left: u32,
}

/// How a bisection ended.
#[expect(
    clippy::large_enum_variant,
    reason = "made once at the end of a bisection; boxing buys nothing"
)]
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Bisected to a commit, or to a range hidden among skips.
    Finished(BisectReport),
    /// The ends do not differ enough to bisect.
    Refused(Refusal),
}

/// Where a bisection stands, from its journal alone.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    /// Where it is.
    pub phase: Phase,
    /// The commit it will measure next; `None` when finished.
    pub next_commit: Option<CommitInfo>,
    /// Samples of that commit so far.
    pub next_n_samples: u32,
    /// Steps classified so far.
    pub steps: Vec<StepReport>,
    /// Commits that may still be the culprit.
    pub candidates_left: u32,
    /// Estimated steps left.
    pub est_steps_left: u32,
    /// Samples taken so far.
    pub n_measurements: u32,
    /// The outcome, when finished.
    pub outcome: Option<Outcome>,
}

/// Why a bisection stopped without an outcome.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The range is not bisectable.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// An end could not be measured.
    #[error("cannot measure the {end} commit {commit}: {reason}")]
    EndUnmeasurable {
        /// `good` or `bad`.
        end: &'static str,
        /// Commit id.
        commit: String,
        /// Why.
        reason: String,
    },
    /// The measurer failed (not a skip: the measuring itself broke).
    #[error("measuring {commit} failed")]
    Measure {
        /// Commit id.
        commit: String,
        /// The measurer's error.
        #[source]
        source: BoxError,
    },
    /// A signal stopped the bisection (journaled).
    #[error("stopped while measuring {commit}")]
    Interrupted {
        /// The commit being measured.
        commit: String,
        /// The signal.
        #[source]
        source: crate::interrupt::Interrupted,
    },
    /// Reading or writing the journal failed.
    #[error("journal failed")]
    Journal(#[source] BoxError),
    /// The journal belongs to another bisection or was written by an
    /// incompatible version.
    #[error("the journal does not match this bisection: {0}")]
    JournalMismatch(String),
}

/// A commit the engine measures: the good end or a node of the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Good,
    Node(usize),
}

#[expect(
    clippy::large_enum_variant,
    reason = "the done action is made once per bisection"
)]
enum Action {
    Measure(Target),
    Done(Outcome),
}

struct StepState {
    node_idx: usize,
    verdict: Verdict,
    llr: f64,
    candidates_after: u32,
}

struct Confirm {
    culprit: usize,
    parent: Target,
    culprit_goal: usize,
    parent_goal: usize,
    parent_unmeasurable: bool,
}

/// The deterministic core: asks for measurements, is fed them.
struct Machine<'g> {
    graph: &'g CommitGraph,
    config: &'g BisectConfig,
    good_samples: Vec<f64>,
    node_samples: Vec<Vec<f64>>,
    skip_reasons: BTreeMap<usize, String>,
    verdicts: BTreeMap<usize, Verdict>,
    steps: Vec<StepState>,
    phase: Phase,
    bad: usize,
    olds: Vec<usize>,
    skipped: BTreeSet<usize>,
    current: Option<(usize, Model, u32)>,
    confirm: Option<Confirm>,
    end_failure: Option<(Target, String)>,
    new_verdicts: Vec<JournalEvent>,
    candidates_left: u32,
    /// The probabilistic method's state; `None` for the sequential one.
    posterior: Option<PosteriorState>,
}

/// What the probabilistic method keeps between two of its rounds.
struct PosteriorState {
    ancestry: Ancestry,
    /// `P(x new)` of every commit after the last round: commits it puts
    /// beyond doubt join the references of the model.
    p_new: Vec<f64>,
    /// Commits in the order they were first measured or skipped.
    visited: Vec<usize>,
    /// The commits that may hold the culprit when the walk ends in a range.
    range: Option<Vec<usize>>,
    /// The culprit's posterior probability when it was named.
    culprit_probability: Option<f64>,
    /// Estimated samples left, from the posterior's entropy.
    est_samples_left: u32,
}

impl<'g> Machine<'g> {
    fn new(graph: &'g CommitGraph, config: &'g BisectConfig) -> Machine<'g> {
        Machine {
            graph,
            config,
            good_samples: Vec::new(),
            node_samples: vec![Vec::new(); graph.nodes.len()],
            skip_reasons: BTreeMap::new(),
            verdicts: BTreeMap::new(),
            steps: Vec::new(),
            phase: Phase::Ends,
            bad: graph.bad_idx(),
            olds: Vec::new(),
            skipped: BTreeSet::new(),
            current: None,
            confirm: None,
            end_failure: None,
            new_verdicts: Vec::new(),
            candidates_left: graph.nodes.len() as u32,
            posterior: (config.decision.method == Method::Posterior).then(|| PosteriorState {
                ancestry: Ancestry::of(graph),
                p_new: Vec::new(),
                visited: Vec::new(),
                range: None,
                culprit_probability: None,
                est_samples_left: 0,
            }),
        }
    }

    fn info(&self, target: Target) -> &'g CommitInfo {
        match target {
            Target::Good => &self.graph.good,
            Target::Node(node_idx) => &self.graph.nodes[node_idx].info,
        }
    }

    fn samples(&self, target: Target) -> &[f64] {
        match target {
            Target::Good => &self.good_samples,
            Target::Node(node_idx) => &self.node_samples[node_idx],
        }
    }

    fn n_measurements(&self) -> u32 {
        (self.good_samples.len() + self.node_samples.iter().map(Vec::len).sum::<usize>()) as u32
    }

    fn feed(&mut self, target: Target, measurement: Measurement) {
        if let (Target::Node(node_idx), Some(state), Phase::Steps) =
            (target, &mut self.posterior, self.phase)
            && self.node_samples[node_idx].is_empty()
            && !self.skip_reasons.contains_key(&node_idx)
        {
            state.visited.push(node_idx);
        }
        match measurement {
            Measurement::Sample(sample) if sample.value.is_finite() => match target {
                Target::Good => self.good_samples.push(sample.value),
                Target::Node(node_idx) => self.node_samples[node_idx].push(sample.value),
            },
            Measurement::Sample(sample) => {
                self.feed_skip(
                    target,
                    format!("measured value {} is not finite", sample.value),
                );
            }
            Measurement::Skip(reason) => self.feed_skip(target, reason),
        }
    }

    fn feed_skip(&mut self, target: Target, reason: String) {
        let is_end = target == Target::Good || target == Target::Node(self.graph.bad_idx());
        if self.phase == Phase::Ends && is_end {
            self.end_failure = Some((target, reason));
            return;
        }
        if let Some(confirm) = &mut self.confirm {
            if target == confirm.parent {
                confirm.parent_unmeasurable = true;
                return;
            }
            if target == Target::Node(confirm.culprit) {
                // The culprit measured before; a flaky skip now only ends
                // the confirmation early.
                confirm.culprit_goal = self.node_samples[confirm.culprit].len();
                return;
            }
        }
        if let Target::Node(node_idx) = target {
            self.skip_reasons.insert(node_idx, reason);
        }
    }

    fn model(&self) -> Option<Model> {
        let mut old_groups: Vec<&[f64]> = vec![&self.good_samples];
        let mut new_groups: Vec<&[f64]> = vec![&self.node_samples[self.graph.bad_idx()]];
        for (&node_idx, &verdict) in &self.verdicts {
            match verdict {
                Verdict::Old => old_groups.push(&self.node_samples[node_idx]),
                Verdict::New => new_groups.push(&self.node_samples[node_idx]),
                Verdict::Unknown | Verdict::Skip => {}
            }
        }
        Model::estimate(&old_groups, &new_groups)
    }

    fn record_verdict(&mut self, node_idx: usize, verdict: Verdict, llr: f64) {
        self.verdicts.insert(node_idx, verdict);
        match verdict {
            Verdict::Old => self.olds.push(node_idx),
            // The probabilistic method gives its verdicts in the order the
            // commits were visited: the bad end moves only backwards.
            Verdict::New if node_idx < self.bad => self.bad = node_idx,
            Verdict::New => {}
            Verdict::Unknown | Verdict::Skip => {
                self.skipped.insert(node_idx);
            }
        }
        self.current = None;
        let candidates_after = self.graph.candidates(self.bad, &self.olds).len() as u32;
        self.candidates_left = candidates_after;
        self.steps.push(StepState {
            node_idx,
            verdict,
            llr,
            candidates_after,
        });
        self.new_verdicts.push(JournalEvent::Verdict {
            commit: self.graph.nodes[node_idx].info.id.clone(),
            verdict,
            n_samples: self.node_samples[node_idx].len() as u32,
            llr,
        });
    }

    fn next(&mut self) -> Result<Action, EngineError> {
        if let Some((target, reason)) = self.end_failure.take() {
            return Err(EngineError::EndUnmeasurable {
                end: if target == Target::Good {
                    "good"
                } else {
                    "bad"
                },
                commit: self.info(target).id.clone(),
                reason,
            });
        }
        loop {
            match self.phase {
                Phase::Ends => {
                    let bad = Target::Node(self.graph.bad_idx());
                    let decision = decision::compare_ends(
                        &self.good_samples,
                        self.samples(bad),
                        &self.config.decision,
                    );
                    match decision {
                        EndsDecision::NeedMore => {
                            let target = if self.good_samples.len() <= self.samples(bad).len() {
                                Target::Good
                            } else {
                                bad
                            };
                            return Ok(Action::Measure(target));
                        }
                        EndsDecision::Refuse => {
                            return Ok(Action::Done(Outcome::Refused(self.refusal())));
                        }
                        EndsDecision::Differ => self.phase = Phase::Steps,
                    }
                }
                Phase::Steps => {
                    let action = if self.posterior.is_some() {
                        self.posterior_step()
                    } else {
                        self.step()?
                    };
                    if let Some(action) = action {
                        return Ok(action);
                    }
                }
                Phase::Confirm => {
                    let Some(confirm) = &self.confirm else {
                        return Ok(Action::Done(self.finish(None)));
                    };
                    let n_parent = self.samples(confirm.parent).len();
                    let n_culprit = self.node_samples[confirm.culprit].len();
                    let parent_left =
                        !confirm.parent_unmeasurable && n_parent < confirm.parent_goal;
                    let culprit_left = n_culprit < confirm.culprit_goal;
                    let parent_done = confirm.parent_goal - n_parent.min(confirm.parent_goal);
                    let culprit_done = confirm.culprit_goal - n_culprit.min(confirm.culprit_goal);
                    // Alternate, parent first, so that a slow drift of the
                    // machine hits both alike.
                    if parent_left && (parent_done >= culprit_done || !culprit_left) {
                        return Ok(Action::Measure(confirm.parent));
                    }
                    if culprit_left {
                        return Ok(Action::Measure(Target::Node(confirm.culprit)));
                    }
                    let culprit = confirm.culprit;
                    return Ok(Action::Done(self.finish(Some(culprit))));
                }
            }
        }
    }

    /// One round of the step phase: `Some` to ask for a measurement or to
    /// end, `None` to go round again.
    fn step(&mut self) -> Result<Option<Action>, EngineError> {
        if let Some(node_idx) = self
            .skip_reasons
            .keys()
            .copied()
            .find(|node_idx| !self.verdicts.contains_key(node_idx))
        {
            let llr = match &self.current {
                Some((current, model, _)) if *current == node_idx => {
                    model.llr(&self.node_samples[node_idx])
                }
                _ => 0.0,
            };
            self.record_verdict(node_idx, Verdict::Skip, llr);
            return Ok(None);
        }
        let (node_idx, model) = match &self.current {
            Some((node_idx, model, _)) => (*node_idx, *model),
            None => {
                let candidates = self.graph.candidates(self.bad, &self.olds);
                self.candidates_left = candidates.len() as u32;
                if candidates.len() == 1 {
                    self.start_confirm(candidates[0]);
                    return Ok(None);
                }
                let Some(node_idx) = self.graph.next_commit(&candidates, self.bad, &self.skipped)
                else {
                    return Ok(Some(Action::Done(self.finish(None))));
                };
                let Some(model) = self.model() else {
                    return Ok(Some(Action::Done(self.finish(None))));
                };
                self.current = Some((node_idx, model, candidates.len() as u32));
                (node_idx, model)
            }
        };
        let samples = &self.node_samples[node_idx];
        match decision::classify(samples, &model, &self.config.decision) {
            StepDecision::NeedMore { .. } => {
                // The evidence a commit can give is bounded by how well the
                // two references are known: once the commit has as many
                // samples as the smaller reference, the next repeat goes to
                // that reference's end instead (and the model is estimated
                // again).
                let n_samples = samples.len() as f64;
                let n_min = f64::from(self.config.decision.min_repeats);
                if n_samples >= n_min && n_samples >= model.n_old.min(model.n_new) {
                    self.current = None;
                    let end = if model.n_old <= model.n_new {
                        Target::Good
                    } else {
                        Target::Node(self.graph.bad_idx())
                    };
                    return Ok(Some(Action::Measure(end)));
                }
                Ok(Some(Action::Measure(Target::Node(node_idx))))
            }
            StepDecision::Decided { verdict, llr } => {
                self.record_verdict(node_idx, verdict, llr);
                Ok(None)
            }
        }
    }

    /// The model of the probabilistic method: the ends, and the commits
    /// the posterior already puts beyond doubt, as references.
    fn posterior_model(&self) -> Option<Model> {
        let bad_idx = self.graph.bad_idx();
        let mut old_groups: Vec<&[f64]> = vec![&self.good_samples];
        let mut new_groups: Vec<&[f64]> = vec![&self.node_samples[bad_idx]];
        if let Some(state) = &self.posterior {
            let doubt = 1.0 - REFERENCE_CERTAINTY;
            for (node_idx, &p_new) in state.p_new.iter().enumerate() {
                let samples = &self.node_samples[node_idx];
                if node_idx == bad_idx || samples.is_empty() {
                    continue;
                }
                if p_new >= 1.0 - doubt {
                    new_groups.push(samples);
                } else if p_new <= doubt {
                    old_groups.push(samples);
                }
            }
        }
        Model::estimate(&old_groups, &new_groups)
    }

    /// The posterior over the culprit under `model`, and `P(x new)` for
    /// every commit.
    fn posterior_of(&self, model: &Model) -> (Vec<f64>, Vec<f64>) {
        let Some(state) = &self.posterior else {
            return (Vec::new(), Vec::new());
        };
        let bad_idx = self.graph.bad_idx();
        // Samples relative to the old mean keep the sums precise; clipped,
        // so that an outlier weighs no more than a sample a few noise
        // scales beyond the farther mean.
        let scale = if model.old_mean.is_finite() && model.old_mean != 0.0 {
            model.old_mean.abs()
        } else {
            1.0
        };
        let moments = |samples: &[f64]| {
            Moments::of(samples.iter().map(|&value| {
                (model.clip_at(value, POSTERIOR_CLIP_SIGMAS) - model.old_mean) / scale
            }))
        };
        let nodes: Vec<(usize, Moments)> = self
            .node_samples
            .iter()
            .enumerate()
            .filter(|(node_idx, samples)| *node_idx != bad_idx && !samples.is_empty())
            .map(|(node_idx, samples)| (node_idx, moments(samples)))
            .collect();
        let culprit = posterior::culprit_probabilities(
            &state.ancestry,
            moments(&self.good_samples),
            moments(&self.node_samples[bad_idx]),
            &nodes,
        );
        let p_new = posterior::new_probabilities(&state.ancestry, &culprit);
        (culprit, p_new)
    }

    /// One round of the probabilistic method: name the culprit when its
    /// posterior is high enough, end in a range when no commit that can
    /// be measured would move the posterior, else measure the commit whose
    /// next sample tells the most.
    fn posterior_step(&mut self) -> Option<Action> {
        let Some(model) = self.posterior_model() else {
            return Some(Action::Done(self.finish(None)));
        };
        let (culprit, p_new) = self.posterior_of(&model);
        let confidence = self
            .config
            .decision
            .culprit_confidence
            .clamp(0.5, 1.0 - 1e-9);
        let credible = posterior::credible_set(&culprit, confidence);
        self.candidates_left = credible.len() as u32;
        let bad_idx = self.graph.bad_idx();
        let max_repeats = self.config.decision.max_repeats.max(1) as usize;
        let best = credible.first().copied().unwrap_or(bad_idx);
        let entropy: f64 = culprit
            .iter()
            .filter(|&&p| p > 0.0)
            .map(|&p| -p * p.ln())
            .sum();
        let per_sample = posterior::information_per_sample(0.5, model.effect_size());
        if let Some(state) = &mut self.posterior {
            state.p_new = p_new.clone();
            state.est_samples_left = if per_sample > 0.0 {
                ((entropy + (1.0 / (1.0 - confidence)).ln()) / per_sample).ceil() as u32
            } else {
                0
            };
        }
        if culprit.get(best).copied().unwrap_or(0.0) >= confidence
            && !self.skip_reasons.contains_key(&best)
        {
            // The answer rests on the culprit looking new and its parent
            // old: one wild sample of either must not decide it alone.
            let guard = self.config.decision.min_repeats as usize;
            let parent = match self.graph.nodes[best].parents.first() {
                Some(&parent_idx) => Target::Node(parent_idx),
                None => Target::Good,
            };
            let short = [Target::Node(best), parent]
                .into_iter()
                .filter(|&target| {
                    !matches!(target, Target::Node(n) if self.skip_reasons.contains_key(&n))
                })
                .min_by_key(|&target| self.samples(target).len())
                .filter(|&target| self.samples(target).len() < guard);
            if let Some(target) = short {
                return Some(Action::Measure(target));
            }
            if let Some(state) = &mut self.posterior {
                state.culprit_probability = culprit.get(best).copied();
            }
            self.close_posterior(&p_new, confidence);
            self.start_confirm(best);
            return None;
        }
        // The commit whose `P(new)` is nearest one half; among equals the
        // one with fewer samples, then the oldest.
        let measurable = |node_idx: &usize| {
            *node_idx != bad_idx
                && !self.skip_reasons.contains_key(node_idx)
                && self.node_samples[*node_idx].len() < max_repeats
        };
        let next = (0..self.graph.nodes.len())
            .filter(measurable)
            .min_by(|&a, &b| {
                let distance = |node_idx: usize| (p_new[node_idx] - 0.5).abs();
                distance(a)
                    .total_cmp(&distance(b))
                    .then(self.node_samples[a].len().cmp(&self.node_samples[b].len()))
                    .then(a.cmp(&b))
            });
        let next = next.filter(|&node_idx| (p_new[node_idx] - 0.5).abs() < 0.5 - UNMOVABLE);
        let Some(node_idx) = next else {
            // Nothing measurable can move the posterior: the culprit is
            // among skipped or capped commits next to each other.
            if let Some(state) = &mut self.posterior {
                state.range = Some(credible);
            }
            self.close_posterior(&p_new, confidence);
            return Some(Action::Done(self.finish(None)));
        };
        // As in the sequential method, a commit's evidence is bounded by
        // how well the references are known: once it has as many samples
        // as the smaller one, that reference's end is measured instead.
        let n_samples = self.node_samples[node_idx].len() as f64;
        let n_min = f64::from(self.config.decision.min_repeats);
        if n_samples >= n_min && n_samples >= model.n_old.min(model.n_new) {
            let end = if model.n_old <= model.n_new {
                Target::Good
            } else {
                Target::Node(bad_idx)
            };
            return Some(Action::Measure(end));
        }
        Some(Action::Measure(Target::Node(node_idx)))
    }

    /// Gives every commit the probabilistic method visited its verdict, in
    /// the order they were visited: new or old when the posterior puts it
    /// beyond `confidence`, unknown otherwise, skip when it could not be
    /// measured.
    fn close_posterior(&mut self, p_new: &[f64], confidence: f64) {
        let Some(state) = &self.posterior else {
            return;
        };
        let visited = state.visited.clone();
        let Some(model) = self.posterior_model() else {
            return;
        };
        for node_idx in visited {
            let samples = &self.node_samples[node_idx];
            let llr = model.llr(samples);
            let verdict = if self.skip_reasons.contains_key(&node_idx) {
                Verdict::Skip
            } else if p_new[node_idx] >= confidence {
                Verdict::New
            } else if p_new[node_idx] <= 1.0 - confidence {
                Verdict::Old
            } else {
                Verdict::Unknown
            };
            self.record_verdict(node_idx, verdict, llr);
        }
    }

    fn start_confirm(&mut self, culprit: usize) {
        let parent = match self.graph.nodes[culprit].parents.first() {
            Some(&parent_idx) => Target::Node(parent_idx),
            None => Target::Good,
        };
        let extra = self.config.decision.confirm_repeats as usize;
        self.confirm = Some(Confirm {
            culprit,
            parent,
            culprit_goal: self.node_samples[culprit].len() + extra,
            parent_goal: self.samples(parent).len() + extra,
            parent_unmeasurable: false,
        });
        self.phase = Phase::Confirm;
    }

    fn end_summary(&self, target: Target) -> EndSummary {
        EndSummary::of(self.info(target).clone(), self.samples(target))
    }

    fn refusal(&self) -> Refusal {
        let bad = Target::Node(self.graph.bad_idx());
        Refusal {
            schema: report::REFUSAL_SCHEMA.to_string(),
            metric: self.config.metric.clone(),
            direction: self.config.direction,
            good: self.end_summary(Target::Good),
            bad: self.end_summary(bad),
            difference: Difference::welch(&self.good_samples, self.samples(bad), 0.95),
            min_effect_pct: self.config.decision.min_effect_pct,
        }
    }

    fn step_reports(&self, model: Option<&Model>) -> Vec<StepReport> {
        self.steps
            .iter()
            .enumerate()
            .map(|(step_idx, step)| {
                let samples = &self.node_samples[step.node_idx];
                StepReport {
                    step: step_idx as u32 + 1,
                    commit: self.graph.nodes[step.node_idx].info.clone(),
                    mean: decision::mean_var(samples).0,
                    samples: samples.clone(),
                    verdict: step.verdict,
                    llr: step.llr,
                    final_llr: model.map(|model| model.llr(samples)),
                    skip_reason: self.skip_reasons.get(&step.node_idx).cloned(),
                    candidates_after: step.candidates_after,
                }
            })
            .collect()
    }

    fn finish(&self, culprit: Option<usize>) -> Outcome {
        let bad = Target::Node(self.graph.bad_idx());
        let model = self.model();
        let steps = self.step_reports(model.as_ref());
        let result = match (culprit, &self.confirm) {
            (Some(culprit), Some(confirm)) => {
                let culprit_samples = &self.node_samples[culprit];
                let parent_samples = self.samples(confirm.parent);
                // The culprit is right when every verdict on the way is:
                // the product of each verdict's posterior under the final
                // model.
                let confidence: f64 = if self.posterior.is_some() {
                    // The culprit's posterior under the final model, with
                    // the confirmation's samples.
                    self.posterior_model()
                        .map(|model| {
                            let (culprit_probabilities, _) = self.posterior_of(&model);
                            culprit_probabilities.get(culprit).copied().unwrap_or(0.0)
                        })
                        .unwrap_or(0.0)
                } else {
                    model
                        .as_ref()
                        .map(|model| {
                            self.steps
                                .iter()
                                .filter(|step| matches!(step.verdict, Verdict::Old | Verdict::New))
                                .map(|step| {
                                    let llr = model.llr(&self.node_samples[step.node_idx]);
                                    let sign = if step.verdict == Verdict::New {
                                        1.0
                                    } else {
                                        -1.0
                                    };
                                    1.0 / (1.0 + (-sign * llr).exp())
                                })
                                .product()
                        })
                        .unwrap_or(0.0)
                };
                let confirmed = model.as_ref().is_some_and(|model| {
                    let culprit_new = model.llr(culprit_samples) > 0.0;
                    let parent_old = confirm.parent_unmeasurable || model.llr(parent_samples) < 0.0;
                    culprit_new && parent_old
                });
                BisectResult::FirstBad {
                    commit: self.graph.nodes[culprit].info.clone(),
                    parent: self.info(confirm.parent).clone(),
                    culprit_samples: culprit_samples.clone(),
                    parent_samples: parent_samples.to_vec(),
                    regression: Difference::welch(parent_samples, culprit_samples, 0.95),
                    confidence_pct: confidence * 100.0,
                    confirmed,
                }
            }
            _ => {
                let candidates = match self.posterior.as_ref().and_then(|s| s.range.clone()) {
                    Some(mut range) => {
                        range.sort_unstable();
                        range
                    }
                    None => self.graph.candidates(self.bad, &self.olds),
                };
                BisectResult::Range {
                    commits: candidates
                        .iter()
                        .rev()
                        .map(|&node_idx| self.graph.nodes[node_idx].info.clone())
                        .collect(),
                }
            }
        };
        let mut bisect_report = BisectReport {
            schema: report::REPORT_SCHEMA.to_string(),
            metric: self.config.metric.clone(),
            direction: self.config.direction,
            first_parent: self.graph.first_parent,
            method: self.config.decision.method,
            good: self.end_summary(Target::Good),
            bad: self.end_summary(bad),
            ends: Difference::welch(&self.good_samples, self.samples(bad), 0.95),
            result,
            steps,
            n_measurements: self.n_measurements(),
            log: Vec::new(),
        };
        bisect_report.log = report::bisect_log(&bisect_report);
        Outcome::Finished(bisect_report)
    }

    fn progress(&self, target: Target) -> Progress<'g> {
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
        Progress {
            phase: self.phase,
            step,
            est_steps_total,
            est_samples_left,
            commit: self.info(target),
            n_samples: self.samples(target).len() as u32,
            n_measurements: self.n_measurements(),
            candidates_left: self.candidates_left,
        }
    }
}

/// Journaled measurements waiting to be fed back on resume.
struct Replay {
    queues: BTreeMap<String, VecDeque<Measurement>>,
    archive_checked: BTreeSet<String>,
    verdicts: Vec<(String, Verdict)>,
    verdicts_seen: usize,
    finished: bool,
}

impl Replay {
    fn from_events(
        events: &[JournalEvent],
        graph: &CommitGraph,
        config: &BisectConfig,
    ) -> Result<Replay, EngineError> {
        let mut replay = Replay {
            queues: BTreeMap::new(),
            archive_checked: BTreeSet::new(),
            verdicts: Vec::new(),
            verdicts_seen: 0,
            finished: false,
        };
        let bad = &graph.nodes[graph.bad_idx()].info.id;
        for (event_idx, event) in events.iter().enumerate() {
            match event {
                JournalEvent::Start {
                    schema,
                    good: journal_good,
                    bad: journal_bad,
                    first_parent,
                    config: journal_config,
                } => {
                    if event_idx != 0 {
                        return Err(EngineError::JournalMismatch(
                            "a start event in the middle".to_string(),
                        ));
                    }
                    if schema != JOURNAL_SCHEMA {
                        return Err(EngineError::JournalMismatch(format!(
                            "schema \"{schema}\", expected \"{JOURNAL_SCHEMA}\""
                        )));
                    }
                    if journal_good != &graph.good.id || journal_bad != bad {
                        return Err(EngineError::JournalMismatch(format!(
                            "it bisects {journal_good}..{journal_bad}"
                        )));
                    }
                    if *first_parent != graph.first_parent || journal_config != config {
                        return Err(EngineError::JournalMismatch(
                            "it was started with other options".to_string(),
                        ));
                    }
                }
                _ if event_idx == 0 => {
                    return Err(EngineError::JournalMismatch(
                        "the first event is not a start".to_string(),
                    ));
                }
                JournalEvent::Archived { commit, samples } => {
                    replay.archive_checked.insert(commit.clone());
                    let queue = replay.queues.entry(commit.clone()).or_default();
                    queue.extend(samples.iter().map(measurement_of));
                }
                JournalEvent::Sample { commit, sample } => {
                    replay.archive_checked.insert(commit.clone());
                    let queue = replay.queues.entry(commit.clone()).or_default();
                    queue.push_back(measurement_of(sample));
                }
                JournalEvent::Skip { commit, reason } => {
                    replay.archive_checked.insert(commit.clone());
                    let queue = replay.queues.entry(commit.clone()).or_default();
                    queue.push_back(Measurement::Skip(reason.clone()));
                }
                JournalEvent::Verdict {
                    commit, verdict, ..
                } => replay.verdicts.push((commit.clone(), *verdict)),
                JournalEvent::Finished { .. } => replay.finished = true,
                JournalEvent::Interrupted { .. } => {}
            }
        }
        Ok(replay)
    }
}

fn measurement_of(sample: &JournalSample) -> Measurement {
    Measurement::Sample(Sample {
        value: sample.value,
        run_id: sample.run_id.clone(),
    })
}

fn journal_sample(sample: &Sample) -> JournalSample {
    JournalSample {
        value: sample.value,
        run_id: sample.run_id.clone(),
    }
}

/// Writes the verdicts the machine reached that the journal does not hold
/// yet, checking those it does.
fn sync_verdicts(
    machine: &mut Machine<'_>,
    replay: &mut Replay,
    journal: Option<&mut dyn Journal>,
) -> Result<(), EngineError> {
    let mut journal = journal;
    for event in std::mem::take(&mut machine.new_verdicts) {
        let JournalEvent::Verdict {
            commit, verdict, ..
        } = &event
        else {
            continue;
        };
        if let Some((journaled_commit, journaled_verdict)) =
            replay.verdicts.get(replay.verdicts_seen)
        {
            if journaled_commit != commit || journaled_verdict != verdict {
                return Err(EngineError::JournalMismatch(format!(
                    "replay classified {commit} as {verdict:?}, the journal says {journaled_commit} \
                     is {journaled_verdict:?}"
                )));
            }
            replay.verdicts_seen += 1;
            continue;
        }
        replay.verdicts_seen += 1;
        if let Some(journal) = journal.as_deref_mut() {
            journal.append(&event).map_err(EngineError::Journal)?;
        }
    }
    Ok(())
}

fn finished_event(outcome: &Outcome) -> JournalEvent {
    match outcome {
        Outcome::Refused(_) => JournalEvent::Finished {
            result: "refused".to_string(),
            commit: None,
        },
        Outcome::Finished(bisect_report) => match &bisect_report.result {
            BisectResult::FirstBad { commit, .. } => JournalEvent::Finished {
                result: "first_bad".to_string(),
                commit: Some(commit.id.clone()),
            },
            BisectResult::Range { .. } => JournalEvent::Finished {
                result: "range".to_string(),
                commit: None,
            },
        },
    }
}

/// Runs (or resumes) the bisection of `graph` to its end.
///
/// The journal is replayed first; then every fresh measurement and every
/// verdict is appended to it before the next step starts. `progress` is
/// called before each fresh measurement.
pub fn run(
    graph: &CommitGraph,
    config: &BisectConfig,
    measurer: &mut dyn Measurer,
    journal: &mut dyn Journal,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<Outcome, EngineError> {
    graph.validate()?;
    let events = journal.load().map_err(EngineError::Journal)?;
    let mut replay = Replay::from_events(&events, graph, config)?;
    if events.is_empty() {
        journal
            .append(&JournalEvent::Start {
                schema: JOURNAL_SCHEMA.to_string(),
                good: graph.good.id.clone(),
                bad: graph.nodes[graph.bad_idx()].info.id.clone(),
                first_parent: graph.first_parent,
                config: config.clone(),
            })
            .map_err(EngineError::Journal)?;
    }
    let mut machine = Machine::new(graph, config);
    loop {
        let action = machine.next()?;
        sync_verdicts(&mut machine, &mut replay, Some(&mut *journal))?;
        let target = match action {
            Action::Done(outcome) => {
                if !replay.finished {
                    journal
                        .append(&finished_event(&outcome))
                        .map_err(EngineError::Journal)?;
                }
                return Ok(outcome);
            }
            Action::Measure(target) => target,
        };
        let info = machine.info(target);
        if let Some(measurement) = replay
            .queues
            .get_mut(&info.id)
            .and_then(VecDeque::pop_front)
        {
            machine.feed(target, measurement);
            continue;
        }
        if !replay.archive_checked.contains(&info.id) {
            let samples = measurer
                .archived(info)
                .map_err(|source| EngineError::Measure {
                    commit: info.id.clone(),
                    source,
                })?;
            journal
                .append(&JournalEvent::Archived {
                    commit: info.id.clone(),
                    samples: samples.iter().map(journal_sample).collect(),
                })
                .map_err(EngineError::Journal)?;
            replay.archive_checked.insert(info.id.clone());
            replay
                .queues
                .entry(info.id.clone())
                .or_default()
                .extend(samples.into_iter().map(Measurement::Sample));
            continue;
        }
        progress(&machine.progress(target));
        let measured = crate::interrupt::check()
            .map_err(|interrupted| Box::new(interrupted) as BoxError)
            .and_then(|()| measurer.measure(info));
        let measurement = match (measured, crate::interrupt::check()) {
            (Ok(measurement), Ok(())) => measurement,
            (_, Err(interrupted)) => {
                journal
                    .append(&JournalEvent::Interrupted {
                        commit: info.id.clone(),
                        signal: crate::interrupt::signal_name(interrupted.signal),
                    })
                    .map_err(EngineError::Journal)?;
                return Err(EngineError::Interrupted {
                    commit: info.id.clone(),
                    source: interrupted,
                });
            }
            (Err(source), Ok(())) => {
                return Err(EngineError::Measure {
                    commit: info.id.clone(),
                    source,
                });
            }
        };
        let event = match &measurement {
            Measurement::Sample(sample) => JournalEvent::Sample {
                commit: info.id.clone(),
                sample: journal_sample(sample),
            },
            Measurement::Skip(reason) => JournalEvent::Skip {
                commit: info.id.clone(),
                reason: reason.clone(),
            },
        };
        journal.append(&event).map_err(EngineError::Journal)?;
        machine.feed(target, measurement);
    }
}

/// Where the bisection recorded in `events` stands, measuring nothing.
pub fn status(
    graph: &CommitGraph,
    config: &BisectConfig,
    events: &[JournalEvent],
) -> Result<Status, EngineError> {
    graph.validate()?;
    let mut replay = Replay::from_events(events, graph, config)?;
    let mut machine = Machine::new(graph, config);
    loop {
        let action = machine.next()?;
        sync_verdicts(&mut machine, &mut replay, None)?;
        match action {
            Action::Done(outcome) => {
                return Ok(Status {
                    phase: machine.phase,
                    next_commit: None,
                    next_n_samples: 0,
                    steps: machine.step_reports(None),
                    candidates_left: machine.candidates_left,
                    est_steps_left: 0,
                    n_measurements: machine.n_measurements(),
                    outcome: Some(outcome),
                });
            }
            Action::Measure(target) => {
                let info = machine.info(target);
                match replay
                    .queues
                    .get_mut(&info.id)
                    .and_then(VecDeque::pop_front)
                {
                    Some(measurement) => machine.feed(target, measurement),
                    None => {
                        return Ok(Status {
                            phase: machine.phase,
                            next_commit: Some(info.clone()),
                            next_n_samples: machine.samples(target).len() as u32,
                            steps: machine.step_reports(None),
                            candidates_left: machine.candidates_left,
                            est_steps_left: graph::steps_left(machine.candidates_left as usize),
                            n_measurements: machine.n_measurements(),
                            outcome: None,
                        });
                    }
                }
            }
        }
    }
}
