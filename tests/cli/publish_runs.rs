//! The pages of a chart's points, end to end: every point of a
//! configuration's chart links to the page of its runs, which shows each
//! run's figures, environment, granted settings and the line that runs
//! it again (`-H`, `--testbed`, `--commit`, kernel and VM options); the
//! hover names the commit's subject; a two-run point's wide interval is
//! cut at the plot and marked, not stretching the axis. The way from a
//! point to its run is followed in Debian's chromium, headless.

use crate::compare::{around, import, netbisect};
use crate::publish::{assert_self_contained, chromium, config_page, pages, run_chromium};
use git2::Oid;
use run_record::env::VmEnv;
use run_record::record::{DEFAULT_CONTROL_PORT, Granted, RunRecord, SystemOutcome};
use run_record::spec::{Setting, SystemSettings, TestKind};
use std::path::{Path, PathBuf};
use test_fixtures::git::GitRepo;
use test_fixtures::record::RecordBuilder;

/// The commit whose throughput drops, the first bad one.
const BAD: usize = 3;
/// The commit measured by two runs of one iteration each.
const TWO_RUNS: usize = 4;

/// A run of `commit` against 10.0.0.2 on testbed `rack-1`, asking
/// `gso=on` of a kernel that kept it off.
fn run_of(commit: &str, minute: usize, samples: &[f64]) -> RunRecord {
    let mut record = RecordBuilder::new(TestKind::TcpStream)
        .commit(commit)
        .testbed("rack-1")
        .endpoint("10.0.0.2", Some(DEFAULT_CONTROL_PORT))
        .started_at(&format!("2026-04-01T08:{minute:02}:00Z"))
        .finished_at(&format!("2026-04-01T08:{minute:02}:10Z"))
        .spec_with(|spec| {
            let mut system = SystemSettings::default();
            system.set(Setting::Feature {
                name: "gso".to_string(),
                on: true,
            });
            spec.system = Some(system);
        })
        .samples(samples)
        .build_unsealed();
    let mut outcome = SystemOutcome {
        interface: "eth0".to_string(),
        ..SystemOutcome::default()
    };
    outcome.features.insert(
        "gso".to_string(),
        Granted {
            requested: true,
            granted: false,
        },
    );
    record.system = Some(outcome);
    record.seal().unwrap();
    record
}

/// A run of `commit` in a VM made by `bench --kernel`, on testbed
/// `vm-pair`.
fn vm_run(commit: &str) -> RunRecord {
    let mut record = RecordBuilder::new(TestKind::TcpRr)
        .commit(commit)
        .testbed("vm-pair")
        .samples(&around(40_000.0, 0.01, 3, 7))
        .build_unsealed();
    record.env.vm = Some(VmEnv {
        runner: "qemu".into(),
        accelerator: "kvm".into(),
        vcpus: 2,
        memory_mib: 1024,
        network: "pair".into(),
        ..VmEnv::default()
    });
    record.command = Some(
        [
            "bench",
            "--kernel=build/bzImage",
            "--vm-net=pair",
            "--vm-cpus=2",
        ]
        .map(String::from)
        .to_vec(),
    );
    record.seal().unwrap();
    record
}

/// Six commits (`commit 0` to `commit 5`), one run of three iterations
/// each, 10% less throughput from commit [`BAD`] on, commit
/// [`TWO_RUNS`] measured by two runs of one iteration; and a run in a
/// VM. Returns the archive, the repository, the commits and the records.
fn fixture(dir: &Path) -> (PathBuf, PathBuf, Vec<String>, Vec<RunRecord>) {
    let repo_dir = dir.join("repo");
    std::fs::create_dir(&repo_dir).unwrap();
    let repo = GitRepo::init(&repo_dir);
    let ids = repo.line(
        None,
        6,
        |idx| vec![("counter", format!("{idx}\n"))],
        |idx| format!("commit {idx}"),
    );
    repo.set_main(ids[5]);
    let commits: Vec<String> = ids.iter().map(Oid::to_string).collect();
    let mut records = Vec::new();
    for (idx, commit) in commits.iter().enumerate() {
        let level = if idx < BAD { 9.4e9 } else { 9.4e9 * 0.9 };
        if idx == TWO_RUNS {
            // Two samples: the interval is 12.7 standard errors wide.
            records.push(run_of(commit, idx * 2, &[level * 0.95]));
            records.push(run_of(commit, idx * 2 + 1, &[level * 1.05]));
        } else {
            records.push(run_of(
                commit,
                idx * 2,
                &around(level, 0.003, 3, idx as u64),
            ));
        }
    }
    records.push(vm_run(&commits[5]));
    let db = dir.join("archive.db");
    import(&db, &records);
    (db, repo_dir, commits, records)
}

/// Publishes `db` with the commits of `repo` into `site`.
fn publish(db: &Path, repo: &Path, site: &Path) -> Vec<(String, String)> {
    netbisect(db)
        .arg("publish")
        .arg(site)
        .arg("--repo")
        .arg(repo)
        .assert()
        .success();
    pages(site)
}

/// The link of each point of a chart page and the start of its hover
/// text, in the order of the points.
fn point_links(html: &str) -> Vec<(String, String)> {
    html.split("<a href=\"")
        .skip(1)
        .filter(|link| link[..link.find("</a>").unwrap()].contains("class=\"point\""))
        .map(|link| {
            let href = link[..link.find('"').unwrap()].to_string();
            let title = &link[link.find("<title>").unwrap() + "<title>".len()..];
            (href, title[..title.find("</title>").unwrap()].to_string())
        })
        .collect()
}

/// The value axis' tick labels of the (one) chart of `html`: the texts
/// plotters anchors at their end, as numbers.
fn tick_labels(html: &str) -> Vec<String> {
    html.split("<text ")
        .skip(1)
        .filter(|text| text[..text.find('>').unwrap()].contains("text-anchor=\"end\""))
        .map(|text| {
            let content = &text[text.find('>').unwrap() + 1..text.find("</text>").unwrap()];
            content.trim().to_string()
        })
        .filter(|content| content.parse::<f64>().is_ok())
        .collect()
}

#[test]
fn every_point_links_to_a_page_of_its_runs_and_their_commands() {
    let dir = tempfile::tempdir().unwrap();
    let (db, repo, commits, records) = fixture(dir.path());
    let site = dir.path().join("site");
    let pages = publish(&db, &repo, &site);
    for (name, html) in &pages {
        assert_self_contained(name, html);
    }
    let (stream_name, stream) = config_page(&pages, "TCP_STREAM");
    assert_eq!(stream.matches("<svg").count(), 1);
    // The configuration's own line names its server and testbed.
    assert!(
        stream.contains(
            "Runs again with <code>netbisect bench -H 10.0.0.2 --testbed rack-1 -t TCP_STREAM"
        ),
        "{stream}"
    );

    // Each of the six points links to a page, named after its commit,
    // which the site holds; the hover names the commit's subject.
    let links = point_links(stream);
    assert_eq!(links.len(), 6, "{stream}");
    for ((href, title), commit) in links.iter().zip(&commits) {
        assert!(href.starts_with("runs-") && href.ends_with(&format!("-{}.html", &commit[..12])));
        assert!(pages.iter().any(|(name, _)| name == href), "{href}");
        let subject = format!(
            "commit {}",
            commits.iter().position(|c| c == commit).unwrap()
        );
        assert!(
            title.starts_with(&format!("{} {subject}\n", &commit[..12])),
            "{title}"
        );
        // The table's row links the same page.
        assert!(stream.contains(&format!(
            "<a href=\"{href}\"><code>{}</code></a> {subject}<",
            &commit[..12]
        )));
    }
    let n_run_pages = pages
        .iter()
        .filter(|(name, _)| name.starts_with("runs-"))
        .count();
    assert_eq!(n_run_pages, 6 + 1, "a page per point, the VM run's too");

    // The two-run point: its interval is cut at the plot and marked at
    // both ends; the axis stays the other points' (10^6bits/s).
    assert_eq!(
        stream.matches("<polygon class=\"clipped\"").count(),
        2,
        "{stream}"
    );
    let ticks = tick_labels(stream);
    assert!(ticks.len() > 3, "{ticks:?}");
    let values: Vec<f64> = ticks.iter().map(|tick| tick.parse().unwrap()).collect();
    assert!(
        values
            .iter()
            .all(|value| (7000.0..=10_500.0).contains(value)),
        "{ticks:?}"
    );
    let decimals = |tick: &String| tick.split_once('.').map_or(0, |(_, after)| after.len());
    assert!(
        ticks
            .iter()
            .all(|tick| decimals(tick) == decimals(&ticks[0])),
        "{ticks:?}"
    );

    // The page of the two-run point: both runs, each with its figures,
    // environment, settings as granted, and its own command.
    let (_, two) = pages
        .iter()
        .find(|(name, _)| *name == links[TWO_RUNS].0)
        .unwrap();
    assert!(
        two.contains(&format!("href=\"{stream_name}\"")),
        "back to the chart"
    );
    assert!(two.contains("&ldquo;commit 4&rdquo;"), "{two}");
    for record in records
        .iter()
        .filter(|r| r.subject.commit.as_deref() == Some(&commits[TWO_RUNS]))
    {
        assert!(
            two.contains(&format!("<code class=\"run-id\">{}</code>", record.id)),
            "{two}"
        );
    }
    assert_eq!(two.matches("<section class=\"run\"").count(), 2);
    // Who stored each run: the user who imported them into this file.
    let user = rustix::process::geteuid().as_raw();
    let stored_by = std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.get(2) == Some(&user.to_string().as_str())).then(|| fields[0].to_string())
        })
        .unwrap_or_else(|| format!("uid {user}"));
    assert_eq!(
        two.matches(&format!("<tr><th>stored by</th><td>{stored_by}</td></tr>"))
            .count(),
        2,
        "{two}"
    );
    assert_eq!(
        two.matches("<code class=\"settings\">gso=on(off)</code>")
            .count(),
        2,
        "{two}"
    );
    assert!(
        two.contains("KEY=ASKED(GOT): asked ASKED, the kernel kept GOT"),
        "{two}"
    );
    assert!(
        two.contains("<th>server</th><td>10.0.0.2 port 12866</td>"),
        "{two}"
    );
    assert!(
        two.contains("Settings: gso=on(off)"),
        "the run as archive show prints it"
    );
    let command = format!(
        "netbisect bench -H 10.0.0.2 --testbed rack-1 --commit {} -t TCP_STREAM -l 10 --set gso=on",
        commits[TWO_RUNS]
    );
    assert_eq!(two.matches(&command).count(), 2, "{two}");

    // The run in a VM: runner, accelerator and vCPUs, its kernel and VM
    // options as its command gave them.
    let (_, vm) = pages
        .iter()
        .find(|(name, html)| name.starts_with("runs-") && html.contains("vm-pair"))
        .expect("the VM run's page");
    assert!(
        vm.contains("<th>VM</th><td>qemu guests under KVM, 2 vCPUs, 1024 MiB, network pair</td>"),
        "{vm}"
    );
    assert!(
        vm.contains(&format!(
            "netbisect bench --kernel build/bzImage --vm-net pair --vm-cpus 2 --commit {} -t TCP_RR",
            commits[5]
        )),
        "{vm}"
    );
    assert!(
        !vm.contains("--testbed"),
        "vm-pair is what the line gives: {vm}"
    );

    // Publishing again gives the same pages.
    assert_eq!(publish(&db, &repo, &dir.path().join("again")), pages);
}

/// From the chart, in a real browser: the point of the bad commit is a
/// link; the page it leads to names the run and the command that runs
/// it again.
#[test]
fn a_click_on_a_point_reaches_its_run_and_its_command_in_a_browser() {
    let Some(browser) = chromium() else {
        test_fixtures::skip::skip("chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (db, repo, commits, records) = fixture(dir.path());
    let site = dir.path().join("site");
    let pages = publish(&db, &repo, &site);
    let (stream_name, _) = config_page(&pages, "TCP_STREAM");
    let url = |name: &str| format!("file://{}", site.join(name).display());
    let profile = tempfile::tempdir().unwrap();

    let (dom, stderr) = run_chromium(&browser, profile.path(), &["--dump-dom"], &url(stream_name));
    assert!(!stderr.contains("Uncaught"), "{stderr}");
    assert_eq!(dom.matches("<svg").count(), 1, "{dom}");
    let bad = &commits[BAD];
    let (href, title) = point_links(&dom)
        .into_iter()
        .find(|(_, title)| title.starts_with(&bad[..12]))
        .unwrap_or_else(|| panic!("no link at the point of {bad}: {dom}"));
    assert!(title.contains("commit 3"), "{title}");

    let (dom, stderr) = run_chromium(&browser, profile.path(), &["--dump-dom"], &url(&href));
    assert!(!stderr.contains("Uncaught"), "{stderr}");
    let record = records
        .iter()
        .find(|record| record.subject.commit.as_deref() == Some(bad.as_str()))
        .unwrap();
    assert!(
        dom.contains(&format!("<code class=\"run-id\">{}</code>", record.id)),
        "{dom}"
    );
    let start = dom
        .find("<code class=\"reproduce\">")
        .expect("a reproduce command")
        + 24;
    let command = &dom[start..start + dom[start..].find("</code>").unwrap()];
    assert!(
        command.starts_with(&format!(
            "netbisect bench -H 10.0.0.2 --testbed rack-1 --commit {bad} -t TCP_STREAM -l 10 --set gso=on"
        )),
        "{command}"
    );
}
