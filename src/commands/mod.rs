//! One module per subcommand; [`run`] dispatches.

pub mod archive;
mod bench;
mod bisect;
mod compare;
mod env;
mod help;
mod history;
mod kernel;
mod plan;
mod record;
mod request;
mod selector;
mod serve;
mod store;
mod sweep;
mod templates;
mod test_options;
mod verdict;

use crate::cli::{Cli, Command};
use crate::exit::Code;

/// Runs the command `cli` names.
pub fn run(cli: &Cli) -> anyhow::Result<Code> {
    match &cli.command {
        Command::Record(args) => record::run(&cli.global, args),
        Command::Env(args) => env::run(&cli.global, args),
        Command::Templates(args) => templates::run(&cli.global, args),
        Command::Archive(args) => archive::run(&cli.global, args),
        Command::Completions(args) => help::completions(args),
        Command::Man => help::man(),
        Command::Bench(args) => bench::run(&cli.global, args),
        Command::Serve(args) => serve::run(&cli.global, args),
        Command::Bisect(args) => bisect::run(&cli.global, args),
        Command::Verdict(args) => verdict::run(&cli.global, args),
        Command::Compare(args) => compare::run(&cli.global, args),
        Command::History(args) => history::run(&cli.global, args),
        Command::Ab(args) => kernel::ab(&cli.global, args),
        Command::Plan(args) => plan::run(&cli.global, args),
    }
}
