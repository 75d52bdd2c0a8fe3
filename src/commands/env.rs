//! `netbisect env`: what this host's environment looks like to netbisect.

use crate::cli::{EnvArgs, GlobalArgs};
use crate::exit::Code;
use anyhow::Context;
use std::io::Write;

pub fn run(_global: &GlobalArgs, args: &EnvArgs) -> anyhow::Result<Code> {
    let env = bench_core::env::capture_local(args.interface.as_deref());
    let mut text =
        serde_json::to_string_pretty(&env).context("failed to format the environment")?;
    text.push('\n');
    std::io::stdout()
        .write_all(text.as_bytes())
        .context("failed to write to stdout")?;
    Ok(Code::Ok)
}
