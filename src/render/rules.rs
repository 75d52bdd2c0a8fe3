//! The rules every built-in template obeys, checked over sample data:
//! ASCII only, no tabs, no trailing spaces, at most 80 columns. Each
//! template has sample contexts in `tests/data/template-samples/`, named
//! `TEMPLATE--CASE.json` (representative data, long names, extreme
//! numbers); the rendered text of each is pinned with an insta snapshot.

use super::{BUILTIN, Renderer};
use std::path::PathBuf;

/// Widest line a rendered table may have.
const MAX_COLUMNS: usize = 80;

fn samples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/template-samples")
}

/// Every sample as (template name, case name, data).
fn samples() -> Vec<(String, String, serde_json::Value)> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(samples_dir()).expect("sample directory exists");
    for entry in entries {
        let path = entry.expect("readable entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let Some((template, case)) = stem.split_once("--") else {
            panic!("sample {stem} is not named TEMPLATE--CASE.json");
        };
        let text = std::fs::read_to_string(&path).expect("readable sample");
        let data = serde_json::from_str(&text).expect("sample is JSON");
        found.push((template.to_string(), case.to_string(), data));
    }
    found.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    found
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
    let samples = samples();
    for (name, _) in BUILTIN {
        assert!(
            samples.iter().any(|(template, _, _)| template == name),
            "template {name} has no sample in tests/data/template-samples"
        );
    }
}

#[test]
fn builtin_templates_obey_the_mailing_list_rules() {
    let mut renderer = Renderer::new(None);
    for (template, case, data) in samples() {
        let text = renderer
            .render(&template, &data)
            .unwrap_or_else(|err| panic!("{template}--{case}: {err}"));
        let problems = violations(&text);
        assert!(
            problems.is_empty(),
            "{template}--{case}:\n{}\n{text}",
            problems.join("\n")
        );
        insta::assert_snapshot!(format!("{template}--{case}"), text);
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
