//! `netbisect publish DIR`: the archive as a static site (see
//! [`crate::site`]): an index of testbeds and configurations, a page per
//! configuration with the chart of its primary metric across commits
//! (`--repo`) or time, a page per `--compare A..B`, a page per experiment
//! (`ab`) with the table `compare` prints for it, a page per bisection
//! in the archive's session store, a page per testbed, and the
//! regressions the lab's trackers confirmed, as a page and an Atom feed.
//!
//! An empty archive and a DIR that is a file are input errors (2); a DIR
//! that cannot be written is a runtime failure (3).

use crate::cli::PublishArgs;
use crate::commits::commits_of;
use crate::exit::{self, Code, Context, InputError};
use crate::global_options::GlobalOptions;
use crate::site::{self, BisectionLink, IndexLinks, PageLink, Site};
use crate::store::open_archive_read;
use archive::RunQuery;
use std::collections::BTreeSet;

pub fn run(global: &GlobalOptions, args: &PublishArgs) -> exit::Result<Code> {
    // Every --compare is read before the archive is.
    for given in &args.compare {
        site::compare::parse_sides(given)?;
    }
    if args.dir.exists() && !args.dir.is_dir() {
        return Err(InputError(format!(
            "{} exists and is not a directory: publish writes a directory of pages",
            args.dir.display()
        ))
        .into());
    }
    let archive = open_archive_read(global)?;
    let runs = archive
        .runs(&RunQuery::default())
        .context("failed to read the archive")?;
    if runs.is_empty() {
        return Err(InputError(format!(
            "the archive {} holds no run: there is nothing to publish",
            archive.location()
        ))
        .into());
    }
    let commits = match &args.repo {
        Some(path) => {
            let range = args.range.as_deref().unwrap_or("HEAD");
            Some(commits_of(path, range, args.first_parent)?)
        }
        None => None,
    };
    let configs = site::configs::config_pages(&archive, &runs, commits.as_deref())?;
    let mut compares = Vec::new();
    for (idx, given) in args.compare.iter().enumerate() {
        compares.push(site::compare::compare_page(&archive, given, idx + 1)?);
    }
    let experiments = site::experiments::experiment_pages(global, &archive)?;
    let mut bisections = Vec::new();
    for session in archive.sessions().context("failed to read the archive")? {
        bisections.push(site::bisection::bisection_page(&archive, &session, None)?);
    }

    let bisection_files: BTreeSet<String> =
        bisections.iter().map(|page| page.file.clone()).collect();
    let (regressions, tracks) = site::regressions::regressions(
        &archive,
        &site::regressions::Sources {
            configs: &configs,
            bisection_files: &bisection_files,
            repo: args.repo.as_deref(),
        },
    )?;
    let testbeds = site::testbeds::testbed_groups(&configs, &regressions);
    // A feed without an entry is as new as the archive's newest run.
    let newest_run = configs
        .iter()
        .map(|config| config.last_run.as_str())
        .max()
        .unwrap_or_default();

    let mut site = Site::default();
    for (file, html) in site::testbeds::testbed_pages(&testbeds)? {
        site.pages.insert(file, html);
    }
    site.pages.insert(
        site::regressions::PAGE.to_string(),
        site::regressions::regressions_page(&regressions, site::feed::FEED)?,
    );
    site.pages.insert(
        site::feed::FEED.to_string(),
        site::feed::feed(&regressions, &tracks, newest_run)?,
    );
    let index = site::index_page(&IndexLinks {
        configs: &configs,
        testbeds: &testbeds,
        regressions: &regressions,
        compares: compares
            .iter()
            .map(|page| PageLink {
                file: &page.file,
                title: &page.title,
            })
            .collect(),
        experiments: experiments
            .iter()
            .map(|page| PageLink {
                file: &page.file,
                title: &page.title,
            })
            .collect(),
        bisections: bisections
            .iter()
            .map(|page| BisectionLink {
                file: &page.file,
                title: &page.title,
                state: &page.state,
            })
            .collect(),
        in_git_order: commits.is_some(),
    })?;
    for config in configs {
        site.pages.insert(config.file, config.html);
    }
    for page in compares {
        site.pages.insert(page.file, page.html);
    }
    for page in experiments {
        site.pages.insert(page.file, page.html);
    }
    for page in bisections {
        site.pages.insert(page.file, page.html);
    }
    site.pages.insert(site::INDEX.to_string(), index);
    // Every file is a page but the feed.
    let n_pages = site.pages.len() - 1;
    site::write_site(&site, &args.dir)?;
    if !global.quiet() {
        eprintln!(
            "netbisect: wrote {n_pages} pages and a feed to {} (open {})",
            args.dir.display(),
            args.dir.join(site::INDEX).display()
        );
    }
    Ok(Code::Ok)
}
