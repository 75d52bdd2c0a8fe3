//! The render layer: every text a human reads is a minijinja template.
//!
//! Built-in templates live in `templates/NAME.j2` at the root of the
//! repository and are embedded in the binary; `--template-dir DIR` (or
//! `NETBISECT_TEMPLATE_DIR`) overrides any of them by name with
//! `DIR/NAME.j2`. A template is given its context (`crate::views`: the
//! data, and the tables and figures Rust laid out of it) and
//! [`CONTEXT_VERSION`] as `context_version`; its words are its own,
//! helped by the filters in [`filters`] and the table layout of
//! [`table`].

pub mod filters;
pub mod html;
#[cfg(test)]
mod rules;
pub mod table;
pub mod text;

use crate::exit::{Code, ExitCoded};
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The built-in templates: name and source.
pub const BUILTIN: &[(&str, &str)] = &[
    ("env", include_str!("../../templates/env.j2")),
    ("compare", include_str!("../../templates/compare.j2")),
    (
        "compare-stats",
        include_str!("../../templates/compare-stats.j2"),
    ),
    ("history", include_str!("../../templates/history.j2")),
    ("plan", include_str!("../../templates/plan.j2")),
    ("run", include_str!("../../templates/run.j2")),
    (
        "archive-list",
        include_str!("../../templates/archive-list.j2"),
    ),
    (
        "archive-prune",
        include_str!("../../templates/archive-prune.j2"),
    ),
    ("sweep", include_str!("../../templates/sweep.j2")),
    (
        "bisect-report",
        include_str!("../../templates/bisect-report.j2"),
    ),
    (
        "bisect-status",
        include_str!("../../templates/bisect-status.j2"),
    ),
    ("lab", include_str!("../../templates/lab.j2")),
];

/// The version of the contexts templates are given, which a template
/// reads as `context_version`: raised when a member of a context is
/// removed, renamed or changes meaning (a new member keeps it), so that a
/// user's template in `--template-dir` can tell the shape it was written
/// for. 1 is every release before the member existed.
pub const CONTEXT_VERSION: u32 = 3;

/// File name extension of templates.
pub const EXTENSION: &str = "j2";

/// A template that failed to load or render.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No template has this name.
    #[error("no template named '{0}'")]
    Unknown(String),
    /// A user template could not be read.
    #[error("cannot read template {path}: {source}")]
    Read {
        /// The template file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// A template has a syntax error or failed while rendering.
    #[error("{location}: {message}")]
    Template {
        /// File (or built-in name) and line.
        location: String,
        /// What minijinja said.
        message: String,
    },
}

impl ExitCoded for RenderError {
    /// A runtime failure, a broken template of the user's included: the
    /// command line was right, the text it asked for could not be made.
    fn exit_code(&self) -> Code {
        Code::Runtime
    }
}

/// Renders templates, built-in or overridden from a directory.
pub struct Renderer {
    environment: Environment<'static>,
    override_dir: Option<PathBuf>,
}

impl Renderer {
    /// A renderer whose templates come from `override_dir` where it has
    /// one of the same name, else from the built-in set.
    pub fn new(override_dir: Option<&Path>) -> Renderer {
        let mut environment = Environment::new();
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build();
        if let Ok(syntax) = syntax {
            environment.set_syntax(syntax);
        }
        environment.set_undefined_behavior(UndefinedBehavior::Strict);
        // Every text a template prints goes through `plain`: what came
        // from a record can neither move the cursor nor make a line wider
        // than its characters. A macro's output is the template's own
        // (the custom escape mode marks it safe) and is kept as it is.
        environment.set_auto_escape_callback(|_| AutoEscape::Custom("plain".into()));
        environment.set_formatter(|out, _state, value| {
            let text = value.to_string();
            let text = if value.is_safe() {
                std::borrow::Cow::Borrowed(text.as_str())
            } else {
                text::plain(&text)
            };
            out.write_str(&text).map_err(|err| {
                minijinja::Error::new(minijinja::ErrorKind::WriteFailure, err.to_string())
            })
        });
        filters::register(&mut environment);
        Renderer {
            environment,
            override_dir: override_dir.map(Path::to_path_buf),
        }
    }

    /// Where a user template named `name` would live.
    fn override_path(&self, name: &str) -> Option<PathBuf> {
        let path = self
            .override_dir
            .as_ref()?
            .join(format!("{name}.{EXTENSION}"));
        path.is_file().then_some(path)
    }

    /// The source of template `name` and where it came from.
    pub fn source(&self, name: &str) -> Result<(String, String), RenderError> {
        if let Some(path) = self.override_path(name) {
            let source = std::fs::read_to_string(&path).map_err(|source| RenderError::Read {
                path: path.clone(),
                source,
            })?;
            return Ok((source, path.display().to_string()));
        }
        BUILTIN
            .iter()
            .find(|(builtin, _)| *builtin == name)
            .map(|(_, source)| {
                (
                    (*source).to_string(),
                    format!("templates/{name}.{EXTENSION} (built-in)"),
                )
            })
            .ok_or_else(|| RenderError::Unknown(name.to_string()))
    }

    /// Renders template `name` over `data`, with [`CONTEXT_VERSION`] as
    /// `context_version`.
    pub fn render<T: Serialize>(&mut self, name: &str, data: &T) -> Result<String, RenderError> {
        let (source, origin) = self.source(name)?;
        let describe = |err: minijinja::Error| {
            let location = match err.line() {
                Some(line) => format!("{origin}: line {line}"),
                None => origin.clone(),
            };
            let message = err
                .detail()
                .map_or_else(|| err.kind().to_string(), str::to_string);
            RenderError::Template { location, message }
        };
        self.environment.remove_template(name);
        self.environment
            .add_template_owned(name.to_string(), source)
            .map_err(describe)?;
        let template = self.environment.get_template(name).map_err(describe)?;
        let context = minijinja::context! {
            context_version => CONTEXT_VERSION,
            ..minijinja::Value::from(minijinja::value::Serde(data))
        };
        template.render(context).map_err(describe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_template_overrides_and_reports_errors_with_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hello.j2"), "n={{ n | fixed(2) }}\n").unwrap();
        let mut renderer = Renderer::new(Some(dir.path()));
        let text = renderer
            .render("hello", &serde_json::json!({"n": 1.5}))
            .unwrap();
        assert_eq!(text, "n=1.50\n");

        std::fs::write(
            dir.path().join("version.j2"),
            "{{ context_version }} {{ n }}\n",
        )
        .unwrap();
        let text = renderer
            .render("version", &serde_json::json!({"n": 1}))
            .unwrap();
        assert_eq!(text, format!("{CONTEXT_VERSION} 1\n"));

        std::fs::write(dir.path().join("broken.j2"), "ok\n{% if %}\n").unwrap();
        let err = renderer
            .render("broken", &serde_json::json!({}))
            .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("broken.j2: line 2"), "{message}");

        let err = renderer
            .render("absent", &serde_json::json!({}))
            .unwrap_err();
        assert_eq!(err.to_string(), "no template named 'absent'");
    }
}
