//! The regressions the lab knows, across every configuration and testbed
//! (`regressions.html`, and its feed, [`super::feed`]): each regression
//! the trackers confirmed (the archive's lab tables, as `netbisect
//! regressions` lists them, without the suspicions), with where it stands, the configuration
//! and testbed it was found on, the size of its change, its culprit
//! and the culprit's subject once bisected, and links to the
//! configuration's chart and to the bisection's page.
//!
//! A regression finds its configuration by the config_key its track
//! compares runs under (the track's description keeps it once a first
//! run told it): the configuration whose runs carry that key. A
//! culprit's subject comes from the repository given to `publish`
//! (`--repo`), else from the tracker's; without either it is left out.
//!
//! Each regression has an id that does not change between publishes,
//! nor between archives that hold the same regression: a `tag:` URI
//! (RFC 4151) made of the day it was confirmed, its track's key and its
//! range, under the authority `netbisect.invalid` (a name reserved so
//! that it is no one's, RFC 2606: the ids never collide with a real
//! authority's). The feed's readers know an entry by it.

use super::configs::ConfigPage;
use crate::exit::{self, Context};
use archive::Archive;
use archive::lab::{Regression, RegressionState, Track, time_of_us};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// File name of the regressions page.
pub const PAGE: &str = "regressions.html";

/// The authority of the `tag:` ids: reserved, no one's.
pub const TAG_AUTHORITY: &str = "netbisect.invalid";

/// A culprit and its subject.
#[derive(Debug, Serialize)]
pub struct Culprit {
    /// The commit.
    pub id: String,
    /// Its subject, when a repository at hand holds it.
    pub subject: Option<String>,
}

/// A regression as the page and the feed show it.
#[derive(Debug, Serialize)]
pub struct RegressionEntry {
    /// Its id in this archive.
    pub id: i64,
    /// Where it stands.
    pub state: RegressionState,
    /// One line saying what it is and where it stands, plain text: the
    /// feed entry's title.
    pub headline: String,
    /// The page of its configuration, when one of the archive's is.
    pub config_file: Option<String>,
    /// The configuration's title, or the track it was found on.
    pub config_title: String,
    /// The testbed of its configuration's runs, or the pool its jobs
    /// went to when no run tells.
    pub testbed: String,
    /// Its change when confirmed, percent, signed.
    pub change: Option<String>,
    /// The interval on the change, when there is one.
    pub interval: Option<String>,
    /// The last commit measured before the change.
    pub good: String,
    /// The first commit measured after it.
    pub bad: String,
    /// The pages of the runs of `good` and `bad` in the configuration's
    /// chart, where it has them.
    pub good_file: Option<String>,
    pub bad_file: Option<String>,
    /// The culprit, once bisected.
    pub culprit: Option<Culprit>,
    /// The commit at which the metric was found back.
    pub fixed_by: Option<String>,
    /// The page of its bisection, once one started.
    pub bisection_file: Option<String>,
    /// Its `tag:` id.
    pub tag: String,
    /// When it was confirmed, RFC 3339.
    pub opened: String,
    /// When it last changed, RFC 3339.
    pub updated: String,
    /// When it was confirmed, to the minute, as the page shows it.
    pub opened_shown: String,
}

impl RegressionEntry {
    /// True while it stands: confirmed and not fixed, its bisection to
    /// start, running or done.
    pub fn is_open(&self) -> bool {
        matches!(
            self.state,
            RegressionState::Open | RegressionState::Bisecting | RegressionState::Bisected
        )
    }

    /// Its anchor on the regressions page.
    pub fn anchor(&self) -> String {
        format!("regression-{}", self.id)
    }
}

/// The words of a state.
pub fn state_words(state: RegressionState) -> &'static str {
    match state {
        RegressionState::Suspected => "suspected",
        RegressionState::Open => "open",
        RegressionState::Bisecting => "bisecting",
        RegressionState::Bisected => "bisected",
        RegressionState::Refused => "refused",
        RegressionState::Fixed => "fixed",
        RegressionState::Dismissed => "dismissed",
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// The change a regression's detection found, percent, signed, and its
/// interval: the confirmation's difference, else the suspicion's size
/// alone.
fn change_of(detail: &str) -> (Option<String>, Option<String>) {
    let detail: serde_json::Value = serde_json::from_str(detail).unwrap_or_default();
    let difference = &detail["difference"];
    if let Some(pct) = difference["diff_pct"].as_f64() {
        let interval = match (
            difference["ci_low_pct"].as_f64(),
            difference["ci_high_pct"].as_f64(),
            difference["level_pct"].as_f64(),
        ) {
            (Some(low), Some(high), Some(level)) => {
                Some(format!("{level:.0}% interval {low:+.1}% to {high:+.1}%"))
            }
            _ => None,
        };
        return (Some(format!("{pct:+.1}%")), interval);
    }
    let pct = detail["suspicion"]["change_pct"]
        .as_f64()
        .map(|pct| format!("{pct:+.1}%"));
    (pct, None)
}

/// The subject of `commit` in the first of `repos` that holds it.
fn subject_of(repos: &[PathBuf], commit: &str) -> Option<String> {
    repos.iter().find_map(|path| {
        let repo = bisect::range::discover(path).ok()?;
        let oid = bisect::range::resolve(&repo, commit).ok()?;
        Some(bisect::range::commit_info(&repo, oid).ok()?.subject)
    })
}

/// The `tag:` id of a regression: the day it was confirmed, its track
/// and its range, none of which changes.
fn tag_of(regression: &Regression) -> String {
    let opened = time_of_us(regression.opened_us);
    let day = opened.get(..10).unwrap_or("2000-01-01");
    format!(
        "tag:{TAG_AUTHORITY},{day}:regression/{}/{}..{}",
        regression.track, regression.good, regression.bad
    )
}

/// The plain-text line of a regression.
fn headline(entry: &RegressionEntry) -> String {
    let mut line = format!(
        "Regression {} {}: {}",
        entry.id,
        state_words(entry.state),
        entry.config_title
    );
    if let Some(change) = &entry.change {
        line.push_str(&format!(", {change}"));
    }
    match (&entry.culprit, &entry.fixed_by) {
        (_, Some(fixed_by)) => line.push_str(&format!(", fixed at {}", short(fixed_by))),
        (Some(culprit), None) => {
            line.push_str(&format!(", culprit {}", short(&culprit.id)));
            if let Some(subject) = &culprit.subject {
                line.push_str(&format!(" ({subject})"));
            }
        }
        (None, None) => line.push_str(&format!(
            ", between {} and {}",
            short(&entry.good),
            short(&entry.bad)
        )),
    }
    line
}

/// Where the archive's regressions are put in context.
pub struct Sources<'a> {
    /// The configurations and their pages.
    pub configs: &'a [ConfigPage],
    /// File names of the bisection pages written.
    pub bisection_files: &'a BTreeSet<String>,
    /// The repository given to `publish`, if any.
    pub repo: Option<&'a Path>,
}

/// Every regression of the archive that measuring again confirmed,
/// newest first, with the tracks they were found on.
pub fn regressions(
    archive: &Archive,
    sources: &Sources<'_>,
) -> exit::Result<(Vec<RegressionEntry>, Vec<Track>)> {
    let tracks = archive
        .tracks()
        .context("failed to read the lab's tracks")?;
    let mut found = archive
        .regressions(None)
        .context("failed to read the lab's regressions")?;
    // A suspicion is not a regression until measuring again confirms
    // it, and a dismissed one never was.
    found.retain(|regression| {
        !matches!(
            regression.state,
            RegressionState::Suspected | RegressionState::Dismissed
        )
    });
    found.sort_by_key(|regression| std::cmp::Reverse(regression.id));
    let entries = found
        .iter()
        .map(|regression| entry_of(regression, &tracks, sources))
        .collect();
    Ok((entries, tracks))
}

fn entry_of(regression: &Regression, tracks: &[Track], sources: &Sources<'_>) -> RegressionEntry {
    let spec: serde_json::Value = tracks
        .iter()
        .find(|track| track.key == regression.track)
        .and_then(|track| serde_json::from_str(&track.spec).ok())
        .unwrap_or_default();
    let config = spec["config_key"].as_str().and_then(|key| {
        sources
            .configs
            .iter()
            .find(|config| config.config_keys.iter().any(|known| known == key))
    });
    let pool = spec["pool"].as_str().unwrap_or("?");
    let repos: Vec<PathBuf> = sources
        .repo
        .map(Path::to_path_buf)
        .into_iter()
        .chain(spec["repo"].as_str().map(PathBuf::from))
        .collect();
    let bisection_file = regression
        .session_id
        .map(|id| format!("bisect-{id}.html"))
        .filter(|file| sources.bisection_files.contains(file));
    let (change, interval) = change_of(&regression.detail);
    let opened = time_of_us(regression.opened_us);
    let mut entry = RegressionEntry {
        id: regression.id,
        state: regression.state,
        headline: String::new(),
        config_file: config.map(|config| config.file.clone()),
        config_title: config.map_or_else(
            || format!("track {} on pool {pool}", short(&regression.track)),
            |config| config.title.clone(),
        ),
        testbed: config.map_or_else(|| format!("pool {pool}"), |config| config.testbed.clone()),
        change,
        interval,
        good: regression.good.clone(),
        bad: regression.bad.clone(),
        good_file: config.and_then(|config| point_file_of(config, &regression.good)),
        bad_file: config.and_then(|config| point_file_of(config, &regression.bad)),
        culprit: regression.culprit.as_ref().map(|id| Culprit {
            id: id.clone(),
            subject: subject_of(&repos, id),
        }),
        fixed_by: regression.fixed_by.clone(),
        bisection_file,
        tag: tag_of(regression),
        opened_shown: super::minute_of(&opened),
        opened,
        updated: time_of_us(regression.updated_us),
    };
    entry.headline = headline(&entry);
    entry
}

/// The page of the runs of `commit` in `config`'s chart, when the chart
/// has a point of that commit (see [`super::runs::point_file`]: it ends
/// in the commit's first 12 digits).
fn point_file_of(config: &ConfigPage, commit: &str) -> Option<String> {
    let suffix = format!("-{}.html", commit.get(..12)?);
    config
        .point_pages
        .iter()
        .find(|page| page.file.ends_with(&suffix))
        .map(|page| page.file.clone())
}

/// The context of `templates/site/regressions.html`.
#[derive(Serialize)]
struct RegressionsView<'a> {
    regressions: &'a [RegressionEntry],
    n_open: usize,
    feed: &'a str,
}

/// The regressions page, linking their feed, the file `feed`.
pub fn regressions_page(entries: &[RegressionEntry], feed: &str) -> exit::Result<String> {
    super::render_page(
        "site/regressions.html",
        &RegressionsView {
            regressions: entries,
            n_open: entries.iter().filter(|entry| entry.is_open()).count(),
            feed,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regression(state: RegressionState) -> Regression {
        Regression {
            id: 7,
            track: "ab".repeat(32),
            good: "1".repeat(40),
            bad: "2".repeat(40),
            state,
            detail: r#"{"suspicion":{"change_pct":-11.0},"difference":{"diff_pct":-9.94,"ci_low_pct":-12.0,"ci_high_pct":-8.0,"level_pct":95.0}}"#.to_string(),
            session_id: Some(3),
            culprit: None,
            fixed_by: None,
            driver: None,
            driver_expires_us: None,
            // 2026-12-04T10:00:00Z and a minute later.
            opened_us: 1_796_378_400_000_000,
            updated_us: 1_796_378_460_000_000,
        }
    }

    #[test]
    fn the_tag_is_made_of_what_does_not_change() {
        let open = regression(RegressionState::Open);
        let mut fixed = regression(RegressionState::Fixed);
        fixed.id = 8;
        fixed.updated_us += 1_000_000_000;
        fixed.fixed_by = Some("3".repeat(40));
        let tag = tag_of(&open);
        assert_eq!(tag, tag_of(&fixed));
        assert_eq!(
            tag,
            format!(
                "tag:netbisect.invalid,2026-12-04:regression/{}/{}..{}",
                "ab".repeat(32),
                "1".repeat(40),
                "2".repeat(40)
            )
        );
    }

    #[test]
    fn the_change_is_the_confirmation_s_else_the_suspicion_s() {
        let (change, interval) = change_of(&regression(RegressionState::Open).detail);
        assert_eq!(change.as_deref(), Some("-9.9%"));
        assert_eq!(interval.as_deref(), Some("95% interval -12.0% to -8.0%"));
        let (change, interval) = change_of(r#"{"suspicion":{"change_pct":-11.04}}"#);
        assert_eq!((change.as_deref(), interval), (Some("-11.0%"), None));
        assert_eq!(change_of("not json"), (None, None));
    }

    #[test]
    fn an_entry_finds_its_configuration_by_its_track_s_config_key() {
        let config = ConfigPage {
            file: "config-1.html".to_string(),
            testbed: "lab".to_string(),
            title: "TCP_STREAM (testbed lab)".to_string(),
            n_runs: 2,
            n_points: 2,
            n_change_points: 1,
            last_run: "2026-12-04T10:00:00.000000Z".to_string(),
            config_keys: vec!["k1".to_string()],
            trend: vec![1.0, 0.9],
            latest: Some("0.9 x".to_string()),
            html: String::new(),
            point_pages: Vec::new(),
        };
        let mut bisected = regression(RegressionState::Bisected);
        bisected.culprit = Some("2".repeat(40));
        let track = Track {
            key: bisected.track.clone(),
            spec: r#"{"config_key":"k1","pool":"lab-a","repo":"/nowhere"}"#.to_string(),
            created_us: 0,
            seen_us: 0,
        };
        let files = BTreeSet::from(["bisect-3.html".to_string()]);
        let sources = Sources {
            configs: std::slice::from_ref(&config),
            bisection_files: &files,
            repo: None,
        };
        let entry = entry_of(&bisected, std::slice::from_ref(&track), &sources);
        assert_eq!(entry.config_file.as_deref(), Some("config-1.html"));
        assert_eq!(entry.testbed, "lab");
        assert_eq!(entry.bisection_file.as_deref(), Some("bisect-3.html"));
        assert_eq!(entry.culprit.as_ref().unwrap().subject, None);
        assert_eq!(entry.opened_shown, "2026-12-04 10:00 UTC");
        assert_eq!(
            entry.headline,
            "Regression 7 bisected: TCP_STREAM (testbed lab), -9.9%, culprit 222222222222"
        );
        assert!(entry.is_open());

        // A track that never told its config_key: the pool stands in.
        let unknown = entry_of(&regression(RegressionState::Fixed), &[], &sources);
        assert_eq!(unknown.config_file, None);
        assert_eq!(unknown.testbed, "pool ?");
        assert!(!unknown.is_open());
        assert!(
            unknown
                .headline
                .starts_with("Regression 7 fixed: track abababababab on pool ?")
        );
    }
}
