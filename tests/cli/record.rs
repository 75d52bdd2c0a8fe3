//! `netbisect record check` on good and bad files.

use std::path::{Path, PathBuf};

/// The golden record of run-record's tests: a valid canonical record.
fn fixture_path() -> PathBuf {
    [
        env!("CARGO_MANIFEST_DIR"),
        "run-record",
        "tests",
        "data",
        "record-fixture.json",
    ]
    .iter()
    .collect()
}

const FIXTURE_ID: &str = "389cf3ef211d253db01f06772020e110c6ca96170557b667bae470699e1c08cc";
const FIXTURE_CONFIG_KEY: &str = "c1ab09600994976f931d9518e621659c1b4ab371177346bc1db109bf22705e41";

use crate::netbisect;

fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// Runs `record check` on one file and expects an input error whose
/// stderr names the file and says `problem`.
fn assert_rejected(path: &Path, problem: &str) {
    let output = netbisect()
        .args(["record", "check"])
        .arg(path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
    assert_eq!(stdout_of(&output), "");
    let stderr = stderr_of(&output);
    assert_eq!(
        stderr,
        format!(
            "netbisect: error: {}: not a valid run record\n  caused by: {problem}\n",
            path.display()
        )
    );
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn fixture_text() -> String {
    std::fs::read_to_string(fixture_path()).unwrap()
}

#[test]
fn a_good_record_passes() {
    let output = netbisect()
        .args(["record", "check"])
        .arg(fixture_path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(
        stdout_of(&output),
        format!(
            "{}: ok, id {}, config_key {}\n",
            fixture_path().display(),
            &FIXTURE_ID[..12],
            &FIXTURE_CONFIG_KEY[..12]
        )
    );
    assert_eq!(stderr_of(&output), "");
}

#[test]
fn json_output_gives_full_hashes() {
    let output = netbisect()
        .args(["--json", "record", "check"])
        .arg(fixture_path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let line: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(line["id"], FIXTURE_ID);
    assert_eq!(line["config_key"], FIXTURE_CONFIG_KEY);
    assert_eq!(line["file"], fixture_path().display().to_string());
}

#[test]
fn standard_input_is_read_for_a_dash() {
    let output = netbisect()
        .args(["record", "check", "-"])
        .write_stdin(fixture_text())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout_of(&output).starts_with("-: ok, id "));
}

#[test]
fn malformed_json_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "malformed.json", b"{\"schema\": 1,,}");
    assert_rejected(
        &path,
        "malformed JSON at line 1, column 14: key must be a string",
    );
}

#[test]
fn truncated_file_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture_text();
    let path = write(dir.path(), "truncated.json", &text.as_bytes()[..100]);
    assert_rejected(&path, "truncated JSON: input ends at line 1, column 100");
}

#[test]
fn non_utf8_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = fixture_text().into_bytes();
    bytes[20] = 0xc3;
    bytes[21] = 0x28;
    let path = write(dir.path(), "latin1.json", &bytes);
    assert_rejected(&path, "not UTF-8: invalid byte at offset 20");
}

#[test]
fn wrong_schema_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture_text().replace("netbisect.run/1.3", "netbisect.run/2");
    let path = write(dir.path(), "v2.json", text.as_bytes());
    assert_rejected(
        &path,
        "unsupported schema \"netbisect.run/2\": this netbisect reads netbisect.run/1.x",
    );
    let path = write(dir.path(), "other.json", b"{\"start\": {}, \"end\": {}}");
    assert_rejected(
        &path,
        "missing \"schema\" field (expected \"netbisect.run/1.4\")",
    );
}

#[test]
fn tampered_record_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture_text().replace("\"label\":\"patched\"", "\"label\":\"base\"");
    let path = write(dir.path(), "tampered.json", text.as_bytes());
    assert_rejected(
        &path,
        &format!(
            "id does not match the content: stated {FIXTURE_ID}, computed \
             8ed17a666218f782c2eb033b033b7d47ec225c7da48ed7f00e1ecd8be3f8c0e9"
        ),
    );
}

#[test]
fn missing_file_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.json");
    let output = netbisect()
        .args(["record", "check"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = stderr_of(&output);
    assert!(
        stderr.starts_with(&format!(
            "netbisect: error: cannot read {}: ",
            path.display()
        )),
        "{stderr}"
    );
}

#[test]
fn the_first_bad_file_stops_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.json", b"[]");
    let output = netbisect()
        .args(["record", "check"])
        .arg(fixture_path())
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stdout_of(&output).contains(": ok, id "));
    assert!(stderr_of(&output).contains("a run record is a JSON object"));
}

#[test]
fn no_file_is_a_usage_error() {
    let output = netbisect().args(["record", "check"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr_of(&output).contains("FILE"));
}

#[test]
fn the_json_lines_of_archive_export_pass() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    for test in ["TCP_STREAM", "TCP_RR"] {
        let output = crate::netbisect_with(&archive)
            .args(["bench", "-t", test, "-l", "0.05", "--json"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    }
    let output = crate::netbisect_with(&archive)
        .args(["archive", "export"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let path = write(dir.path(), "export.jsonl", &output.stdout);
    let output = netbisect()
        .args(["record", "check"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let text = stdout_of(&output);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.starts_with(&format!("{}:1: ok, id ", path.display())),
        "{text}"
    );
    // A damaged line is named.
    let exported = std::fs::read_to_string(&path).unwrap();
    let damaged = exported.replacen("\n{", "\n{\"x\":1,", 1);
    let path = write(dir.path(), "damaged.jsonl", damaged.as_bytes());
    let output = netbisect()
        .args(["record", "check"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr_of(&output).contains(&format!("{}: line 2: not a valid", path.display())),
        "{}",
        stderr_of(&output)
    );
}
