//! `netbisect archive`: import, list, show, export, merge, check and
//! prune (`prune.rs`) the archive of runs, and send a shared archive the
//! runs its spool kept.

mod prune;

use crate::cli::{ArchiveAction, ArchiveArgs, ImportArgs, RunFilterArgs};
use crate::exit::{self, Code, Context, ExitCoded, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::render::text::plain;
use crate::store::{archive_location, open_archive, open_archive_read, send_spooled};
use crate::views::archive_list::ArchiveListContext;
use crate::views::run::RunContext;
use crate::views::units::Units;
use archive::import::{self, ImportOptions};
use archive::{Archive, RunQuery};
use run_record::record::{RunRecord, Subject};
use std::io::Write;
use std::path::Path;

pub fn run(global: &GlobalOptions, args: &ArchiveArgs) -> exit::Result<Code> {
    match &args.action {
        ArchiveAction::Import(import_args) => run_import(global, import_args),
        ArchiveAction::List(filters) => run_list(global, filters),
        ArchiveAction::Show { id, units } => run_show(global, id, &units.units),
        ArchiveAction::Export(filters) => run_export(global, filters),
        ArchiveAction::Merge { other } => run_merge(global, other),
        ArchiveAction::Check => run_check(global),
        ArchiveAction::Prune(prune_args) => prune::run_prune(global, prune_args),
        ArchiveAction::Sync => run_sync(global),
    }
}

fn query_of(filters: &RunFilterArgs) -> RunQuery {
    RunQuery {
        commit_prefix: filters.commit.clone(),
        label: filters.label.clone(),
        id_prefix: filters.id.clone(),
        config_key_prefix: filters.config_key.clone(),
        test: filters.test,
        testbed: filters.testbed.clone(),
        source_tool: filters.tool.clone(),
        limit: filters.limit,
        started_before: None,
    }
}

/// What importing one file did, for the report and `--json`.
#[derive(serde::Serialize)]
struct FileReport {
    file: String,
    format: Option<&'static str>,
    runs: usize,
    added: u64,
    already_present: u64,
    error: Option<String>,
}

fn run_import(global: &GlobalOptions, args: &ImportArgs) -> exit::Result<Code> {
    if !args.labels.is_empty() && args.files.len() > 1 {
        return Err(InputError(
            "--labels names the outputs of one input; import one file with it".to_string(),
        )
        .into());
    }
    if let Some(empty) = args.labels.iter().position(|label| label.trim().is_empty()) {
        return Err(InputError(format!("--labels: label {} is empty", empty + 1)).into());
    }
    let mut archive = open_archive(global)?;
    let subject = Subject {
        commit: args.commit.clone(),
        describe: args.describe.clone(),
        kernel_release: None,
        label: args.label.clone(),
    };
    let mut n_failed = 0;
    let progress = crate::progress::Reporter::new(global, args.files.len() as u64);
    for (file_idx, file) in args.files.iter().enumerate() {
        progress.status(&format!(
            "importing {} ({} of {})",
            file.display(),
            file_idx + 1,
            args.files.len()
        ));
        let imported = import_file(&mut archive, file, &subject, args);
        progress.advance(1);
        let report = match imported? {
            Ok(report) => report,
            Err(file_error) => {
                n_failed += 1;
                let message = file_error.to_string();
                if !global.quiet() {
                    output::note(&format!("error: {message}; {}", file_error.kept));
                }
                FileReport {
                    file: file.display().to_string(),
                    format: None,
                    runs: 0,
                    added: file_error.stored.added,
                    already_present: file_error.stored.already_present,
                    error: Some(message),
                }
            }
        };
        output::emit(
            global,
            || output::line(&report, "the report"),
            || {
                if report.error.is_some() {
                    return Ok(String::new());
                }
                Ok(format!(
                    "{}: {} run{} ({}), {} added, {} already present\n",
                    report.file,
                    report.runs,
                    if report.runs == 1 { "" } else { "s" },
                    report.format.unwrap_or("-"),
                    report.added,
                    report.already_present
                ))
            },
        )?;
    }
    if n_failed > 0 {
        return Err(InputError(format!(
            "{n_failed} of {} files could not be imported",
            args.files.len()
        ))
        .into());
    }
    Ok(Code::Ok)
}

/// A failure that concerns one input file, after which the other files
/// are still imported (the import's other failures stop it).
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
struct FileError {
    file: String,
    message: String,
    /// What was stored of the file before it was refused, said.
    kept: String,
    /// What was stored of the file before it was refused.
    stored: archive::StoreCounts,
}

/// Imports one file: its report, or what went wrong with this file only
/// (then the other files are still imported).
fn import_file(
    archive: &mut Archive,
    file: &Path,
    subject: &Subject,
    args: &ImportArgs,
) -> exit::Result<Result<FileReport, FileError>> {
    let file_error = |message: String, stored: archive::StoreCounts| FileError {
        file: file.display().to_string(),
        message,
        kept: stored_before(stored),
        stored,
    };
    let mut side_labels = std::collections::BTreeMap::new();
    for mapping in &args.side_label {
        let (name, label) = mapping.split_once('=').ok_or_else(|| {
            InputError(format!(
                "invalid --side-label '{mapping}' (expected NAME=LABEL)"
            ))
        })?;
        side_labels.insert(name.to_string(), label.to_string());
    }
    // A run whose text has no time starts when it is imported, which
    // orders it but does not enter its id.
    let options = ImportOptions {
        subject: subject.clone(),
        testbed: args.testbed.clone(),
        imported_at: Some(std::time::SystemTime::now()),
        side_labels,
        label_prefix: args.label_prefix.clone(),
        output_labels: args.labels.clone(),
    };
    let mut stdin;
    let mut opened;
    let input = if file.as_os_str() == "-" {
        stdin = std::io::stdin().lock();
        import::Input::Stream(&mut stdin)
    } else {
        opened = match std::fs::File::open(file) {
            Ok(opened) => opened,
            Err(err) => {
                let message = import::ReadError::from(err).to_string();
                return Ok(Err(file_error(message, archive::StoreCounts::default())));
            }
        };
        import::Input::File(&mut opened)
    };
    let imported = match import::import_into(archive, input, &options) {
        Ok(imported) => imported,
        Err(stopped) => {
            let stored = stopped.stored;
            return stopped_import(file, stopped).map(|message| Err(file_error(message, stored)));
        }
    };
    Ok(Ok(FileReport {
        file: file.display().to_string(),
        format: Some(imported.format.name()),
        runs: imported.runs,
        added: imported.counts.added,
        already_present: imported.counts.already_present,
        error: None,
    }))
}

/// What was stored of an input refused part-way, said.
fn stored_before(stored: archive::StoreCounts) -> String {
    match stored.added + stored.already_present {
        0 => "nothing imported from it".to_string(),
        n_stored => format!(
            "the {n_stored} runs read before it were stored in batches ({} added); \
             importing it again once fixed adds what is missing",
            stored.added
        ),
    }
}

/// What an import that stopped says: the input's fault, as the message
/// of this file (then the other files are still imported); or the
/// archive's, which stops the import.
fn stopped_import(file: &Path, stopped: import::ImportStopped) -> exit::Result<String> {
    let err = match stopped.failure {
        import::ImportFailure::Read(err) => return Ok(err.to_string()),
        import::ImportFailure::Store(err) => err,
    };
    let n_stored = stopped.stored.added + stopped.stored.already_present;
    let stored = if n_stored > 0 {
        format!(
            "the {n_stored} runs of the batches stored before were kept, and importing the \
             file again adds what is missing"
        )
    } else if matches!(err, archive::ArchiveError::CommitUnknown { .. }) {
        "they were stored either all or none, and importing the file again adds what is \
         missing"
            .to_string()
    } else {
        "none of them was stored".to_string()
    };
    Err(exit::Failure::from(err).context(format!(
        "failed to store the runs of {}; {stored} (the files reported above were stored)",
        file.display()
    )))
}

fn run_list(global: &GlobalOptions, filters: &RunFilterArgs) -> exit::Result<Code> {
    let archive = open_archive_read(global)?;
    let runs = archive
        .runs_newest_first(&query_of(filters))
        .context("failed to read the archive")?;
    output::emit(
        global,
        || output::pretty(&runs, "runs"),
        || {
            let context = ArchiveListContext { runs: &runs };
            output::template(global, "archive-list", &context, "the list of runs")
        },
    )?;
    Ok(Code::Ok)
}

fn run_show(global: &GlobalOptions, id: &str, units: &str) -> exit::Result<Code> {
    let archive = open_archive_read(global)?;
    let (run, bytes) = archive
        .find(id)
        .with_context(|| format!("failed to find run '{id}'"))?;
    Archive::verify_stored(&run, &bytes).context(
        "the stored run does not match its id; `netbisect archive check` lists every such run",
    )?;
    output::emit(
        global,
        || {
            let text = std::str::from_utf8(&bytes).context("stored run is not UTF-8")?;
            Ok(format!("{text}\n").into_bytes())
        },
        || {
            let record = RunRecord::from_slice(&bytes).context("the stored run is not readable")?;
            let units = Units::parse(units).map_err(|err| InputError(err.to_string()))?;
            let context = RunContext::new(&record, units, true, true)
                .with_sockets_at_end()
                .with_stored_by(run.stored_by.as_deref(), run.stored_from.as_deref());
            output::template(global, "run", &context, "the run")
        },
    )?;
    Ok(Code::Ok)
}

fn run_export(global: &GlobalOptions, filters: &RunFilterArgs) -> exit::Result<Code> {
    let archive = open_archive_read(global)?;
    let stdout = std::io::stdout().lock();
    let mut writer = std::io::BufWriter::new(stdout);
    // A run whose bytes do not match its id is left out (a re-import of
    // the export would refuse it) and named; the export then fails.
    let mut n_damaged = 0u64;
    archive.for_each_record(&query_of(filters), |run, bytes| {
        if let Err(err) = Archive::verify_stored(run, bytes) {
            n_damaged += 1;
            output::note(&format!("warning: left out: {err}"));
            return Ok(());
        }
        writer
            .write_all(bytes)
            .and_then(|()| writer.write_all(b"\n"))
            .map_err(crate::exit::stdout_error)
    })?;
    writer.flush().map_err(crate::exit::stdout_error)?;
    if n_damaged > 0 {
        return Err(exit::Failure::msg(format!(
            "{n_damaged} damaged runs were left out of the export; \
             run `netbisect archive check`"
        )));
    }
    Ok(Code::Ok)
}

fn run_merge(global: &GlobalOptions, other: &Path) -> exit::Result<Code> {
    let other_location = archive::Location::parse(other.as_os_str())?;
    // A missing file is said as a read says it, before the archive merged
    // into is opened (and perhaps made).
    other_location
        .check_exists()
        .with_context(|| format!("failed to merge {other_location}"))?;
    let mut archive = open_archive(global)?;
    let counts = archive
        .merge(&other_location)
        .with_context(|| format!("failed to merge {other_location}"))?;
    for refused in &counts.refused {
        eprintln!(
            "netbisect: warning: left out run {}: {}",
            refused.id, refused.reason
        );
    }
    output::emit(
        global,
        || output::line(&counts, "the counts"),
        || {
            let refused = match counts.refused.len() {
                0 => String::new(),
                n_refused => format!(", {n_refused} refused"),
            };
            Ok(format!(
                "{}: {} runs, {} added, {} already present{refused}\n",
                other_location, counts.examined, counts.added, counts.already_present
            ))
        },
    )?;
    if !counts.refused.is_empty() {
        return Err(exit::Failure::msg(format!(
            "{} runs of {other_location} were refused and left out (named above); \
             the others were merged",
            counts.refused.len()
        )));
    }
    Ok(Code::Ok)
}

/// `archive sync`: opening the shared archive to write sends its spool
/// (and says so); what that left, a run the archive refused, is sent
/// again here so that its failure is this command's.
fn run_sync(global: &GlobalOptions) -> exit::Result<Code> {
    let location = archive_location(global)?;
    if location.file().is_some() {
        // Only a shared archive is ever away: a file's runs are never kept.
        return Ok(Code::Ok);
    }
    let mut archive = open_archive(global)?;
    let n_sent = send_spooled(location, &mut archive)?;
    if n_sent > 0 && !global.quiet() {
        eprintln!("netbisect: sent {n_sent} spooled runs to {location}");
    }
    Ok(Code::Ok)
}

fn run_check(global: &GlobalOptions) -> exit::Result<Code> {
    let location = archive_location(global)?;
    let report = Archive::check_location(location).context("failed to check the archive")?;
    let text = || {
        let mut text = format!(
            "{}\nschema version: {} (this netbisect reads up to {})\n",
            location, report.schema_version, report.supported_version
        );
        text.push_str(&format!("integrity: {}\n", report.integrity.join("; ")));
        for check in &report.integrity_checks {
            text.push_str(&format!("  checked: {check}\n"));
        }
        text.push_str(&format!(
            "foreign key violations: {}\n",
            report.foreign_key_violations
        ));
        text.push_str(&format!(
            "runs: {}, damaged: {}\n",
            report.n_runs,
            report.damaged_runs.len()
        ));
        for damaged in &report.damaged_runs {
            text.push_str(&format!(
                "  {}: {}\n",
                plain(&damaged.id),
                plain(&damaged.problem)
            ));
        }
        for what in &report.unreadable {
            text.push_str(&format!("could not read {what}\n"));
        }
        Ok(text)
    };
    output::emit(global, || output::pretty(&report, "the report"), text)?;
    if !report.is_clean() {
        return Err(ArchiveCheckFailed.into());
    }
    Ok(Code::Ok)
}

/// `archive check` found problems; exits with the runtime failure code.
#[derive(Debug, thiserror::Error)]
#[error("the archive has problems (see above)")]
struct ArchiveCheckFailed;

impl ExitCoded for ArchiveCheckFailed {
    fn exit_code(&self) -> Code {
        Code::Runtime
    }
}
