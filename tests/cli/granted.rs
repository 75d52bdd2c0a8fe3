//! Settings as the kernel granted them: runs that asked `gso=on` of a
//! kernel that kept it off are named `gso=on(off)` in every human output
//! (a run as `archive show` prints it, `compare` in each layout and with
//! `--email`), with the legend of that form, and a comparison of the
//! rows `gso=on` and `gso=off` says that it compares identical
//! settings; `bench --strict-settings` fails such a run instead of
//! keeping it.

use run_record::record::{Granted, RunRecord, SystemOutcome};
use run_record::spec::{Setting, SystemSettings, TestKind};
use test_fixtures::record::RecordBuilder;

use crate::compare::{around, import, stdout_of};

/// A run of label `label` asking `gso`, which the kernel kept off.
fn gso_run(label: &str, gso_on: bool, level: f64, seed: u64) -> RunRecord {
    let mut record = RecordBuilder::new(TestKind::TcpStream)
        .label(label)
        .started_at(&format!("2026-11-30T08:{seed:02}:00.000000Z"))
        .finished_at(&format!("2026-11-30T08:{seed:02}:10.000000Z"))
        .spec_with(move |spec| {
            let mut system = SystemSettings::default();
            system.set(Setting::Feature {
                name: "gso".to_string(),
                on: gso_on,
            });
            spec.system = Some(system);
        })
        .samples(&around(level, 0.01, 5, seed))
        .build_unsealed();
    let mut outcome = SystemOutcome {
        interface: "lo".to_string(),
        ..SystemOutcome::default()
    };
    outcome.features.insert(
        "gso".to_string(),
        Granted {
            requested: gso_on,
            granted: false,
        },
    );
    record.system = Some(outcome);
    record.seal().unwrap();
    record
}

#[test]
fn a_setting_the_kernel_kept_off_is_named_with_what_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let records = vec![
        gso_run("current", true, 9.0e9, 1),
        gso_run("patched", true, 9.9e9, 2),
        gso_run("current", false, 9.0e9, 3),
        gso_run("patched", false, 9.1e9, 4),
    ];
    import(&archive, &records);
    let legend = "KEY=ASKED(GOT): asked ASKED, the kernel kept GOT; measured with GOT.";
    let mut outputs = Vec::new();
    for layout in ["netperf", "matrix", "stats"] {
        for email in [false, true] {
            if email && layout == "stats" {
                continue;
            }
            let mut args = vec!["compare", "label:current", "label:patched"];
            args.extend(["--layout", layout]);
            if email {
                args.push("--email");
            }
            let text = stdout_of(crate::netbisect_with(&archive).args(&args));
            outputs.push((args.join(" "), text, if email { 72 } else { 80 }));
        }
    }
    let shown =
        stdout_of(crate::netbisect_with(&archive).args(["archive", "show", &records[0].id]));
    assert!(shown.contains("Settings: gso=on(off)"), "{shown}");
    outputs.push(("archive show".to_string(), shown, 80));
    for (args, text, width) in &outputs {
        assert!(text.contains(legend), "{args}: no legend:\n{text}");
        for line in text.lines() {
            assert!(line.len() <= *width, "{args}: {line:?} passes {width}");
            // Only the command that runs it again names what was asked.
            if line.contains("gso=on") && !line.contains("--set gso=on") {
                assert!(line.contains("gso=on(off)"), "{args}: {line:?}\n{text}");
            }
        }
        let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            args.starts_with("archive") || joined.contains("compares identical settings"),
            "{args}: no word of identical settings:\n{text}"
        );
    }
}

/// The kernel reads a sysctl's number written with a leading zero as
/// octal: asked `060`, it keeps 48. A real refusal on loopback, for root
/// (who may write sysctls) only.
#[test]
fn strict_settings_fails_a_run_the_kernel_did_not_grant() {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let bench = |strict: bool| {
        let mut command = crate::netbisect_with(&archive);
        command.args([
            "bench",
            "-t",
            "TCP_STREAM",
            "-l",
            "0.1",
            "--set",
            "net.ipv4.tcp_fin_timeout=060",
        ]);
        if strict {
            command.arg("--strict-settings");
        }
        command.output().unwrap()
    };
    let strict = bench(true);
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("did not grant net.ipv4.tcp_fin_timeout=060 (got 48)"),
        "{stderr}"
    );
    assert!(strict.stdout.is_empty());
    assert!(!archive.exists(), "a refused run was stored");
    let kept = bench(false);
    let stdout = String::from_utf8_lossy(&kept.stdout);
    assert!(
        kept.status.success(),
        "{}",
        String::from_utf8_lossy(&kept.stderr)
    );
    assert!(
        stdout.contains("Settings: net.ipv4.tcp_fin_timeout=060(48)"),
        "{stdout}"
    );
}

/// Two labels whose runs asked different settings that the kernel kept
/// alike do not pair (their specs differ), and the comparison says that
/// they differ only as asked. Root only, for the sysctl.
#[test]
fn labels_that_differ_only_in_a_refused_setting_are_said_to_compare_identical_settings() {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    for (label, value) in [("ask-060", "060"), ("ask-48", "48")] {
        let output = crate::netbisect_with(&archive)
            .args(["bench", "-t", "TCP_STREAM", "-l", "0.1", "--label", label])
            .args(["--set", &format!("net.ipv4.tcp_fin_timeout={value}")])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    for email in [false, true] {
        let mut command = crate::netbisect_with(&archive);
        command.args(["compare", "ask-060", "ask-48"]);
        if email {
            command.arg("--email");
        }
        let output = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}");
        let text = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains("KEY=ASKED(GOT): asked ASKED, the kernel kept GOT"),
            "{stdout}"
        );
        assert!(
            text.contains(
                "net.ipv4.tcp_fin_timeout=060(48) (testbed loopback) on ask-060 and \
                 TCP_STREAM -l 0.1 net.ipv4.tcp_fin_timeout=48 (testbed loopback) on ask-48 \
                 differ only in settings the kernel did not grant: a change between them \
                 compares identical settings."
            ),
            "{stdout}"
        );
        let width = if email { 72 } else { 80 };
        assert!(stdout.lines().all(|line| line.len() <= width), "{stdout}");
    }
}
