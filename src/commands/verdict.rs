//! `netbisect verdict`: measure the current tree, compare with archived
//! good and bad baselines, and answer as `git bisect run` expects: exit 0
//! when the tree is like the good side (old), 1 when it is like the bad
//! side (new), 125 when it cannot tell or could not measure. A failure to
//! measure is 125, so that `git bisect run` skips the commit instead of
//! calling it bad; a usage or configuration error (a misspelled baseline,
//! a bad option, a missing program) is 128, on which `git bisect run`
//! aborts, since it would be the same at every commit.
//!
//! The decision is bisect's sequential test: the fresh repeats are
//! classified against a model of the two baselines, one repeat at a time,
//! up to `--max-repeats`. Every fresh run is stored in the archive under
//! the commit checked out (HEAD), so the next verdict or bisection can
//! reuse it.

use crate::cli::{MeasureArgs, VerdictArgs};
use crate::exit::{self, Code, Context, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use archive::{Archive, ArchiveError, CanonicalRun, RunQuery};
use bisect::decision::{self, DecisionConfig, Model, StepDecision, Verdict};
use bisect::measure::{self, CommandMeasurement};
use child_process::runner;
use run_record::record::{Metric, RunRecord};
use run_record::spec::{RunSpec, TestKind};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::request::parse_bench_spec;
use crate::store::open_existing_archive;

/// A figure of `metric` in the units the rest of the tool prints (the
/// run table, `compare`, the bisection's report): throughput in
/// 10^6bits/s (netperf's default `-f m`), rates in Trans/s, latencies in
/// us, CPU in %, service demand in us/KB or us/Tran.
fn shown(metric: Metric, test: TestKind, value: f64) -> (f64, &'static str) {
    match metric {
        Metric::ThroughputBps => (value / 1e6, "10^6bits/s"),
        Metric::TransactionRate => (value, "Trans/s"),
        other => (value, other.unit(test)),
    }
}

/// What the figure is, in words where the metric's name has its unit.
fn label(metric: Metric) -> &'static str {
    match metric {
        Metric::ThroughputBps => "throughput",
        Metric::TransactionRate => "transaction rate",
        other => other.name(),
    }
}

/// Why the verdict is what it is, in words, with the log-likelihood
/// ratio of the sequential test and its bound named.
fn explanation(verdict: Verdict, n_runs: usize, llr: f64, bound: f64) -> String {
    let runs = if n_runs == 1 {
        "The run".to_string()
    } else {
        format!("The {n_runs} runs")
    };
    match verdict {
        Verdict::Old | Verdict::New => {
            let (side, sign) = if verdict == Verdict::Old {
                ("good", -1.0)
            } else {
                ("bad", 1.0)
            };
            format!(
                "{runs} are like the {side} side: in the sequential test of the bad side \
                 against the good (Wald's, each run clipped so that no outlier decides \
                 alone), their log-likelihood ratio, {llr:+.2}, went beyond the bound of \
                 {:+.2} for {side}.",
                sign * bound
            )
            .replace("The run are", "The run is")
        }
        Verdict::Unknown | Verdict::Skip => format!(
            "{runs} are neither clearly like the good side nor like the bad: their \
             log-likelihood ratio of the bad side against the good, {llr:+.2}, stayed \
             between the bounds {:+.2} and {:+.2} up to --max-repeats, so `git bisect \
             run` skips this commit (exit 125).",
            -bound, bound
        )
        .replace("The run are", "The run is"),
    }
}

/// `text` broken at spaces into lines of at most `width` columns (a word
/// longer than that stays whole), each ending in a newline.
fn wrap(text: &str, width: usize) -> String {
    let mut wrapped = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            wrapped.push_str(&line);
            wrapped.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        wrapped.push_str(&line);
        wrapped.push('\n');
    }
    wrapped
}

/// Schema of [`VerdictDoc`].
const VERDICT_SCHEMA: &str = "netbisect.verdict/1";

/// What `verdict --json` prints.
#[derive(Debug, Serialize)]
struct VerdictDoc {
    schema: &'static str,
    /// `old`, `new` or `unknown`.
    verdict: Verdict,
    metric: String,
    commit: Option<String>,
    good_mean: f64,
    bad_mean: f64,
    samples: Vec<f64>,
    run_ids: Vec<String>,
    llr: f64,
    /// Change of the fresh samples' mean from the good baseline's,
    /// percent, with the 95% interval on the ratio of the means; `null`
    /// with fewer than two samples a side or no bounded interval.
    change_pct: Option<f64>,
    change_low_pct: Option<f64>,
    change_high_pct: Option<f64>,
}

pub fn run(global: &GlobalOptions, args: &VerdictArgs) -> exit::Result<Code> {
    match decide(global, args) {
        Ok(code) => Ok(code),
        Err(err) => {
            if crate::exit::is_broken_pipe(&err) {
                return Ok(Code::Ok);
            }
            let code = match crate::exit::classify(&err) {
                Code::Interrupted => Code::Interrupted,
                _ if is_configuration_error(&err) => Code::Abort,
                _ => Code::CannotTell,
            };
            let mut stderr = std::io::stderr().lock();
            let what = match code {
                Code::CannotTell => "cannot tell",
                _ => "error",
            };
            let _ = writeln!(stderr, "netbisect: {what}: {err}");
            for cause in err.chain().skip(1) {
                let _ = writeln!(stderr, "  caused by: {cause}");
            }
            Ok(code)
        }
    }
}

/// Errors that would be the same at every commit: the user's input, the
/// archive, a measure program that is not there.
fn is_configuration_error(err: &exit::Failure) -> bool {
    crate::exit::classify(err) == Code::Input
        || err.chain().any(|cause| {
            matches!(
                cause.downcast_ref::<runner::RunnerError>(),
                Some(runner::RunnerError::NotFound { .. })
            )
        })
}

/// The archived runs a `--good-run`/`--bad-run` argument names.
enum Baseline {
    /// A run id: that run and every run of its commit under its
    /// config_key, taken as they are.
    Named(Vec<RunRecord>),
    /// A commit: all its runs, whatever their test; the runs of the spec
    /// measured are picked once that spec is known.
    Commit(Vec<RunRecord>),
}

fn baseline(archive: &Archive, text: &str) -> exit::Result<Baseline> {
    match archive.find(text) {
        Ok((run, _)) => {
            let query = match &run.commit {
                Some(commit) => RunQuery {
                    commit_prefix: Some(commit.clone()),
                    config_key_prefix: Some(run.config_key.clone()),
                    ..RunQuery::default()
                },
                None => RunQuery {
                    id_prefix: Some(run.id.clone()),
                    ..RunQuery::default()
                },
            };
            let records = archive.records(&query)?;
            return Ok(Baseline::Named(
                records
                    .into_iter()
                    .filter(|record| record.subject.commit == run.commit)
                    .collect(),
            ));
        }
        Err(ArchiveError::NoSuchRun(_)) => {}
        Err(err) => return Err(err.into()),
    }
    let records = archive.records(&RunQuery {
        commit_prefix: Some(text.to_string()),
        ..RunQuery::default()
    })?;
    if records.is_empty() {
        return Err(InputError(format!("no archived run or commit matches '{text}'")).into());
    }
    Ok(Baseline::Commit(records))
}

/// The runs of `baseline` of the test measured: those of `spec` on
/// `testbed` when it has any, else those of the same test (the spec may
/// be what a commit changes), in the config_key most of them share.
fn runs_of_spec(
    baseline: Baseline,
    text: &str,
    spec: &RunSpec,
    testbed: &str,
) -> exit::Result<Vec<RunRecord>> {
    let records = match baseline {
        Baseline::Named(records) => return Ok(records),
        Baseline::Commit(records) => records,
    };
    let mut tests: BTreeMap<String, usize> = BTreeMap::new();
    for record in &records {
        *tests.entry(record.spec.test.to_string()).or_default() += 1;
    }
    let same_test: Vec<RunRecord> = records
        .into_iter()
        .filter(|record| record.spec.test == spec.test && record.testbed == testbed)
        .collect();
    let exact = same_test.iter().any(|record| &record.spec == spec);
    let mut by_key: BTreeMap<String, Vec<RunRecord>> = BTreeMap::new();
    for record in same_test {
        if !exact || &record.spec == spec {
            by_key
                .entry(record.config_key.clone())
                .or_default()
                .push(record);
        }
    }
    by_key.into_values().max_by_key(Vec::len).ok_or_else(|| {
        let has: Vec<String> = tests
            .iter()
            .map(|(test, n_runs)| format!("{n_runs} {test}"))
            .collect();
        InputError(format!(
            "'{text}' has no archived {} run on testbed {testbed}, only {} runs",
            spec.test,
            has.join(", ")
        ))
        .into()
    })
}

/// One fresh run of the current tree: the bench test in-process, or the
/// measure command as a bisection runs it (its skips are failures to
/// measure, which `verdict` answers with 125).
fn measure_once(
    args: &VerdictArgs,
    bench: Option<&bench_core::run::BenchRequest>,
    dir: &Path,
    commit: Option<&str>,
) -> exit::Result<RunRecord> {
    if let Some(request) = bench {
        let mut request = request.clone();
        request.subject.commit = commit.map(str::to_string);
        return bench_core::run::bench(&request).context("the bench test failed");
    }
    let command = args.measure.measure.as_deref().unwrap_or_default();
    let mut env = vec![("NETBISECT_WORKTREE".to_string(), dir.display().to_string())];
    if let Some(commit) = commit {
        env.push(("NETBISECT_COMMIT".to_string(), commit.to_string()));
    }
    let timeout = args.timeout.map(Duration::from_secs_f64);
    match measure::run_measure(command, dir, &env, timeout, None)? {
        // A command that prints no record would print none at any commit:
        // an input error, on which `git bisect run` aborts.
        CommandMeasurement::Printed(stdout) => RunRecord::from_slice(&stdout)
            .context("the measure command printed no valid run record"),
        CommandMeasurement::Skip(reason) => Err(exit::Failure::msg(reason)),
    }
}

/// What is measured: the bench test (run in-process), or the measure
/// command, checked to exist before anything runs.
fn bench_of(args: &VerdictArgs, dir: &Path) -> exit::Result<Option<bench_core::run::BenchRequest>> {
    match &args.measure {
        MeasureArgs {
            bench: Some(spec), ..
        } => Ok(Some(parse_bench_spec(spec)?)),
        MeasureArgs {
            measure: Some(command),
            ..
        } => {
            runner::check_command(command, dir)?;
            Ok(None)
        }
        _ => Err(InputError("give --bench SPEC or --measure CMD".to_string()).into()),
    }
}

/// The baselines' figures of `metric` and the model of the two sides
/// they make, refused when a side has none or the sides do not differ.
fn model_of(
    good: &[RunRecord],
    bad: &[RunRecord],
    metric: Metric,
) -> exit::Result<(Vec<f64>, Model)> {
    let values = |records: &[RunRecord]| -> Vec<f64> {
        records
            .iter()
            .filter_map(|record| record.sample(metric))
            .collect()
    };
    let good_samples = values(good);
    let bad_samples = values(bad);
    if good_samples.is_empty() || bad_samples.is_empty() {
        return Err(InputError(format!("the baselines have no {metric} figures")).into());
    }
    let model = Model::estimate(&[&good_samples], &[&bad_samples])
        .filter(|model| model.new_mean != model.old_mean)
        .ok_or_else(|| InputError("the good and bad baselines do not differ".to_string()))?;
    Ok((good_samples, model))
}

/// Where the fresh runs come from and what they are compared with.
struct Measuring<'a> {
    args: &'a VerdictArgs,
    bench: Option<&'a bench_core::run::BenchRequest>,
    dir: &'a Path,
    commit: Option<&'a str>,
    metric: Metric,
    /// The config_key of the good baseline, which fresh runs should share.
    good_config_key: &'a str,
}

/// The fresh runs taken until the sequential test decides: their figures,
/// their ids, the verdict and its log-likelihood ratio. Every run is
/// stored under the commit checked out.
struct Measured {
    samples: Vec<f64>,
    run_ids: Vec<String>,
    verdict: Verdict,
    llr: f64,
}

/// Measures one repeat at a time (`first_run` first, when the spec was
/// learnt from it), storing each, until the sequential test of `model`
/// decides.
fn measure_until_decided(
    global: &GlobalOptions,
    archive: &mut Archive,
    measuring: &Measuring<'_>,
    mut first_run: Option<RunRecord>,
    model: &Model,
    config: &DecisionConfig,
) -> exit::Result<Measured> {
    let metric = measuring.metric;
    let mut samples = Vec::new();
    let mut run_ids = Vec::new();
    let (verdict, llr) = loop {
        let mut record = match first_run.take() {
            Some(record) => record,
            None => measure_once(
                measuring.args,
                measuring.bench,
                measuring.dir,
                measuring.commit,
            )?,
        };
        if let Some(commit) = measuring.commit
            && record.subject.commit.as_deref() != Some(commit)
        {
            record.subject.commit = Some(commit.to_string());
            record.seal()?;
        }
        let value = record
            .sample(metric)
            .ok_or_else(|| exit::Failure::msg(format!("the run record has no {metric} figures")))?;
        if record.config_key != measuring.good_config_key && !global.quiet() {
            eprintln!(
                "netbisect: warning: run {} has another config_key than the good baseline",
                &record.id[..12]
            );
        }
        run_ids.push(record.id.clone());
        archive
            .store(&CanonicalRun::from_record(record)?)
            .context("failed to store the run")?;
        samples.push(value);
        match decision::classify(&samples, model, config) {
            StepDecision::NeedMore { .. } => continue,
            StepDecision::Decided { verdict, llr } => break (verdict, llr),
        }
    };
    Ok(Measured {
        samples,
        run_ids,
        verdict,
        llr,
    })
}

/// The verdict in words: the answer, the figures beside the baselines',
/// the change from good, and why.
fn verdict_text(doc: &VerdictDoc, metric: Metric, test: TestKind, bound: f64) -> String {
    let mean = doc.samples.iter().sum::<f64>() / doc.samples.len() as f64;
    let word = match doc.verdict {
        Verdict::Old => "old (like the good side)",
        Verdict::New => "new (like the bad side)",
        Verdict::Unknown | Verdict::Skip => "cannot tell",
    };
    let (value, unit) = shown(metric, test, mean);
    let (good, _) = shown(metric, test, doc.good_mean);
    let (bad, _) = shown(metric, test, doc.bad_mean);
    let n_runs = doc.samples.len();
    let mut text = format!(
        "verdict: {word}\n{}: {value:.2} {unit} over {n_runs} run{}; good {good:.2}, \
         bad {bad:.2}\n",
        label(metric),
        if n_runs == 1 { "" } else { "s" },
    );
    if let (Some(change_pct), Some(low_pct), Some(high_pct)) =
        (doc.change_pct, doc.change_low_pct, doc.change_high_pct)
    {
        text.push_str(&format!(
            "change from good: {change_pct:+.1}% [{low_pct:+.1}%, {high_pct:+.1}%] at 95%\n"
        ));
    }
    let why = explanation(doc.verdict, n_runs, doc.llr, bound);
    text.push_str(&wrap(&why, 80));
    text
}

fn decide(global: &GlobalOptions, args: &VerdictArgs) -> exit::Result<Code> {
    let mut archive = open_existing_archive(global)?;
    let good = baseline(&archive, &args.good_run).context("the good baseline")?;
    let bad = baseline(&archive, &args.bad_run).context("the bad baseline")?;
    let dir = std::env::current_dir().context("failed to read the current directory")?;
    let commit = bisect::range::discover(&dir)
        .ok()
        .and_then(|repo| bisect::range::resolve(&repo, "HEAD").ok())
        .map(|oid| oid.to_string());
    let bench = bench_of(args, &dir)?;
    // A misspelled metric is the same mistake at every commit: said
    // before anything is measured.
    let named_metric: Option<Metric> = args.metric.as_deref().map(str::parse).transpose()?;
    // The baselines are the runs of the spec measured: a bench spec says
    // it up front; a measure command's first run says it.
    let mut first_run = None;
    let (spec, testbed) = match &bench {
        Some(request) => (request.spec.clone(), request.testbed.clone()),
        None => {
            let record = measure_once(args, None, &dir, commit.as_deref())?;
            let spec = (record.spec.clone(), record.testbed.clone());
            first_run = Some(record);
            spec
        }
    };
    let good = runs_of_spec(good, &args.good_run, &spec, &testbed).context("the good baseline")?;
    let bad = runs_of_spec(bad, &args.bad_run, &spec, &testbed).context("the bad baseline")?;
    let metric: Metric = match named_metric {
        Some(metric) => metric,
        None => good
            .first()
            .map_or(Metric::ThroughputBps, RunRecord::primary_metric),
    };
    let (good_samples, model) = model_of(&good, &bad, metric)?;
    let config = DecisionConfig {
        max_repeats: args.max_repeats.max(1),
        ..DecisionConfig::default()
    };
    let measuring = Measuring {
        args,
        bench: bench.as_ref(),
        dir: &dir,
        commit: commit.as_deref(),
        metric,
        good_config_key: &good[0].config_key,
    };
    let measured =
        measure_until_decided(global, &mut archive, &measuring, first_run, &model, &config)?;
    let change = run_record::stats::ratio_interval(
        &good_samples,
        &measured.samples,
        archive::compare::CHANGE_INTERVAL_LEVEL,
    )
    .ok()
    .map(|interval| interval.relative());
    let doc = VerdictDoc {
        schema: VERDICT_SCHEMA,
        verdict: measured.verdict,
        metric: metric.name().to_string(),
        commit,
        good_mean: model.old_mean,
        bad_mean: model.new_mean,
        samples: measured.samples,
        run_ids: measured.run_ids,
        llr: measured.llr,
        change_pct: change.map(|change| change.change_pct),
        change_low_pct: change.map(|change| change.low_pct),
        change_high_pct: change.map(|change| change.high_pct),
    };
    let bound = decision::wald_bound(config.step_error);
    output::emit(
        global,
        || output::line(&doc, "the verdict"),
        || Ok(verdict_text(&doc, metric, spec.test, bound)),
    )?;
    Ok(match doc.verdict {
        Verdict::Old => Code::Ok,
        Verdict::New => Code::New,
        Verdict::Unknown | Verdict::Skip => Code::CannotTell,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_in_the_units_of_the_tool() {
        assert_eq!(
            shown(Metric::ThroughputBps, TestKind::TcpStream, 1.437677e10),
            (14376.77, "10^6bits/s")
        );
        assert_eq!(
            shown(Metric::TransactionRate, TestKind::TcpRr, 41000.5),
            (41000.5, "Trans/s")
        );
        assert_eq!(shown(Metric::LatencyP99Us, TestKind::TcpRr, 52.5).1, "us");
        assert_eq!(label(Metric::ThroughputBps), "throughput");
    }

    #[test]
    fn the_decision_is_explained_in_words_within_80_columns() {
        let old = wrap(&explanation(Verdict::Old, 3, -236.74, 7.6), 80);
        assert!(
            old.starts_with("The 3 runs are like the good side"),
            "{old}"
        );
        assert!(old.contains("log-likelihood ratio, -236.74,"), "{old}");
        assert!(old.contains("bound of -7.60 for good"), "{old}");
        let new = wrap(&explanation(Verdict::New, 1, 12.0, 7.6), 80);
        assert!(new.starts_with("The run is like the bad side"), "{new}");
        let words = explanation(Verdict::Unknown, 10, 1.2, 7.6);
        assert!(
            words.contains("between the bounds -7.60 and +7.60"),
            "{words}"
        );
        let unknown = wrap(&words, 80);
        for line in old.lines().chain(new.lines()).chain(unknown.lines()) {
            assert!(line.len() <= 80 && line.is_ascii(), "{line:?}");
        }
        assert_eq!(wrap("a b", 1), "a\nb\n");
    }
}
