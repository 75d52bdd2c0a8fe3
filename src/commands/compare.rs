//! `netbisect compare A B`: the runs of two selectors side by side, group
//! by group, with a significance verdict per metric (see
//! [`crate::comparison`]).
//!
//! compare reports and does not judge: it exits with 0 whatever the
//! verdicts are, 2 when a selector or an option is wrong.

use crate::cli::{CompareArgs, CompareLayoutArg};
use crate::comparison::{CompareLayout, ComparisonRequest, print_comparison};
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
    };
    print_comparison(global, &request)?;
    Ok(Code::Ok)
}
