//! `netbisect plan`: the estimate from archived runs of real loopback
//! traffic (only those of one config_key), from given figures, the
//! warning and `--strict` below the bisection's accuracy target, and the
//! refusal without noise.

use super::{check_mailing_list_rules, netbisect_with};
use run_record::record::RunRecord;

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
    // Every documented simulation ran.
    assert_eq!(estimate["n_trials"], 300);
    let config_key = plan["config_key"].as_str().unwrap().to_string();
    let cv = estimate["cv_pct"].as_f64().unwrap();

    // An older run of the same spec and testbed in another environment,
    // a tenfold rate: another config_key, so it adds nothing to the noise.
    let exported = super::compare::stdout_of(
        netbisect_with(&archive).args(["archive", "export", "--limit", "1"]),
    );
    let mut other = RunRecord::from_slice(exported.lines().next().unwrap().as_bytes()).unwrap();
    other.started_at = "2001-01-01T00:00:00Z".to_string();
    other.finished_at = "2001-01-01T00:00:01Z".to_string();
    other
        .env
        .local
        .sysctls
        .insert("net.core.somaxconn".to_string(), "7".to_string());
    for iteration in &mut other.iterations {
        iteration.transaction_rate = iteration.transaction_rate.map(|rate| rate * 10.0);
    }
    other.seal().unwrap();
    assert_ne!(other.config_key, config_key);
    super::compare::import(&archive, &[other]);
    let output = netbisect_with(&archive)
        .args(["--json", "plan", "--test", "-t TCP_RR -l 0.2"])
        .args(["--effect", "5", "--commits", "16"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let again: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(again["n_archived_runs"], 3, "{again}");
    assert_eq!(again["config_key"], config_key.as_str());
    assert_eq!(again["estimate"]["cv_pct"].as_f64().unwrap(), cv);
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
fn plan_with_jobs_prints_the_rounds_and_times_them() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let plan_of = |jobs: &str| -> serde_json::Value {
        let output = netbisect_with(&archive)
            .args([
                "--json",
                "plan",
                "--test",
                "-t TCP_STREAM -l 10",
                "--effect",
                "5",
            ])
            .args([
                "--commits",
                "256",
                "--cv",
                "2",
                "--seconds",
                "12",
                "--jobs",
                jobs,
            ])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let one = plan_of("1");
    let four = plan_of("4");
    let (one, four) = (&one["estimate"], &four["estimate"]);
    assert_eq!(one["jobs"], 1);
    assert_eq!(four["jobs"], 4);
    let mean = |estimate: &serde_json::Value, key: &str| estimate[key].as_f64().unwrap();
    assert_eq!(mean(one, "mean_rounds"), mean(one, "mean_measurements"));
    assert!(
        mean(four, "mean_rounds") < 0.5 * mean(one, "mean_rounds"),
        "{one} {four}"
    );
    assert!(mean(four, "mean_measurements") >= 0.9 * mean(one, "mean_measurements"));
    assert!((mean(four, "mean_seconds") - 12.0 * mean(four, "mean_rounds")).abs() < 1e-6);

    let output = netbisect_with(&archive)
        .args(["plan", "--test", "-t TCP_STREAM -l 10", "--effect", "5"])
        .args(["--commits", "64", "--cv", "2", "--jobs", "3"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    check_mailing_list_rules(&text);
    let rounds = text
        .lines()
        .find(|line| line.starts_with("  rounds "))
        .unwrap();
    assert!(rounds.ends_with("   3 at once"), "{text}");
    let output = netbisect_with(&archive)
        .args([
            "plan",
            "--test",
            "-t TCP_STREAM",
            "--effect",
            "5",
            "--cv",
            "2",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains("rounds"), "{text}");

    for (jobs, says) in [("0", "at least 1"), ("65", "above the 64")] {
        let output = netbisect_with(&archive)
            .args([
                "plan",
                "--test",
                "-t TCP_STREAM",
                "--effect",
                "5",
                "--cv",
                "2",
            ])
            .args(["--jobs", jobs])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{stderr}");
    }
}

#[test]
fn plan_warns_below_its_accuracy_target_and_strict_fails() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    // A 2% change in 27% noise: refused at the ends almost always.
    let args = [
        "plan",
        "--test",
        "-t TCP_RR -l 1",
        "--effect",
        "2",
        "--cv",
        "27",
        "--commits",
        "16",
    ];
    let output = netbisect_with(&archive).args(args).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("netbisect: warning: "), "{stderr}");
    assert!(
        stderr.contains("below the 99.5% a bisection aims for"),
        "{stderr}"
    );
    let output = netbisect_with(&archive)
        .args(args)
        .args(["--strict", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(5), "{output:?}");
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let estimate = &plan["estimate"];
    assert_eq!(plan["target_pct"], 99.5);
    assert!(estimate["correct_pct"].as_f64().unwrap() < 99.5, "{plan}");
    assert!(estimate["refused_pct"].as_f64().unwrap() > 50.0, "{plan}");
    // The mean and the 95th percentile are of the same simulations.
    let mean = estimate["mean_measurements"].as_f64().unwrap();
    let max = estimate["max_measurements"].as_f64().unwrap();
    assert!(mean <= max, "{plan}");
    // A clear change in little noise: no warning, and --strict passes.
    let output = netbisect_with(&archive)
        .args(["plan", "--test", "-t TCP_RR -l 1", "--effect", "10"])
        .args(["--cv", "1", "--commits", "16", "--strict"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(output.stderr.is_empty(), "{output:?}");
}

#[test]
fn plan_with_no_effect_or_no_noise_is_a_usage_error_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    for (args, option) in [
        (["--effect", "0", "--cv", "2"], "--effect"),
        (["--effect", "5", "--cv", "0"], "--cv"),
    ] {
        let output = netbisect_with(&archive)
            .args(["plan", "--test", "-t TCP_RR"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("'{option} <PCT>'")), "{stderr}");
    }
    // Archived runs whose figures do not vary show no noise either.
    let exported = {
        netbisect_with(&archive)
            .args(["bench", "-t", "TCP_RR", "-l", "0.1"])
            .assert()
            .success();
        super::compare::stdout_of(netbisect_with(&archive).args(["archive", "export"]))
    };
    let mut copy = RunRecord::from_slice(exported.lines().next().unwrap().as_bytes()).unwrap();
    copy.subject.label = Some("copy".to_string());
    copy.seal().unwrap();
    super::compare::import(&archive, &[copy]);
    let output = netbisect_with(&archive)
        .args(["plan", "--test", "-t TCP_RR -l 0.1", "--effect", "5"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("give --cv"), "{stderr}");
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

#[test]
fn plan_refuses_ranges_past_its_limit_before_simulating() {
    let dir = tempfile::tempdir().unwrap();
    for commits in ["18446744073709551615", "20481"] {
        let output = netbisect_with(&dir.path().join("archive.db"))
            .args(["plan", "--test", "-t TCP_RR", "--effect", "5", "--cv", "2"])
            .args(["--seconds", "10", "--commits", commits])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{commits}: {stderr}");
        assert!(stderr.contains("at most 20480"), "{commits}: {stderr}");
    }
}
