//! The context of `bisect-report`: the end of a bisection (bisect's
//! report or refusal, as `bisect report --json` prints it), the test
//! and environment of its ends, and the commands that reproduce it.

use crate::render::filters::fixed_text;
use crate::views::bisection::{StepRow, duration, short_id, step_rows, unit_of, value_of};
use bisect::graph::CommitInfo;
use bisect::report::{BisectReport, BisectResult, EndSummary, Outcome, Refusal};
use run_record::record::RunRecord;
use run_record::spec::RunSpec;
use serde::Serialize;

/// One line of the environment summary.
#[derive(Debug, Serialize)]
pub struct EnvLine {
    /// What the line names (`testbed`, `cpu`, `kernel (good)`).
    pub key: &'static str,
    /// Its value.
    pub value: String,
}

/// What the `bisect-report` template is given.
#[derive(Debug, Serialize)]
pub struct ReportContext<'a> {
    /// `report` or `refusal`.
    pub kind: &'static str,
    /// The report of a finished bisection.
    pub report: Option<&'a BisectReport>,
    /// The refusal of a bisection whose ends do not differ enough.
    pub refusal: Option<&'a Refusal>,
    /// The test spec of the good end's first run, when archived.
    pub spec: Option<RunSpec>,
    /// The good revision as given.
    pub good_rev: &'a str,
    /// The bad revision as given.
    pub bad_rev: &'a str,
    /// The commands that reproduce the bisection, as shell lines.
    pub reproduce: Vec<String>,
    /// The environment of the ends, a line per fact.
    pub environment: Vec<EnvLine>,
    /// True when the change is for the worse in the metric's direction.
    pub is_regression: bool,
    /// The unit of the metric's figures (`10^6bits/s`, `usec`).
    pub unit: String,
    /// The good end and the bad end, as the table of the ends prints
    /// them.
    pub end_rows: Vec<EndRow>,
    /// A first bad commit: its parent and it, as the table of the
    /// regression prints them.
    pub culprit_rows: Vec<EndRow>,
    /// The steps of the bisection, as the table of steps prints them.
    pub step_rows: Vec<StepRow>,
    /// What a bisection of several jobs cost in time; none with one.
    pub parallel: Option<ParallelCost>,
}

/// The jobs, rounds and wall-clock of a bisection of several jobs, as
/// its report prints them.
#[derive(Debug, Serialize)]
pub struct ParallelCost {
    /// Measurements run at once.
    pub jobs: u32,
    /// The rounds: the wall-clock in units of one measurement.
    pub rounds: u32,
    /// The wall-clock as people read a time; none when unknown.
    pub wall: Option<String>,
}

/// A commit in a table of means: the good and the bad end, or the
/// culprit and its parent.
#[derive(Debug, Serialize)]
pub struct EndRow {
    /// The commit, cut to 12 digits.
    pub commit: String,
    /// The mean of its samples in the metric's unit.
    pub mean: String,
    /// Their standard deviation, percent of the mean (`4.2%`; `-%`
    /// where the mean is zero).
    pub spread: String,
    /// How many samples.
    pub n_samples: usize,
}

impl EndRow {
    /// The row of `end` of a bisection on `metric`.
    fn of(metric: &str, end: &EndSummary) -> EndRow {
        let spread = (end.mean != 0.0).then(|| end.stddev / end.mean * 100.0);
        EndRow {
            commit: short_id(&end.commit.id),
            mean: value_of(metric, Some(end.mean)),
            spread: format!(
                "{}%",
                spread.map_or_else(|| "-".to_string(), |spread| fixed_text(spread, 1))
            ),
            n_samples: end.samples.len(),
        }
    }
}

impl<'a> ReportContext<'a> {
    /// The context of `outcome`, whose ends' first archived runs are
    /// `ends` (good, bad) and whose revisions were given as `revs`;
    /// `reproduce` are the shell lines that make it again.
    pub fn new(
        outcome: &'a Outcome,
        ends: [Option<&RunRecord>; 2],
        revs: [&'a str; 2],
        reproduce: Vec<String>,
    ) -> ReportContext<'a> {
        let (report, refusal) = match outcome {
            Outcome::Finished(report) => (Some(report), None),
            Outcome::Refused(refusal) => (None, Some(refusal)),
        };
        let [good, bad] = ends;
        let (metric, good_end, bad_end) = match outcome {
            Outcome::Finished(report) => (&report.metric, &report.good, &report.bad),
            Outcome::Refused(refusal) => (&refusal.metric, &refusal.good, &refusal.bad),
        };
        ReportContext {
            kind: if report.is_some() {
                "report"
            } else {
                "refusal"
            },
            report,
            refusal,
            spec: good.or(bad).map(|record| record.spec.clone()),
            good_rev: revs[0],
            bad_rev: revs[1],
            reproduce,
            environment: environment(good, bad),
            is_regression: report.is_some_and(BisectReport::is_regression),
            unit: unit_of(metric),
            end_rows: vec![EndRow::of(metric, good_end), EndRow::of(metric, bad_end)],
            parallel: None,
            culprit_rows: report.map_or_else(Vec::new, culprit_rows),
            step_rows: report.map_or_else(Vec::new, |report| step_rows(metric, &report.steps)),
        }
    }

    /// The context with the cost of a bisection of `jobs` measurements
    /// at once, in `rounds` and `wall_s` seconds; one job adds nothing.
    pub fn with_timing(self, jobs: u32, rounds: u32, wall_s: Option<f64>) -> ReportContext<'a> {
        ReportContext {
            parallel: (jobs > 1).then(|| ParallelCost {
                jobs,
                rounds,
                wall: wall_s.map(duration),
            }),
            ..self
        }
    }
}

/// The parent and the culprit of a first bad commit, with the means of
/// the regression between them.
fn culprit_rows(report: &BisectReport) -> Vec<EndRow> {
    let BisectResult::FirstBad {
        commit,
        parent,
        culprit_samples,
        parent_samples,
        regression,
        ..
    } = &report.result
    else {
        return Vec::new();
    };
    let row = |commit: &CommitInfo, mean: Option<f64>, samples: &[f64]| EndRow {
        commit: short_id(&commit.id),
        mean: value_of(&report.metric, mean),
        spread: String::new(),
        n_samples: samples.len(),
    };
    vec![
        row(
            parent,
            regression.as_ref().map(|r| r.old_mean),
            parent_samples,
        ),
        row(
            commit,
            regression.as_ref().map(|r| r.new_mean),
            culprit_samples,
        ),
    ]
}

/// What the report says of the ends' environment, from their first
/// archived runs: the testbed, the CPU, the governor, the congestion
/// control, and each end's kernel.
fn environment(good: Option<&RunRecord>, bad: Option<&RunRecord>) -> Vec<EnvLine> {
    let mut lines = Vec::new();
    let Some(first) = good.or(bad) else {
        return lines;
    };
    lines.push(EnvLine {
        key: "testbed",
        value: first.testbed.clone(),
    });
    let local = &first.env.local;
    if let Some(model) = &local.cpu_model {
        let count = local.cpu_count.map_or(String::new(), |n| format!("{n} x "));
        lines.push(EnvLine {
            key: "cpu",
            value: format!("{count}{model}"),
        });
    }
    if let Some(governor) = &local.governor {
        lines.push(EnvLine {
            key: "governor",
            value: governor.clone(),
        });
    }
    if let Some(cc) = local.sysctls.get("net.ipv4.tcp_congestion_control") {
        lines.push(EnvLine {
            key: "congestion",
            value: cc.clone(),
        });
    }
    for (key, record) in [("kernel (good)", good), ("kernel (bad)", bad)] {
        if let Some(release) = record.and_then(|record| record.env.local.kernel_release.clone()) {
            lines.push(EnvLine {
                key,
                value: release,
            });
        }
    }
    lines
}
