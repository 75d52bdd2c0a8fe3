//! The rules every built-in template obeys, checked over sample data:
//! ASCII only, no tabs, no trailing spaces, at most 80 columns. The
//! samples are made from typed values by [`crate::views::samples`]; the
//! rendered text of each is pinned with an insta snapshot, and its
//! context is committed as JSON in `tests/data/template-samples/`, named
//! `TEMPLATE--CASE.json`.

use super::BUILTIN;
use crate::views::samples;
use std::path::PathBuf;

/// Widest line a rendered table may have.
const MAX_COLUMNS: usize = 80;

fn samples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/template-samples")
}

/// The rule violations of `text`, one message per offending line.
pub fn violations(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (line_idx, line) in text.lines().enumerate() {
        let line_no = line_idx + 1;
        if !line.is_ascii() {
            problems.push(format!("line {line_no}: not ASCII: {line:?}"));
        }
        if line.contains('\t') {
            problems.push(format!("line {line_no}: tab"));
        }
        if line.ends_with(' ') {
            problems.push(format!("line {line_no}: trailing space"));
        }
        if line.chars().count() > MAX_COLUMNS {
            problems.push(format!(
                "line {line_no}: {} columns: {line:?}",
                line.chars().count()
            ));
        }
    }
    problems
}

#[test]
fn every_builtin_template_has_samples() {
    let samples = samples::all();
    for (name, _) in BUILTIN {
        assert!(
            samples.iter().any(|sample| sample.template == *name),
            "template {name} has no sample in views::samples"
        );
    }
}

#[test]
fn builtin_templates_obey_the_mailing_list_rules() {
    for sample in samples::all() {
        let name = sample.name();
        let text = sample.text.unwrap_or_else(|err| panic!("{name}: {err}"));
        let problems = violations(&text);
        assert!(
            problems.is_empty(),
            "{name}:\n{}\n{text}",
            problems.join("\n")
        );
        insta::assert_snapshot!(name, text);
    }
}

/// The committed JSON of every sample is what its typed context
/// serialises to, and every committed file is a sample's: a context that
/// changes shape changes its samples in review. With
/// `NETBISECT_UPDATE_SAMPLES` set, the files are rewritten instead.
#[test]
fn committed_samples_are_the_typed_contexts() {
    let samples = samples::all();
    let update = std::env::var_os("NETBISECT_UPDATE_SAMPLES").is_some();
    let mut stale = Vec::new();
    for sample in &samples {
        let path = samples_dir().join(format!("{}.json", sample.name()));
        if update {
            std::fs::write(&path, &sample.json).expect("the sample directory is writable");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(sample.json.as_str()) {
            stale.push(sample.name());
        }
    }
    assert!(
        stale.is_empty(),
        "stale samples (rerun with NETBISECT_UPDATE_SAMPLES=1, then review): {}",
        stale.join(", ")
    );
    let entries = std::fs::read_dir(samples_dir()).expect("sample directory exists");
    for entry in entries {
        let path = entry.expect("readable entry").path();
        let stem = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or("");
        assert!(
            samples.iter().any(|sample| sample.name() == stem),
            "{} is no sample's context: remove it",
            path.display()
        );
    }
}

#[test]
fn the_rules_catch_what_they_claim_to() {
    assert!(violations("fine\n").is_empty());
    assert_eq!(violations("a\tb").len(), 1);
    assert_eq!(violations("x ").len(), 1);
    assert_eq!(violations("\u{b1}1.0").len(), 1);
    assert_eq!(violations(&"x".repeat(81)).len(), 1);
    assert!(violations(&"x".repeat(80)).is_empty());
}
