//! `netbisect archive prune`: the selection of the command line (age,
//! testbed, label, a git range of commits) turned into an
//! [`archive::store::PruneSelection`], the prune in the archive's one
//! transaction, then what was removed and kept, and, with `--vacuum`, the
//! file rewritten without the space freed.

use crate::cli::{Cutoff, PruneArgs};
use crate::commits::commits_of;
use crate::exit::{self, Code, Context, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::store::{archive_location, open_archive, open_archive_read};
use crate::views::archive_prune::ArchivePruneContext;
use archive::RunQuery;
use archive::store::PruneSelection;
use std::path::Path;
use std::time::SystemTime;

pub fn run_prune(global: &GlobalOptions, args: &PruneArgs) -> exit::Result<Code> {
    let selection = selection_of(args)?;
    let location = archive_location(global)?;
    if args.vacuum && location.file().is_none() {
        return Err(InputError(format!(
            "--vacuum rewrites an archive file; {location} is a PostgreSQL database, whose \
             autovacuum makes the space of removed runs reusable"
        ))
        .into());
    }
    let mut archive = if args.dry_run {
        open_archive_read(global)?
    } else {
        open_archive(global)?
    };
    let pruned = archive.prune(&selection, args.dry_run).with_context(|| {
        format!("failed to prune {location}; a prune removes all of its runs or none")
    })?;
    let context = ArchivePruneContext::new(&pruned);
    output::emit(
        global,
        || output::pretty(&pruned, "what was pruned"),
        || output::template(global, "archive-prune", &context, "what was pruned"),
    )?;
    if args.vacuum {
        vacuum(global, &mut archive, location.file())?;
    }
    Ok(Code::Ok)
}

/// The runs the command line selects; none of its selections given is
/// an input error, so that no prune removes every run by a forgotten
/// option.
fn selection_of(args: &PruneArgs) -> exit::Result<PruneSelection> {
    let started_before = args.older_than.as_ref().map(|cutoff| match cutoff {
        Cutoff::Before(time) => time.clone(),
        Cutoff::Age(age) => run_record::time::rfc3339_utc(
            SystemTime::now()
                .checked_sub(*age)
                .unwrap_or(SystemTime::UNIX_EPOCH),
        ),
    });
    let commits = match &args.commits {
        Some(range) => {
            let repo = args.repo.as_deref().unwrap_or(Path::new("."));
            Some(
                commits_of(repo, range, args.first_parent)?
                    .into_iter()
                    .collect(),
            )
        }
        None => None,
    };
    let selection = PruneSelection {
        query: RunQuery {
            label: args.label.clone(),
            testbed: args.testbed.clone(),
            started_before,
            ..RunQuery::default()
        },
        commits,
    };
    if !selection.is_narrowed() {
        return Err(InputError(
            "archive prune removes the runs of a selection, and none was given: name one or \
             more of --older-than, --testbed, --label, --commits"
                .to_string(),
        )
        .into());
    }
    Ok(selection)
}

/// `--vacuum`: the file rewritten without its free pages, and its size
/// before and after said.
fn vacuum(
    global: &GlobalOptions,
    archive: &mut archive::Archive,
    file: Option<&Path>,
) -> exit::Result<()> {
    let size = || {
        file.and_then(|path| std::fs::metadata(path).ok())
            .map(|meta| meta.len())
    };
    let before = size();
    archive
        .vacuum()
        .context("the runs were removed, but rewriting the file failed")?;
    if let (Some(before), Some(after), false) = (before, size(), global.quiet()) {
        output::note(&format!(
            "the archive file went from {before} to {after} bytes"
        ));
    }
    Ok(())
}
