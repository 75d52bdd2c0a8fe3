//! `netbisect env`: what this host's environment looks like to netbisect.

use crate::cli::{EnvArgs, GlobalArgs};
use crate::exit::Code;
use crate::render::Renderer;
use anyhow::Context;
use std::io::Write;

pub fn run(global: &GlobalArgs, args: &EnvArgs) -> anyhow::Result<Code> {
    let env = bench_core::host::capture_local(args.interface.as_deref());
    let text = if global.json {
        let mut text =
            serde_json::to_string_pretty(&env).context("failed to format the environment")?;
        text.push('\n');
        text
    } else {
        Renderer::new(global.template_dir.as_deref())
            .render("env", &serde_json::json!({ "env": env }))
            .context("failed to render the environment")?
    };
    std::io::stdout()
        .write_all(text.as_bytes())
        .map_err(crate::exit::stdout_error)?;
    Ok(Code::Ok)
}
