//! `netbisect templates list|dump`: the built-in templates, so a user can
//! start their own from one and put it in `--template-dir`.

use crate::cli::{TemplatesAction, TemplatesArgs};
use crate::exit::{self, Code, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::render::{BUILTIN, Renderer};

pub fn run(global: &GlobalOptions, args: &TemplatesArgs) -> exit::Result<Code> {
    let renderer = Renderer::new(global.template_dir.as_deref());
    match &args.action {
        TemplatesAction::List => {
            for (name, _) in BUILTIN {
                let (_, origin) = renderer.source(name)?;
                output::emit(
                    global,
                    || {
                        let line = serde_json::json!({ "name": name, "source": origin });
                        output::line(&line, "the list")
                    },
                    || Ok(format!("{name:<16} {origin}\n")),
                )?;
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
            output::write_stdout(source.as_bytes())?;
        }
    }
    Ok(Code::Ok)
}
