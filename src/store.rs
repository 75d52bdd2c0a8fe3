//! The archive of the command line: where it is ([`archive_location`]: a
//! file, or a PostgreSQL database named by a `postgres://` address),
//! opening it to write ([`open_archive`]), to write only when it exists
//! ([`open_existing_archive`]) or only to read ([`open_archive_read`]),
//! and where a finished run goes: into the
//! archive ([`store_run`]), then to stdout as its record or its netperf
//! table ([`store_and_print`]), after a warning of the settings the
//! kernel did not grant ([`warn_of_refused_settings`]).

use crate::cli::GlobalArgs;
use crate::exit::{Code, InputError};
use crate::output;
use crate::views::run::RunContext;
use crate::views::units::Units;
use anyhow::Context;
use archive::store::SeriesRun;
use archive::store::Upgrade;
use archive::{Archive, Location, RunQuery};
use run_record::record::Metric;
use run_record::record::{RunRecord, SystemOutcome};
use std::path::PathBuf;

/// The archive: `--archive` / `NETBISECT_ARCHIVE` (a file, or a
/// `postgres://` or `postgresql://` address), else
/// `$XDG_DATA_HOME/netbisect/archive.db`, else
/// `$HOME/.local/share/netbisect/archive.db`.
pub fn archive_location(global: &GlobalArgs) -> anyhow::Result<Location> {
    if let Some(given) = &global.archive {
        return Ok(Location::parse(given.as_os_str())?);
    }
    Ok(Location::File(default_archive_path()?))
}

fn default_archive_path() -> anyhow::Result<PathBuf> {
    let absolute_env = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let data_home = absolute_env("XDG_DATA_HOME")
        .or_else(|| absolute_env("HOME").map(|home| home.join(".local").join("share")))
        .ok_or_else(|| {
            InputError(
                "cannot tell where the archive lives: HOME is not set; \
                 give --archive PATH or set NETBISECT_ARCHIVE"
                    .to_string(),
            )
        })?;
    Ok(data_home.join("netbisect").join("archive.db"))
}

/// Opens (creating it and its directory if needed) the archive the
/// command line names.
pub fn open_archive(global: &GlobalArgs) -> anyhow::Result<Archive> {
    let location = archive_location(global)?;
    if let Some(parent) = location
        .file()
        .and_then(|path| path.parent())
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("failed to create directory {}", parent.display()))?;
    }
    Archive::open_location_noting(&location, &mut upgrade_notice(global, &location))
        .context("failed to open the archive")
}

/// Opens the archive the command line names to read and write, for a
/// command that has nothing to do without one (a bisection's session,
/// verdict's baselines): a missing file is an error ("no archive at
/// PATH"), never a new empty archive.
pub fn open_existing_archive(global: &GlobalArgs) -> anyhow::Result<Archive> {
    if let Some(path) = missing_archive(global)? {
        return Err(
            anyhow::Error::new(archive::ArchiveError::NoArchive { path })
                .context("failed to open the archive"),
        );
    }
    let location = archive_location(global)?;
    Archive::open_location_noting(&location, &mut upgrade_notice(global, &location))
        .context("failed to open the archive")
}

/// The archive's file when the command line names a file that does not
/// exist (a database server's address is never missing: the server says).
pub fn missing_archive(global: &GlobalArgs) -> anyhow::Result<Option<PathBuf>> {
    Ok(archive_location(global)?
        .file()
        .filter(|path| std::fs::symlink_metadata(path).is_err())
        .map(|path| path.to_path_buf()))
}

/// Opens the archive for a command that only reads: a missing file is an
/// error ("no archive at PATH"), never a new empty archive, and an archive
/// the user may only read is read without writing beside it.
pub fn open_archive_read(global: &GlobalArgs) -> anyhow::Result<Archive> {
    let location = archive_location(global)?;
    Archive::open_location_read_only_noting(&location, &mut upgrade_notice(global, &location))
        .context("failed to open the archive")
}

/// Says on stderr, unless `--quiet`, that the archive at `location` is
/// being upgraded: the first command to open a large archive after a
/// newer netbisect is installed waits for it (seconds for a file of a
/// million runs, a minute and more on PostgreSQL), and should not wait
/// in silence.
fn upgrade_notice(global: &GlobalArgs, location: &Location) -> impl FnMut(Upgrade) + use<> {
    let quiet = global.quiet;
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
}

/// Stores a finished run (when `output.archive`) and prints it: the
/// record with `--json`, else its netperf table in bench's units. The
/// run is stored before it is printed, so a closed pipe loses nothing; a
/// run that cannot be stored is still printed, then the failure is
/// reported. Settings the kernel did not grant are warned of first.
pub fn store_and_print(
    global: &GlobalArgs,
    output: &RunOutput,
    record: &RunRecord,
) -> anyhow::Result<Code> {
    warn_of_refused_settings(global, record);
    let stored = if output.archive {
        store_run(global, record)
    } else {
        Ok(())
    };
    output::emit(
        global,
        || output::record(record),
        || {
            let units = Units::parse(&output.units).map_err(|err| InputError(err.to_string()))?;
            let context = RunContext::new(record, units, output.banner, output.archive);
            output::template(global, "run", &context, "the run")
        },
    )?;
    stored?;
    Ok(Code::Ok)
}

/// Says on stderr, unless `--quiet`, which of the settings the run asked
/// of the system under test (`--set`) the kernel did not grant, as the
/// record's `system` holds them: `gso=on (got off)`.
pub fn warn_of_refused_settings(global: &GlobalArgs, record: &RunRecord) {
    if global.quiet {
        return;
    }
    for refused in record.system.iter().flat_map(SystemOutcome::refused) {
        eprintln!("netbisect: warning: the kernel did not grant {refused}");
    }
}

/// Stores a finished, sealed record in the archive. Storing the same run
/// twice is a no-op.
pub fn store_run(global: &GlobalArgs, record: &RunRecord) -> anyhow::Result<()> {
    let location = archive_location(global)?;
    let mut archive = open_archive(global)?;
    let run = archive::CanonicalRun::from_record(record.clone())
        .context("failed to prepare the run for the archive")?;
    archive
        .store(&run)
        .with_context(|| format!("failed to store the run in {location}"))?;
    if global.verbose > 0 {
        eprintln!("netbisect: stored run {} in {}", &record.id[..12], location);
    }
    Ok(())
}

/// What the history needs of each selected run: from the archive's
/// columns, or from the records themselves in an archive older than them
/// (one this user may only read).
pub fn series_runs(
    archive: &Archive,
    query: &RunQuery,
    metric: Metric,
) -> anyhow::Result<Vec<SeriesRun>> {
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
