//! `netbisect compare A B`: the runs of two selectors side by side, group
//! by group, with a significance verdict per metric (see
//! [`crate::comparison`]).
//!
//! compare reports and does not judge: it exits with 0 whatever the
//! verdicts are, 2 when a selector or an option is wrong; with `--check`,
//! for scripts and CI, it exits with 1 ([`Code::New`]) when the second
//! side is significantly worse than the first in any metric, by at least
//! `--min-effect`.

use crate::cli::{CompareArgs, CompareLayoutArg};
use crate::comparison::{
    CompareLayout, ComparisonRequest, changes_for_the_worse, print_comparison,
};
use crate::exit::{self, Code};
use crate::global_options::GlobalOptions;

pub fn run(global: &GlobalOptions, args: &CompareArgs) -> exit::Result<Code> {
    let request = ComparisonRequest {
        first: args.first.clone(),
        second: args.second.clone(),
        alpha: args.alpha,
        min_effect: args.min_effect,
        test: args.test,
        testbed: args.testbed.clone(),
        layout: match args.layout {
            CompareLayoutArg::Netperf => CompareLayout::Netperf,
            CompareLayoutArg::Matrix => CompareLayout::Matrix,
            CompareLayoutArg::Stats => CompareLayout::Stats,
        },
        email: args.email,
        units: args.units.units.clone(),
        experiment: args.experiment.clone(),
        experiment_command: None,
    };
    let comparison = print_comparison(global, &request)?;
    if !args.check {
        return Ok(Code::Ok);
    }
    let worse = changes_for_the_worse(&comparison);
    if worse.is_empty() {
        return Ok(Code::Ok);
    }
    if !global.quiet() {
        eprintln!(
            "netbisect: compare --check: {} is worse than {} in {} metric{}:",
            comparison.second_name,
            comparison.first_name,
            worse.len(),
            if worse.len() == 1 { "" } else { "s" }
        );
        for (title, row) in &worse {
            eprintln!(
                "  {} {} ({title})",
                row.metric,
                row.change_pct
                    .map_or("from zero".to_string(), |pct| format!("{pct:+.1}%"))
            );
        }
    }
    Ok(Code::New)
}
