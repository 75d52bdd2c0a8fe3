//! The testbeds of an archive, as the index lists them and a page each
//! (`testbed-<name>.html`): every configuration of the testbed with its
//! newest value, its trend as a sparkline ([`super::sparkline`]), its
//! open regression if it has one, and its counts. The index and a
//! testbed's page print the same table, the macro of
//! `templates/site/configs-table.html`.
//!
//! A testbed's name is free text: its page's file name and its anchor in
//! the index keep the name's letters, digits, `-`, `_` and `.`, and when
//! that changed the name (or it is empty, or long), add the start of the
//! name's hash, so that two testbeds never share a page.

use super::configs::ConfigPage;
use super::regressions::{RegressionEntry, state_words};
use super::sparkline::{Sparkline, sparkline};
use crate::exit;
use serde::Serialize;
use std::collections::BTreeMap;

/// Longest part of a testbed's name kept in its file name.
const MAX_NAME_CHARS: usize = 40;

/// A configuration's open regression, as its row links it.
#[derive(Serialize)]
pub struct RegressionLink<'a> {
    /// Where it is on the regressions page.
    pub href: String,
    /// Its id.
    pub id: i64,
    /// Its state, a word.
    pub state: &'a str,
    /// Its change, signed percent.
    pub change: Option<&'a str>,
}

/// A configuration's row.
#[derive(Serialize)]
pub struct ConfigRow<'a> {
    file: &'a str,
    title: &'a str,
    n_runs: usize,
    n_points: usize,
    n_change_points: usize,
    last_run: String,
    latest: Option<&'a str>,
    trend: Option<Sparkline>,
    regression: Option<RegressionLink<'a>>,
}

/// A testbed and its configurations.
#[derive(Serialize)]
pub struct TestbedGroup<'a> {
    /// Its name, as its runs give it.
    pub name: &'a str,
    /// Its anchor in the index, and the stem of its page's file name.
    pub anchor: String,
    /// File name of its page.
    pub file: String,
    /// Its configurations, as the index sorts them.
    pub configs: Vec<ConfigRow<'a>>,
}

/// The anchor (and file stem) of testbed `name`: see the module's
/// documentation.
pub fn anchor_of(name: &str) -> String {
    let kept: String = name
        .chars()
        .take(MAX_NAME_CHARS)
        .map(|character| {
            if character.is_ascii_alphanumeric() || matches!(character, '-' | '_' | '.') {
                character
            } else {
                '-'
            }
        })
        .collect();
    if kept == name && !name.is_empty() && !name.starts_with('.') {
        format!("testbed-{kept}")
    } else {
        let hash = run_record::canonical::hash_hex(name.as_bytes());
        format!("testbed-{kept}-{}", &hash[..8])
    }
}

/// The newest open regression of the configuration of page `file`.
fn open_regression<'a>(
    regressions: &'a [RegressionEntry],
    file: &str,
) -> Option<RegressionLink<'a>> {
    // Newest first: the first open one found is the newest.
    let entry = regressions
        .iter()
        .find(|entry| entry.is_open() && entry.config_file.as_deref() == Some(file))?;
    Some(RegressionLink {
        href: format!("{}#{}", super::regressions::PAGE, entry.anchor()),
        id: entry.id,
        state: state_words(entry.state),
        change: entry.change.as_deref(),
    })
}

/// The testbeds of `configs` (sorted by testbed), each with its rows.
pub fn testbed_groups<'a>(
    configs: &'a [ConfigPage],
    regressions: &'a [RegressionEntry],
) -> Vec<TestbedGroup<'a>> {
    let mut groups: BTreeMap<&str, Vec<ConfigRow<'a>>> = BTreeMap::new();
    for config in configs {
        let latest = config.latest.as_deref();
        groups.entry(&config.testbed).or_default().push(ConfigRow {
            file: &config.file,
            title: &config.title,
            n_runs: config.n_runs,
            n_points: config.n_points,
            n_change_points: config.n_change_points,
            last_run: super::minute_of(&config.last_run),
            latest,
            trend: sparkline(&config.trend, latest.unwrap_or("-")),
            regression: open_regression(regressions, &config.file),
        });
    }
    groups
        .into_iter()
        .map(|(name, configs)| {
            let anchor = anchor_of(name);
            TestbedGroup {
                name,
                file: format!("{anchor}.html"),
                anchor,
                configs,
            }
        })
        .collect()
}

/// The context of `templates/site/testbed.html`.
#[derive(Serialize)]
struct TestbedView<'a> {
    testbed: &'a TestbedGroup<'a>,
    n_runs: usize,
}

/// The page of each testbed: file name and page.
pub fn testbed_pages(groups: &[TestbedGroup<'_>]) -> exit::Result<Vec<(String, String)>> {
    groups
        .iter()
        .map(|testbed| {
            let html = super::render_page(
                "site/testbed.html",
                &TestbedView {
                    testbed,
                    n_runs: testbed.configs.iter().map(|config| config.n_runs).sum(),
                },
            )?;
            Ok((testbed.file.clone(), html))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_testbed_s_anchor_keeps_a_plain_name_and_tells_others_apart() {
        assert_eq!(anchor_of("lab-a1.rack_2"), "testbed-lab-a1.rack_2");
        let spaced = anchor_of("lab a");
        assert!(spaced.starts_with("testbed-lab-a-"), "{spaced}");
        assert_ne!(spaced, anchor_of("lab-a"));
        assert_ne!(anchor_of("lab/a"), anchor_of("lab a"));
        for name in ["", ".", "..", "<x>\"'&\u{e9}", &"x".repeat(300)] {
            let anchor = anchor_of(name);
            assert!(
                anchor.len() < 70
                    && anchor
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte)),
                "{anchor}"
            );
        }
    }
}
