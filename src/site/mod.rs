//! The archive as a static site (`netbisect publish`) and its charts
//! (`history --svg`, `bisect report --svg`): what the commands that draw
//! share, beside `commands/`.
//!
//! - [`chart`]: the one chart, drawn by plotters' SVG backend, with a
//!   hover target and `<title>` over every point.
//! - [`series`]: a history's points with their 95% intervals, as a chart.
//! - [`configs`]: the configurations of an archive and their pages.
//! - [`runs`]: the page of a chart point's runs, which the point links to.
//! - [`compare`]: compare pages of two sides.
//! - [`experiments`]: a page per experiment, with the table `compare`
//!   prints for it.
//! - [`bisection`]: a bisection's page from its journal.
//! - [`regressions`]: the regressions the lab knows, on one page, and
//!   [`feed`], the same as an Atom feed.
//! - [`testbeds`]: the index's table of configurations, per testbed,
//!   with a page per testbed; [`sparkline`], a configuration's trend in
//!   that table.
//!
//! Each page is a template of `templates/site/` (HTML, rendered by
//! [`crate::render::html`]) over a view: a struct of its module that
//! derives `Serialize` and holds what the page shows, figures already
//! formatted, choices as flags. The templates hold the words and the
//! markup; the code holds the arithmetic. A text that a page shares with
//! the index or with a chart's hover (a page's title, a bisection's
//! state and its decisions, a history's change) is made once in code, as
//! plain text, and escaped where it is put.
//!
//! Escaping, where it applies:
//! - Every value a page's template prints is escaped by the environment
//!   (auto-escaping, for every template whose name ends in `.html` or
//!   `.svg`): `<`, `>`, `&`, `"` and `'` become entities, and every
//!   character beyond ASCII its numeric entity, so what they print is
//!   ASCII. This
//!   covers labels, commit ids and subjects, authors, testbed names,
//!   titles, commands, config keys, the table `compare` prints, file
//!   names in links (`href`), and figures.
//! - A chart is put in a page as it is: it is a [`chart::DrawnSvg`], the
//!   one value marked safe, made only by [`chart::series_svg`]. Its tags
//!   are code's, and its text was escaped where it was put: plotters
//!   escapes the caption, axis names, tick labels and marker texts it
//!   writes (its own five entities; it leaves characters beyond ASCII as
//!   they are), and the hover targets come from the auto-escaping
//!   template `templates/site/chart-overlay.svg`.
//! - A template's own text (its words, its markup, what its macros
//!   return) is printed as written.
//!
//! Pages are self-contained: inline SVG and style, no script, no font,
//! no address of any network; the only URL in them is the SVG namespace.
//! The same archive (and repository) gives the same bytes: everything is
//! ordered by keys, and no page carries the time it was written.
//! [`write_site`] writes every page into a temporary directory inside the
//! target, then renames each into place (the index last), so a publish
//! killed half way leaves the old pages or new ones, never a cut one.
//! It holds the target locked meanwhile, so that publishes into one
//! directory take turns, and removes the temporary directories a killed
//! publish left there (its own kind only: `.publish-` and six letters or
//! digits, a directory).

pub mod bisection;
pub mod chart;
pub mod compare;
pub mod configs;
pub mod experiments;
pub mod feed;
#[cfg(test)]
mod page_text;
pub mod regressions;
pub mod runs;
pub mod series;
pub mod sparkline;
pub mod testbeds;

use crate::exit::{self, Context, InputError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The pages of a site, by file name.
#[derive(Debug, Default)]
pub struct Site {
    /// File name (no directory) to contents.
    pub pages: BTreeMap<String, String>,
}

/// Name of the page every other one links back to; written last.
pub const INDEX: &str = "index.html";

/// The page of `template` (a name under `templates/`) over `view`.
fn render_page<T: Serialize>(template: &str, view: &T) -> exit::Result<String> {
    crate::render::html::render(template, view)
        .with_context(|| format!("failed to write the page of {template}"))
}

/// A time in UTC (RFC 3339, as the archive keeps it) as the pages show
/// it: to the minute, `2026-12-04 10:03 UTC`; any other text as it is.
pub fn minute_of(time: &str) -> String {
    let utc = time.len() >= 17 && time.ends_with('Z') && time.get(10..11) == Some("T");
    match (time.get(..10), time.get(11..16)) {
        (Some(day), Some(minute)) if utc => format!("{day} {minute} UTC"),
        _ => time.to_string(),
    }
}

/// Both ends of an interval, formatted, as the pages' tables show it.
#[derive(Serialize)]
struct IntervalView {
    low: String,
    high: String,
}

impl IntervalView {
    /// The interval from `low` to `high`, as the charts' values read.
    fn new(low: f64, high: f64) -> IntervalView {
        IntervalView {
            low: chart::format_value(low),
            high: chart::format_value(high),
        }
    }
}

/// A link to a page from the index.
#[derive(Serialize)]
pub struct PageLink<'a> {
    /// File name of the page.
    pub file: &'a str,
    /// Its title, plain text.
    pub title: &'a str,
}

/// A link to a bisection's page from the index, with how it stands.
#[derive(Serialize)]
pub struct BisectionLink<'a> {
    /// File name of the page.
    pub file: &'a str,
    /// Its title, plain text.
    pub title: &'a str,
    /// How it stands or ended, a few words.
    pub state: &'a str,
}

/// What the index links to, beside the configurations.
pub struct IndexLinks<'a> {
    /// The configurations, sorted by testbed.
    pub configs: &'a [configs::ConfigPage],
    /// The testbeds and their configurations' rows.
    pub testbeds: &'a [testbeds::TestbedGroup<'a>],
    /// The regressions the lab knows, newest first.
    pub regressions: &'a [regressions::RegressionEntry],
    /// Compare pages.
    pub compares: Vec<PageLink<'a>>,
    /// Experiment pages.
    pub experiments: Vec<PageLink<'a>>,
    /// Bisection pages.
    pub bisections: Vec<BisectionLink<'a>>,
    /// Whether the charts put their points in git order (else runs are
    /// in time order).
    pub in_git_order: bool,
}

/// The context of `templates/site/index.html`.
#[derive(Serialize)]
struct IndexView<'a> {
    n_runs: usize,
    n_configs: usize,
    in_git_order: bool,
    testbeds: &'a [testbeds::TestbedGroup<'a>],
    n_regressions: usize,
    n_open_regressions: usize,
    regressions_page: &'a str,
    feed: &'a str,
    compares: &'a [PageLink<'a>],
    experiments: &'a [PageLink<'a>],
    bisections: &'a [BisectionLink<'a>],
}

/// The index page: the testbeds, each with its configurations, the
/// regressions, then the comparisons, the experiments and the
/// bisections.
pub fn index_page(links: &IndexLinks<'_>) -> exit::Result<String> {
    let view = IndexView {
        n_runs: links.configs.iter().map(|config| config.n_runs).sum(),
        n_configs: links.configs.len(),
        in_git_order: links.in_git_order,
        testbeds: links.testbeds,
        n_regressions: links.regressions.len(),
        n_open_regressions: links
            .regressions
            .iter()
            .filter(|regression| regression.is_open())
            .count(),
        regressions_page: regressions::PAGE,
        feed: feed::FEED,
        compares: &links.compares,
        experiments: &links.experiments,
        bisections: &links.bisections,
    };
    render_page("site/index.html", &view)
}

/// Writes one file whole: into a temporary file beside it, then renamed
/// over it, so a reader never sees a cut chart. A directory that cannot
/// be written is a runtime failure; a path that is a directory is an
/// input error.
pub fn write_file(path: &Path, contents: &str) -> exit::Result<()> {
    if path.is_dir() {
        return Err(InputError(format!(
            "{} is a directory: give a file name for the chart",
            path.display()
        ))
        .into());
    }
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut file = tempfile::Builder::new()
        .prefix(".netbisect-")
        .tempfile_in(dir)
        .with_context(|| format!("failed to write in {}", dir.display()))?;
    std::io::Write::write_all(&mut file, contents.as_bytes())
        .with_context(|| format!("failed to write {}", path.display()))?;
    file.persist(path)
        .with_context(|| format!("failed to write {}", path.display()))?;
    Ok(())
}

/// The prefix of the temporary directory a publish writes its pages into.
const STAGING_PREFIX: &str = ".publish-";

/// Random letters and digits after [`STAGING_PREFIX`].
const STAGING_RAND_CHARS: usize = 6;

/// True when `name` is one of a publish's temporary directories.
fn is_staging_name(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .and_then(|name| name.strip_prefix(STAGING_PREFIX))
        .is_some_and(|rest| {
            rest.len() == STAGING_RAND_CHARS
                && rest.bytes().all(|byte| byte.is_ascii_alphanumeric())
        })
}

/// Takes the lock of the target directory, waiting while another publish
/// holds it; released when the returned descriptor is closed, or when
/// the process ends however it ends. `None` where the file system has no
/// such locks: the publish goes on, and leaves leftovers alone.
fn lock_target(dir: &Path) -> Option<std::os::fd::OwnedFd> {
    use rustix::fs::{FlockOperation, Mode, OFlags, flock, open};
    let fd = open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    loop {
        match flock(&fd, FlockOperation::LockExclusive) {
            Ok(()) => return Some(fd),
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
}

/// Removes the temporary directories that publishes killed before they
/// finished left in `dir`; the caller holds `dir`'s lock, so none of them
/// is in use. A link or a file of such a name, and any other name, is
/// left alone; a leftover that cannot be removed is left for next time.
fn remove_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !is_staging_name(&entry.file_name()) {
            continue;
        }
        let path = entry.path();
        let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_dir());
        if is_dir {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Writes `site` into `dir` (created if missing). A `dir` that exists
/// and is not a directory is an input error; one that cannot be written
/// is a runtime failure.
pub fn write_site(site: &Site, dir: &Path) -> exit::Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(InputError(format!(
            "{} exists and is not a directory: publish writes a directory of pages",
            dir.display()
        ))
        .into());
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("failed to create directory {}", dir.display()))?;
    let lock = lock_target(dir);
    if lock.is_some() {
        remove_leftovers(dir);
    }
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .rand_bytes(STAGING_RAND_CHARS)
        .tempdir_in(dir)
        .with_context(|| format!("failed to write in {}", dir.display()))?;
    for (name, contents) in &site.pages {
        let path = staging.path().join(name);
        std::fs::write(&path, contents)
            .with_context(|| format!("failed to write {}", path.display()))?;
    }
    let in_order = site
        .pages
        .keys()
        .filter(|name| name.as_str() != INDEX)
        .chain(site.pages.keys().filter(|name| name.as_str() == INDEX));
    for name in in_order {
        let from = staging.path().join(name);
        let to = dir.join(name);
        std::fs::rename(&from, &to)
            .with_context(|| format!("failed to move {} into place", to.display()))?;
    }
    staging.close().with_context(|| {
        format!(
            "failed to remove the staging directory in {}",
            dir.display()
        )
    })?;
    drop(lock);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn only_a_publish_s_own_directories_are_taken_for_leftovers() {
        assert!(is_staging_name(OsStr::new(".publish-a1B2c3")));
        for name in [
            ".publish-",
            ".publish-a1B2c",
            ".publish-a1B2c3d",
            ".publish-a1B2.3",
            "publish-a1B2c3",
            ".netbisect-a1B2c3",
            "index.html",
        ] {
            assert!(!is_staging_name(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn a_time_in_utc_reads_to_the_minute_and_anything_else_as_it_is() {
        assert_eq!(
            minute_of("2026-12-04T10:03:00.000003Z"),
            "2026-12-04 10:03 UTC"
        );
        assert_eq!(minute_of("2026-12-04T10:03:00Z"), "2026-12-04 10:03 UTC");
        for other in [
            "2026-12-04T10:03:00+02:00",
            "2026-12-04",
            "",
            "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}Z",
        ] {
            assert_eq!(minute_of(other), other);
        }
    }

    #[test]
    fn the_index_escapes_every_free_text_and_stays_ascii() {
        let hostile = "<script>x</script> & \"'\u{e9}";
        let configs = [configs::ConfigPage {
            file: "config-\"onload.html".to_string(),
            testbed: hostile.to_string(),
            title: hostile.to_string(),
            n_runs: 1,
            n_points: 1,
            n_change_points: 1,
            last_run: hostile.to_string(),
            config_keys: Vec::new(),
            trend: vec![1.0],
            latest: Some(hostile.to_string()),
            html: String::new(),
            point_pages: Vec::new(),
        }];
        let testbeds = testbeds::testbed_groups(&configs, &[]);
        let html = index_page(&IndexLinks {
            configs: &configs,
            testbeds: &testbeds,
            regressions: &[],
            compares: vec![PageLink {
                file: "compare-1.html",
                title: hostile,
            }],
            experiments: Vec::new(),
            bisections: vec![BisectionLink {
                file: "bisect-1.html",
                title: hostile,
                state: hostile,
            }],
            in_git_order: false,
        })
        .unwrap();
        let escaped = "&lt;script&gt;x&lt;/script&gt; &amp; &quot;&#39;&#233;";
        // The testbed, the title, the last run, the latest value (in its
        // cell and the sparkline's label and title), the compare page,
        // the bisection and its state.
        assert_eq!(html.matches(escaped).count(), 9, "{html}");
        let anchor = testbeds::anchor_of(hostile);
        let headings = page_text::inner_of(&html, "h2");
        // The testbed's heading, its anchor and the link to its page.
        assert!(html.contains(&format!("id=\"{anchor}\"")), "{html}");
        assert!(
            headings.iter().any(|heading| {
                heading.contains(&format!("href=\"{anchor}.html\""))
                    && page_text::text_of(heading).starts_with("Testbed ")
            }),
            "{html}"
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(
            html.contains("href=\"config-&quot;onload.html\">"),
            "{html}"
        );
        assert!(html.contains("1 run in 1 test configuration on 1 testbed;"));
        assert!(headings.contains(&"Comparisons") && !html.contains("Experiments"));
        assert!(html.is_ascii());
    }
}
