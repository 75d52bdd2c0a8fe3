//! Text from records reaches a terminal escaped, errors and warnings
//! included: a testbed, a kernel release or a label that holds escape
//! sequences (SGR, an OSC window title, a bell) and a line break that
//! forges a `Subject:` line of a mail prints as `\x1b` and `\n`, on
//! stderr as on stdout.

use crate::compare::{around, import, netbisect, stderr_of_failure, stdout_of};
use run_record::record::RunRecord;
use run_record::spec::TestKind;
use test_fixtures::record::RecordBuilder;

/// SGR red, an OSC title with its bell, and a forged mail header.
const HOSTILE: &str = "lab\u{1b}[31m\u{1b}]0;owned\u{7}\nSubject: forged";

/// No control character but the line's end, no forged header, and the
/// escape sequence written out.
fn assert_inert(text: &str, context: &str) {
    for line in text.lines() {
        assert!(
            !line.chars().any(char::is_control),
            "{context}: a control character reached the terminal: {line:?}"
        );
        assert!(
            !line.trim_start().starts_with("Subject:"),
            "{context}: a forged line: {text}"
        );
    }
    assert!(text.contains("\\x1b[31m"), "{context}: {text}");
}

fn run(testbed: &str, kernel: &str, label: &str, duration_s: f64, seed: u64) -> RunRecord {
    let mut subject = run_record::record::Subject {
        label: Some(label.to_string()),
        ..Default::default()
    };
    subject.kernel_release = Some(kernel.to_string());
    RecordBuilder::new(TestKind::TcpStream)
        .testbed(testbed)
        .subject(subject)
        .started_at(&format!("2026-05-01T10:00:{seed:02}Z"))
        .finished_at(&format!("2026-05-01T10:00:{seed:02}Z"))
        .spec_with(|spec| spec.duration_s = duration_s)
        .samples(&around(9.4e9, 0.01, 3, seed))
        .build()
}

/// `history` over runs of two configurations of a hostile testbed fails
/// naming each: the testbed escaped in its line.
#[test]
fn a_history_error_names_a_hostile_testbed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    import(
        &db,
        &[
            run(HOSTILE, "6.1.0", "base", 10.0, 1),
            run(HOSTILE, "6.1.0", "base", 20.0, 2),
        ],
    );
    let stderr = stderr_of_failure(
        netbisect(&db).args(["history", "--metric", "throughput_bps"]),
        2,
    );
    assert!(stderr.contains("span 2 test configurations"), "{stderr}");
    assert_inert(&stderr, "history");
}

/// A side that pools two hostile kernel releases is warned of with the
/// releases escaped, and the table names the testbed escaped.
#[test]
fn a_compare_warning_names_hostile_kernels_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let kernel = |idx: u64| format!("6.1.{idx}\u{1b}[31m\nSubject: forged");
    import(
        &db,
        &[
            run(HOSTILE, &kernel(1), "base", 10.0, 1),
            run(HOSTILE, &kernel(2), "base", 10.0, 2),
            run(HOSTILE, &kernel(3), "patched", 10.0, 3),
        ],
    );
    let output = netbisect(&db)
        .args(["compare", "label:base", "label:patched"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("pools the runs of 2 kernels"), "{stderr}");
    assert_inert(&stderr, "compare's warning");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_inert(&stdout, "compare");
    let email =
        stdout_of(netbisect(&db).args(["compare", "label:base", "label:patched", "--email"]));
    assert_inert(&email, "compare --email");
}
