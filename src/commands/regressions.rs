//! `netbisect regressions`: the regressions the trackers found, open,
//! bisected, refused and fixed (`--all`: the dismissed suspicions too),
//! with their reports' state; `--json` prints the lab's document
//! (`netbisect.lab/1`, [`crate::views::lab::LabStatus`]).

use crate::cli::LabListArgs;
use crate::exit::{self, Code};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::views::lab::LabContext;

pub fn run(global: &GlobalOptions, args: &LabListArgs) -> exit::Result<Code> {
    let archive = crate::store::open_archive_read(global)?;
    let status = crate::lab::status::read(&archive, args.all)?;
    output::emit(
        global,
        || output::pretty(&status, "the regressions"),
        || {
            output::template(
                global,
                "lab",
                &LabContext::new(&status, false),
                "the regressions",
            )
        },
    )?;
    Ok(Code::Ok)
}
