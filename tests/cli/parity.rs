//! netperf parity: the first burst (`-b`) and netperf's command-line
//! shape (global options before `--`, test-specific ones after).

use crate::compare::{RunOf, import, stdout_of};
use crate::netbisect_with;
use bench_core::spec::TestKind;
use serde_json::Value;
use std::path::Path;

/// Runs `bench` with `args` against the in-process server and returns
/// its record.
fn bench_json(archive: &Path, args: &[&str]) -> Value {
    let text = stdout_of(
        netbisect_with(archive)
            .arg("bench")
            .args(args)
            .arg("--json"),
    );
    serde_json::from_str(&text).unwrap()
}

fn stored_runs(archive: &Path) -> usize {
    let text = stdout_of(netbisect_with(archive).args(["archive", "list", "--json"]));
    serde_json::from_str::<Vec<Value>>(&text).unwrap().len()
}

/// Runs `bench` expecting a usage error; returns stderr.
fn refused(archive: &Path, args: &[&str]) -> String {
    let output = netbisect_with(archive)
        .arg("bench")
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(output.stdout.is_empty(), "{args:?}");
    stderr
}

#[test]
fn a_first_burst_raises_the_rate_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let mut best = [0.0f64; 3];
    // Two short rounds, interleaved so that a slow moment of a loaded
    // host does not fall on one burst only; each burst keeps its best.
    for _ in 0..2 {
        for (idx, burst) in ["0", "4", "16"].into_iter().enumerate() {
            let record = bench_json(
                &archive,
                &["-t", "TCP_RR", "-l", "0.2", "-T", "0,1", "-b", burst],
            );
            let recorded = record["spec"]["first_burst"].as_u64().unwrap_or(0);
            assert_eq!(recorded.to_string(), burst);
            let rate = record["summary"]["transaction_rate"]["mean"]
                .as_f64()
                .unwrap();
            best[idx] = best[idx].max(rate);
        }
    }
    let [none, four, sixteen] = best;
    // Up to 17 transactions in flight amortise each round trip: netperf's
    // documentation shows the rate rising several-fold. Only wide margins
    // are asserted, and "monotone" within noise.
    assert!(four > 1.5 * none, "-b 4: {four} vs -b 0: {none}");
    assert!(sixteen > 2.0 * none, "-b 16: {sixteen} vs -b 0: {none}");
    assert!(sixteen > 0.8 * four, "-b 16: {sixteen} vs -b 4: {four}");
    assert_eq!(stored_runs(&archive), 6);
}

#[test]
fn a_burst_where_there_is_nothing_to_burst_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    for test in ["TCP_STREAM", "TCP_MAERTS", "UDP_STREAM"] {
        let stderr = refused(&archive, &["-t", test, "-b", "4", "-l", "0.1"]);
        assert!(
            stderr.contains(&format!(
                "a first burst (-b) needs a request/response test; {test} is a stream test"
            )),
            "{stderr}"
        );
    }
    let stderr = refused(&archive, &["-t", "UDP_RR", "-b", "4", "-l", "0.1"]);
    assert!(
        stderr.contains("a first burst (-b) other than on TCP_RR is not supported yet"),
        "{stderr}"
    );
    assert!(!archive.exists() || stored_runs(&archive) == 0);
}

#[test]
fn compare_never_pairs_runs_of_different_bursts() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let samples = [10_000.0, 10_100.0, 9_900.0];
    let mut base = RunOf::stream("aaaa1111", "2026-01-01T00:00:00Z", &samples);
    base.test = TestKind::TcpRr;
    let mut patched = RunOf::stream("bbbb2222", "2026-01-02T00:00:00Z", &samples);
    patched.test = TestKind::TcpRr;
    let mut burst = patched.record();
    burst.spec.first_burst = 16;
    burst.seal().unwrap();
    import(&archive, &[base.record(), burst]);
    let text = stdout_of(netbisect_with(&archive).args([
        "compare",
        "commit:aaaa1111",
        "commit:bbbb2222",
        "--json",
    ]));
    let comparison: Value = serde_json::from_str(&text).unwrap();
    // Nothing in common: both runs stand unmatched, each with its burst.
    assert_eq!(comparison["groups"], serde_json::json!([]), "{text}");
    let unmatched = comparison["unmatched"].as_array().unwrap();
    let bursts: Vec<&Value> = unmatched
        .iter()
        .map(|u| &u["spec"]["first_burst"])
        .collect();
    assert_eq!(bursts, [&Value::Null, &serde_json::json!(16)], "{text}");
    // The table names the burst of the side that has one.
    let table =
        stdout_of(netbisect_with(&archive).args(["compare", "commit:aaaa1111", "commit:bbbb2222"]));
    assert!(table.contains("TCP_RR -r 1,1 -b 16"), "{table}");
}
