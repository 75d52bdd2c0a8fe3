//! netbisect: the command-line front end. Parses arguments into option
//! structs, calls the libraries, renders their data, and maps failures to
//! the documented exit codes (see [`exit`]).

mod cli;
mod commands;
mod exit;
mod render;
mod vm;

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let outcome = commands::run(&args);
    match outcome {
        Ok(code) => code.into(),
        Err(err) => {
            if exit::is_broken_pipe(&err) {
                return exit::Code::Ok.into();
            }
            let code = exit::classify(&err);
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "netbisect: error: {err}");
            for cause in err.chain().skip(1) {
                let _ = writeln!(stderr, "  caused by: {cause}");
            }
            code.into()
        }
    }
}
