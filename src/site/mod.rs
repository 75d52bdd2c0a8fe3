//! The archive as a static site (`netbisect publish`) and its charts
//! (`history --svg`, `bisect report --svg`): what the commands that draw
//! share, beside `commands/`.
//!
//! - [`chart`]: the one chart, drawn by plotters' SVG backend, with a
//!   hover target and `<title>` over every point.
//! - [`series`]: a history's points with their 95% intervals, as a chart.
//! - [`configs`]: the configurations of an archive and their pages.
//! - [`compare`]: compare pages of two sides.
//! - [`experiments`]: a page per experiment, with the table `compare`
//!   prints for it.
//! - [`bisection`]: a bisection's page from its journal.
//! - [`html`]: escaping and the page every file shares.
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
pub mod html;
pub mod series;

use crate::exit::InputError;
use anyhow::Context;
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

/// What the index links to, beside the configurations.
pub struct IndexLinks<'a> {
    /// The configurations, sorted by testbed.
    pub configs: &'a [configs::ConfigPage],
    /// Compare pages: file and title.
    pub compares: Vec<(&'a str, &'a str)>,
    /// Experiment pages: file and title.
    pub experiments: Vec<(&'a str, &'a str)>,
    /// Bisection pages: file, title and state.
    pub bisections: Vec<(&'a str, &'a str, &'a str)>,
    /// How the charts order their points, in words.
    pub order: String,
}

/// The index page: the testbeds, each with its configurations, then the
/// comparisons, the experiments and the bisections.
pub fn index_page(links: &IndexLinks<'_>) -> String {
    use html::{Cell, escape, table};
    use std::fmt::Write as _;
    let n_runs: usize = links.configs.iter().map(|config| config.n_runs).sum();
    let mut testbeds: BTreeMap<&str, Vec<&configs::ConfigPage>> = BTreeMap::new();
    for config in links.configs {
        testbeds.entry(&config.testbed).or_default().push(config);
    }
    let mut body = String::from("<h1>netbisect archive</h1>\n");
    let _ = writeln!(
        body,
        "<p>{n_runs} run{} in {} test configuration{} on {} testbed{}; charts show \
         each configuration's primary metric across {}.</p>",
        if n_runs == 1 { "" } else { "s" },
        links.configs.len(),
        if links.configs.len() == 1 { "" } else { "s" },
        testbeds.len(),
        if testbeds.len() == 1 { "" } else { "s" },
        escape(&links.order)
    );
    for (testbed, configs) in &testbeds {
        let _ = writeln!(body, "<h2>Testbed {}</h2>", escape(testbed));
        let rows: Vec<(Option<&str>, Vec<Cell>)> = configs
            .iter()
            .map(|config| {
                (
                    (config.n_change_points > 0).then_some("change"),
                    vec![
                        Cell::Text(format!(
                            "<a href=\"{}\">{}</a>",
                            escape(&config.file),
                            escape(&config.title)
                        )),
                        Cell::Num(config.n_runs.to_string()),
                        Cell::Num(config.n_points.to_string()),
                        Cell::Num(config.n_change_points.to_string()),
                        Cell::Text(escape(&config.last_run)),
                    ],
                )
            })
            .collect();
        body.push_str(&table(
            &[
                "configuration",
                "runs",
                "points",
                "change points",
                "last run",
            ],
            &rows,
        ));
    }
    link_list(&mut body, "Comparisons", &links.compares);
    link_list(&mut body, "Experiments", &links.experiments);
    if !links.bisections.is_empty() {
        body.push_str("<h2>Bisections</h2>\n<ul>\n");
        for (file, title, state) in &links.bisections {
            let _ = writeln!(
                body,
                "<li><a href=\"{}\">{}</a>: {}</li>",
                escape(file),
                escape(title),
                escape(state)
            );
        }
        body.push_str("</ul>\n");
    }
    html::page("netbisect archive", &body)
}

/// A heading and a list of links to pages (file, title), when there are
/// any.
fn link_list(body: &mut String, heading: &str, links: &[(&str, &str)]) {
    use html::escape;
    use std::fmt::Write as _;
    if links.is_empty() {
        return;
    }
    let _ = writeln!(body, "<h2>{heading}</h2>\n<ul>");
    for (file, title) in links {
        let _ = writeln!(
            body,
            "<li><a href=\"{}\">{}</a></li>",
            escape(file),
            escape(title)
        );
    }
    body.push_str("</ul>\n");
}

/// Writes one file whole: into a temporary file beside it, then renamed
/// over it, so a reader never sees a cut chart. A directory that cannot
/// be written is a runtime failure; a path that is a directory is an
/// input error.
pub fn write_file(path: &Path, contents: &str) -> anyhow::Result<()> {
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
pub fn write_site(site: &Site, dir: &Path) -> anyhow::Result<()> {
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
}
