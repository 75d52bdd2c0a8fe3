//! `--template-dir`, `templates list` and `templates dump` end to end.

use crate::netbisect;

#[test]
fn a_user_template_replaces_the_builtin_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("run.j2"),
        "{{ record.spec.test }} {{ record.summary.transaction_rate.mean > 0 }}\n",
    )
    .unwrap();
    let output = netbisect()
        .args(["bench", "-t", "TCP_RR", "-l", "0.1", "--no-archive"])
        .arg("--template-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "TCP_RR True\n");

    let output = netbisect()
        .args(["templates", "list"])
        .env("NETBISECT_TEMPLATE_DIR", dir.path())
        .output()
        .unwrap();
    let listing = String::from_utf8(output.stdout).unwrap();
    let run_line = listing
        .lines()
        .find(|line| line.starts_with("run "))
        .unwrap();
    assert!(run_line.ends_with("run.j2"), "{run_line}");
    assert!(!run_line.contains("built-in"), "{run_line}");
    let env_line = listing
        .lines()
        .find(|line| line.starts_with("env "))
        .unwrap();
    assert!(env_line.contains("built-in"), "{env_line}");
}

#[test]
fn a_broken_user_template_is_named_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("env.j2");
    std::fs::write(&path, "Kernel: {{ env.kernel_release }}\n{% for x in %}\n").unwrap();
    let output = netbisect()
        .arg("env")
        .arg("--template-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!("{}: line 2:", path.display())),
        "{stderr}"
    );
}

#[test]
fn dump_prints_the_builtin_source() {
    let output = netbisect()
        .args(["templates", "dump", "env"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let source = String::from_utf8(output.stdout).unwrap();
    assert_eq!(source, include_str!("../../templates/env.j2"));
    let output = netbisect()
        .args(["templates", "dump", "no-such-template"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}
