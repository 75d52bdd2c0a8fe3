//! `archive import` of text as people have it: emails (quoted, labelled
//! rows, several outputs), standard input, the same file twice, and
//! inputs too large to read.

use crate::netbisect_with;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn data(name: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "tests", "data", name]
        .iter()
        .collect()
}

fn runs(archive: &Path) -> Vec<Value> {
    let output = netbisect_with(archive)
        .args(["archive", "list", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Runs `archive import ARGS` with `stdin`; returns (exit code, stdout,
/// stderr).
fn import(archive: &Path, args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .env("NETBISECT_ARCHIVE", archive)
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .args(["archive", "import"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn an_email_on_stdin_gives_a_run_per_labelled_row() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let email = std::fs::read(data("email/quoted-labelled-tcp-stream.txt")).unwrap();
    let (code, stdout, stderr) = import(
        &archive,
        &["-", "--commit", "abcdef12", "--testbed", "lab-a"],
        &email,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "-: 2 runs (netperf), 2 added, 0 already present\n");
    let stored = runs(&archive);
    let labels: Vec<&str> = stored
        .iter()
        .map(|run| run["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels.len(), 2);
    assert!(labels.contains(&"current") && labels.contains(&"patched"));
    for run in &stored {
        assert_eq!(run["testbed"], "lab-a");
    }

    // The side names can be mapped and prefixed.
    let archive = dir.path().join("b.db");
    let table = std::fs::read(data("email/labelled-tcp-rr.txt")).unwrap();
    let (code, _, stderr) = import(
        &archive,
        &["-", "--side-label", "Org=base", "--label-prefix", "v6.8-"],
        &table,
    );
    assert_eq!(code, 0, "{stderr}");
    let mut labels: Vec<String> = runs(&archive)
        .iter()
        .map(|run| run["label"].as_str().unwrap().to_string())
        .collect();
    labels.sort();
    assert_eq!(labels, ["v6.8-New", "v6.8-base"]);
}

#[test]
fn the_same_text_imported_after_a_touch_is_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let file = dir.path().join("netperf.txt");
    std::fs::copy(data("peer-outputs/netperf-TCP_RR-l10-plain.txt"), &file).unwrap();
    let arg = file.to_str().unwrap();
    let (code, _, stderr) = import(&archive, &[arg], b"");
    assert_eq!(code, 0, "{stderr}");
    // touch: a new modification time, the same content.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let (code, stdout, stderr) = import(&archive, &[arg], b"");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.ends_with("1 run (netperf), 0 added, 1 already present\n"),
        "{stdout}"
    );
    // And from standard input, at another moment still.
    let text = std::fs::read(&file).unwrap();
    let (_, stdout, _) = import(&archive, &["-"], &text);
    assert_eq!(stdout, "-: 1 run (netperf), 0 added, 1 already present\n");
    assert_eq!(runs(&archive).len(), 1);
}

#[test]
fn bad_email_tables_exit_2_naming_the_line_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let email = std::fs::read_to_string(data("email/quoted-labelled-tcp-stream.txt")).unwrap();
    let cases = [
        (
            email.replace("> TCP STREAM TEST", "> UDP UNIDIRECTIONAL SEND TEST"),
            "-: line 6: the table's columns do not match the banner's UDP_STREAM: \
             no messages column; nothing imported from it",
        ),
        (
            email.replace(
                "> patched  131072  16384  16384    10.00    11830.00",
                "> patched",
            ),
            "-: line 12: \"patched\" has no figures after it; nothing imported from it",
        ),
        (
            email.replace("16384    10.00    11830.00", "10.00    11830.00"),
            "-: line 12: 4 figures for the 5 columns of the header (line 6); \
             nothing imported from it",
        ),
    ];
    for (text, message) in cases {
        let (code, stdout, stderr) = import(&archive, &["-"], text.as_bytes());
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(stdout, "");
        assert!(stderr.contains(message), "{stderr}");
    }
    assert!(runs(&archive).is_empty());
}

#[test]
fn a_table_made_by_hand_is_refused_at_its_own_line_not_at_the_mail_header() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    for (name, line) in [
        ("email/handmade-table.txt", 9),
        ("email/handmade-table-quoted.txt", 10),
    ] {
        let text = std::fs::read(data(name)).unwrap();
        let (code, stdout, stderr) = import(&archive, &["-"], &text);
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(stdout, "");
        assert!(
            stderr.contains(&format!(
                "-: line {line}: not netperf or uperf output, iperf3 JSON or a run record: \
                 \"test          before     after\""
            )),
            "{name}: {stderr}"
        );
    }
    assert!(runs(&archive).is_empty());
}

/// Runs `archive import FILE` with at most 300 MB of address space, far
/// less than reading a 100 MB document into a JSON tree takes.
fn import_within_300_mb(archive: &Path, file: &Path) -> (Option<i32>, String) {
    let output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 300000 && exec \"$0\" archive import \"$1\"")
        .arg(env!("CARGO_BIN_EXE_netbisect"))
        .arg(file)
        .env("NETBISECT_ARCHIVE", archive)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_100_mb_line_or_document_is_refused_early() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    // One line of 100 MB: a JSON number array inside a record.
    let line = dir.path().join("line.json");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&line).unwrap());
    file.write_all(b"{\"schema\":\"netbisect.run/1.1\",\"x\":[")
        .unwrap();
    for _ in 0..5_000_000 {
        file.write_all(b"1,2,3,4,5,6,7,8,9,").unwrap();
    }
    file.write_all(b"0]}\n").unwrap();
    drop(file);
    let (code, stderr) = import_within_300_mb(&archive, &line);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("line 1: longer than 16 MiB, the longest line netbisect reads"),
        "{stderr}"
    );
    // The same array over many short lines: one document too large.
    let lines = dir.path().join("lines.json");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&lines).unwrap());
    file.write_all(b"{\"schema\":\"netbisect.run/1.1\",\"x\":[\n")
        .unwrap();
    for _ in 0..5_000_000 {
        file.write_all(b"1,2,3,4,5,6,7,8,9,\n").unwrap();
    }
    file.write_all(b"0]}\n").unwrap();
    drop(file);
    let (code, stderr) = import_within_300_mb(&archive, &lines);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("line 1: a JSON document larger than 16 MiB, the largest netbisect reads"),
        "{stderr}"
    );
    assert!(runs(&archive).is_empty());
}

#[test]
fn compare_says_when_runs_differ_only_in_their_testbed() {
    use crate::compare::{RunOf, import as import_records, stdout_of};
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let samples = [9.4e9, 9.5e9, 9.3e9, 9.4e9];
    let imported = RunOf::stream("aaaa1111", "2026-01-01T00:00:00Z", &samples).record();
    let mut local = RunOf::stream("bbbb2222", "2026-01-02T00:00:00Z", &samples).record();
    local.testbed = "loopback".to_string();
    local.seal().unwrap();
    import_records(&archive, &[imported, local]);
    let text =
        stdout_of(netbisect_with(&archive).args(["compare", "commit:aaaa1111", "commit:bbbb2222"]));
    crate::check_mailing_list_rules(&text);
    assert!(
        text.contains("No test configuration was run on both sides."),
        "{text}"
    );
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        joined.contains(
            "not compared with the other side's runs of this test: they are on testbed loopback"
        ),
        "{text}"
    );
    assert!(joined.contains("they are on testbed lab"), "{text}");
}

fn netbisect_stdout(archive: &Path, args: &[&str]) -> String {
    let output = netbisect_with(archive).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_wrapped_mail_of_two_outputs_imports_labelled_and_compares_as_printed() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let mail = std::fs::read(data("email/two-outputs-wrapped-72-quoted.txt")).unwrap();
    let (code, stdout, stderr) = import(&archive, &["-", "--labels", "before,after"], &mail);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "-: 2 runs (netperf), 2 added, 0 already present\n");
    let compare = netbisect_stdout(&archive, &["compare", "before", "after", "--email"]);
    // The sizes netperf printed are granted ones: named as such in the
    // title, never made -s/-S of the command that runs it again.
    assert!(
        compare.contains("TCP_STREAM -l 5 -c -C granted send 16384 recv 131072"),
        "{compare}"
    );
    // Its testbed is named, so that a run made with it pairs with these.
    assert!(
        compare.contains("  netbisect bench --testbed default -t TCP_STREAM -l 5 -c -C\n"),
        "{compare}"
    );
    assert!(!compare.contains("-s 16384") && !compare.contains("-S 131072"));
    assert!(compare.contains("14316.75") && compare.contains("12924.37"));
    assert!(compare.contains("131072"), "{compare}");
    // --labels names the outputs of one input only.
    let (code, _, stderr) = import(&archive, &["-", "-", "--labels", "a,b"], b"");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--labels names the outputs of one input"),
        "{stderr}"
    );
}

#[test]
fn show_prints_an_imports_figures_and_sockets_as_its_text_did() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let file = data("peer-outputs/netperf-UDP_STREAM-l5-m1472.txt");
    let (code, _, stderr) = import(&archive, &[file.to_str().unwrap()], b"");
    assert_eq!(code, 0, "{stderr}");
    let id = runs(&archive)[0]["id"].as_str().unwrap().to_string();
    let table = netbisect_stdout(&archive, &["archive", "show", &id]);
    let text = std::fs::read_to_string(&file).unwrap();
    // Both result lines as netperf printed them, the sender's throughput
    // included (not recomputed from the datagrams).
    for (printed, shown) in text.lines().skip(5).zip(table.lines().skip(6)) {
        let printed: Vec<&str> = printed.split_whitespace().collect();
        let shown: Vec<&str> = shown.split_whitespace().collect();
        assert_eq!(printed, shown, "{table}");
    }
    assert!(
        table.contains("1659.48") && table.contains("715.79"),
        "{table}"
    );
}

#[test]
fn uperf_outputs_at_two_sizes_import_with_their_figures() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let small = data("peer-outputs/uperf-tcp-rr-64B-1i.txt");
    let large = data("peer-outputs/uperf-tcp-rr-1024B-1i-a.txt");
    let (code, stdout, stderr) = import(
        &archive,
        &[small.to_str().unwrap(), large.to_str().unwrap()],
        b"",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("1 run (uperf), 1 added"), "{stdout}");
    let list = netbisect_stdout(&archive, &["archive", "list", "--tool", "uperf"]);
    assert!(
        list.contains("46004.50") && list.contains("61005.00"),
        "{list}"
    );
    let refused = data("peer-outputs/refused/uperf-profile-netperf.txt");
    let (code, _, stderr) = import(&archive, &[refused.to_str().unwrap()], b"");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("line 1: uperf profile \"netperf\" is not one"),
        "{stderr}"
    );
    assert_eq!(runs(&archive).len(), 2);
}

#[test]
fn list_shows_the_newest_runs_first_in_the_tools_unit() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let labels = ["first", "second", "a-label-of-more-than-ten"];
    for (name, label) in [
        "peer-outputs/netperf-TCP_STREAM-l5-cC.txt",
        "peer-outputs/netperf-TCP_STREAM-l5-cC-run2.txt",
        "peer-outputs/netperf-TCP_STREAM-l10-plain.txt",
    ]
    .iter()
    .zip(labels)
    {
        let file = data(name);
        let (code, _, stderr) = import(&archive, &[file.to_str().unwrap(), "--label", label], b"");
        assert_eq!(code, 0, "{stderr}");
        // Imports of undated text start when imported: a moment apart.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let list = netbisect_stdout(&archive, &["archive", "list", "--limit", "2"]);
    let lines: Vec<&str> = list.lines().collect();
    assert!(
        lines[0].contains("10^6bits/s") && !list.contains("Mbit/s"),
        "{list}"
    );
    assert!(
        lines[1].contains(" a-label-o~ ") && lines[1].contains("11967.53"),
        "{list}"
    );
    assert!(
        lines[2].contains(" second ") && lines[2].contains("12924.37"),
        "{list}"
    );
    assert_eq!(lines[4], "2 runs");
}

/// iperf3's own output with one figure replaced, as JSON text.
fn iperf3_with(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let text = std::fs::read(data("peer-outputs/iperf3-tcp-t10.json")).unwrap();
    let mut document: Value = serde_json::from_slice(&text).unwrap();
    edit(&mut document);
    serde_json::to_vec(&document).unwrap()
}

#[test]
fn implausible_iperf3_figures_are_refused_naming_the_figure() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let cases: [(Vec<u8>, &str); 3] = [
        (
            iperf3_with(|document| {
                document["end"]["sum_received"]["bits_per_second"] = 1.7e308.into();
            }),
            "throughput 1.7e308 bit/s",
        ),
        (
            iperf3_with(|document| {
                document["end"]["cpu_utilization_percent"]["host_total"] = 1e9.into();
            }),
            "local CPU 1e9 %",
        ),
        (
            iperf3_with(|document| {
                document["end"]["cpu_utilization_percent"]["remote_total"] = 1e9.into();
            }),
            "remote CPU 1e9 %",
        ),
    ];
    for (document, figure) in cases {
        let file = dir.path().join("iperf3.json");
        std::fs::write(&file, &document).unwrap();
        let (code, stdout, stderr) = import(&archive, &[file.to_str().unwrap()], b"");
        assert_eq!(code, 2, "{figure}: {stdout}{stderr}");
        assert!(stderr.contains("implausible figure"), "{stderr}");
        assert!(stderr.contains(figure), "{figure}: {stderr}");
    }
    // Nothing was stored: no archive was even needed.
    if archive.exists() {
        assert!(runs(&archive).is_empty());
    }
    // The file as iperf3 wrote it imports.
    let file = data("peer-outputs/iperf3-tcp-t10.json");
    let (code, _, stderr) = import(&archive, &[file.to_str().unwrap()], b"");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(runs(&archive).len(), 1);
}

/// `head`, then `count` copies of `element`, then `tail`, in a file.
fn padded_file(path: &Path, head: &[u8], element: &[u8], count: usize, tail: &[u8]) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    file.write_all(head).unwrap();
    for _ in 0..count {
        file.write_all(element).unwrap();
    }
    file.write_all(tail).unwrap();
}

#[test]
fn a_16_mb_line_of_small_values_is_refused_within_300_mb() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    // Under the 16 MiB line and document limits, 8 million values: a
    // tree of them would take gigabytes.
    let line = dir.path().join("line.jsonl");
    padded_file(
        &line,
        b"{\"schema\":\"netbisect.run/1.1\",\"x\":[",
        b"0,",
        8_000_000,
        b"0]}\n",
    );
    let (code, stderr) = import_within_300_mb(&archive, &line);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("line 1: invalid run record: invalid record: more than 1000000 values"),
        "{stderr}"
    );
    // One record written over many lines, padded the same way.
    let document = dir.path().join("record.json");
    padded_file(
        &document,
        b"{\n\"schema\": \"netbisect.run/1.1\",\n\"x\": [\n",
        b"0,\n",
        5_000_000,
        b"0\n]\n}\n",
    );
    let (code, stderr) = import_within_300_mb(&archive, &document);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("more than 1000000 values"), "{stderr}");
    assert!(!archive.exists() || runs(&archive).is_empty());

    // iperf3's output padded with the same values is read for the members
    // it uses; the padding is skipped without being built.
    let iperf3 = std::fs::read(data("peer-outputs/iperf3-tcp-t10.json")).unwrap();
    let padded = dir.path().join("iperf3.json");
    let mut tail = b"0],".to_vec();
    tail.extend_from_slice(&iperf3[1..]);
    padded_file(&padded, b"{\"padding\":[", b"0,", 8_000_000, &tail);
    let (code, stderr) = import_within_300_mb(&archive, &padded);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(runs(&archive).len(), 1);
}

#[test]
fn an_input_of_more_than_100000_runs_is_refused_naming_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    // Counted before any is read as a record: short documents will do.
    let lines = dir.path().join("lines.jsonl");
    padded_file(
        &lines,
        b"",
        b"{\"schema\":\"netbisect.run/1.1\"}\n",
        100_001,
        b"",
    );
    let (code, stdout, stderr) = import(&archive, &[lines.to_str().unwrap()], b"");
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("100001 runs in one input, more than the 100000 one import stores"),
        "{stderr}"
    );
    assert!(!archive.exists() || runs(&archive).is_empty());
}
