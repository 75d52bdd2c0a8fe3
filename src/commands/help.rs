//! `netbisect completions SHELL` and `netbisect man`.

use crate::cli::{Cli, CompletionsArgs};
use crate::exit::Code;
use crate::output;
use anyhow::Context;
use clap::CommandFactory;

pub fn completions(args: &CompletionsArgs) -> anyhow::Result<Code> {
    let mut command = Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(args.shell, &mut command, "netbisect", &mut buffer);
    output::write_stdout(&buffer)?;
    Ok(Code::Ok)
}

pub fn man() -> anyhow::Result<Code> {
    let mut buffer = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut buffer)
        .context("failed to render the manual page")?;
    output::write_stdout(&buffer)?;
    Ok(Code::Ok)
}
