//! The archive of the command line: where it is ([`archive_location`]: a
//! file, or a PostgreSQL database named by a `postgres://` address),
//! opening it to write ([`open_archive`], which first sends a shared
//! archive the runs its spool kept: [`send_spooled`]), before a test
//! ([`open_before_measuring`]), to write only when it exists
//! ([`open_existing_archive`]) or only to read ([`open_archive_read`]),
//! and where a finished run goes: into the archive, or into the spool
//! while a shared archive is unreachable ([`store_run`]), then to stdout
//! as its record or its netperf table ([`store_and_print`]), after a
//! warning of the settings the kernel did not grant
//! ([`warn_of_refused_settings`]).

use crate::exit::{self, Code, Context, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::render::text::plain;
use crate::spool::{self, Spool};
use crate::views::run::RunContext;
use crate::views::units::Units;
use archive::store::SeriesRun;
use archive::store::Upgrade;
use archive::{Archive, Location, RunQuery};
use run_record::record::Metric;
use run_record::record::{RunRecord, SystemOutcome};
use std::path::PathBuf;

/// The archive: `--archive` / `NETBISECT_ARCHIVE` (a file, or a
/// `postgres://` or `postgresql://` address), else the default file
/// (see [`crate::global_options::ArchiveChoice::location`]).
pub fn archive_location(global: &GlobalOptions) -> exit::Result<&Location> {
    global.archive.location()
}

/// Opens (creating it and its directory if needed) the archive the
/// command line names. A shared archive is first sent the runs its
/// spool kept while it could not be reached ([`send_spooled`]).
pub fn open_archive(global: &GlobalOptions) -> exit::Result<Archive> {
    open_writer(global)?.context("failed to open the archive")
}

/// [`open_archive`] with the archive's own error, for a caller that tells
/// an unreachable server from the rest.
fn open_writer(global: &GlobalOptions) -> exit::Result<Result<Archive, archive::ArchiveError>> {
    let location = archive_location(global)?;
    if let Some(parent) = location
        .file()
        .and_then(|path| path.parent())
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("failed to create directory {}", parent.display()))?;
    }
    let mut opened = Archive::open_location_noting(location, &mut upgrade_notice(global, location))
        .map(|archive| noting_lock_waits(global, archive));
    if let Ok(archive) = &mut opened
        && location.file().is_none()
    {
        send_spooled_noting(global, location, archive);
    }
    Ok(opened)
}

/// Opens the archive the command line names to read and write, for a
/// command that has nothing to do without one (a bisection's session,
/// verdict's baselines): a missing file is an error ("no archive at
/// PATH"), never a new empty archive.
pub fn open_existing_archive(global: &GlobalOptions) -> exit::Result<Archive> {
    if let Some(path) = missing_archive(global)? {
        return Err(
            exit::Failure::from(archive::ArchiveError::NoArchive { path })
                .context("failed to open the archive"),
        );
    }
    let location = archive_location(global)?;
    Archive::open_location_noting(location, &mut upgrade_notice(global, location))
        .map(|archive| noting_lock_waits(global, archive))
        .context("failed to open the archive")
}

/// The archive's file when the command line names a file that does not
/// exist (a database server's address is never missing: the server says).
pub fn missing_archive(global: &GlobalOptions) -> exit::Result<Option<PathBuf>> {
    Ok(archive_location(global)?
        .file()
        .filter(|path| std::fs::symlink_metadata(path).is_err())
        .map(|path| path.to_path_buf()))
}

/// Opens the archive for a command that only reads: a missing file is an
/// error ("no archive at PATH"), never a new empty archive, and an archive
/// the user may only read is read without writing beside it.
pub fn open_archive_read(global: &GlobalOptions) -> exit::Result<Archive> {
    let location = archive_location(global)?;
    Archive::open_location_read_only_noting(location, &mut upgrade_notice(global, location))
        .map(|archive| noting_lock_waits(global, archive))
        .context("failed to open the archive")
}

/// `archive`, saying on stderr, unless `--quiet`, while a statement of
/// it waits for a lock another session holds (a PostgreSQL table locked
/// by another program, another writer's long transaction): the server
/// ends such a wait only at its `lock_timeout`, minutes later.
fn noting_lock_waits(global: &GlobalOptions, mut archive: Archive) -> Archive {
    if !global.quiet() {
        archive.report_lock_waits(std::sync::Arc::new(|wait: archive::store::LockWait| {
            eprintln!(
                "netbisect: waiting for a lock held by another session, {} s",
                wait.waited.as_secs()
            );
        }));
    }
    archive
}

/// Says on stderr, unless `--quiet`, that the archive at `location` is
/// being upgraded: the first command to open a large archive after a
/// newer netbisect is installed waits for it (seconds for a file of a
/// million runs, a minute and more on PostgreSQL), and should not wait
/// in silence.
fn upgrade_notice(global: &GlobalOptions, location: &Location) -> impl FnMut(Upgrade) + use<> {
    let quiet = global.quiet();
    let location = location.to_string();
    move |upgrade: Upgrade| {
        if !quiet {
            eprintln!(
                "netbisect: upgrading the archive at {location} (schema {} to {}); \
                 a large one takes a while",
                upgrade.from, upgrade.to
            );
        }
    }
}

/// How a finished run is printed and whether it is stored: bench's
/// `--no-archive`, `-f` and `-P`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutput {
    /// Store the run in the archive (no `--no-archive`).
    pub archive: bool,
    /// Throughput unit, netperf's `-f` letter.
    pub units: String,
    /// Print the test banner (`-P 1`, the default).
    pub banner: bool,
    /// Fail a run the kernel did not grant every setting of
    /// (`--strict-settings`), rather than warn and keep it.
    pub strict_settings: bool,
}

/// A run the kernel did not grant every setting of, under
/// `--strict-settings`; exits with [`exit::Code::Runtime`], as a test
/// that could not be made.
#[derive(Debug, thiserror::Error)]
#[error("the kernel did not grant {} (--strict-settings keeps no such run)", .0.join(", "))]
pub struct SettingsNotGranted(pub Vec<String>);

impl exit::ExitCoded for SettingsNotGranted {
    fn exit_code(&self) -> exit::Code {
        exit::Code::Runtime
    }
}

/// Fails the run of `record`, before it is stored or printed, where
/// `output.strict_settings` and the kernel did not grant one of the
/// settings it asked; the warning of [`warn_of_refused_settings`] is for
/// the runs kept.
pub fn fail_if_not_granted(output: &RunOutput, record: &RunRecord) -> exit::Result<()> {
    let refused: Vec<String> = record
        .system
        .iter()
        .flat_map(SystemOutcome::refused)
        .map(|refused| plain(&refused).into_owned())
        .collect();
    if output.strict_settings && !refused.is_empty() {
        return Err(SettingsNotGranted(refused).into());
    }
    Ok(())
}

/// Stores a finished run (when `output.archive`) and prints it: the
/// record with `--json`, else its netperf table in bench's units. The
/// run is stored before it is printed, so a closed pipe loses nothing; a
/// run that cannot be stored is still printed, then the failure is
/// reported. Settings the kernel did not grant are warned of first.
pub fn store_and_print(
    global: &GlobalOptions,
    output: &RunOutput,
    record: &RunRecord,
) -> exit::Result<Code> {
    fail_if_not_granted(output, record)?;
    warn_of_refused_settings(global, record);
    let stored = if output.archive {
        store_run(global, record)
    } else {
        Ok(())
    };
    print_run(global, output, record, output.archive)?;
    stored?;
    Ok(Code::Ok)
}

/// Prints a finished run: the record with `--json`, else its netperf
/// table in `output`'s units; `stored` says whether the archive holds it
/// (the table of a run that is not stored says so).
pub fn print_run(
    global: &GlobalOptions,
    output: &RunOutput,
    record: &RunRecord,
    stored: bool,
) -> exit::Result<()> {
    output::emit(
        global,
        || output::record(record),
        || {
            let units = Units::parse(&output.units).map_err(|err| InputError(err.to_string()))?;
            let mut context = RunContext::new(record, units, output.banner, stored);
            if global.verbose() {
                context = context.with_sockets_at_end();
            }
            output::template(global, "run", &context, "the run")
        },
    )
}

/// Says on stderr, unless `--quiet`, which of the settings the run asked
/// of the system under test (`--set`) the kernel did not grant, as the
/// record's `system` holds them: `gso=on (got off)`.
pub fn warn_of_refused_settings(global: &GlobalOptions, record: &RunRecord) {
    if global.quiet() {
        return;
    }
    for refused in record.system.iter().flat_map(SystemOutcome::refused) {
        output::note(&format!(
            "warning: the kernel did not grant {}",
            plain(&refused)
        ));
    }
}

/// Stores a finished, sealed record in the archive. Storing the same run
/// twice is a no-op. A run for a shared archive that cannot be reached
/// is kept in the spool instead, and stderr says where.
pub fn store_run(global: &GlobalOptions, record: &RunRecord) -> exit::Result<()> {
    let location = archive_location(global)?;
    let run = archive::CanonicalRun::from_record(record.clone())
        .context("failed to prepare the run for the archive")?;
    // The archive's error, and what it failed to do.
    let failed = match open_writer(global)? {
        Ok(mut archive) => archive
            .store(&run)
            .err()
            .map(|err| (err, format!("failed to store the run in {location}"))),
        Err(err) => Some((err, "failed to open the archive".to_string())),
    };
    match failed {
        None => {
            if global.verbose() {
                eprintln!("netbisect: stored run {} in {}", &record.id[..12], location);
            }
            Ok(())
        }
        Some((err, _)) if location.file().is_none() && err.is_unreachable() => {
            keep_in_spool(location, record, &err)
        }
        Some((err, failed_to)) => Err(exit::Failure::from(err).context(failed_to)),
    }
}

/// Keeps `record` in the spool of the shared archive at `location`,
/// which `unreachable` says could not be reached, and says so.
pub fn keep_in_spool(
    location: &Location,
    record: &RunRecord,
    unreachable: &archive::ArchiveError,
) -> exit::Result<()> {
    let address = location.to_string();
    let spool = Spool::of_archive(&address)
        .and_then(|spool| spool.keep(&address, record).map(|_| spool))
        .map_err(|err| {
            err.context(format!(
                "the archive at {address} is unreachable ({}) and the run could not be kept",
                cause_of(unreachable)
            ))
        })?;
    eprintln!(
        "netbisect: warning: the archive at {address} is unreachable ({}); run {} kept in {}, \
         sent when it is reachable: `netbisect archive sync`",
        cause_of(unreachable),
        &record.id[..12],
        spool.dir().display()
    );
    Ok(())
}

/// Why an archive could not be reached, in a few words: those of a
/// failed connection (`connection refused`), else the innermost error's,
/// the system's or the server's.
fn cause_of(err: &archive::ArchiveError) -> String {
    if let archive::ArchiveError::Server { detail, .. }
    | archive::ArchiveError::StartUpTimedOut { detail, .. } = err
    {
        return detail.clone();
    }
    let mut words = err.to_string();
    let mut cause = std::error::Error::source(err);
    while let Some(current) = cause {
        words = current.to_string();
        cause = current.source();
    }
    words
}

/// Checks, before a test runs, that its run can be kept: the archive
/// opens (and is sent its spooled runs), or it is a shared archive that
/// cannot be reached now, so the run will go to the spool. An archive
/// refused for its address, its credentials or its content fails here,
/// so that no test runs for a run that would be lost.
pub fn open_before_measuring(global: &GlobalOptions) -> exit::Result<()> {
    if missing_archive(global)?.is_some() {
        // A file is made when the run is stored; nothing to check yet.
        return Ok(());
    }
    open_archive_if_reachable(global).map(drop)
}

/// Opens the archive as [`open_archive`] does, or `None` when it is a
/// shared archive that cannot be reached now (its runs go to the spool).
pub fn open_archive_if_reachable(global: &GlobalOptions) -> exit::Result<Option<Archive>> {
    let location = archive_location(global)?;
    match open_writer(global)? {
        Ok(archive) => Ok(Some(archive)),
        Err(err) if location.file().is_none() && err.is_unreachable() => Ok(None),
        Err(err) => Err(exit::Failure::from(err).context("failed to open the archive")),
    }
}

/// Sends `archive` the runs its spool kept, each removed once the
/// archive committed it (new to it or already in it), and returns how
/// many were sent. Stops at the first run that cannot be read or stored,
/// leaving it and the rest kept.
pub fn send_spooled(location: &Location, archive: &mut Archive) -> exit::Result<usize> {
    let spool = Spool::of_archive(&location.to_string())?;
    let pending = spool.pending()?;
    let mut n_sent = 0;
    for path in &pending {
        let Some(record) = spool::read_kept(path)? else {
            continue;
        };
        let run = archive::CanonicalRun::from_record(record)
            .with_context(|| format!("failed to read {}", path.display()))?;
        match archive.store(&run) {
            Ok(_) => {
                spool::forget(path)?;
                n_sent += 1;
            }
            Err(err) => {
                return Err(exit::Failure::from(err)
                    .context(format!("failed to send {} to {location}", path.display())));
            }
        }
    }
    Ok(n_sent)
}

/// [`send_spooled`] for a command that opened a shared archive to write
/// in it: a line on stderr says what was sent, and a failure is a
/// warning, never the command's failure.
fn send_spooled_noting(global: &GlobalOptions, location: &Location, archive: &mut Archive) {
    let Ok(spool) = Spool::of_archive(&location.to_string()) else {
        return;
    };
    if spool.pending().map_or(true, |pending| pending.is_empty()) {
        return;
    }
    match send_spooled(location, archive) {
        Ok(n_sent) if n_sent > 0 && !global.quiet() => {
            eprintln!("netbisect: sent {n_sent} spooled runs to {location}");
        }
        Ok(_) => {}
        Err(err) => eprintln!("netbisect: warning: {err:#}"),
    }
}

/// What the history needs of each selected run: from the archive's
/// columns, or from the records themselves in an archive older than them
/// (one this user may only read).
pub fn series_runs(
    archive: &Archive,
    query: &RunQuery,
    metric: Metric,
) -> exit::Result<Vec<SeriesRun>> {
    if let Some(runs) = archive
        .series_runs(query, metric)
        .context("failed to read the archive")?
    {
        return Ok(runs);
    }
    let records = archive
        .records(query)
        .context("failed to read the archive")?;
    records
        .iter()
        .map(|record| {
            SeriesRun::of(record, metric)
                .with_context(|| format!("failed to compute the spec key of run {}", record.id))
        })
        .collect()
}
