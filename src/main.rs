//! netbisect: the command-line front end. Parses arguments into option
//! structs, calls the libraries, renders their data, and maps failures to
//! the documented exit codes (see [`exit`]).

mod bisection;
mod cli;
mod commands;
mod commits;
mod comparison;
mod exit;
mod experiment;
mod global_options;
mod lab;
mod output;
mod progress;
mod render;
mod request;
mod selector;
mod site;
mod spool;
mod store;
mod views;
mod vm;

use clap::{CommandFactory, Parser};
use global_options::{ArchiveChoice, GlobalOptions, OutputMode, ProgressMode, Verbosity};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(err) => return usage_error(&err),
    };
    if let Some(mode) = commands::interrupt_mode(&args.command)
        && let Err(err) = child_process::interrupt::install(mode)
    {
        let _ = writeln!(std::io::stderr(), "netbisect: error: {err}");
        return exit::Code::Runtime.into();
    }
    let outcome = commands::run(&global_options(&args.global), &args.command);
    match outcome {
        Ok(code) => code.into(),
        Err(err) => {
            if exit::is_broken_pipe(&err) {
                return exit::Code::Ok.into();
            }
            let code = exit::classify(&err);
            let _ = std::io::stderr()
                .lock()
                .write_all(exit::error_text(&err).as_bytes());
            code.into()
        }
    }
}

/// The options every command takes, as the commands read them.
fn global_options(args: &cli::GlobalArgs) -> GlobalOptions {
    let verbosity = if args.quiet {
        Verbosity::Quiet
    } else if args.verbose > 0 {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
    GlobalOptions {
        archive: ArchiveChoice::new(args.archive.clone()),
        output: if args.json {
            OutputMode::Json
        } else {
            OutputMode::Text
        },
        verbosity,
        progress: match args.progress {
            cli::ProgressArg::Auto => ProgressMode::Auto,
            cli::ProgressArg::Always => ProgressMode::Always,
            cli::ProgressArg::Never => ProgressMode::Never,
        },
        template_dir: args.template_dir.clone(),
    }
}

/// Prints clap's message and exits as clap would (0 for `--help`, 2 for
/// a usage error), except that `verdict` exits 128 on a usage error: under
/// `git bisect run`, 2 would mark the commit bad and 125 would skip every
/// commit, while 128 aborts the bisection.
fn usage_error(err: &clap::Error) -> ExitCode {
    let _ = err.print();
    if !err.use_stderr() {
        return exit::Code::Ok.into();
    }
    let subcommand = cli::Cli::command()
        .ignore_errors(true)
        .try_get_matches()
        .ok()
        .and_then(|matches| matches.subcommand_name().map(str::to_string));
    if subcommand.as_deref() == Some("verdict") {
        exit::Code::Abort.into()
    } else {
        exit::Code::Input.into()
    }
}
