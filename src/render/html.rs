//! The HTML environment: the templates of the published site, its feed
//! and its charts' hover targets (`templates/site/`), embedded in the
//! binary and rendered with auto-escaping on.
//!
//! It is an environment of its own, beside the text one of
//! [`super::Renderer`]: the text templates print for a terminal (through
//! `plain`), these for a browser. Its templates are built-in only:
//! `--template-dir` overrides the text templates, never these, so that a
//! page's markup and its escaping are the binary's own.
//!
//! Escaping: every value a template of this environment prints (a name
//! ending in `.html`, `.svg` or `.atom`) goes through [`escape`], unless
//! it is marked safe; the five characters that mean something in HTML,
//! in SVG and in XML (the Atom feed) become entities, and every
//! character beyond ASCII its numeric entity, so that what a template
//! prints is ASCII whatever the archive holds. A macro's output is the
//! template's own markup and is kept as it is. The one value code marks
//! safe is a chart drawn by `site::chart::series_svg` (its `DrawnSvg`),
//! whose tags code wrote and whose text was escaped where it was put.

use super::RenderError;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;
use std::sync::OnceLock;

/// The built-in HTML and SVG templates: name and source.
pub const TEMPLATES: &[(&str, &str)] = &[
    (
        "site/page.html",
        include_str!("../../templates/site/page.html"),
    ),
    (
        "site/index.html",
        include_str!("../../templates/site/index.html"),
    ),
    (
        "site/config.html",
        include_str!("../../templates/site/config.html"),
    ),
    (
        "site/compare.html",
        include_str!("../../templates/site/compare.html"),
    ),
    (
        "site/experiment.html",
        include_str!("../../templates/site/experiment.html"),
    ),
    (
        "site/bisection.html",
        include_str!("../../templates/site/bisection.html"),
    ),
    (
        "site/configs-table.html",
        include_str!("../../templates/site/configs-table.html"),
    ),
    (
        "site/testbed.html",
        include_str!("../../templates/site/testbed.html"),
    ),
    (
        "site/regressions.html",
        include_str!("../../templates/site/regressions.html"),
    ),
    (
        "site/regressions.atom",
        include_str!("../../templates/site/regressions.atom"),
    ),
    (
        "site/chart-overlay.svg",
        include_str!("../../templates/site/chart-overlay.svg"),
    ),
];

/// The name of the escaping this environment's formatter applies.
const ESCAPE_MODE: &str = "html-ascii";

/// `text` with the five characters that mean something in HTML (and in
/// SVG) replaced by their entities, and every character beyond ASCII by
/// its numeric entity.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            ascii if ascii.is_ascii() => out.push(ascii),
            other => {
                out.push_str("&#");
                out.push_str(&u32::from(other).to_string());
                out.push(';');
            }
        }
    }
    out
}

/// A built-in template that does not parse: where, and what minijinja
/// said.
struct Broken {
    location: String,
    message: String,
}

impl Broken {
    fn new(name: &str, err: &minijinja::Error) -> Broken {
        let origin = format!("templates/{name} (built-in)");
        let location = match err.line() {
            Some(line) => format!("{origin}: line {line}"),
            None => origin,
        };
        let message = err
            .detail()
            .map_or_else(|| err.kind().to_string(), str::to_string);
        Broken { location, message }
    }

    fn error(&self) -> RenderError {
        RenderError::Template {
            location: self.location.clone(),
            message: self.message.clone(),
        }
    }
}

/// The environment with every built-in template parsed.
fn build() -> Result<Environment<'static>, Broken> {
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
    environment.set_auto_escape_callback(|name| {
        if name.ends_with(".html") || name.ends_with(".svg") || name.ends_with(".atom") {
            AutoEscape::Custom(ESCAPE_MODE.into())
        } else {
            AutoEscape::None
        }
    });
    environment.set_formatter(|out, state, value| {
        let text = value.to_string();
        let escaping =
            matches!(state.auto_escape(), AutoEscape::Custom(mode) if mode == ESCAPE_MODE);
        let shown = if escaping && !value.is_safe() {
            escape(&text)
        } else {
            text
        };
        out.write_str(&shown).map_err(|err| {
            minijinja::Error::new(minijinja::ErrorKind::WriteFailure, err.to_string())
        })
    });
    for (name, source) in TEMPLATES {
        environment
            .add_template(name, source)
            .map_err(|err| Broken::new(name, &err))?;
    }
    Ok(environment)
}

/// Renders the built-in template `name` over `context`.
pub fn render<T: Serialize>(name: &str, context: &T) -> Result<String, RenderError> {
    static ENVIRONMENT: OnceLock<Result<Environment<'static>, Broken>> = OnceLock::new();
    let environment = ENVIRONMENT
        .get_or_init(build)
        .as_ref()
        .map_err(Broken::error)?;
    let template = environment
        .get_template(name)
        .map_err(|_| RenderError::Unknown(name.to_string()))?;
    template
        .render(minijinja::Value::from(minijinja::value::Serde(context)))
        .map_err(|err| Broken::new(name, &err).error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_cannot_open_a_tag_or_leave_an_attribute() {
        assert_eq!(
            escape("<script>\"x\" & 'y'"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;"
        );
        assert_eq!(escape("<a> \u{b1}1"), "&lt;a&gt; &#177;1");
    }

    #[test]
    fn every_template_parses() {
        if let Err(broken) = build() {
            panic!("{}: {}", broken.location, broken.message);
        }
    }

    #[test]
    fn values_are_escaped_and_only_safe_ones_kept() {
        #[derive(Serialize)]
        struct Overlay {
            points: Vec<serde_json::Value>,
            markers: Vec<serde_json::Value>,
        }
        let svg = render(
            "site/chart-overlay.svg",
            &Overlay {
                points: vec![serde_json::json!({"x": 1, "y": -2, "detail": "a <b> & 'c' \u{e9}"})],
                markers: Vec::new(),
            },
        )
        .unwrap();
        assert!(
            svg.contains(
                "cx=\"1\" cy=\"-2\" r=\"9\"><title>a &lt;b&gt; &amp; &#39;c&#39; &#233;</title>"
            ),
            "{svg}"
        );
        assert!(svg.is_ascii());
    }
}
