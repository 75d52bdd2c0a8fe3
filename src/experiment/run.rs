//! Running an experiment: boot after boot in the experiment's order, the
//! configurations of the boot that the archive does not hold yet, each
//! finished run tagged with the experiment, its round and its command,
//! sealed and stored as soon as the guest has finished it.

use super::progress::Progress;
use super::{Boot, Experiment};
use crate::exit::{self, Context};
use crate::global_options::GlobalOptions;
use crate::store::{SettingsNotGranted, open_archive_if_reachable, store_run};
use crate::vm::{self, GuestSubject, Notes};
use archive::RunQuery;
use run_record::record::{ExperimentTag, SystemOutcome};
use std::collections::BTreeSet;
use std::path::Path;

/// How an experiment went.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Boots made.
    pub n_boots: usize,
    /// Runs stored by this invocation.
    pub n_stored: usize,
    /// Runs the archive held already.
    pub n_found: usize,
    /// What failed: a configuration, or a whole boot.
    pub failures: Vec<String>,
}

/// Runs what `experiment` still lacks, in its order; a failed
/// configuration or boot is noted and the rest go on. A signal stops it
/// with what finished stored.
pub fn run(
    global: &GlobalOptions,
    experiment: &Experiment,
    console_dir: &Path,
) -> exit::Result<Outcome> {
    let mut outcome = Outcome::default();
    let boots = experiment.boots();
    let mut todo: Vec<(Boot, Vec<usize>)> = Vec::new();
    for &boot in &boots {
        let done = measured(global, experiment, boot)?;
        outcome.n_found += done.len();
        let order: Vec<usize> = experiment
            .order(boot)
            .into_iter()
            .filter(|config_idx| !done.contains(config_idx))
            .collect();
        if !order.is_empty() {
            todo.push((boot, order));
        }
    }
    let mut progress = Progress::new(
        global,
        experiment,
        todo.len(),
        todo.iter().map(|(_, order)| order.len()).sum(),
    );
    if outcome.n_found > 0 {
        let n_left: usize = todo.iter().map(|(_, order)| order.len()).sum();
        progress.say(&format!(
            "experiment {}: {} archived already; measuring the {n_left} left",
            experiment.id,
            if outcome.n_found == 1 {
                "1 run of it is".to_string()
            } else {
                format!("{} runs of it are", outcome.n_found)
            },
        ));
    }
    for (boot, order) in todo {
        let side = &experiment.sides[boot.side_idx];
        progress.boot_started(boot, order.len());
        let specs: Vec<_> = order
            .iter()
            .map(|&config_idx| experiment.configurations[config_idx].spec.clone())
            .collect();
        let subject = GuestSubject {
            label: Some(side.label.clone()),
            ..experiment.subject.clone()
        };
        let tag = ExperimentTag {
            id: experiment.id.clone(),
            round: boot.round,
        };
        // A configuration that failed: said, counted, and measured again
        // by the next run of the command.
        let fail = |outcome: &mut Outcome,
                    progress: &mut Progress,
                    run_idx: usize,
                    name: &str,
                    message: &str| {
            let failure = format!(
                "round {}, {} ({}), {}: {message}",
                boot.round,
                side.label,
                side.kernel_name(),
                if name.is_empty() { "the test" } else { name }
            );
            progress.say(&format!("error: {failure}"));
            outcome.failures.push(failure);
            progress.run_finished(run_idx, name, false);
        };
        let booted = {
            let mut store = |run_idx: usize, tested: vm::TestOutcome| -> exit::Result<()> {
                let config_idx = order[run_idx];
                let name = experiment.configurations[config_idx].name.join(" ");
                match tested {
                    Ok(mut record) => {
                        record.experiment = Some(tag.clone());
                        record.command = Some(experiment.command.clone());
                        record.seal().context("failed to seal the run record")?;
                        let refused = record
                            .system
                            .as_ref()
                            .map(SystemOutcome::refused)
                            .unwrap_or_default();
                        if experiment.strict_settings && !refused.is_empty() {
                            let message = SettingsNotGranted(refused).to_string();
                            fail(&mut outcome, &mut progress, run_idx, &name, &message);
                            return Ok(());
                        }
                        for refused in refused {
                            progress.say(&format!(
                                "warning: {} {name}: the kernel did not grant {refused}",
                                side.label
                            ));
                        }
                        store_run(global, &record)?;
                        outcome.n_stored += 1;
                        progress.run_finished(run_idx, &name, true);
                    }
                    Err(message) => fail(&mut outcome, &mut progress, run_idx, &name, &message),
                }
                Ok(())
            };
            vm::run_tests(
                &side.kernel,
                &specs,
                &subject,
                console_dir,
                Notes {
                    quiet: global.quiet(),
                    verbose: global.verbose(),
                },
                &mut store,
            )
        };
        outcome.n_boots += 1;
        match booted {
            Ok(vm) => progress.boot_finished(vm.boot_to_test_s),
            Err(err) if crate::exit::classify(&err) == crate::exit::Code::Interrupted => {
                return Err(err);
            }
            Err(err) => {
                let failure = format!(
                    "round {}, {} ({}): {err:#}",
                    boot.round,
                    side.label,
                    side.kernel_name()
                );
                progress.say(&format!("error: {failure}"));
                outcome.failures.push(failure);
                progress.boot_finished(None);
            }
        }
    }
    progress.finish();
    Ok(outcome)
}

/// The configurations of `boot` the archive holds a run of already: runs
/// of the experiment, round and side, whose spec is the configuration's.
fn measured(
    global: &GlobalOptions,
    experiment: &Experiment,
    boot: Boot,
) -> exit::Result<BTreeSet<usize>> {
    let side = &experiment.sides[boot.side_idx];
    // A shared archive that cannot be reached holds nothing known: every
    // run is measured, and kept in the spool.
    let Some(archive) = open_archive_if_reachable(global)? else {
        return Ok(BTreeSet::new());
    };
    let records = archive
        .records(&RunQuery {
            label: Some(side.label.clone()),
            ..RunQuery::default()
        })
        .context("failed to read the archive")?;
    Ok(records
        .iter()
        .filter(|record| {
            record
                .experiment
                .as_ref()
                .is_some_and(|tag| tag.id == experiment.id && tag.round == boot.round)
        })
        .filter_map(|record| {
            experiment
                .configurations
                .iter()
                .position(|configuration| configuration.spec == record.spec)
        })
        .collect())
}
