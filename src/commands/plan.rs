//! `netbisect plan --test SPEC --effect PCT`: how many measurements and
//! how much time a bisection of that test will take, from the noise of
//! the archived runs of the same spec and testbed (or `--cv`), through
//! bisect's simulator ([`bisect::plan::estimate`]).

use crate::cli::{GlobalArgs, PlanArgs};
use crate::exit::{Code, InputError};
use crate::output;
use crate::request::parse_bench_spec;
use crate::store::open_archive;
use anyhow::Context;
use archive::RunQuery;
use bisect::estimate::Estimate;
use bisect::plan::{PlanInput, estimate};
use run_record::record::Metric;
use serde::Serialize;

/// The output of `plan --json`.
#[derive(Debug, Serialize)]
pub struct Plan {
    /// Test name of the spec.
    pub test: String,
    /// The metric a bisection of it follows.
    pub metric: String,
    /// Where the noise came from: `archive` or `given`.
    pub noise_from: &'static str,
    /// Where the seconds per run came from: `archive`, `spec` or `given`.
    pub seconds_from: &'static str,
    /// Archived runs of the same spec and testbed that were read.
    pub n_archived_runs: usize,
    /// The estimate.
    pub estimate: Estimate,
}

pub fn run(global: &GlobalArgs, args: &PlanArgs) -> anyhow::Result<Code> {
    let request = parse_bench_spec(&args.test)?;
    let metric = Metric::primary_for(&request.spec);
    // Runs of the same spec and testbed: their per-run figures (the
    // samples a bisection takes) and measured lengths.
    let mut values = Vec::new();
    let mut lengths = Vec::new();
    if args.cv.is_none() || args.seconds.is_none() {
        let archive = open_archive(global)?;
        let query = RunQuery {
            test: Some(request.spec.test),
            testbed: Some(request.testbed.clone()),
            ..RunQuery::default()
        };
        let records = archive
            .records(&query)
            .context("failed to read the archive")?;
        for record in records.iter().filter(|record| record.spec == request.spec) {
            if let Some(value) = record.sample(metric) {
                values.push(value);
                lengths.push(record.iterations.iter().map(|it| it.elapsed_s).sum::<f64>());
            }
        }
    }
    let (cv_pct, noise_from) = match args.cv {
        Some(cv) => (cv, "given"),
        None => (
            coefficient_of_variation(&values).ok_or_else(|| {
                InputError(format!(
                    "the archive has {} run{} of this spec and testbed with a figure of {}: \
                     at least 2 are needed to see the noise (or give --cv)",
                    values.len(),
                    if values.len() == 1 { "" } else { "s" },
                    metric
                ))
            })?,
            "archive",
        ),
    };
    let (seconds_per_run, seconds_from) = match args.seconds {
        Some(seconds) => (seconds, "given"),
        None if !lengths.is_empty() => (
            lengths.iter().sum::<f64>() / lengths.len() as f64,
            "archive",
        ),
        None => (
            request.spec.duration_s * f64::from(request.spec.iterations_max.max(1)),
            "spec",
        ),
    };
    let input = PlanInput::new(args.commits, args.effect, cv_pct, seconds_per_run);
    let estimate = estimate(&input).map_err(|err| InputError(err.to_string()))?;
    let plan = Plan {
        test: request.spec.test.name().to_string(),
        metric: metric.name().to_string(),
        noise_from,
        seconds_from,
        n_archived_runs: values.len(),
        estimate,
    };
    output::emit(
        global,
        || output::pretty(&plan, "the plan"),
        || output::template(global, "plan", &plan, "the plan"),
    )?;
    Ok(Code::Ok)
}

/// Sample standard deviation over `|mean|`, percent; `None` with fewer
/// than two values or a zero mean.
fn coefficient_of_variation(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(variance.sqrt() / mean.abs() * 100.0)
}

#[cfg(test)]
mod tests {
    use super::coefficient_of_variation;

    #[test]
    fn coefficient_of_variation_of_known_values() {
        // mean 10, sample variance 2.5: sd 1.5811...
        let cv = coefficient_of_variation(&[8.0, 9.0, 10.0, 11.0, 12.0]).unwrap();
        assert!((cv - 15.811_388).abs() < 1e-5, "{cv}");
        assert_eq!(coefficient_of_variation(&[1.0]), None);
        assert_eq!(coefficient_of_variation(&[0.0, 0.0]), None);
    }
}
