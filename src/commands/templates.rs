//! `netbisect templates list|dump`: the built-in templates, so a user can
//! start their own from one and put it in `--template-dir`.

use crate::cli::{GlobalArgs, TemplatesAction, TemplatesArgs};
use crate::exit::{Code, InputError};
use crate::render::{BUILTIN, Renderer};
use std::io::Write;

pub fn run(global: &GlobalArgs, args: &TemplatesArgs) -> anyhow::Result<Code> {
    let renderer = Renderer::new(global.template_dir.as_deref());
    let mut stdout = std::io::stdout().lock();
    match &args.action {
        TemplatesAction::List => {
            for (name, _) in BUILTIN {
                let (_, origin) = renderer.source(name)?;
                if global.json {
                    let line = serde_json::json!({ "name": name, "source": origin });
                    writeln!(stdout, "{line}")
                } else {
                    writeln!(stdout, "{name:<16} {origin}")
                }
                .map_err(crate::exit::stdout_error)?;
            }
        }
        TemplatesAction::Dump { name } => {
            if !BUILTIN.iter().any(|(builtin, _)| builtin == name) {
                let known: Vec<&str> = BUILTIN.iter().map(|(builtin, _)| *builtin).collect();
                return Err(InputError(format!(
                    "no template named '{name}' (known: {})",
                    known.join(", ")
                ))
                .into());
            }
            let (source, _) = renderer.source(name)?;
            stdout
                .write_all(source.as_bytes())
                .map_err(crate::exit::stdout_error)?;
        }
    }
    Ok(Code::Ok)
}
