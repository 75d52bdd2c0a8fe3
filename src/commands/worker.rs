//! `netbisect worker --testbed NAME`: takes the jobs of its kind of
//! testbed from the archive's queue and does them, one at a time, until
//! stopped (`--once`: one job, or none when none waits, for a lab whose
//! own scheduler starts the work). Each job is done as
//! [`crate::lab::worker`] says; what the worker does goes to stderr, a
//! line per job. The archive going away (a database server restarting)
//! is waited out; a signal puts the job back in the queue and exits 130.

use crate::cli::WorkerArgs;
use crate::exit::{self, Code};
use crate::global_options::GlobalOptions;
use crate::lab::worker::{WorkerOptions, open_and_send_spooled, sleep_or_stop, work_once};
use crate::progress::Reporter;
use std::path::PathBuf;
use std::time::Duration;

pub fn run(global: &GlobalOptions, args: &WorkerArgs) -> exit::Result<Code> {
    let options = WorkerOptions {
        location: global.archive.location()?.clone(),
        name: args.testbed.clone(),
        pool: args.kind.clone().unwrap_or_else(|| args.testbed.clone()),
        repo: args.repo.clone(),
        state_dir: match &args.dir {
            Some(dir) => dir.clone(),
            None => state_dir(&args.testbed)?,
        },
        lease: Duration::from_secs_f64(args.lease),
        poll: Duration::from_secs_f64(args.poll),
        notes: crate::vm::Notes {
            quiet: global.quiet(),
            verbose: global.verbose(),
        },
    };
    let reporter = Reporter::new(global, None);
    let say = |text: &str| reporter.line(text);
    let mut archive = open_and_send_spooled(&options.location, &say)?;
    reporter.status(&format!(
        "worker {} takes the jobs of {}",
        options.name, options.pool
    ));
    loop {
        match work_once(&options, &mut archive, &say) {
            Ok(true) if args.once => return Ok(Code::Ok),
            Ok(true) => {}
            Ok(false) if args.once => {
                say(&format!("no job of {} waits", options.pool));
                return Ok(Code::Ok);
            }
            Ok(false) => sleep_or_stop(options.poll)?,
            Err(err) if exit::classify(&err) == Code::Interrupted => return Err(err),
            Err(err) => {
                say(&crate::lab::worker::failure_text(&err));
                let away = crate::lab::worker::archive_away(&err);
                if args.once {
                    return Err(err);
                }
                sleep_or_stop(options.poll)?;
                if away {
                    archive = open_and_send_spooled(&options.location, &say)?;
                }
            }
        }
    }
}

/// `$XDG_STATE_HOME/netbisect/worker/NAME`, else
/// `~/.local/state/netbisect/worker/NAME`.
fn state_dir(name: &str) -> exit::Result<PathBuf> {
    let base = crate::global_options::state_dir().ok_or_else(|| {
        exit::InputError(
            "neither XDG_STATE_HOME nor HOME names an absolute directory: give --dir DIR"
                .to_string(),
        )
    })?;
    Ok(base.join("worker").join(name))
}
