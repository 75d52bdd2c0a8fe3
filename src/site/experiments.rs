//! Experiment pages: one per experiment whose runs the archive holds
//! (`ab`, one configuration or a `--sweep`), with the table `compare`
//! prints for it, `netbisect compare label:A label:B --experiment ID`,
//! in the layout `ab` prints it in (netperf's for one configuration or
//! one size swept, else the matrix), and the `netbisect ab` line that
//! runs it again, when its runs kept their command.
//!
//! The runs say which label is A's: kernel A boots first in round 1,
//! so A's label is that of the earliest run of the lowest round.

use crate::comparison::{
    CompareLayout, ComparisonRequest, Printed, comparison_text, experiment_command,
    experiment_layout,
};
use crate::exit::{self, Context};
use crate::global_options::GlobalOptions;
use archive::{Archive, ArchiveError, RunQuery};
use run_record::record::RunRecord;
use run_record::shell::CommandLine;
use serde::Serialize;
use std::collections::BTreeMap;

/// An experiment's page.
pub struct ExperimentPage {
    /// File name.
    pub file: String,
    /// `experiment ID: A against B`, plain text.
    pub title: String,
    /// The page.
    pub html: String,
}

/// What the pages need of an experiment's runs.
#[derive(Default)]
struct ExperimentRuns {
    /// Runs, by label.
    n_runs: BTreeMap<String, usize>,
    /// The label of the earliest run of the lowest round, with that
    /// round and start time.
    first: Option<(u32, String, String)>,
    /// The highest round.
    rounds: u32,
    /// One run of each configuration (spec key), for the layout.
    configurations: BTreeMap<String, RunRecord>,
    /// The command the first of its runs that kept one kept (`ab ...`).
    command: Option<Vec<String>>,
}

/// The experiments of `archive`'s runs, each with its page, in order of
/// their ids.
pub fn experiment_pages(
    global: &GlobalOptions,
    archive: &Archive,
) -> exit::Result<Vec<ExperimentPage>> {
    let mut experiments: BTreeMap<String, ExperimentRuns> = BTreeMap::new();
    archive
        .for_each_record(&RunQuery::default(), |run, bytes| {
            let record = Archive::stored_record(run, bytes)?;
            let Some(tag) = record.experiment.clone() else {
                return Ok(());
            };
            let Some(label) = record.subject.label.clone() else {
                return Ok(());
            };
            let runs = experiments.entry(tag.id).or_default();
            if runs.command.is_none() {
                runs.command = record.command.clone();
            }
            *runs.n_runs.entry(label.clone()).or_default() += 1;
            runs.rounds = runs.rounds.max(tag.round);
            let candidate = (tag.round, run.started_at.clone(), label);
            if runs.first.as_ref().is_none_or(|first| candidate < *first) {
                runs.first = Some(candidate);
            }
            let spec_key = record
                .compute_spec_key()
                .map_err(|err| ArchiveError::DamagedRun {
                    id: run.id.clone(),
                    detail: err.to_string(),
                })?;
            runs.configurations.entry(spec_key).or_insert(record);
            Ok::<(), ArchiveError>(())
        })
        .context("failed to read the archive")?;
    experiments
        .iter()
        .map(|(id, runs)| experiment_page(global, archive, id, runs))
        .collect()
}

/// The page's file name: the id when it is a plain word (as `ab` makes
/// them), else a hash of it.
fn file_of(id: &str) -> String {
    if !id.is_empty() && id.len() <= 64 && id.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
        format!("experiment-{id}.html")
    } else {
        format!(
            "experiment-{}.html",
            &blake3::hash(id.as_bytes()).to_hex()[..16]
        )
    }
}

/// The context of `templates/site/experiment.html`.
#[derive(Serialize)]
struct ExperimentView<'a> {
    title: &'a str,
    n_runs: usize,
    /// The labels of its runs, A's first.
    labels: &'a [&'a str],
    /// The comparison, when the experiment has two sides.
    compared: Option<ComparedView>,
    /// Where its figures come from, as `--email` says it ("qemu 10.0.2
    /// guests under TCG, 2 vCPUs, ..."); `None` for runs on hosts.
    measured_in: Option<String>,
}

/// An experiment's two sides and the table `compare` prints of them.
#[derive(Serialize)]
struct ComparedView {
    first: String,
    second: String,
    rounds: u32,
    n_configurations: usize,
    /// The command that prints the table.
    command: String,
    /// The table, as that command prints it.
    table: String,
    /// The `netbisect ab` command that runs the experiment again (and
    /// prints the same table), when its runs kept it.
    ab_command: Option<String>,
}

/// The comparison of an experiment's sides `first` (A) and `second`.
fn compared(
    global: &GlobalOptions,
    archive: &Archive,
    id: &str,
    runs: &ExperimentRuns,
    [first, second]: [&str; 2],
) -> exit::Result<ComparedView> {
    let configurations: Vec<&RunRecord> = runs.configurations.values().collect();
    let layout = experiment_layout(&configurations);
    let request = ComparisonRequest {
        first: format!("label:{first}"),
        second: format!("label:{second}"),
        alpha: 0.05,
        min_effect: 0.0,
        test: None,
        testbed: None,
        layout,
        email: false,
        units: "m".to_string(),
        experiment: Some(id.to_string()),
        experiment_command: None,
    };
    let table = comparison_text(global, archive, &request)
        .with_context(|| format!("failed to compare the runs of experiment {id}"))?;
    let mut command = CommandLine::new(&["netbisect", "compare"]);
    command
        .word(request.first.clone())
        .word(request.second.clone())
        .option("--experiment", id);
    if layout == CompareLayout::Matrix {
        command.option("--layout", "matrix");
    }
    let printed = Printed {
        units: &request.units,
        alpha: request.alpha,
        email: false,
    };
    Ok(ComparedView {
        first: first.to_string(),
        second: second.to_string(),
        rounds: runs.rounds,
        n_configurations: runs.configurations.len(),
        command: command.render(),
        table,
        ab_command: runs
            .command
            .as_deref()
            .and_then(|words| experiment_command(words, &printed)),
    })
}

fn experiment_page(
    global: &GlobalOptions,
    archive: &Archive,
    id: &str,
    runs: &ExperimentRuns,
) -> exit::Result<ExperimentPage> {
    let first_label = runs
        .first
        .as_ref()
        .map_or("", |(_, _, label)| label.as_str());
    let labels: Vec<&str> = std::iter::once(first_label)
        .chain(
            runs.n_runs
                .keys()
                .map(String::as_str)
                .filter(|label| *label != first_label),
        )
        .collect();
    let (title, compared) = match labels.as_slice() {
        [first, second] => (
            format!("Experiment {id}: {first} against {second}"),
            Some(compared(global, archive, id, runs, [first, second])?),
        ),
        _ => (format!("Experiment {id}"), None),
    };
    let view = ExperimentView {
        title: &title,
        n_runs: runs.n_runs.values().sum(),
        labels: &labels,
        compared,
        measured_in: crate::comparison::reproduce::measured_in(
            &runs.configurations.values().collect::<Vec<_>>(),
        ),
    };
    Ok(ExperimentPage {
        file: file_of(id),
        html: super::render_page("site/experiment.html", &view)?,
        title,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_id_names_the_file_and_any_other_is_hashed() {
        assert_eq!(
            file_of("0123456789abcdef"),
            "experiment-0123456789abcdef.html"
        );
        for odd in ["../x", "", "a b", &"a".repeat(65)] {
            let file = file_of(odd);
            assert_eq!(file.len(), "experiment-.html".len() + 16, "{file}");
            assert!(!file[..file.len() - 5].contains('.'), "{file}");
        }
    }
}
