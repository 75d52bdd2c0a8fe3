//! The context of `bisect-report`: the end of a bisection (bisect's
//! report or refusal, as `bisect report --json` prints it), the test
//! and environment of its ends, and the commands that reproduce it.

use bisect::report::{BisectReport, Outcome, Refusal};
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
        }
    }
}

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
