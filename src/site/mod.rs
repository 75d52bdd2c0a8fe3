//! The archive as a static site (`netbisect publish`) and its charts
//! (`history --svg`, `bisect report --svg`): what the commands that draw
//! share, beside `commands/`.
//!
//! - [`chart`]: the one chart, drawn by plotters' SVG backend, with a
//!   hover target and `<title>` over every point.
//! - [`series`]: a history's points with their 95% intervals, as a chart.
//! - [`configs`]: the configurations of an archive and their pages.
//! - [`compare`]: compare pages of two sides.
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

pub mod bisection;
pub mod chart;
pub mod compare;
pub mod configs;
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
    /// Bisection pages: file, title and state.
    pub bisections: Vec<(&'a str, &'a str, &'a str)>,
    /// How the charts order their points, in words.
    pub order: String,
}

/// The index page: the testbeds, each with its configurations, then the
/// comparisons and the bisections.
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
    if !links.compares.is_empty() {
        body.push_str("<h2>Comparisons</h2>\n<ul>\n");
        for (file, title) in &links.compares {
            let _ = writeln!(
                body,
                "<li><a href=\"{}\">{}</a></li>",
                escape(file),
                escape(title)
            );
        }
        body.push_str("</ul>\n");
    }
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
    let staging = tempfile::Builder::new()
        .prefix(".publish-")
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
    })
}
