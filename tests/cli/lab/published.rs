//! The lab's regression on the published site: the lab of this module's
//! parent confirms and bisects the step at commit K with its real
//! processes (`track`, two `worker`s); then `publish` writes the
//! regressions page, its Atom feed (validated with xmllint against the
//! RELAX NG schema of `tests/data/atom.rng`, written from RFC 4287), the
//! index with each configuration's latest value, sparkline and open
//! regression, and the testbed's page, all loaded in chromium.

use super::*;
use crate::publish::{assert_self_contained, chromium, pages, run_chromium};

/// The page `name` of `pages`.
fn page<'a>(pages: &'a [(String, String)], name: &str) -> &'a str {
    &pages
        .iter()
        .find(|(file, _)| file == name)
        .unwrap_or_else(|| panic!("no page {name}"))
        .1
}

/// The text of every `<tag>` element of `xml`, in order.
fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    xml.split(&open)
        .skip(1)
        .map(|rest| &rest[..rest.find(&close).expect("a closed element")])
        .collect()
}

/// Checks the feed: well-formed and valid against the schema (xmllint),
/// the elements a reader needs, and the entry of the regression.
fn check_feed(feed_path: &Path, feed: &str, culprit: &str) {
    assert!(feed.starts_with(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">"
    ));
    assert!(feed.is_ascii());
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/atom.rng");
    match Command::new("xmllint")
        .arg("--noout")
        .arg("--relaxng")
        .arg(&schema)
        .arg(feed_path)
        .output()
    {
        Ok(output) => assert!(
            output.status.success(),
            "{}\n{feed}",
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(_) => test_fixtures::skip::skip(
            "the feed's validation: xmllint is not installed (apt-get install libxml2-utils)",
        ),
    }
    let (head, _) = feed.split_once("<entry>").expect("an entry");
    assert_eq!(elements(head, "id").len(), 1, "{feed}");
    assert!(
        head.contains(
            "<link rel=\"self\" type=\"application/atom+xml\" href=\"regressions.atom\"/>"
        )
    );
    let ids = elements(feed, "id");
    assert_eq!(ids.len(), 2, "the feed's and one entry's: {feed}");
    assert!(
        ids.iter()
            .all(|id| id.starts_with("tag:netbisect.invalid,20"))
    );
    assert!(ids[1].contains(&format!("..{}", lab_bad(feed))), "{feed}");
    let entry = feed.split("<entry>").nth(1).unwrap();
    assert!(
        entry.contains(
            "<link rel=\"alternate\" type=\"text/html\" href=\"regressions.html#regression-"
        ),
        "{entry}"
    );
    let title = elements(entry, "title")[0];
    assert!(
        title.contains("bisected") && title.contains(&format!("culprit {}", &culprit[..12])),
        "{title}"
    );
    assert!(title.contains(&format!("commit {STEP_AT}")), "{title}");
    assert_eq!(elements(entry, "updated").len(), 1);
}

/// The bad commit named in the feed's entry id.
fn lab_bad(feed: &str) -> &str {
    let id = elements(feed, "id")[1];
    &id[id.rfind("..").unwrap() + 2..]
}

#[test]
fn a_regression_the_lab_bisected_is_on_the_site_and_its_feed() {
    let mut lab = Lab::new(None);
    for worker in WORKERS {
        lab.start_worker(worker);
    }
    lab.start_tracker();
    land_until_confirmed(&lab);
    check_report(&lab);
    // The lab stops: the archive no longer changes under the publishes.
    for child in &mut lab.children {
        let _ = child.kill();
        let _ = child.wait();
    }
    let culprit = lab.commits[STEP_AT].to_string();
    let upstream = lab.path("upstream").display().to_string();
    let publish = |site: &str| {
        let output = lab
            .command(&["publish", site, "--repo", &upstream])
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    publish("site");
    let site = lab.path("site");
    let pages = pages(&site);
    for (name, text) in &pages {
        assert_self_contained(name, text);
    }

    // The index: the regressions page and the feed linked, and the
    // configuration's row with its latest value, trend and regression.
    let index = page(&pages, "index.html");
    assert!(
        index.contains("<a href=\"regressions.html\">Regressions</a>: 1 open of 1"),
        "{index}"
    );
    assert!(index.contains("<a href=\"regressions.atom\">Atom feed</a>"));
    assert!(
        index.contains("<h2 id=\"testbed-lab\">Testbed <a href=\"testbed-lab.html\">lab</a></h2>"),
        "{index}"
    );
    assert_eq!(
        index.matches("<svg class=\"sparkline\"").count(),
        1,
        "{index}"
    );
    assert!(
        index.contains("<a href=\"regressions.html#regression-"),
        "{index}"
    );
    assert!(index.contains("10^6bits/s</td>"), "{index}");

    // The regressions page: the state, culprit and subject, the links.
    let regressions = page(&pages, "regressions.html");
    let row = &regressions[regressions.find("<tr id=\"regression-").expect("a row")..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains("<td>bisected</td>"), "{row}");
    assert!(
        row.contains(&format!("<code>{}</code> commit {STEP_AT}", &culprit[..12])),
        "{row}"
    );
    let (config_file, _) = pages
        .iter()
        .find(|(name, _)| name.starts_with("config-"))
        .expect("a configuration page");
    assert!(
        row.contains(&format!("<a href=\"{config_file}\">TCP_STREAM")),
        "{row}"
    );
    assert!(row.contains("<td>lab</td>"), "{row}");
    let bisection = row
        .split("<a href=\"bisect-")
        .nth(1)
        .expect("a bisection link");
    let bisection = format!("bisect-{}", &bisection[..bisection.find('"').unwrap()]);
    assert!(
        pages.iter().any(|(name, _)| *name == bisection),
        "{bisection}"
    );
    assert!(row.contains("<td class=\"num\">-"), "the change: {row}");
    // The good and bad commits link to the pages of their runs.
    let run_pages: Vec<String> = row
        .split("<a href=\"runs-")
        .skip(1)
        .map(|rest| format!("runs-{}", &rest[..rest.find('"').unwrap()]))
        .collect();
    assert_eq!(run_pages.len(), 2, "{row}");
    for file in &run_pages {
        let (_, html) = pages
            .iter()
            .find(|(name, _)| name == file)
            .unwrap_or_else(|| panic!("{file} of the row is not written"));
        assert!(html.contains("netbisect bench"), "{file}: {html}");
    }

    // The testbed's page lists the configuration as the index does.
    let testbed = page(&pages, "testbed-lab.html");
    assert!(testbed.contains(&format!("<a href=\"{config_file}\">TCP_STREAM")));
    assert_eq!(testbed.matches("<svg class=\"sparkline\"").count(), 1);

    check_feed(
        &site.join("regressions.atom"),
        page(&pages, "regressions.atom"),
        &culprit,
    );

    // An unchanged archive gives the same bytes, the feed's too.
    publish("again");
    assert_eq!(crate::publish::pages(&lab.path("again")), pages);

    // In a browser: the new pages load from disk, with their sparklines,
    // and nothing is logged against them.
    let Some(browser) = chromium() else {
        test_fixtures::skip::skip("the browser part: chromium is not installed");
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    for (name, n_svg) in [
        ("index.html", 1),
        ("regressions.html", 0),
        ("testbed-lab.html", 1),
    ] {
        let url = format!("file://{}", site.join(name).display());
        let (dom, stderr) = run_chromium(&browser, profile.path(), &["--dump-dom"], &url);
        assert!(!stderr.contains("Uncaught"), "{stderr}");
        assert_eq!(dom.matches("<svg").count(), n_svg, "{name}: {dom}");
        assert_eq!(dom.matches("<polyline").count(), n_svg, "{name}: {dom}");
        if name == "regressions.html" {
            assert!(dom.contains(&format!("commit {STEP_AT}")), "{dom}");
            assert!(dom.contains(&format!("href=\"{bisection}\"")), "{dom}");
        }
    }
}
