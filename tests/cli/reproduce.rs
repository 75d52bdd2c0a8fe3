//! Reproduce lines pasted back: each kind of line netbisect prints for
//! running runs again (compare's `netbisect bench` lines of each
//! configuration, the site's "Runs again with"), run through `sh -c` with
//! `netbisect` the real binary on the test's archive, measures the same
//! configurations again on loopback: the same config keys, the testbed
//! kept, the axes' values as given. (The kinds that boot kernels, `ab`'s
//! line printed by `ab`, by `compare` and by the site, are pasted back in
//! the VM tests: the same experiment id, no boot.)

use crate::command_lines::{printed_commands, site_commands};
use crate::compare::{netbisect, stdout_of};
use std::collections::BTreeSet;
use std::path::Path;

/// Runs `line` as a user pasting it would: through `sh -c`, with the
/// directory of the binary first on `PATH` and the archive `archive`.
pub fn paste(archive: &Path, line: &str) -> std::process::Output {
    let binary = Path::new(env!("CARGO_BIN_EXE_netbisect"));
    let path = std::env::join_paths(
        std::iter::once(binary.parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(line)
        .env("PATH", path)
        .env("NETBISECT_ARCHIVE", archive)
        .env("TMPDIR", archive.parent().unwrap())
        .env("XDG_CACHE_HOME", archive.parent().unwrap())
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .current_dir(archive.parent().unwrap())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{line}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The (config key, testbed) of every archived run.
fn configurations(archive: &Path) -> Vec<(String, String)> {
    let text = stdout_of(netbisect(archive).args(["archive", "export"]));
    text.lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                record["config_key"].as_str().unwrap().to_string(),
                record["testbed"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn bench_lines_of_compare_and_of_the_site_measure_the_same_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    // Values out of their sorted order, and a testbed with a space: a
    // line that sorted or dropped them would measure something else.
    for label in ["base", "next"] {
        stdout_of(netbisect(&archive).args([
            "bench",
            "-t",
            "TCP_RR",
            "-l",
            "0.1",
            "--sweep",
            "r=64,1",
            "--testbed",
            "lab a",
            "--label",
            label,
        ]));
    }
    let measured = configurations(&archive);
    assert_eq!(measured.len(), 4);
    let keys: BTreeSet<(String, String)> = measured.iter().cloned().collect();
    assert_eq!(keys.len(), 2);

    let email =
        stdout_of(netbisect(&archive).args(["compare", "label:base", "label:next", "--email"]));
    let lines: Vec<String> = printed_commands(&email)
        .into_iter()
        .filter(|line| line.starts_with("netbisect bench "))
        .collect();
    assert_eq!(lines.len(), 2, "{email}");
    for line in &lines {
        paste(&archive, line);
    }
    let after = configurations(&archive);
    assert_eq!(after.len(), 6);
    for configuration in &after[4..] {
        assert!(
            keys.contains(configuration),
            "{configuration:?} of {lines:?}"
        );
    }

    let site = dir.path().join("site");
    stdout_of(netbisect(&archive).arg("publish").arg(&site));
    // Each configuration's line, and each run's own on the page of its
    // point (in time order, a point per run: six), with its label where
    // it has one (the four measured by `bench`, not the two pasted).
    let lines: Vec<String> = site_commands(&site)
        .into_iter()
        .filter(|line| line.starts_with("netbisect bench "))
        .collect();
    assert_eq!(lines.len(), 2 + 6, "{lines:?}");
    let of_runs = lines
        .iter()
        .filter(|line| line.contains(" --label "))
        .count();
    assert_eq!(of_runs, 4, "{lines:?}");
    for line in &lines {
        paste(&archive, line);
    }
    let after = configurations(&archive);
    assert_eq!(after.len(), 6 + 8);
    for configuration in &after[6..] {
        assert!(
            keys.contains(configuration),
            "{configuration:?} of {lines:?}"
        );
    }
}
