//! `netbisect plan --test SPEC --effect PCT`: how many measurements and
//! how much time a bisection of that test will take, from the noise of
//! the archived runs of the same spec, testbed and config_key (or
//! `--cv`), through bisect's simulator ([`bisect::plan::estimate`]), and
//! whether such a bisection reaches its own accuracy target: a warning
//! when it does not, and exit 5 with `--strict`.

use crate::cli::PlanArgs;
use crate::exit::{self, Code, Context, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::request::parse_bench_spec;
use crate::store::{missing_archive, open_archive_read};
use crate::views::plan::{Plan, PlanContext};
use archive::RunQuery;
use bisect::decision::DecisionConfig;
use bisect::estimate::Estimate;
use bisect::plan::{self, PlanInput, estimate};
use run_record::record::Metric;

pub fn run(global: &GlobalOptions, args: &PlanArgs) -> exit::Result<Code> {
    let request = parse_bench_spec(&args.test)?;
    let metric = Metric::primary_for(&request.spec);
    // Runs of the same spec and testbed, in the environment of the newest
    // of them (its config_key): their per-run figures (the samples a
    // bisection takes) and measured lengths. Runs of other environments
    // would add their differences to the noise.
    let mut values = Vec::new();
    let mut lengths = Vec::new();
    let mut config_key = None;
    // Without an archive there are no runs to learn from: the plan goes
    // on with what the command line gives, and none is created.
    if (args.cv.is_none() || args.seconds.is_none()) && missing_archive(global)?.is_none() {
        let archive = open_archive_read(global)?;
        let query = RunQuery {
            test: Some(request.spec.test),
            testbed: Some(request.testbed.clone()),
            ..RunQuery::default()
        };
        let records = archive
            .records(&query)
            .context("failed to read the archive")?;
        let same_spec: Vec<_> = records
            .iter()
            .filter(|record| record.spec == request.spec && record.sample(metric).is_some())
            .collect();
        config_key = same_spec.last().map(|record| record.config_key.clone());
        for record in same_spec
            .iter()
            .filter(|record| Some(&record.config_key) == config_key.as_ref())
        {
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
                    "the archive has {} run{} of this spec, testbed and config_key with a \
                     figure of {}: at least 2 are needed to see the noise (or give --cv)",
                    values.len(),
                    if values.len() == 1 { "" } else { "s" },
                    metric
                ))
            })?,
            "archive",
        ),
    };
    if cv_pct == 0.0 || cv_pct >= 100.0 {
        return Err(InputError(format!(
            "the {} archived runs of this spec, testbed and config_key show a noise of \
             {cv_pct:.1}%, which cannot be planned with: give --cv",
            values.len()
        ))
        .into());
    }
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
    // Every documented simulation runs: no time budget cuts them short.
    let input = PlanInput {
        min_trials: plan::TRIALS,
        max_trials: plan::TRIALS,
        jobs: args.jobs as usize,
        ..PlanInput::new(args.commits, args.effect, cv_pct, seconds_per_run)
    };
    let estimate = estimate(&input).map_err(|err| InputError(err.to_string()))?;
    let target_pct = plan::accuracy_target_pct(&DecisionConfig::default());
    let below_target = estimate.correct_pct < target_pct;
    if !global.quiet() {
        for line in warnings(&estimate, target_pct) {
            eprintln!("{line}");
        }
    }
    let plan = Plan {
        test: request.spec.test.name().to_string(),
        metric: metric.name().to_string(),
        noise_from,
        seconds_from,
        n_archived_runs: values.len(),
        config_key,
        target_pct,
        estimate,
    };
    output::emit(
        global,
        || output::pretty(&plan, "the plan"),
        || output::template(global, "plan", &PlanContext::new(&plan), "the plan"),
    )?;
    Ok(if below_target && args.strict {
        Code::BelowTarget
    } else {
        Code::Ok
    })
}

/// What is wrong with an estimate, as warning lines within 80 columns:
/// fewer right answers than the target, and a mean above the 95th
/// percentile.
fn warnings(estimate: &Estimate, target_pct: f64) -> Vec<String> {
    let mut lines = Vec::new();
    if estimate.correct_pct < target_pct {
        lines.push(format!(
            "netbisect: warning: {:.1}% of {} simulated bisections named the right commit,",
            estimate.correct_pct, estimate.n_trials
        ));
        let refused = if estimate.refused_pct > 0.0 {
            format!(" ({:.1}% were refused at their ends)", estimate.refused_pct)
        } else {
            String::new()
        };
        lines.push(format!(
            "  below the {target_pct:.1}% a bisection aims for{refused}:"
        ));
        lines.push(format!(
            "  a change of {:.2}% in {:.2}% noise is hard to bisect; less noise (a longer",
            estimate.step_pct, estimate.cv_pct
        ));
        lines.push("  -l, CPUs pinned with -T) makes it stand out".to_string());
    }
    if estimate.mean_measurements > f64::from(estimate.p95_measurements) {
        lines.push(
            "netbisect: warning: the mean is above the 95th percentile: the slowest".to_string(),
        );
        lines.push(format!(
            "  simulated bisections took up to {} measurements",
            estimate.max_measurements
        ));
    }
    lines
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
    use super::*;

    #[test]
    fn warnings_name_what_falls_short_within_80_columns() {
        let estimate = Estimate {
            n_commits: 16,
            step_pct: 2.0,
            cv_pct: 27.0,
            seconds_per_run: 1.0,
            n_trials: 300,
            correct_pct: 0.0,
            refused_pct: 96.3,
            mean_measurements: 230.0,
            p95_measurements: 200,
            max_measurements: 3100,
            mean_seconds: 230.0,
            p95_seconds: 200.0,
            mean_after_ends: 0.0,
            p95_after_ends: 0,
            jobs: 1,
            mean_rounds: 0.0,
            p95_rounds: 0,
        };
        let lines = warnings(&estimate, 99.5);
        assert_eq!(lines.len(), 6, "{lines:#?}");
        assert!(lines[0].contains("0.0% of 300 simulated"), "{lines:#?}");
        assert!(lines[1].contains("below the 99.5%"), "{lines:#?}");
        assert!(lines[1].contains("(96.3% were refused"), "{lines:#?}");
        assert!(lines[5].contains("up to 3100 measurements"), "{lines:#?}");
        for line in &lines {
            assert!(line.len() <= 80 && line.is_ascii(), "{line:?}");
        }
        let healthy = Estimate {
            correct_pct: 100.0,
            refused_pct: 0.0,
            mean_measurements: 40.0,
            p95_measurements: 60,
            ..estimate
        };
        assert!(warnings(&healthy, 99.5).is_empty());
    }

    #[test]
    fn coefficient_of_variation_of_known_values() {
        // mean 10, sample variance 2.5: sd 1.5811...
        let cv = coefficient_of_variation(&[8.0, 9.0, 10.0, 11.0, 12.0]).unwrap();
        assert!((cv - 15.811_388).abs() < 1e-5, "{cv}");
        assert_eq!(coefficient_of_variation(&[1.0]), None);
        assert_eq!(coefficient_of_variation(&[0.0, 0.0]), None);
    }
}
