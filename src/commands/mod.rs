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
mod serve;
mod templates;
mod verdict;

use crate::cli::{BisectAction, Cli, Command};
use crate::exit::Code;
use child_process::interrupt::Mode;

/// Runs the command `cli` names.
pub fn run(cli: &Cli) -> anyhow::Result<Code> {
    match &cli.command {
        Command::Record(args) => record::run(&cli.global, args),
        Command::Env(args) => env::run(&cli.global, args),
        Command::GuestSettings(args) => guest_settings::run(args),
        Command::GuestRuns(args) => guest_runs::run(args),
        Command::Templates(args) => templates::run(&cli.global, args),
        Command::Archive(args) => archive::run(&cli.global, args),
        Command::Completions(args) => help::completions(args),
        Command::Man(args) => help::man(&cli.global, args),
        Command::Bench(args) => bench::run(&cli.global, args),
        Command::Serve(args) => serve::run(&cli.global, args),
        Command::Bisect(args) => bisect::run(&cli.global, args),
        Command::Verdict(args) => verdict::run(&cli.global, args),
        Command::Compare(args) => compare::run(&cli.global, args),
        Command::History(args) => history::run(&cli.global, args),
        Command::Ab(args) => ab::run(&cli.global, args),
        Command::Plan(args) => plan::run(&cli.global, args),
        Command::Publish(args) => publish::run(&cli.global, args),
    }
}

/// What SIGINT and SIGTERM do during the command `cli` names: commands
/// that run children or guests kill them and stop (journaling first, for
/// a bisection; removing a guest's directory, for a test in a VM), a test
/// on this host ends at once; `None` leaves the signals as they are.
pub fn interrupt_mode(cli: &Cli) -> Option<Mode> {
    match &cli.command {
        Command::Bench(args) if args.vm.kernel.is_some() || args.vm.options.any() => {
            Some(Mode::Journal)
        }
        Command::Bench(_) | Command::Verdict(_) => Some(Mode::ExitNow),
        Command::Ab(_) => Some(Mode::Journal),
        Command::Bisect(args) if matches!(args.action, BisectAction::Run(_)) => Some(Mode::Journal),
        _ => None,
    }
}
