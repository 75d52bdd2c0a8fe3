//! The deterministic core of a bisection: a state machine that asks for
//! the next commit to measure and is fed the measurement, through the
//! phases of a bisection: measure the ends, refuse or bisect, walk the
//! range (one commit at a time with the sequential decision, or where
//! the posterior says with the probabilistic method, in
//! [`probabilistic`]), confirm the culprit, and build the report.
//!
//! It does no input or output of its own: it is a pure function of what
//! it is fed, so the journal's replay and the fresh measurements that
//! follow walk the same path (the driver feeds it, the journal's replay
//! checks its verdicts).

mod in_flight;
mod probabilistic;
mod view;

use crate::config::BisectConfig;
use crate::decision::{self, Method, Model, StepDecision, Verdict};
use crate::ends::{self, Difference, EndsDecision, EndsWait, RefusalReason};
use crate::error::EngineError;
use crate::estimate::Estimate;
use crate::graph::{CommitGraph, CommitInfo};
use crate::journal::JournalEvent;
use crate::measurement::Measurement;
use crate::progress::Phase;
use crate::report::{self, BisectReport, BisectResult, EndSummary, Outcome, Refusal, StepReport};
use crate::robust::mean_var;
pub(crate) use in_flight::InFlight;
use probabilistic::PosteriorState;
use std::collections::{BTreeMap, BTreeSet};

/// A commit the engine measures: the good end or a node of the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Target {
    Good,
    Node(usize),
}

/// What the machine wants next.
#[expect(
    clippy::large_enum_variant,
    reason = "the done action is made once per bisection"
)]
pub(crate) enum Action {
    /// A measurement of this commit.
    Measure(Target),
    /// Nothing to start until a measurement in flight is fed.
    Wait,
    /// Nothing: the bisection ended.
    Done(Outcome),
}

/// How a bisection ends, decided before the measurements still in
/// flight are fed: the outcome is built once they are.
#[derive(Clone, Copy, Debug)]
enum Ending {
    Refused(RefusalReason),
    Finished(Option<usize>),
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
pub(crate) struct Machine<'g> {
    graph: &'g CommitGraph,
    config: &'g BisectConfig,
    good_samples: Vec<f64>,
    node_samples: Vec<Vec<f64>>,
    skip_reasons: BTreeMap<usize, String>,
    verdicts: BTreeMap<usize, Verdict>,
    steps: Vec<StepState>,
    pub(crate) phase: Phase,
    bad: usize,
    olds: Vec<usize>,
    skipped: BTreeSet<usize>,
    current: Option<(usize, Model, u32)>,
    confirm: Option<Confirm>,
    end_failure: Option<(Target, String)>,
    new_verdicts: Vec<JournalEvent>,
    pub(crate) candidates_left: u32,
    /// The probabilistic method's state; `None` for the sequential one.
    posterior: Option<PosteriorState>,
    /// The journaled estimate of the rest, once made.
    pub(crate) estimate: Option<Estimate>,
    /// Why the ends are being measured, while they are.
    ends_wait: EndsWait,
    /// The measurements asked for and not fed yet, as of the last
    /// [`Machine::next_with`].
    in_flight: InFlight,
    /// The end decided while measurements were in flight.
    ending: Option<Ending>,
}

impl<'g> Machine<'g> {
    pub(crate) fn new(graph: &'g CommitGraph, config: &'g BisectConfig) -> Machine<'g> {
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
            posterior: (config.decision.method == Method::Posterior)
                .then(|| PosteriorState::new(graph)),
            estimate: None,
            ends_wait: EndsWait::FirstRepeats,
            in_flight: InFlight::default(),
            ending: None,
        }
    }

    pub(crate) fn info(&self, target: Target) -> &'g CommitInfo {
        match target {
            Target::Good => &self.graph.good,
            Target::Node(node_idx) => &self.graph.nodes[node_idx].info,
        }
    }

    pub(crate) fn samples(&self, target: Target) -> &[f64] {
        match target {
            Target::Good => &self.good_samples,
            Target::Node(node_idx) => &self.node_samples[node_idx],
        }
    }

    pub(crate) fn n_measurements(&self) -> u32 {
        (self.good_samples.len() + self.node_samples.iter().map(Vec::len).sum::<usize>()) as u32
    }

    /// The samples of the good and the bad end.
    pub(crate) fn ends_samples(&self) -> (&[f64], &[f64]) {
        (
            &self.good_samples,
            self.samples(Target::Node(self.graph.bad_idx())),
        )
    }

    /// The verdicts reached since the last call, as journal events.
    pub(crate) fn take_new_verdicts(&mut self) -> Vec<JournalEvent> {
        std::mem::take(&mut self.new_verdicts)
    }

    pub(crate) fn feed(&mut self, target: Target, measurement: Measurement) {
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

    /// The next action while the measurements of `in_flight` run: they
    /// count as samples already taken where the machine counts samples,
    /// and the posterior places the next one beside them. With nothing in
    /// flight this is the walk of one measurement at a time, choice for
    /// choice. An end decided while some are in flight waits for them.
    pub(crate) fn next_with(&mut self, in_flight: &InFlight) -> Result<Action, EngineError> {
        self.in_flight = in_flight.clone();
        if let Some(ending) = self.ending {
            if !in_flight.is_empty() {
                return Ok(Action::Wait);
            }
            self.ending = None;
            return Ok(self.end(ending));
        }
        self.next_action()
    }

    /// Ends the bisection, or waits for what is in flight first.
    fn end(&mut self, ending: Ending) -> Action {
        if !self.in_flight.is_empty() {
            self.ending = Some(ending);
            return Action::Wait;
        }
        Action::Done(match ending {
            Ending::Refused(reason) => Outcome::Refused(self.refusal(reason)),
            Ending::Finished(culprit) => self.finish(culprit),
        })
    }

    fn next_action(&mut self) -> Result<Action, EngineError> {
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
                    let decision = ends::compare_ends(
                        &self.good_samples,
                        self.samples(bad),
                        &self.config.decision,
                    );
                    match decision {
                        EndsDecision::NeedMore(wait) => {
                            self.ends_wait = wait;
                            let n_good =
                                self.good_samples.len() + self.in_flight.count(Target::Good);
                            let n_bad = self.samples(bad).len() + self.in_flight.count(bad);
                            let target = if n_good <= n_bad { Target::Good } else { bad };
                            return Ok(Action::Measure(target));
                        }
                        EndsDecision::Refuse(reason) => {
                            return Ok(self.end(Ending::Refused(reason)));
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
                        return Ok(self.end(Ending::Finished(None)));
                    };
                    let n_parent =
                        self.samples(confirm.parent).len() + self.in_flight.count(confirm.parent);
                    let n_culprit = self.node_samples[confirm.culprit].len()
                        + self.in_flight.count(Target::Node(confirm.culprit));
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
                    return Ok(self.end(Ending::Finished(Some(culprit))));
                }
            }
        }
    }

    /// One round of the step phase: `Some` to ask for a measurement or to
    /// end, `None` to go round again.
    fn step(&mut self) -> Result<Option<Action>, EngineError> {
        // The sequential method classifies one commit at a time.
        if !self.in_flight.is_empty() {
            return Ok(Some(Action::Wait));
        }
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
                    return Ok(Some(self.end(Ending::Finished(None))));
                };
                let Some(model) = self.model() else {
                    return Ok(Some(self.end(Ending::Finished(None))));
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

    fn start_confirm(&mut self, culprit: usize) {
        let parent = match self.graph.nodes[culprit].parents.first() {
            Some(&parent_idx) => Target::Node(parent_idx),
            None => Target::Good,
        };
        // The confirmation's repeats come after those in flight.
        let extra = self.config.decision.confirm_repeats as usize;
        let culprit_before =
            self.node_samples[culprit].len() + self.in_flight.count(Target::Node(culprit));
        let parent_before = self.samples(parent).len() + self.in_flight.count(parent);
        self.confirm = Some(Confirm {
            culprit,
            parent,
            culprit_goal: culprit_before + extra,
            parent_goal: parent_before + extra,
            parent_unmeasurable: false,
        });
        self.phase = Phase::Confirm;
    }

    fn end_summary(&self, target: Target) -> EndSummary {
        EndSummary::of(self.info(target).clone(), self.samples(target))
    }

    fn refusal(&self, reason: RefusalReason) -> Refusal {
        let bad = Target::Node(self.graph.bad_idx());
        let futility = ends::futility(&self.good_samples, self.samples(bad), &self.config.decision);
        Refusal {
            schema: report::REFUSAL_SCHEMA.to_string(),
            metric: self.config.metric.clone(),
            direction: self.config.direction,
            good: self.end_summary(Target::Good),
            bad: self.end_summary(bad),
            difference: Difference::welch(&self.good_samples, self.samples(bad), 0.95),
            min_effect_pct: self.config.decision.min_effect_pct,
            reason: Some(reason),
            smallest_step_pct: futility.map(|futility| futility.alternative_pct),
            noise_pct: futility.map(|futility| futility.noise_pct),
            max_end_repeats: Some(ends::end_cap(&self.config.decision)),
        }
    }

    pub(crate) fn step_reports(&self, model: Option<&Model>) -> Vec<StepReport> {
        self.steps
            .iter()
            .enumerate()
            .map(|(step_idx, step)| {
                let samples = &self.node_samples[step.node_idx];
                StepReport {
                    step: step_idx as u32 + 1,
                    commit: self.graph.nodes[step.node_idx].info.clone(),
                    mean: mean_var(samples).0,
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
}
