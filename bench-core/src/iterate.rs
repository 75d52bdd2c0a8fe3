//! Repeating whole iterations until the confidence interval asked for is
//! reached (netperf's `-I level,width` with `-i max,min`), and what a run
//! says about the intervals it reached.
//!
//! The loop is generic over where an iteration's figures come from: the
//! socket tests pass a closure that runs one iteration against a server,
//! tests pass one that yields prepared figures. After each iteration the
//! Student-t interval ([`run_record::stats::iteration_decision`]) is taken on
//! the primary metric (throughput, or transactions per second for
//! request/response tests) and, when CPU was measured, on each measured
//! end's utilisation; the loop stops when every one of them is within
//! the width and the minimum has run, or when the maximum has run.

use run_record::record::{ConfidenceOutcome, CpuConfidence, Iteration, Metric};
use run_record::spec::{ConfidenceSpec, RunSpec};
use run_record::stats::{self, IterationDecision};

/// The samples the stop rule looks at after `iterations`.
fn watched_samples(spec: &RunSpec, iterations: &[Iteration]) -> Vec<Vec<f64>> {
    let samples = |metric: Metric| -> Vec<f64> {
        iterations
            .iter()
            .filter_map(|iteration| metric.of_iteration(iteration))
            .collect()
    };
    let mut watched = vec![samples(Metric::primary_for(spec))];
    if spec.local_cpu {
        watched.push(samples(Metric::LocalCpuPct));
    }
    if spec.remote_cpu {
        watched.push(samples(Metric::RemoteCpuPct));
    }
    watched
}

/// The stop rule over every watched figure: stop when each of them would
/// stop (which, below the maximum, means each is within the width).
pub fn decision(spec: &RunSpec, confidence: &ConfidenceSpec, iterations: &[Iteration]) -> bool {
    let n_done = u32::try_from(iterations.len()).unwrap_or(u32::MAX);
    if n_done >= spec.iterations_max {
        return true;
    }
    watched_samples(spec, iterations).iter().all(|samples| {
        // A figure missing from some iteration cannot be trusted to
        // meet anything; the maximum then decides.
        samples.len() == iterations.len()
            && stats::iteration_decision(
                samples,
                confidence,
                spec.iterations_min,
                spec.iterations_max,
            ) != IterationDecision::Continue
    })
}

/// Runs iterations through `run_one` (given the iteration's index) until
/// the spec's stop rule says so: without a confidence request, exactly
/// `iterations_max` of them. The first error ends the run.
pub fn run_iterations<E>(
    spec: &RunSpec,
    mut run_one: impl FnMut(u32) -> Result<Iteration, E>,
) -> Result<Vec<Iteration>, E> {
    let mut iterations = Vec::new();
    for iteration_idx in 0..spec.iterations_max.max(1) {
        iterations.push(run_one(iteration_idx)?);
        let stop = spec
            .confidence
            .as_ref()
            .is_some_and(|confidence| decision(spec, confidence, &iterations));
        if stop {
            break;
        }
    }
    Ok(iterations)
}

fn outcome(samples: &[f64], confidence: &ConfidenceSpec) -> Option<ConfidenceOutcome> {
    stats::confidence_outcome(samples, confidence).ok()
}

/// The interval reached on the primary metric, when one was asked for and
/// at least two iterations ran.
pub fn primary_outcome(spec: &RunSpec, iterations: &[Iteration]) -> Option<ConfidenceOutcome> {
    let confidence = spec.confidence.as_ref()?;
    let samples: Vec<f64> = iterations
        .iter()
        .filter_map(|iteration| Metric::primary_for(spec).of_iteration(iteration))
        .collect();
    outcome(&samples, confidence)
}

/// The intervals reached on CPU utilisation, when an interval and CPU
/// figures were both asked for.
pub fn cpu_outcome(spec: &RunSpec, iterations: &[Iteration]) -> Option<CpuConfidence> {
    let confidence = spec.confidence.as_ref()?;
    let of = |wanted: bool, metric: Metric| -> Option<ConfidenceOutcome> {
        if !wanted {
            return None;
        }
        let samples: Vec<f64> = iterations
            .iter()
            .filter_map(|iteration| metric.of_iteration(iteration))
            .collect();
        outcome(&samples, confidence)
    };
    let local = of(spec.local_cpu, Metric::LocalCpuPct);
    let remote = of(spec.remote_cpu, Metric::RemoteCpuPct);
    (local.is_some() || remote.is_some()).then_some(CpuConfidence { local, remote })
}

#[cfg(test)]
mod tests {
    use super::*;
    use run_record::record::CpuFigures;
    use run_record::spec::TestKind;

    fn spec(max: u32, min: u32, width_pct: f64) -> RunSpec {
        let mut spec = RunSpec::defaults(TestKind::TcpStream);
        spec.confidence = Some(ConfidenceSpec {
            level_pct: 95,
            width_pct,
        });
        spec.iterations_max = max;
        spec.iterations_min = min;
        spec
    }

    fn iteration(throughput_bps: f64, local_util_pct: Option<f64>) -> Iteration {
        Iteration {
            elapsed_s: 0.1,
            throughput_bps,
            cpu: local_util_pct.map(|util| CpuFigures {
                local_util_pct: Some(util),
                ..CpuFigures::default()
            }),
            ..Iteration::default()
        }
    }

    /// Runs the loop over figures from `source`, counting the calls.
    fn drive(spec: &RunSpec, source: &[(f64, Option<f64>)]) -> Vec<Iteration> {
        let result: Result<_, ()> = run_iterations(spec, |iteration_idx| {
            let (throughput, util) = source[iteration_idx as usize];
            Ok(iteration(throughput, util))
        });
        result.unwrap()
    }

    #[test]
    fn stops_at_the_minimum_when_variance_is_tiny() {
        let spec = spec(10, 3, 5.0);
        let source = [(1e9, None), (1.0001e9, None), (0.9999e9, None), (1e9, None)];
        let iterations = drive(&spec, &source.repeat(3));
        assert_eq!(iterations.len(), 3);
        let reached = primary_outcome(&spec, &iterations).unwrap();
        assert!(reached.met && reached.width_pct < 0.1, "{reached:?}");
        assert_eq!(reached.target_width_pct, 5.0);
    }

    #[test]
    fn runs_to_the_maximum_and_says_not_met_when_variance_is_large() {
        let spec = spec(6, 3, 5.0);
        let source = [(1e9, None), (2e9, None)].repeat(5);
        let iterations = drive(&spec, &source);
        assert_eq!(iterations.len(), 6);
        let reached = primary_outcome(&spec, &iterations).unwrap();
        assert!(!reached.met, "{reached:?}");
        assert!(reached.width_pct > 5.0);
        assert!(reached.low < 1.5e9 && reached.high > 1.5e9);
    }

    #[test]
    fn cpu_utilisation_must_settle_too() {
        let mut spec = spec(5, 2, 5.0);
        spec.local_cpu = true;
        // Throughput is steady from the start; utilisation only from the
        // fourth iteration on.
        let source = [
            (1e9, Some(10.0)),
            (1e9, Some(40.0)),
            (1e9, Some(25.0)),
            (1e9, Some(25.0)),
            (1e9, Some(25.0)),
        ];
        let iterations = drive(&spec, &source);
        assert_eq!(iterations.len(), 5);
        let cpu = cpu_outcome(&spec, &iterations).unwrap();
        assert!(!cpu.local.unwrap().met);
        assert!(primary_outcome(&spec, &iterations).unwrap().met);

        spec.local_cpu = false;
        assert_eq!(drive(&spec, &source).len(), 2);
    }

    #[test]
    fn without_a_confidence_request_every_iteration_runs() {
        let mut spec = RunSpec::defaults(TestKind::TcpStream);
        spec.iterations_max = 3;
        spec.iterations_min = 1;
        let iterations = drive(&spec, &[(1e9, None); 3]);
        assert_eq!(iterations.len(), 3);
        assert_eq!(primary_outcome(&spec, &iterations), None);
    }

    #[test]
    fn an_error_ends_the_loop() {
        let spec = spec(10, 3, 5.0);
        let mut calls = 0;
        let result: Result<Vec<Iteration>, &str> = run_iterations(&spec, |iteration_idx| {
            calls += 1;
            if iteration_idx == 1 {
                Err("flow 2 of 4 failed")
            } else {
                Ok(iteration(1e9, None))
            }
        });
        assert_eq!(result, Err("flow 2 of 4 failed"));
        assert_eq!(calls, 2);
    }
}
