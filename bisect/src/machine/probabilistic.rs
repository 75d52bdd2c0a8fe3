//! The probabilistic method's rounds: every sample of every commit
//! updates one posterior over the culprit ([`crate::posterior`]), the
//! next sample goes to the commit whose `P(new)` is nearest one half, and
//! the culprit is named once its posterior reaches the configured
//! confidence. With other samples in flight, the next goes where it adds
//! most beside them ([`crate::schedule`]).

use super::{Action, Ending, Machine, Target};
use crate::decision::{Model, Verdict};
use crate::graph::CommitGraph;
use crate::posterior::{self, Ancestry, Moments};
use crate::schedule::JointInformation;

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

/// What the probabilistic method keeps between two of its rounds.
pub(super) struct PosteriorState {
    ancestry: Ancestry,
    /// `P(x new)` of every commit after the last round: commits it puts
    /// beyond doubt join the references of the model.
    p_new: Vec<f64>,
    /// Commits in the order they were first measured or skipped.
    pub(super) visited: Vec<usize>,
    /// The commits that may hold the culprit when the walk ends in a range.
    pub(super) range: Option<Vec<usize>>,
    /// Estimated samples left, from the posterior's entropy.
    pub(super) est_samples_left: u32,
}

impl PosteriorState {
    pub(super) fn new(graph: &CommitGraph) -> PosteriorState {
        PosteriorState {
            ancestry: Ancestry::of(graph),
            p_new: Vec::new(),
            visited: Vec::new(),
            range: None,
            est_samples_left: 0,
        }
    }
}

impl Machine<'_> {
    /// The model of the probabilistic method: the ends, and the commits
    /// the posterior already puts beyond doubt, as references.
    pub(super) fn posterior_model(&self) -> Option<Model> {
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
    pub(super) fn posterior_of(&self, model: &Model) -> (Vec<f64>, Vec<f64>) {
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
    pub(super) fn posterior_step(&mut self) -> Option<Action> {
        let Some(model) = self.posterior_model() else {
            return Some(self.end(Ending::Finished(None)));
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
            let taken = |target: Target| self.samples(target).len() + self.in_flight.count(target);
            let guarded = [Target::Node(best), parent].into_iter().filter(
                |&target| !matches!(target, Target::Node(n) if self.skip_reasons.contains_key(&n)),
            );
            let short = guarded
                .clone()
                .min_by_key(|&target| taken(target))
                .filter(|&target| taken(target) < guard);
            if let Some(target) = short {
                return Some(Action::Measure(target));
            }
            if guarded
                .into_iter()
                .any(|target| self.samples(target).len() < guard)
            {
                // The guard's samples are in flight.
                return Some(Action::Wait);
            }
            self.close_posterior(&p_new, confidence);
            self.start_confirm(best);
            return None;
        }
        // The commit whose `P(new)` is nearest one half; among equals the
        // one with fewer samples, then the oldest.
        let taken = |node_idx: usize| {
            self.node_samples[node_idx].len() + self.in_flight.count(Target::Node(node_idx))
        };
        let measurable = |node_idx: &usize| {
            *node_idx != bad_idx
                && !self.skip_reasons.contains_key(node_idx)
                && taken(*node_idx) < max_repeats
        };
        let next = if self.in_flight.is_empty() {
            (0..self.graph.nodes.len())
                .filter(measurable)
                .min_by(|&a, &b| {
                    let distance = |node_idx: usize| (p_new[node_idx] - 0.5).abs();
                    distance(a)
                        .total_cmp(&distance(b))
                        .then(self.node_samples[a].len().cmp(&self.node_samples[b].len()))
                        .then(a.cmp(&b))
                })
        } else {
            // Others in flight: the commit that adds most beside them
            // (crate::schedule); among equals, as above.
            let state = self.posterior.as_ref()?;
            let joint = JointInformation::new(
                &state.ancestry,
                &culprit,
                &p_new,
                self.in_flight.nodes().collect(),
                model.effect_size(),
            );
            (0..self.graph.nodes.len())
                .filter(measurable)
                .filter(|&node_idx| (p_new[node_idx] - 0.5).abs() < 0.5 - UNMOVABLE)
                .map(|node_idx| (node_idx, joint.gain(node_idx)))
                .min_by(|&(a, gain_a), &(b, gain_b)| {
                    gain_b
                        .total_cmp(&gain_a)
                        .then(taken(a).cmp(&taken(b)))
                        .then(a.cmp(&b))
                })
                .map(|(node_idx, _)| node_idx)
        };
        let next = next.filter(|&node_idx| (p_new[node_idx] - 0.5).abs() < 0.5 - UNMOVABLE);
        let Some(node_idx) = next else {
            if !self.in_flight.is_empty() {
                // What is in flight may still move it.
                return Some(Action::Wait);
            }
            // Nothing measurable can move the posterior: the culprit is
            // among skipped or capped commits next to each other.
            if let Some(state) = &mut self.posterior {
                state.range = Some(credible);
            }
            self.close_posterior(&p_new, confidence);
            return Some(self.end(Ending::Finished(None)));
        };
        // As in the sequential method, a commit's evidence is bounded by
        // how well the references are known: once it has as many samples
        // as the smaller one, that reference's end is measured instead.
        let n_samples = taken(node_idx) as f64;
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
}
