//! The regressions page as an Atom feed (RFC 4287), `regressions.atom`:
//! an entry per regression, newest first, known to a reader by its
//! `tag:` id (see [`super::regressions`]) and dated by when it last
//! changed, so that a reader shows a regression once and again only
//! when it moves on (bisected, fixed).
//!
//! What makes it a feed a reader accepts: the feed's `id`, `title`,
//! `updated` and `author`, and each entry's `id`, `title`, `updated`,
//! a `link` to its page and a `summary`; dates in RFC 3339 (UTC). Its
//! links are relative (to the feed's own address), as the site's are,
//! so that it reads the same wherever the site is put. Like every page
//! it carries no time of its own writing: an unchanged archive gives
//! the same bytes. Its template, `templates/site/regressions.atom`, is
//! escaped as the pages are (the five XML characters and everything
//! beyond ASCII as entities).

use super::regressions::{RegressionEntry, TAG_AUTHORITY, state_words};
use crate::exit;
use archive::lab::{Track, time_of_us};
use serde::Serialize;

/// File name of the feed.
pub const FEED: &str = "regressions.atom";

/// An entry of the feed.
#[derive(Serialize)]
struct EntryView<'a> {
    tag: &'a str,
    title: &'a str,
    updated: &'a str,
    published: &'a str,
    link: String,
    summary: String,
}

/// The context of `templates/site/regressions.atom`.
#[derive(Serialize)]
struct FeedView<'a> {
    id: String,
    updated: &'a str,
    page: &'a str,
    feed: &'a str,
    entries: Vec<EntryView<'a>>,
}

/// The feed's own id: its lab's first track (the oldest, which stays
/// while the lab does), so that every publish of the lab's archive
/// gives the same one; a constant before any branch is tracked.
fn feed_id(tracks: &[Track]) -> String {
    match tracks
        .iter()
        .min_by(|a, b| (a.created_us, &a.key).cmp(&(b.created_us, &b.key)))
    {
        Some(track) => {
            let created = time_of_us(track.created_us);
            let day = created.get(..10).unwrap_or("2000-01-01");
            format!("tag:{TAG_AUTHORITY},{day}:regressions/{}", track.key)
        }
        None => format!("tag:{TAG_AUTHORITY},2026-01-01:regressions"),
    }
}

/// What the entry of `entry` says beside its title, plain text.
fn summary_of(entry: &RegressionEntry) -> String {
    let mut summary = format!("{}: {}", entry.config_title, state_words(entry.state));
    if let Some(change) = &entry.change {
        summary.push_str(&format!("; change {change}"));
        if let Some(interval) = &entry.interval {
            summary.push_str(&format!(" ({interval})"));
        }
    }
    summary.push_str(&format!("; good {}, bad {}", entry.good, entry.bad));
    if let Some(culprit) = &entry.culprit {
        summary.push_str(&format!("; culprit {}", culprit.id));
        if let Some(subject) = &culprit.subject {
            summary.push_str(&format!(" ({subject})"));
        }
    }
    if let Some(fixed_by) = &entry.fixed_by {
        summary.push_str(&format!("; fixed at {fixed_by}"));
    }
    summary.push('.');
    summary
}

/// The feed of `entries` (newest first), of the lab whose `tracks` they
/// were found on; `fallback_updated` dates a feed without an entry (the
/// archive's newest run).
pub fn feed(
    entries: &[RegressionEntry],
    tracks: &[Track],
    fallback_updated: &str,
) -> exit::Result<String> {
    let updated = entries
        .iter()
        .map(|entry| entry.updated.as_str())
        .max()
        .unwrap_or(fallback_updated);
    let view = FeedView {
        id: feed_id(tracks),
        updated,
        page: super::regressions::PAGE,
        feed: FEED,
        entries: entries
            .iter()
            .map(|entry| EntryView {
                tag: &entry.tag,
                title: &entry.headline,
                updated: &entry.updated,
                published: &entry.opened,
                link: format!("{}#{}", super::regressions::PAGE, entry.anchor()),
                summary: summary_of(entry),
            })
            .collect(),
    };
    super::render_page("site/regressions.atom", &view)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::regressions::Culprit;
    use archive::lab::RegressionState;

    #[test]
    fn the_feed_escapes_free_text_and_dates_itself_by_its_newest_entry() {
        let hostile = "<b>x</b> & \"'\u{e9}]]>";
        let entry = |id: i64, updated: &str| RegressionEntry {
            id,
            state: RegressionState::Bisected,
            headline: hostile.to_string(),
            config_file: None,
            config_title: hostile.to_string(),
            testbed: hostile.to_string(),
            change: Some("-9.9%".to_string()),
            interval: None,
            good: "g".to_string(),
            bad: "b".to_string(),
            good_file: None,
            bad_file: None,
            culprit: Some(Culprit {
                id: "c".to_string(),
                subject: Some(hostile.to_string()),
            }),
            fixed_by: None,
            bisection_file: None,
            tag: format!("tag:netbisect.invalid,2026-12-04:regression/t/g..b{id}"),
            opened: "2026-12-04T10:00:00.000000Z".to_string(),
            updated: updated.to_string(),
            opened_shown: String::new(),
        };
        let entries = [
            entry(2, "2026-12-05T10:00:00.000000Z"),
            entry(1, "2026-12-06T10:00:00.000000Z"),
        ];
        let xml = feed(&entries, &[], "2000-01-01T00:00:00Z").unwrap();
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed "));
        assert!(xml.is_ascii());
        assert!(!xml.contains("<b>") && !xml.contains("]]>"), "{xml}");
        assert!(xml.contains("&lt;b&gt;x&lt;/b&gt; &amp; &quot;&#39;&#233;]]&gt;"));
        // The feed's own time, before its entries', is its newest entry's.
        let updated = crate::site::page_text::inner_of(&xml, "updated");
        assert_eq!(updated.first(), Some(&"2026-12-06T10:00:00.000000Z"));
        assert_eq!(crate::site::page_text::inner_of(&xml, "entry").len(), 2);
        assert!(xml.contains("href=\"regressions.html#regression-2\""));

        let empty = feed(&[], &[], "2026-01-02T03:04:05.000000Z").unwrap();
        assert_eq!(
            crate::site::page_text::inner_of(&empty, "id"),
            ["tag:netbisect.invalid,2026-01-01:regressions"]
        );
        assert_eq!(
            crate::site::page_text::inner_of(&empty, "updated"),
            ["2026-01-02T03:04:05.000000Z"]
        );
        assert!(crate::site::page_text::inner_of(&empty, "entry").is_empty());
    }
}
