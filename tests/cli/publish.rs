//! `netbisect publish`, `history --svg` and `bisect report --svg` end to
//! end: an archive of runs made with RecordBuilder, commit order from a
//! git repository built with git2, a real bisection over loopback, and
//! the pages loaded in a real browser (Debian's chromium, headless).

use crate::compare::{RunOf, around, import, netbisect, stderr_of_failure, stdout_of};
use git2::Oid;
use run_record::spec::TestKind;
use std::path::{Path, PathBuf};
use std::process::Command;
use test_fixtures::git::GitRepo;

/// Ten commits, one run of three iterations each, 10% less throughput
/// from commit 6 on; six TCP_RR runs labelled `old` and `<i>new</i>`.
/// Returns the archive, the repository and the commit ids.
fn site_fixture(dir: &Path) -> (PathBuf, PathBuf, Vec<String>) {
    let repo_dir = dir.join("repo");
    std::fs::create_dir(&repo_dir).unwrap();
    let repo = GitRepo::init(&repo_dir);
    let ids = repo.line(
        None,
        10,
        |idx| vec![("counter", format!("{idx}\n"))],
        |idx| format!("commit {idx}"),
    );
    repo.set_main(ids[9]);
    let commits: Vec<String> = ids.iter().map(Oid::to_string).collect();

    let db = dir.join("archive.db");
    // Start times in an order that is not git order.
    let hours = [9, 4, 7, 0, 8, 2, 5, 1, 6, 3];
    let times: Vec<String> = hours
        .iter()
        .map(|hour| format!("2026-04-01T{hour:02}:00:00Z"))
        .collect();
    let samples: Vec<Vec<f64>> = (0..10)
        .map(|idx| {
            let level = if idx < 6 { 9.4e9 } else { 9.4e9 * 0.9 };
            around(level, 0.003, 3, 100 + idx as u64)
        })
        .collect();
    let mut records: Vec<_> = (0..10)
        .map(|idx| RunOf::stream(&commits[idx], &times[idx], &samples[idx]).record())
        .collect();
    let rr_samples: Vec<Vec<f64>> = (0..6)
        .map(|idx| around(if idx < 3 { 40_000.0 } else { 36_000.0 }, 0.01, 3, idx))
        .collect();
    for (idx, samples) in rr_samples.iter().enumerate() {
        let time = format!("2026-04-02T0{idx}:00:00Z");
        let run = RunOf {
            test: TestKind::TcpRr,
            label: Some(if idx < 3 { "old" } else { "<i>new</i>" }),
            ..RunOf::stream(&commits[9], &time, samples)
        };
        records.push(run.record());
    }
    import(&db, &records);
    (db, repo_dir, commits)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The pages of `dir`, by name.
pub(crate) fn pages(dir: &Path) -> Vec<(String, String)> {
    let mut pages: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            (name, read(&path))
        })
        .collect();
    pages.sort();
    pages
}

/// Every page names no network address: its only URL is the SVG
/// namespace (the feed's, Atom's), and it loads nothing (no src, no
/// stylesheet link; the feed's links are Atom's, to the site's pages).
pub(crate) fn assert_self_contained(name: &str, html: &str) {
    let is_feed = name.ends_with(".atom");
    let namespace = if is_feed {
        "http://www.w3.org/2005/Atom"
    } else {
        "http://www.w3.org/2000/svg"
    };
    let without_namespace = html.replace(namespace, "");
    assert!(
        !without_namespace.contains("http://") && !without_namespace.contains("https://"),
        "{name} names a network address"
    );
    assert!(!html.contains(" src="), "{name} loads something");
    assert!(
        is_feed || !html.contains("<link"),
        "{name} links a resource"
    );
    assert!(html.is_ascii(), "{name} is not ASCII");
}

/// The page of the configuration whose title starts with `test`.
fn config_page<'a>(pages: &'a [(String, String)], test: &str) -> &'a (String, String) {
    pages
        .iter()
        .find(|(name, html)| name.starts_with("config-") && html.contains(&format!("<h1>{test} ")))
        .unwrap_or_else(|| panic!("no page of {test}"))
}

#[test]
fn the_archive_is_published_with_charts_in_git_order_and_the_step_marked() {
    let dir = tempfile::tempdir().unwrap();
    let (db, repo, commits) = site_fixture(dir.path());
    let site = dir.path().join("site");
    let publish = |site: &Path| {
        netbisect_at(&db)
            .arg("publish")
            .arg(site)
            .arg("--repo")
            .arg(&repo)
            .args(["--compare", "old..<i>new</i>"])
            .assert()
            .success();
    };
    publish(&site);
    let pages = pages(&site);
    let names: Vec<&str> = pages.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names.len(), 7, "{names:?}");
    for name in [
        "index.html",
        "compare-1.html",
        "regressions.html",
        "regressions.atom",
        "testbed-lab.html",
    ] {
        assert!(names.contains(&name), "{name}: {names:?}");
    }
    for (name, html) in &pages {
        assert_self_contained(name, html);
    }

    let index = &pages
        .iter()
        .find(|(name, _)| name == "index.html")
        .unwrap()
        .1;
    assert!(index.contains("16 runs in 2 test configurations on 1 testbed"));
    assert!(index.contains("commits in git order"));
    let (stream_name, stream) = config_page(&pages, "TCP_STREAM");
    assert!(index.contains(&format!("<a href=\"{stream_name}\">TCP_STREAM")));

    // One point per commit, in git order, each with its interval and
    // details; the step at commit 6 marked with its change and p value.
    assert_eq!(stream.matches("class=\"point\"").count(), 10);
    let positions: Vec<usize> = commits
        .iter()
        .map(|id| stream.find(&format!("<title>{}", &id[..12])).unwrap())
        .collect();
    assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
    assert!(stream.contains("95% interval"));
    assert_eq!(
        stream.matches("class=\"change\"").count(),
        2,
        "marker and row"
    );
    assert!(stream.contains("change -9.9% (p&lt;0.0001)"), "{stream}");

    // Free text is escaped: the label of a side never becomes a tag.
    let compare = &pages
        .iter()
        .find(|(name, _)| name == "compare-1.html")
        .unwrap()
        .1;
    assert!(compare.contains("&lt;i&gt;new&lt;/i&gt;"));
    assert!(!compare.contains("<i>new</i>"));
    assert_eq!(compare.matches("class=\"point\"").count(), 2);
    assert!(compare.contains("worse"), "{compare}");

    // The same archive gives the same bytes.
    let again = dir.path().join("again");
    publish(&again);
    assert_eq!(self::pages(&again), pages);

    // history --svg draws the same chart.
    let svg = dir.path().join("history.svg");
    netbisect_at(&db)
        .args([
            "history",
            "--metric",
            "throughput_bps",
            "--test",
            "TCP_STREAM",
        ])
        .arg("--repo")
        .arg(&repo)
        .arg("--svg")
        .arg(&svg)
        .assert()
        .success();
    let svg = read(&svg);
    assert!(svg.starts_with("<svg"));
    assert_eq!(svg.matches("class=\"point\"").count(), 10);
    let stderr = stderr_of_failure(
        netbisect(&db)
            .args([
                "history",
                "--metric",
                "throughput_bps",
                "--test",
                "TCP_STREAM",
            ])
            .arg("--svg")
            .arg(dir.path()),
        2,
    );
    assert!(stderr.contains("is a directory"), "{stderr}");
    assert_eq!(svg.matches("class=\"change\"").count(), 1);

    // Without a repository, runs come in time order.
    let timed = dir.path().join("timed");
    netbisect_at(&db)
        .arg("publish")
        .arg(&timed)
        .assert()
        .success();
    let (_, stream) = config_page(&self::pages(&timed), "TCP_STREAM").clone();
    assert!(stream.contains("runs in time order"));
    assert_eq!(stream.matches("class=\"point\"").count(), 10);
}

fn netbisect_at(db: &Path) -> assert_cmd::Command {
    netbisect(db)
}

#[test]
fn bad_input_is_refused_with_the_documented_codes() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    drop(archive::Archive::open(&empty).unwrap());
    let site = dir.path().join("site");
    let stderr = stderr_of_failure(netbisect(&empty).arg("publish").arg(&site), 2);
    assert!(stderr.contains("holds no run"), "{stderr}");
    assert!(!site.exists(), "nothing is written for an empty archive");

    let (db, _, _) = site_fixture(dir.path());
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let stderr = stderr_of_failure(netbisect(&db).arg("publish").arg(&file), 2);
    assert!(stderr.contains("is not a directory"), "{stderr}");
    assert_eq!(read(&file), "not a directory");

    // A directory that cannot be made (below a file) or written.
    let stderr = stderr_of_failure(netbisect(&db).arg("publish").arg(file.join("site")), 3);
    assert!(stderr.contains("failed to create directory"), "{stderr}");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let locked = dir.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        let mut permissions = std::fs::metadata(&locked).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o555);
        std::fs::set_permissions(&locked, permissions).unwrap();
        stderr_of_failure(netbisect(&db).arg("publish").arg(&locked), 3);
    }

    // A bisection whose journal is empty (its start never written) has a
    // page that says so, and breaks nothing else.
    let session = archive::Archive::open(&db)
        .unwrap()
        .start_session("/no/such/repository", "{}")
        .unwrap();
    let started = dir.path().join("with-session");
    netbisect(&db)
        .arg("publish")
        .arg(&started)
        .assert()
        .success();
    let page = read(&started.join(format!("bisect-{}.html", session.id)));
    assert!(page.contains("has not started"), "{page}");

    let stderr = stderr_of_failure(
        netbisect(&db)
            .args(["publish", "--compare", "only-one-side"])
            .arg(&site),
        2,
    );
    assert!(stderr.contains("A..B"), "{stderr}");
    assert!(!site.exists());
}

/// The file names under `dir`, each with what it holds (a directory's
/// entries, a link's target), to see what a publish left alone.
fn entries(dir: &Path) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let held = if meta.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                format!("{:?}", entries(&path))
            } else {
                read(&path)
            };
            (name, held)
        })
        .collect();
    found.sort();
    found
}

/// A publish killed before it finished leaves its temporary directory in
/// DIR, pages in it, one of them cut (planted here as it is left); the
/// next publish removes it and nothing else, and the site it writes is
/// whole. A publish waits while another holds DIR.
#[test]
fn the_next_publish_removes_what_a_killed_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _, _) = site_fixture(dir.path());
    let whole = dir.path().join("whole");
    netbisect_at(&db)
        .arg("publish")
        .arg(&whole)
        .assert()
        .success();

    let site = dir.path().join("site");
    netbisect_at(&db)
        .arg("publish")
        .arg(&site)
        .assert()
        .success();
    let leftover = site.join(".publish-K1lLed");
    std::fs::create_dir(&leftover).unwrap();
    std::fs::write(
        leftover.join("index.html"),
        "<!DOCTYPE html>\n<html><h1>netb",
    )
    .unwrap();
    std::fs::write(
        leftover.join("compare-1.html"),
        read(&whole.join("index.html")),
    )
    .unwrap();
    // What is not a publish's own: other names, a file and a link of its
    // name, and what the link points to.
    let kept = dir.path().join("kept");
    std::fs::create_dir(&kept).unwrap();
    std::fs::write(kept.join("notes.txt"), "mine").unwrap();
    std::fs::create_dir(site.join(".publish-notes")).unwrap();
    std::fs::write(site.join(".publish-notes").join("a"), "mine").unwrap();
    std::fs::write(site.join(".publish-F1le00"), "mine").unwrap();
    std::fs::write(site.join("notes.txt"), "mine").unwrap();
    std::os::unix::fs::symlink(&kept, site.join(".publish-L1nk00")).unwrap();
    let mut expected = entries(&whole);
    for name in [
        ".publish-notes",
        ".publish-F1le00",
        "notes.txt",
        ".publish-L1nk00",
    ] {
        expected.extend(
            entries(&site)
                .into_iter()
                .filter(|(found, _)| found == name),
        );
    }
    expected.sort();

    // Another publish holds DIR: this one waits for it.
    let held = std::fs::File::open(&site).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let mut waiting = std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .env("NETBISECT_ARCHIVE", &db)
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .arg("--quiet")
        .arg("publish")
        .arg(&site)
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(waiting.try_wait().unwrap().is_none(), "it did not wait");
    assert!(
        leftover.exists(),
        "cleaned while another held the directory"
    );
    drop(held);
    assert!(waiting.wait().unwrap().success());

    assert!(!leftover.exists());
    assert_eq!(entries(&site), expected);
    assert_eq!(read(&kept.join("notes.txt")), "mine");
}

/// `text` as the pages escape free text.
fn html_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Two experiments as `ab` leaves them, beside runs of the same labels
/// outside any: `...e1`, one TCP_STREAM configuration over three rounds,
/// A labelled `zeta-base` (so that A is not first in the alphabet), B
/// 10% slower; `...e2`, TCP_STREAM and TCP_RR (`--sweep t=...`) over
/// two rounds, no change. Returns the archive.
fn experiments_fixture(dir: &Path) -> PathBuf {
    use run_record::record::ExperimentTag;
    let commit = "1234567890abcdef1234567890abcdef12345678";
    let mut records = Vec::new();
    let mut add =
        |experiment: Option<&str>, round: u32, label: &str, test, level: f64, at: usize| {
            let time = format!("2026-05-01T{:02}:{:02}:00Z", at / 60, at % 60);
            let samples = around(level, 0.003, 3, at as u64);
            let mut record = RunOf {
                test,
                label: Some(label),
                ..RunOf::stream(commit, &time, &samples)
            }
            .record();
            if let Some(id) = experiment {
                record.experiment = Some(ExperimentTag {
                    id: id.to_string(),
                    round,
                });
                record.seal().unwrap();
            }
            records.push(record);
        };
    let mut at = 0;
    for round in 1..=3 {
        // A B in odd rounds, B A in even ones.
        let order = if round % 2 == 1 {
            [("zeta-base", 9.4e9), ("alpha-fix", 9.4e9 * 0.9)]
        } else {
            [("alpha-fix", 9.4e9 * 0.9), ("zeta-base", 9.4e9)]
        };
        for (label, level) in order {
            add(
                Some("00000000000000e1"),
                round,
                label,
                TestKind::TcpStream,
                level,
                at,
            );
            at += 1;
        }
    }
    for round in 1..=2 {
        for label in ["one", "two"] {
            add(
                Some("00000000000000e2"),
                round,
                label,
                TestKind::TcpStream,
                9.4e9,
                at,
            );
            add(
                Some("00000000000000e2"),
                round,
                label,
                TestKind::TcpRr,
                40_000.0,
                at + 1,
            );
            at += 2;
        }
    }
    // The same labels outside the experiments, 20% slower: left out.
    for label in ["zeta-base", "alpha-fix"] {
        add(None, 0, label, TestKind::TcpStream, 9.4e9 * 0.8, at);
        at += 1;
    }
    let db = dir.join("archive.db");
    import(&db, &records);
    db
}

/// Each experiment has a page, linked from the index, with the table
/// `compare` prints for it (its own runs only, A the side that ran
/// first), and the pages load in a real browser with the table in them.
#[test]
fn each_experiment_has_a_page_with_its_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let db = experiments_fixture(dir.path());
    let site = dir.path().join("site");
    netbisect_at(&db)
        .arg("publish")
        .arg(&site)
        .assert()
        .success();
    let pages = pages(&site);
    let page_of = |name: &str| {
        &pages
            .iter()
            .find(|(found, _)| found == name)
            .unwrap_or_else(|| panic!("no {name} in {pages:?}"))
            .1
    };
    let index = page_of("index.html");
    assert!(index.contains("<h2>Experiments</h2>"), "{index}");
    for (name, html) in &pages {
        assert_self_contained(name, html);
    }

    for (id, args, title) in [
        (
            "00000000000000e1",
            vec!["label:zeta-base", "label:alpha-fix"],
            "Experiment 00000000000000e1: zeta-base against alpha-fix",
        ),
        (
            "00000000000000e2",
            vec!["label:one", "label:two", "--layout", "matrix"],
            "Experiment 00000000000000e2: one against two",
        ),
    ] {
        let file = format!("experiment-{id}.html");
        assert!(
            index.contains(&format!("<a href=\"{file}\">{title}</a>")),
            "{index}"
        );
        let html = page_of(&file);
        let table = stdout_of(
            netbisect(&db)
                .arg("compare")
                .args(&args)
                .args(["--experiment", id]),
        );
        assert!(
            html.contains(&format!(
                "<pre class=\"compare\">{}</pre>",
                html_escaped(&table)
            )),
            "{html}\n{table}"
        );
        assert!(
            html.contains(&html_escaped(&format!(
                "netbisect compare {} --experiment {id}",
                args[..2].join(" ")
            ))),
            "{html}"
        );
    }
    let first = page_of("experiment-00000000000000e1.html");
    assert!(
        first.contains("6 runs in 3 rounds of 1 configuration"),
        "{first}"
    );
    assert!(
        first.contains("3 runs of experiment 00000000000000e1"),
        "{first}"
    );
    assert!(first.contains("-10."), "B's 10% loss: {first}");
    let second = page_of("experiment-00000000000000e2.html");
    assert!(
        second.contains("8 runs in 2 rounds of 2 configurations"),
        "{second}"
    );

    let Some(browser) = chromium() else {
        test_fixtures::skip::skip("the browser part: chromium is not installed");
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let url = |name: &str| format!("file://{}", site.join(name).display());
    let (dom, stderr) = run_chromium(
        &browser,
        profile.path(),
        &["--dump-dom"],
        &url("index.html"),
    );
    assert!(!stderr.contains("Uncaught"), "{stderr}");
    assert!(
        dom.contains("href=\"experiment-00000000000000e1.html\""),
        "{dom}"
    );
    assert!(
        dom.contains("href=\"experiment-00000000000000e2.html\""),
        "{dom}"
    );
    let (dom, stderr) = run_chromium(
        &browser,
        profile.path(),
        &["--dump-dom"],
        &url("experiment-00000000000000e1.html"),
    );
    assert!(!stderr.contains("Uncaught"), "{stderr}");
    let pre_start = dom
        .find("<pre class=\"compare\">")
        .expect("the table in the DOM");
    let pre = &dom[pre_start..dom[pre_start..].find("</pre>").unwrap() + pre_start];
    assert!(
        pre.contains("3 runs of experiment 00000000000000e1"),
        "{pre}"
    );
    assert!(pre.contains("-10."), "{pre}");
}

/// A finished bisection over loopback, published: its page has every
/// commit it measured, its decisions and the culprit; `bisect report
/// --svg` writes the page's chart.
#[test]
fn a_bisection_has_a_page_and_its_report_a_chart() {
    let fixture = crate::bisect::fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = crate::bisect::linear(&repo, 8, 5, &|_| Vec::new());
    let (good, bad) = (ids[0].to_string(), ids[7].to_string());
    let command = crate::bisect::measure_command("");
    fixture.start_measuring(&good, &bad, &command, &[]);
    let (code, _, stderr) = fixture.run(&["bisect", "run"]);
    assert_eq!(code, 0, "{stderr}");

    let svg = fixture.repo.join("bisect.svg");
    let (code, _, stderr) = fixture.run(&["bisect", "report", "--svg", svg.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let svg = read(&svg);
    assert!(svg.starts_with("<svg"));
    assert!(svg.matches("class=\"point\"").count() >= 3);
    assert!(
        svg.contains(&format!("first bad {}", &ids[5].to_string()[..12])),
        "{svg}"
    );

    let site = fixture.repo.join("site");
    let (code, _, stderr) = fixture.run(&["publish", site.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let pages = pages(&site);
    let (_, page) = pages
        .iter()
        .find(|(name, _)| name.starts_with("bisect-"))
        .expect("a bisection page");
    assert_self_contained("the bisection page", page);
    assert!(page.contains("commit, in git order"));
    assert!(page.contains("; the culprit"));
    assert!(page.contains(": new (like bad) after"));
    assert!(page.contains("commit 5"), "subjects from the repository");
    let index = &pages
        .iter()
        .find(|(name, _)| name == "index.html")
        .unwrap()
        .1;
    assert!(index.contains(&format!("first bad {}", &ids[5].to_string()[..12])));
    assert!(page.contains("mean, 10^6bits/s"));

    // Without its repository, the journal alone gives the page: the same
    // commits and decisions, in the order they were measured.
    let parent = fixture.repo.parent().unwrap();
    let moved = parent.join("moved");
    std::fs::rename(&fixture.repo, &moved).unwrap();
    let site = parent.join("site-without-repo");
    crate::netbisect_with(&fixture.archive)
        .current_dir(parent)
        .arg("publish")
        .arg(&site)
        .assert()
        .success();
    let pages_without = self::pages(&site);
    let (_, without) = pages_without
        .iter()
        .find(|(name, _)| name.starts_with("bisect-"))
        .expect("a bisection page");
    assert!(without.contains("could not be opened"));
    assert!(without.contains("commit, in the order measured"));
    assert_eq!(
        without.matches("class=\"point\"").count(),
        page.matches("class=\"point\"").count()
    );
    assert!(without.contains(": new (like bad) after"));
    std::fs::rename(&moved, &fixture.repo).unwrap();
}

/// Where chromium is, when it is installed.
pub(crate) fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

/// Runs headless chromium on `url` with `extra` arguments, in a profile
/// of its own, with no network service it would reach out to; returns
/// stdout and stderr.
pub(crate) fn run_chromium(
    browser: &Path,
    profile: &Path,
    extra: &[&str],
    url: &str,
) -> (String, String) {
    let output = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "chromium failed: {stderr}");
    (String::from_utf8_lossy(&output.stdout).into_owned(), stderr)
}

/// The index, a testbed's page, the regressions page and a history page
/// in a real browser: the sparklines, the charts and their points are in
/// the DOM it built, no script error is logged, and a screenshot of the
/// history page is left in target/ to look at.
#[test]
fn the_pages_load_in_a_real_browser() {
    let Some(browser) = chromium() else {
        test_fixtures::skip::skip("chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (db, repo, _) = site_fixture(dir.path());
    let site = dir.path().join("site");
    netbisect_at(&db)
        .arg("publish")
        .arg(&site)
        .arg("--repo")
        .arg(&repo)
        .assert()
        .success();
    let pages = pages(&site);
    let (stream_name, _) = config_page(&pages, "TCP_STREAM");
    let url = |name: &str| format!("file://{}", site.join(name).display());

    let profile = tempfile::tempdir().unwrap();
    let (dom, stderr) = run_chromium(
        &browser,
        profile.path(),
        &["--dump-dom"],
        &url("index.html"),
    );
    assert!(!stderr.contains("Uncaught"), "{stderr}");
    assert!(dom.contains(&format!("href=\"{stream_name}\"")), "{dom}");
    // The index's only pictures are the sparklines, one per
    // configuration with points, as on the testbed's page; the
    // regressions page (no regression here) has none.
    for name in ["index.html", "testbed-lab.html"] {
        let (dom, stderr) = run_chromium(&browser, profile.path(), &["--dump-dom"], &url(name));
        assert!(!stderr.contains("Uncaught"), "{stderr}");
        assert_eq!(dom.matches("<svg").count(), 2, "{name}: {dom}");
        assert_eq!(
            dom.matches("<svg class=\"sparkline\"").count(),
            2,
            "{name}: {dom}"
        );
        // TCP_RR's runs are all of one commit: one point, no line.
        assert_eq!(dom.matches("<polyline").count(), 1, "{name}: {dom}");
    }
    let (dom, stderr) = run_chromium(
        &browser,
        profile.path(),
        &["--dump-dom"],
        &url("regressions.html"),
    );
    assert!(!stderr.contains("Uncaught"), "{stderr}");
    assert!(!dom.contains("<svg"), "{dom}");
    assert!(dom.contains("No regression is known to the lab"), "{dom}");

    // A chart page has exactly one picture: its chart.
    let (dom, stderr) = run_chromium(&browser, profile.path(), &["--dump-dom"], &url(stream_name));
    assert!(!stderr.contains("Uncaught"), "{stderr}");
    assert_eq!(dom.matches("<svg").count(), 1, "{dom}");
    assert_eq!(dom.matches("class=\"point\"").count(), 10);
    assert_eq!(
        dom.matches("<title>").count(),
        1 + 10 + 1,
        "page, points, change"
    );
    // The hover details, without a script: each point's own <title>.
    for point in dom.split("<circle class=\"point\"").skip(1) {
        let point = &point[..point.find("</circle>").unwrap()];
        let title = &point[point.find("<title>").expect("a point's title")..];
        assert!(
            title.contains("mean ") && title.contains("95% interval") && title.contains("run"),
            "{title}"
        );
    }

    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let screenshot = target.join("site-screenshot.png");
    let _ = std::fs::remove_file(&screenshot);
    let (_, stderr) = run_chromium(
        &browser,
        profile.path(),
        &[
            "--window-size=1100,1000",
            &format!("--screenshot={}", screenshot.display()),
        ],
        &url(stream_name),
    );
    assert!(!stderr.contains("Uncaught"), "{stderr}");
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
}
