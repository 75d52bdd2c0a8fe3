//! Where a finished run goes: into the archive (unless `--no-archive`),
//! then to stdout as its record or its netperf table.

use crate::cli::{BenchArgs, GlobalArgs};
use crate::exit::Code;
use crate::output;
use anyhow::Context;
use run_record::record::RunRecord;

/// Stores a finished run (unless `--no-archive`) and prints it: the
/// record with `--json`, else its netperf table in bench's units. The
/// run is stored before it is printed, so a closed pipe loses nothing; a
/// run that cannot be stored is still printed, then the failure is
/// reported.
pub fn store_and_print(
    global: &GlobalArgs,
    args: &BenchArgs,
    record: &RunRecord,
) -> anyhow::Result<Code> {
    let stored = hand_over_to_archive(global, record, args);
    output::emit(
        global,
        || output::record(record),
        || {
            let banner = args.banner != Some(0);
            let context = serde_json::json!({
                "record": record,
                "units": args.units.units,
                "banner": banner,
            });
            output::template(global, "run", &context, "the run")
        },
    )?;
    stored?;
    Ok(Code::Ok)
}

/// Stores a finished, sealed record in the archive, unless
/// `--no-archive`. Storing the same run twice is a no-op.
pub fn hand_over_to_archive(
    global: &GlobalArgs,
    record: &RunRecord,
    args: &BenchArgs,
) -> anyhow::Result<()> {
    if args.no_archive {
        return Ok(());
    }
    let path = super::archive::archive_path(global)?;
    let mut archive = super::archive::open_archive(global)?;
    let run = archive::CanonicalRun::from_record(record.clone())
        .context("failed to prepare the run for the archive")?;
    archive
        .store(&run)
        .with_context(|| format!("failed to store the run in {}", path.display()))?;
    if global.verbose > 0 {
        eprintln!(
            "netbisect: stored run {} in {}",
            &record.id[..12],
            path.display()
        );
    }
    Ok(())
}
