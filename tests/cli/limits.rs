//! The limits of what a record may hold and of what an input may cost:
//! figures beyond their physical range refused at the record check
//! whatever their source and reported by `archive check` where they were
//! stored earlier; inputs read in bounded memory and stored in batches
//! as they are read.

use crate::netbisect_with;
use run_record::record::{Iteration, RunRecord};
use run_record::spec::TestKind;
use std::path::Path;
use test_fixtures::record::{RecordBuilder, json_lines};

fn run(archive: &Path, args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let output = netbisect_with(archive)
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A TCP_RR run of `rate` transactions per second.
fn rr_run(rate: f64, label: &str) -> RunRecord {
    RecordBuilder::new(TestKind::TcpRr)
        .commit("aaaa1111")
        .label(label)
        .iteration(Iteration {
            elapsed_s: 10.0,
            throughput_bps: 16.0 * 8.0 * 5e4,
            transaction_rate: Some(rate),
            ..Iteration::default()
        })
        .build()
}

fn n_runs(archive: &Path) -> usize {
    let (code, stdout, stderr) = run(archive, &["archive", "export"], b"");
    assert_eq!(code, 0, "{stderr}");
    stdout.lines().count()
}

#[test]
fn a_rate_no_run_has_is_refused_from_a_file_and_named_where_stored_earlier() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let absurd = rr_run(1.7e308, "absurd");
    let file = dir.path().join("absurd.jsonl");
    std::fs::write(&file, json_lines(&[rr_run(5e4, "fine"), absurd.clone()])).unwrap();
    let (code, _, stderr) = run(
        &archive,
        &["archive", "import", file.to_str().unwrap()],
        b"",
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "line 2: invalid run record: $.iterations[0].transaction_rate is 1.7e308 /s, \
             beyond 1e10 /s: no run measures that; nothing imported from it"
        ),
        "{stderr}"
    );
    assert!(!archive.exists() || n_runs(&archive) == 0);

    // One stored by an earlier netbisect, which had no such limit: the
    // row of a fine run given the absurd run's id and bytes.
    let fine = rr_run(5e4, "fine");
    let (code, _, stderr) = run(
        &archive,
        &["archive", "import", "-"],
        json_lines(std::slice::from_ref(&fine)).as_bytes(),
    );
    assert_eq!(code, 0, "{stderr}");
    let connection = rusqlite::Connection::open(&archive).unwrap();
    let bytes = absurd.to_canonical_bytes().unwrap();
    connection
        .pragma_update(None, "foreign_keys", false)
        .unwrap();
    connection
        .execute(
            "UPDATE runs SET id = ?1, record = ?2 WHERE id = ?3",
            rusqlite::params![absurd.id, bytes, fine.id],
        )
        .unwrap();
    connection
        .execute(
            "UPDATE run_series SET run_id = ?1 WHERE run_id = ?2",
            rusqlite::params![absurd.id, fine.id],
        )
        .unwrap();
    drop(connection);
    let (code, stdout, stderr) = run(&archive, &["archive", "check"], b"");
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stdout.contains("runs: 1, damaged: 1"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "  {}: $.iterations[0].transaction_rate is 1.7e308 /s, beyond 1e10 /s",
            absurd.id
        )),
        "{stdout}"
    );
    // It is not listed as a rate of 320 digits either.
    let (code, _, stderr) = run(&archive, &["archive", "show", &absurd.id], b"");
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("beyond 1e10 /s"), "{stderr}");
}

/// Writes `chunk` to the stdin of `archive import -` until the import
/// stops reading; its exit code, its stderr and how many bytes it took.
fn import_endless(archive: &Path, chunk: &[u8]) -> (Option<i32>, String, usize) {
    use std::io::{Read, Write};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .env("NETBISECT_ARCHIVE", archive)
        .args(["archive", "import", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut written = 0_usize;
    // Past 4 GiB the import read everything it was given: it is not
    // bounded, and the test ends rather than fill the memory.
    while written < 4 << 30 {
        match stdin.write_all(chunk) {
            Ok(()) => written += chunk.len(),
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => break,
            Err(err) => panic!("{err}"),
        }
    }
    drop(stdin);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap().code(), stderr, written)
}

#[test]
fn an_endless_stdin_is_refused_at_its_first_ceiling_without_being_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    // `yes`: short lines, refused at the line past the ceiling of lines.
    let (code, stderr, written) = import_endless(&archive, &b"y\n".repeat(32 * 1024));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("-: line 1048577: more than 1048576 lines of text"),
        "{stderr}"
    );
    assert!(
        written < 256 << 20,
        "{written} bytes read before the refusal"
    );
    // Long lines: refused past the ceiling of a text's bytes.
    let mut line = vec![b'x'; (1 << 20) - 1];
    line.push(b'\n');
    let (code, stderr, written) = import_endless(&archive, &line);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("-: line 129: more than 128 MiB of text, the most one import reads"),
        "{stderr}"
    );
    assert!(
        written < 512 << 20,
        "{written} bytes read before the refusal"
    );
    // JSON documents past the runs of one input, from a stream: refused
    // at the document past the ceiling, counted as they come.
    assert!(!archive.exists() || n_runs(&archive) == 0);
}

#[test]
fn runs_are_stored_batch_by_batch_and_a_refusal_keeps_the_batches_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let n_batch = archive::import::IMPORT_BATCH_RUNS;
    let runs: Vec<RunRecord> = (0..n_batch + 10)
        .map(|idx| {
            RecordBuilder::new(TestKind::TcpStream)
                .commit("bbbb2222")
                .label("many")
                .throughput(10.0, 1e9 + idx as f64)
                .build()
        })
        .collect();
    let mut input = json_lines(&runs);
    input.push_str("{\"schema\":\"netbisect.run/1.3\",\"not\":\"a record\"}\n");
    let bad_line = runs.len() + 1;
    for from_file in [false, true] {
        let file = dir.path().join("runs.jsonl");
        std::fs::write(&file, &input).unwrap();
        let (code, stdout, stderr) = if from_file {
            run(
                &archive,
                &["archive", "import", file.to_str().unwrap()],
                b"",
            )
        } else {
            run(&archive, &["archive", "import", "-"], input.as_bytes())
        };
        assert_eq!(code, 2, "{stdout}{stderr}");
        let added = if from_file { 0 } else { n_batch };
        assert!(
            stderr.contains(&format!(
                ": line {bad_line}: invalid run record: invalid record: missing field"
            )) && stderr.contains(&format!(
                "; the {n_batch} runs read before it were stored in batches ({added} added); \
                 importing it again once fixed adds what is missing"
            )),
            "{stderr}"
        );
        // The first batch is in; the runs after it, in the batch the
        // refusal cut, are not.
        assert_eq!(n_runs(&archive), n_batch);
    }
    // Fixed, the input adds what is missing.
    let fixed = json_lines(&runs);
    let (code, stdout, stderr) = run(&archive, &["archive", "import", "-"], fixed.as_bytes());
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(&format!(
            "-: {} runs (run records), 10 added, {n_batch} already present",
            runs.len()
        )),
        "{stdout}"
    );
}

#[test]
fn a_histogram_beyond_the_layout_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let buckets: Vec<[u64; 2]> = (1..=300_000).map(|value| [1_000_000 + value, 1]).collect();
    let record = RecordBuilder::new(TestKind::TcpRr)
        .samples(&[5e4])
        .each_iteration(|_, iteration| {
            iteration.latency_histogram = Some(run_record::record::LatencyHistogram {
                sub_buckets: 64,
                count: buckets.len() as u64,
                min_ns: 1_000_001,
                max_ns: 1_300_000,
                buckets: buckets.clone(),
            });
        })
        .build();
    let (code, _, stderr) = run(
        &archive,
        &["archive", "import", "-"],
        json_lines(&[record]).as_bytes(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "-: line 1: invalid run record: $.iterations[0].latency_histogram has 300000 \
             latency buckets, more than the 2240 a record may have; nothing imported from it"
        ),
        "{stderr}"
    );
}
