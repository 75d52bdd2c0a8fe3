//! `netbisect bench --sweep`: one run per size, each a record of its own
//! handed to the archive as it finishes, then a sweep table (template
//! `sweep`), or with `--json` the records as JSON lines.
//!
//! The table's data is [`crate::views::sweep::SweepTable`].

use crate::exit::{self, Code, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::request::{BenchInvocation, SizeSweep};
use crate::store::{fail_if_not_granted, store_run, warn_of_refused_settings};
use crate::views::sweep::{Stopped, SweepContext, SweepTable, sweep_table};
use crate::views::units::Units;
use bench_core::run::{BenchRequest, bench};
use run_record::record::RunRecord;

/// Runs `bench --sweep`, checked already: one run per size; stops at the
/// first size that fails.
pub fn run(
    global: &GlobalOptions,
    invocation: &BenchInvocation,
    size_sweep: &SizeSweep,
) -> exit::Result<Code> {
    let SizeSweep { sweep, specs } = size_sweep;
    let base = &invocation.request;
    let output = &invocation.output;
    let n_sizes = specs.len();
    let progress = crate::progress::Reporter::new(global, n_sizes as u64);
    let mut records: Vec<RunRecord> = Vec::with_capacity(n_sizes);
    for (size_idx, (point, spec)) in sweep.points.iter().zip(specs.iter().cloned()).enumerate() {
        progress.status(&format!("size {}/{n_sizes}: {point}", size_idx + 1));
        let request = BenchRequest {
            spec,
            ..base.clone()
        };
        let record = match bench(&request) {
            Ok(record) => record,
            Err(err) => {
                let stopped = Stopped {
                    at: size_idx + 1,
                    size: point.to_string(),
                };
                progress.finish();
                let what = stop_message(&stopped, n_sizes, records.len(), !output.archive);
                if !global.json() && !records.is_empty() {
                    let table = sweep_table(&base.spec, &sweep.parameter, &records, n_sizes);
                    print_table(
                        global,
                        &output.units,
                        SweepTable {
                            stopped: Some(stopped),
                            ..table
                        },
                    )?;
                }
                return Err(exit::Failure::from(err).context(what));
            }
        };
        fail_if_not_granted(output, &record)?;
        warn_of_refused_settings(global, &record);
        if output.archive {
            store_run(global, &record)?;
        }
        if global.json() {
            output::write_stdout(&output::record(&record)?)?;
        }
        progress.advance(1);
        records.push(record);
    }
    progress.finish();
    if !global.json() {
        print_table(
            global,
            &output.units,
            sweep_table(&base.spec, &sweep.parameter, &records, n_sizes),
        )?;
    }
    Ok(Code::Ok)
}

/// What the error says when size `stopped.at` failed after `n_finished`
/// sizes had finished.
fn stop_message(stopped: &Stopped, n_sizes: usize, n_finished: usize, no_archive: bool) -> String {
    let head = format!(
        "the sweep stopped at size {} of {n_sizes} ({})",
        stopped.at, stopped.size
    );
    let runs = if n_finished == 1 {
        "1 finished run was"
    } else {
        &format!("{n_finished} finished runs were")
    };
    match (n_finished, no_archive) {
        (0, _) => format!("{head}; no run was recorded"),
        (_, true) => format!("{head}; {runs} not stored (--no-archive)"),
        (_, false) => format!("{head}; {runs} handed to the archive"),
    }
}

fn print_table(global: &GlobalOptions, units: &str, table: SweepTable) -> exit::Result<()> {
    let units = Units::parse(units).map_err(|err| InputError(err.to_string()))?;
    let context = SweepContext::new(&table, units);
    let text = output::template(global, "sweep", &context, "the sweep")?;
    output::write_stdout(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_message_says_what_became_of_finished_runs() {
        let stopped = Stopped {
            at: 3,
            size: "-m 900".to_string(),
        };
        assert_eq!(
            stop_message(&stopped, 6, 2, false),
            "the sweep stopped at size 3 of 6 (-m 900); 2 finished runs were \
             handed to the archive"
        );
        assert_eq!(
            stop_message(&stopped, 6, 0, false),
            "the sweep stopped at size 3 of 6 (-m 900); no run was recorded"
        );
    }
}
