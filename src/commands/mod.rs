//! One module per subcommand, and [`run`], which dispatches. A subcommand
//! module turns its arguments into the options of what it calls and
//! never imports another subcommand's module: what several share lives
//! beside this directory (`request`, `store`, `selector`, `comparison`,
//! `output`, `vm`, `site`).

mod ab;
mod archive;
mod bench;
mod bisect;
mod compare;
mod env;
mod guest_runs;
mod guest_settings;
mod help;
mod history;
mod plan;
mod publish;
mod record;
mod regressions;
mod serve;
mod templates;
mod track;
mod verdict;
mod worker;

use crate::cli::{BisectAction, Command};
use crate::exit::{self, Code};
use crate::global_options::GlobalOptions;
use child_process::interrupt::Mode;

/// Runs `command` with the options every command takes.
pub fn run(global: &GlobalOptions, command: &Command) -> exit::Result<Code> {
    match command {
        Command::Record(args) => record::run(global, args),
        Command::Env(args) => env::run(global, args),
        Command::GuestSettings(args) => guest_settings::run(args),
        Command::GuestRuns(args) => guest_runs::run(args),
        Command::Templates(args) => templates::run(global, args),
        Command::Archive(args) => archive::run(global, args),
        Command::Completions(args) => help::completions(args),
        Command::Man(args) => help::man(global, args),
        Command::Bench(args) => bench::run(global, args),
        Command::Serve(args) => serve::run(global, args),
        Command::Bisect(args) => bisect::run(global, args),
        Command::Verdict(args) => verdict::run(global, args),
        Command::Compare(args) => compare::run(global, args),
        Command::History(args) => history::run(global, args),
        Command::Ab(args) => ab::run(global, args),
        Command::Plan(args) => plan::run(global, args),
        Command::Publish(args) => publish::run(global, args),
        Command::Track(args) => track::run(global, args),
        Command::Worker(args) => worker::run(global, args),
        Command::Regressions(args) => regressions::run(global, args),
    }
}

/// What SIGINT and SIGTERM do during `command`: commands that run
/// children or guests kill them and stop (journaling first, for a
/// bisection; removing a guest's directory, for a test in a VM), a test
/// on this host ends at once; `None` leaves the signals as they are.
pub fn interrupt_mode(command: &Command) -> Option<Mode> {
    match command {
        Command::Bench(args) if args.vm.kernel.is_some() || args.vm.options.any() => {
            Some(Mode::Journal)
        }
        Command::Bench(_) | Command::Verdict(_) => Some(Mode::ExitNow),
        Command::Ab(_) | Command::Worker(_) => Some(Mode::Journal),
        Command::Track(args) if args.action.is_none() => Some(Mode::Journal),
        Command::Bisect(args) if matches!(args.action, BisectAction::Run(_)) => Some(Mode::Journal),
        _ => None,
    }
}
