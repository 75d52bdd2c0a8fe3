//! What a command prints on stdout: with `--json` its document, else its
//! text for people, most often a template's. [`emit`] makes only the one
//! asked for and writes it; a closed pipe is not an error (see
//! [`crate::exit::stdout_error`]). And a note of netbisect's on stderr
//! outside a progress line ([`note`]): a warning, a run stored.

use crate::exit::{self, Context};
use crate::global_options::GlobalOptions;
use crate::render::Renderer;
use crate::render::text::plain_lines;
use run_record::record::RunRecord;
use serde::Serialize;
use std::io::Write;

/// Writes `json()` with `--json`, else `text()`, to stdout.
pub fn emit(
    global: &GlobalOptions,
    json: impl FnOnce() -> exit::Result<Vec<u8>>,
    text: impl FnOnce() -> exit::Result<String>,
) -> exit::Result<()> {
    let bytes = if global.json() {
        json()?
    } else {
        text()?.into_bytes()
    };
    write_stdout(&bytes)
}

/// `value` as indented JSON and a newline (the read commands' layout).
pub fn pretty<T: Serialize + ?Sized>(value: &T, what: &str) -> exit::Result<Vec<u8>> {
    let mut bytes =
        serde_json::to_vec_pretty(value).with_context(|| format!("failed to format {what}"))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// `value` as JSON on one line (a JSON line).
pub fn line<T: Serialize + ?Sized>(value: &T, what: &str) -> exit::Result<Vec<u8>> {
    let mut bytes =
        serde_json::to_vec(value).with_context(|| format!("failed to format {what}"))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The built-in template `name` (or the user's, from `--template-dir`)
/// rendered over `context`.
pub fn template<C: Serialize>(
    global: &GlobalOptions,
    name: &str,
    context: &C,
    what: &str,
) -> exit::Result<String> {
    Renderer::new(global.template_dir.as_deref())
        .render(name, context)
        .with_context(|| format!("failed to render {what}"))
}

/// Writes `bytes` to stdout.
pub fn write_stdout(bytes: &[u8]) -> exit::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(crate::exit::stdout_error)
}

/// A run record's canonical bytes and a newline: its `--json` form.
pub fn record(record: &RunRecord) -> exit::Result<Vec<u8>> {
    let mut bytes = record
        .to_canonical_bytes()
        .context("failed to write the run record")?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// `netbisect: TEXT` on stderr, each line of `text` [`plain_lines`]: a
/// warning or a note that may quote a record (a label, a kernel, a
/// setting) reaches the terminal without its escape sequences.
pub fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "netbisect: {}", plain_lines(text));
}
