//! `netbisect plan`: the estimate from archived runs of real loopback
//! traffic, from given figures, and the refusal without noise.

use super::{check_mailing_list_rules, netbisect_with};

#[test]
fn plan_reads_the_noise_of_archived_runs() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    for _ in 0..3 {
        netbisect_with(&archive)
            .args(["bench", "-t", "TCP_RR", "-l", "0.2"])
            .assert()
            .success();
    }
    let output = netbisect_with(&archive)
        .args(["--json", "plan", "--test", "-t TCP_RR -l 0.2"])
        .args(["--effect", "5", "--commits", "16"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(plan["metric"], "transaction_rate");
    assert_eq!(plan["noise_from"], "archive");
    assert_eq!(plan["seconds_from"], "archive");
    assert_eq!(plan["n_archived_runs"], 3);
    let estimate = &plan["estimate"];
    assert_eq!(estimate["n_commits"], 16);
    assert!(estimate["cv_pct"].as_f64().unwrap() >= 0.0);
    let seconds = estimate["seconds_per_run"].as_f64().unwrap();
    assert!(seconds > 0.1 && seconds < 1.0, "{seconds}");
    assert!(estimate["mean_measurements"].as_f64().unwrap() > 0.0);
}

#[test]
fn plan_with_given_figures_prints_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let output = netbisect_with(&dir.path().join("archive.db"))
        .args(["plan", "--test", "-t TCP_STREAM -l 10", "--effect", "5"])
        .args(["--commits", "32", "--cv", "2", "--seconds", "12"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    check_mailing_list_rules(&text);
    assert!(
        text.contains("Bisection plan: TCP_STREAM, throughput_bps"),
        "{text}"
    );
    assert!(text.contains("noise (CV)        2.00% (given)"), "{text}");
    assert!(text.contains("one run           12.0 s (given)"), "{text}");
}

#[test]
fn plan_without_noise_exits_with_2() {
    let dir = tempfile::tempdir().unwrap();
    let output = netbisect_with(&dir.path().join("archive.db"))
        .args(["plan", "--test", "-t TCP_RR", "--effect", "5"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--cv"));
}
