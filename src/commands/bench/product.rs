//! `netbisect bench --sweep A=... --sweep B=...` on this host: one run per
//! configuration of the axes, in order, each stored as it finishes and
//! printed as bench prints a run (`--json`: one record a line). A
//! configuration that fails is named and the rest go on.

use crate::exit::{self, Code};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::progress::Reporter;
use crate::request::BenchInvocation;
use crate::request::axes::Configuration;
use crate::store::{
    RunOutput, fail_if_not_granted, store_and_print, store_run, warn_of_refused_settings,
};
use bench_core::run::{BenchRequest, bench};

pub fn run(
    global: &GlobalOptions,
    invocation: &BenchInvocation,
    configurations: &[Configuration],
) -> exit::Result<Code> {
    let progress = Reporter::new(global, configurations.len() as u64);
    let mut n_failed = 0;
    for (config_idx, configuration) in configurations.iter().enumerate() {
        let name = configuration.name.join(" ");
        progress.status(&format!(
            "configuration {}/{}: {name}",
            config_idx + 1,
            configurations.len()
        ));
        let request = BenchRequest {
            spec: configuration.spec.clone(),
            ..invocation.request.clone()
        };
        let record = match bench(&request) {
            Ok(record) => record,
            Err(err) => {
                n_failed += 1;
                progress.line(&format!("error: {name}: the test failed: {err}"));
                progress.advance(1);
                continue;
            }
        };
        progress.advance(1);
        fail_if_not_granted(&invocation.output, &record)?;
        if invocation.output.archive {
            store_run(global, &record)?;
        }
        if global.json() {
            warn_of_refused_settings(global, &record);
            output::write_stdout(&output::record(&record)?)?;
        } else {
            let print_only = RunOutput {
                archive: false,
                ..invocation.output.clone()
            };
            store_and_print(global, &print_only, &record)?;
        }
    }
    progress.finish();
    if n_failed == 0 {
        Ok(Code::Ok)
    } else {
        Err(exit::Failure::msg(format!(
            "{n_failed} of {} configurations failed (named above)",
            configurations.len()
        )))
    }
}
