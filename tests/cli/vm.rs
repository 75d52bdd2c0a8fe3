//! Kernels under test: `bench --kernel`, `ab` and `bisect --kernel` boot
//! real Debian kernels under qemu (TCG where KVM does not work) and test
//! inside the guests.
//!
//! These tests need qemu-system-x86_64, a static busybox and the two
//! kernels below.
//! Without them they say why and pass, unless the slow tests are switched
//! on (`NETBISECT_SLOW_TESTS=1`, as CI runs them): then a missing tool
//! fails the test (`test_fixtures::skip`). The slowest tests (`ab`, the bisection over VM boots,
//! the KVM probe, interruptions) only run with that switch.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};
use test_fixtures::git::GitRepo;
use test_fixtures::skip::{skip, unless_slow_tests};

const BINARY: &str = env!("CARGO_BIN_EXE_netbisect");
/// Two releases of Debian's generic flavour (9p and virtio as modules).
const KERNEL_OLD: &str = "/boot/vmlinuz-6.1.0-55-amd64";
const KERNEL_NEW: &str = "/boot/vmlinuz-6.1.0-57-amd64";
const RELEASE_OLD: &str = "6.1.0-55-amd64";
const RELEASE_NEW: &str = "6.1.0-57-amd64";
/// Generous: TCG boots on a loaded two-core host.
const TIMEOUT: &str = "400";

/// The VM tests share the host's cores: each holds this lock for reading
/// while its guest runs; a test that runs a guest on every core holds it
/// alone, so that no guest of another test starves under TCG.
static GUESTS: RwLock<()> = RwLock::new(());

fn one_guest() -> RwLockReadGuard<'static, ()> {
    GUESTS.read().unwrap_or_else(PoisonError::into_inner)
}

fn every_core() -> RwLockWriteGuard<'static, ()> {
    GUESTS.write().unwrap_or_else(PoisonError::into_inner)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// True when guests can be booted here; else says why (and fails when
/// the slow switch demands the VM tests).
fn vm_ready() -> bool {
    let mut missing = Vec::new();
    if !on_path("qemu-system-x86_64") {
        missing.push("qemu-system-x86_64".to_string());
    }
    if !Path::new("/bin/busybox").exists() && !on_path("busybox") {
        missing.push("busybox (busybox-static)".to_string());
    }
    for kernel in [KERNEL_OLD, KERNEL_NEW] {
        if !Path::new(kernel).exists() {
            missing.push(kernel.to_string());
        }
    }
    if missing.is_empty() {
        return true;
    }
    skip(format!("missing {}", missing.join(", ")));
    false
}

/// True when a slow VM test may run: the slow tests are switched on and
/// guests can be booted; else says why.
fn slow() -> bool {
    !unless_slow_tests() && vm_ready()
}

fn run(archive: &Path, args: &[&str]) -> (i32, String, String) {
    let output = crate::netbisect_with(archive)
        .args(args)
        .env("TMPDIR", archive.parent().unwrap())
        .env("XDG_CACHE_HOME", archive.parent().unwrap())
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// No process of this machine has `needle` on its command line, at the
/// latest a few seconds from now (a killed qemu takes a moment to free
/// its guest's memory and go).
fn nothing_left_running(needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_with(needle);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "left running: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn fake_kernel(path: &Path) {
    let mut bytes = vec![0u8; 0x1000];
    bytes[0x202..0x206].copy_from_slice(b"HdrS");
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn vm_options_need_a_kernel_and_bad_images_are_refused_before_boot() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let (code, _, stderr) = run(&archive, &["bench", "--vm-cpus", "2"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("need --kernel"), "{stderr}");

    let missing = dir.path().join("no-such-bzImage");
    let (code, _, stderr) = run(&archive, &["bench", "--kernel", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");

    let script = dir.path().join("not-a-kernel");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let (code, _, stderr) = run(&archive, &["bench", "--kernel", script.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not a kernel image"), "{stderr}");

    let image = dir.path().join("bzImage");
    fake_kernel(&image);
    let output = crate::netbisect_with(&archive)
        .args(["bench", "--kernel", image.to_str().unwrap()])
        .env("PATH", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("qemu-system-x86_64 not found"), "{stderr}");
    assert!(
        stderr.contains("apt-get install qemu-system-x86"),
        "{stderr}"
    );

    for args in [
        vec!["--vm-sysctl", "tcp_rmem"],
        vec!["--vm-memory", "lots"],
        vec!["-H", "127.0.0.1"],
    ] {
        let mut full = vec!["bench", "--kernel", image.to_str().unwrap()];
        full.extend(args.iter().copied());
        let (code, _, stderr) = run(&archive, &full);
        assert_eq!(code, 2, "{args:?}: {stderr}");
    }
    let (code, _, stderr) = run(
        &archive,
        &[
            "ab",
            "--kernel-a",
            image.to_str().unwrap(),
            "--kernel-b",
            missing.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
}

#[test]
fn directories_link_loops_huge_files_and_long_command_lines_exit_2_before_boot() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let loop_path = dir.path().join("loop");
    std::os::unix::fs::symlink(&loop_path, &loop_path).unwrap();
    // A file with a bzImage's header, 1.5 GB long (sparse): refused from
    // its size, before it is read.
    let huge = dir.path().join("huge-bzImage");
    fake_kernel(&huge);
    std::fs::File::options()
        .write(true)
        .open(&huge)
        .unwrap()
        .set_len(1536 << 20)
        .unwrap();
    for (path, expected) in [
        (dir.path().to_path_buf(), "is a directory"),
        (loop_path.clone(), "loop of symbolic links"),
        (huge.clone(), "over the 256 MiB"),
    ] {
        let (code, _, stderr) = run(&archive, &["bench", "--kernel", path.to_str().unwrap()]);
        assert_eq!(code, 2, "{}: {stderr}", path.display());
        assert!(stderr.contains(expected), "{}: {stderr}", path.display());
    }

    // The fake image's header names no limit: 2048 bytes is assumed.
    let image = dir.path().join("bzImage");
    fake_kernel(&image);
    let long = format!("nb.pad={}", "x".repeat(2048));
    let (code, _, stderr) = run(
        &archive,
        &[
            "bench",
            "--kernel",
            image.to_str().unwrap(),
            "--vm-append",
            &long,
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("over the 2048"), "{stderr}");
    assert!(!archive.exists());
    // Debian's kernels say 2047 in their setup header.
    if Path::new(KERNEL_OLD).exists() {
        let fits = format!("nb.pad={}", "x".repeat(2047 - 7 - 1 - BASE_APPEND_LEN));
        let over = format!("{fits}x");
        let (code, _, stderr) = run(
            &archive,
            &["bench", "--kernel", KERNEL_OLD, "--vm-append", &over],
        );
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("2048 bytes, over the 2047"), "{stderr}");
    }
}

/// The boot directories (`netbisect-vm-*`) in `dir`.
fn boot_dirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("netbisect-vm-"))
        })
        .collect()
}

#[test]
fn a_relative_image_boots_compressed_and_cleans_what_a_killed_run_left() {
    if !slow() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let mut killed = std::process::Command::new(BINARY)
        .args([
            "bench",
            "--kernel",
            KERNEL_OLD,
            "--vm-accel",
            "tcg",
            "-l",
            "0.5",
        ])
        .env("NETBISECT_ARCHIVE", &archive)
        .env("TMPDIR", dir.path())
        .env("XDG_CACHE_HOME", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while boot_dirs(dir.path()).is_empty() {
        assert!(Instant::now() < deadline, "no boot directory appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    killed.kill().unwrap();
    killed.wait().unwrap();
    nothing_left_running(&format!("{}/netbisect-vm-", dir.path().display()));
    assert_eq!(
        boot_dirs(dir.path()).len(),
        1,
        "kill -9 left no directory to clean"
    );

    // Without a cache directory the image boots compressed, by the path
    // given relative to where netbisect runs, not to where qemu does.
    let image = Path::new(KERNEL_OLD);
    let output = crate::netbisect_with(&archive)
        .args(["bench", "--kernel"])
        .arg(image.file_name().unwrap())
        .args(["--vm-accel", "tcg", "--vm-timeout", TIMEOUT, "-l", "0.5"])
        .current_dir(image.parent().unwrap())
        .env("TMPDIR", dir.path())
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("booting the compressed image"), "{stderr}");
    assert_eq!(boot_dirs(dir.path()), Vec::<PathBuf>::new());
}

/// The length of the runner's own part of the kernel command line
/// ("console=ttyS0 panic=-1 no_timer_check").
const BASE_APPEND_LEN: usize = 37;

/// The record's guest-side facts.
fn guest_facts(record: &Value) -> (String, String, Value) {
    (
        record["subject"]["kernel_release"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        record["env"]["local"]["kernel_release"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        record["env"]["vm"].clone(),
    )
}

#[test]
fn a_kernel_is_booted_and_its_record_comes_back_to_the_archive() {
    if !vm_ready() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let (code, stdout, stderr) = run(
        &archive,
        &[
            "bench",
            "--json",
            "--kernel",
            KERNEL_OLD,
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "-l",
            "0.5",
            "--label",
            "old",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let record: Value = serde_json::from_str(stdout.trim()).unwrap();
    let (subject_release, env_release, vm) = guest_facts(&record);
    assert_eq!(subject_release, RELEASE_OLD);
    assert_eq!(env_release, RELEASE_OLD);
    assert_eq!(vm["runner"], "qemu");
    assert!(vm["runner_version"].as_str().is_some_and(|v| !v.is_empty()));
    assert_eq!(vm["accelerator"], "tcg");
    assert_eq!(vm["network"], "loopback");
    assert_eq!(vm["vcpus"], 2);
    assert!(vm["boot_to_test_s"].as_f64().unwrap() > 0.0);
    assert_eq!(record["testbed"], "vm-loopback");
    let mean = &record["summary"]["throughput_bps"]["mean"];
    assert!(mean.as_f64().unwrap() > 0.0, "{}", record["summary"]);
    // The record is archived on the host, byte for byte.
    let id = record["id"].as_str().unwrap();
    let (code, shown, stderr) = run(&archive, &["--json", "archive", "show", id]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(shown.trim(), stdout.trim());
    let (code, checked, stderr) = run(&archive, &["archive", "check"]);
    assert_eq!(code, 0, "{checked}{stderr}");
    // The kernel was unpacked once, natively, into the cache, beside the
    // hash it is checked by before each boot, and is booted from there.
    let mut cached: Vec<_> = std::fs::read_dir(dir.path().join("netbisect/vmlinux"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    cached.sort();
    assert_eq!(cached.len(), 2, "{cached:?}");
    assert!(cached[0].starts_with(RELEASE_OLD), "{cached:?}");
    assert_eq!(cached[1], format!("{}.blake3", cached[0]), "{cached:?}");
    // As a table, a run the guest finished and the host stored is not
    // said to be "not stored".
    let (code, table, stderr) = run(
        &archive,
        &[
            "bench",
            "--kernel",
            KERNEL_OLD,
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "-l",
            "0.3",
            "--label",
            "old",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(table.contains(", run "), "{table}");
    assert!(!table.contains("not stored"), "{table}");
    let (code, listed, stderr) = run(&archive, &["archive", "list"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        listed.lines().filter(|line| line.contains("old")).count(),
        2,
        "{listed}"
    );
}

#[test]
fn a_nic_pair_in_the_guest_carries_the_test_with_the_guest_sysctls() {
    if !vm_ready() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let settings = dir.path().join("guest.conf");
    std::fs::write(&settings, "sysctl net.core.rmem_max=4194304\n").unwrap();
    let (code, stdout, stderr) = run(
        &archive,
        &[
            "bench",
            "--json",
            "--kernel",
            KERNEL_NEW,
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "--vm-net",
            "pair",
            "--vm-settings",
            settings.to_str().unwrap(),
            "--vm-sysctl",
            "net.ipv4.tcp_wmem=4096 65536 1048576",
            "--vm-cpus",
            "1",
            "-l",
            "0.5",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let record: Value = serde_json::from_str(stdout.trim()).unwrap();
    let (release, _, vm) = guest_facts(&record);
    assert_eq!(release, RELEASE_NEW);
    assert_eq!(vm["network"], "pair");
    assert_eq!(vm["vcpus"], 1);
    assert!(
        vm["network_backend"]
            .as_str()
            .unwrap()
            .contains("virtio-net")
    );
    assert_eq!(vm["sysctls"]["net.core.rmem_max"], "4194304");
    let local = &record["env"]["local"];
    assert_eq!(local["sysctls"]["net.ipv4.tcp_wmem"], "4096 65536 1048576");
    assert_eq!(local["sysctls"]["net.core.rmem_max"], "4194304");
    assert_eq!(local["interface"]["driver"], "virtio_net", "{local}");
    assert!(
        record["endpoint"]["host"]
            .as_str()
            .unwrap()
            .starts_with("10.55.0.")
    );
}

/// A network namespace of the test's own, deleted when dropped: the host
/// mode's tap device lives there, so no traffic reaches any other
/// address of this machine.
struct Namespace(String);

impl Namespace {
    fn new(tag: &str) -> Option<Namespace> {
        let name = format!("netbisect-{tag}-{}", std::process::id());
        let made = std::process::Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .is_ok_and(|output| output.status.success());
        if !made {
            skip("cannot make a network namespace (root?)");
            return None;
        }
        Some(Namespace(name))
    }

    /// Runs `ip ARGS` inside the namespace and expects success.
    fn ip(&self, args: &[&str]) {
        let output = std::process::Command::new("ip")
            .args(["-n", &self.0])
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Runs netbisect inside the namespace.
    fn netbisect(&self, archive: &Path, args: &[&str]) -> (i32, String, String) {
        let output = std::process::Command::new("ip")
            .args(["netns", "exec", &self.0, BINARY])
            .args(args)
            .env("NETBISECT_ARCHIVE", archive)
            .env_remove("NETBISECT_TEMPLATE_DIR")
            .env("TMPDIR", archive.parent().unwrap())
            .env("XDG_CACHE_HOME", archive.parent().unwrap())
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "delete", &self.0])
            .output();
    }
}

#[test]
fn host_mode_tests_the_guest_against_a_server_on_a_tap_of_this_host() {
    if !vm_ready() {
        return;
    }
    let _guests = one_guest();
    let Some(namespace) = Namespace::new("vmtap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let host_mode = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--json",
            "--kernel",
            KERNEL_OLD,
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "--vm-net",
            "host",
            "-l",
            "0.5",
        ];
        args.extend_from_slice(extra);
        namespace.netbisect(&archive, &args)
    };
    // Refused before anything boots: no tap named, no such device, a
    // tap that is down, a tap without an address.
    let (code, _, stderr) = host_mode(&[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("needs --vm-tap"), "{stderr}");
    let (code, _, stderr) = host_mode(&["--vm-tap", "nbtap0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no such device"), "{stderr}");
    namespace.ip(&["tuntap", "add", "dev", "nbtap0", "mode", "tap"]);
    let (code, _, stderr) = host_mode(&["--vm-tap", "nbtap0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("ip link set nbtap0 up"), "{stderr}");
    namespace.ip(&["link", "set", "nbtap0", "up"]);
    let (code, _, stderr) = host_mode(&["--vm-tap", "nbtap0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no IPv4 address"), "{stderr}");
    let (code, _, stderr) = host_mode(&["--vm-tap", "lo"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not a tap device"), "{stderr}");

    namespace.ip(&["addr", "add", "10.77.0.1/24", "dev", "nbtap0"]);
    let (code, stdout, stderr) = host_mode(&["--vm-tap", "nbtap0"]);
    assert_eq!(code, 0, "{stderr}");
    let record: Value = serde_json::from_str(stdout.trim()).unwrap();
    let (release, _, vm) = guest_facts(&record);
    assert_eq!(release, RELEASE_OLD);
    assert_eq!(vm["network"], "host");
    assert_eq!(vm["network_backend"], "virtio-net, tap nbtap0");
    assert_eq!(record["endpoint"]["host"], "10.77.0.1", "{record}");
    assert_eq!(record["env"]["local"]["interface"]["driver"], "virtio_net");
    assert!(
        record["summary"]["throughput_bps"]["mean"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn a_guest_past_its_timeout_is_killed_with_its_console_kept() {
    if !vm_ready() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let started = Instant::now();
    let (code, _, stderr) = run(
        &archive,
        &[
            "bench",
            "--kernel",
            KERNEL_OLD,
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            "4",
            "-l",
            "0.5",
        ],
    );
    assert_eq!(code, 3, "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(stderr.contains("did not finish within 4 s"), "{stderr}");
    let path = stderr
        .split_whitespace()
        .find(|word| word.contains("netbisect-console-"))
        .map(|word| PathBuf::from(word.trim_end_matches([';', ')', ','])))
        .unwrap_or_else(|| panic!("no console path in {stderr}"));
    let console = std::fs::read_to_string(&path).unwrap();
    assert!(console.lines().count() <= 40, "{console}");
    assert!(path.starts_with(dir.path()));
    nothing_left_running(&format!("{}/netbisect-vm-", dir.path().display()));
}

#[test]
fn a_guest_that_cannot_mount_the_host_root_says_why_and_exits_3() {
    if !vm_ready() {
        return;
    }
    let _guests = one_guest();
    // The kernel refuses to load 9p: the guest's init cannot mount this
    // host's root, says so on the console and powers off.
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let (code, _, stderr) = run(
        &archive,
        &[
            "bench",
            "--kernel",
            KERNEL_OLD,
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "--vm-append",
            "module_blacklist=9p",
            "-l",
            "0.5",
        ],
    );
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("cannot mount the host root over 9p"),
        "{stderr}"
    );
    assert!(stderr.contains("CONFIG_9P_FS"), "{stderr}");
    let path = stderr
        .split_whitespace()
        .find(|word| word.contains("netbisect-console-"))
        .map(|word| PathBuf::from(word.trim_end_matches([';', ')', ','])))
        .unwrap_or_else(|| panic!("no console path in {stderr}"));
    let console = std::fs::read_to_string(&path).unwrap();
    assert!(
        console.contains("netbisect-init: cannot mount"),
        "{console}"
    );
    nothing_left_running(&format!("{}/netbisect-vm-", dir.path().display()));
}

/// The lines of `ab`'s log that say a boot starts, in order.
fn boot_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.contains(": booting "))
        .collect()
}

/// The experiment id `ab` names on its first line.
fn experiment_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|line| line.split("experiment ").nth(1))
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no experiment id in {stderr}"))
        .to_string()
}

#[test]
fn ab_runs_an_experiment_in_one_boot_per_kernel_and_round() {
    if !slow() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let ab = |kernels: [&str; 2], rounds: &str, email: bool| {
        let mut args = vec![
            "ab",
            "--kernel-a",
            kernels[0],
            "--kernel-b",
            kernels[1],
            "-n",
            rounds,
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "-l",
            "0.3",
            "--sweep",
            "m=1K,16K",
            "--sweep",
            "S=212992,425984",
        ];
        if email {
            args.push("--email");
        }
        run(&archive, &args)
    };
    let (code, stdout, stderr) = ab([KERNEL_OLD, KERNEL_NEW], "2", true);
    assert_eq!(code, 0, "{stderr}");
    // 4 configurations x 2 kernels x 2 rounds: 4 boots, A B B A.
    let boots = boot_lines(&stderr);
    assert_eq!(boots.len(), 4, "{stderr}");
    for (boot, label) in boots
        .iter()
        .zip(["current", "patched", "patched", "current"])
    {
        assert!(boot.contains(label), "{stderr}");
    }
    let id = experiment_id(&stderr);
    // One table with both sides for all 4 configurations, for a mail.
    for line in stdout.lines() {
        assert!(line.len() <= 72, "too wide for a mail: {line:?}");
    }
    crate::check_mailing_list_rules(&stdout);
    // The kernels as given, the axes and their values in the order given.
    assert!(
        stdout.contains(&format!("netbisect ab --kernel-a {KERNEL_OLD}")),
        "{stdout}"
    );
    let printed = crate::command_lines::printed_commands(&stdout);
    assert_eq!(printed.len(), 1, "{stdout}");
    assert!(
        printed[0].contains("--sweep m=1K,16K --sweep S=212992,425984"),
        "{stdout}"
    );
    assert!(stdout.contains("Measured in qemu"), "{stdout}");
    for row in [
        "212992  1024",
        "212992 16384",
        "425984  1024",
        "425984 16384",
    ] {
        assert!(stdout.contains(row), "no row {row}: {stdout}");
    }
    // 16 runs, each of the experiment and its round.
    let (code, text, stderr) = run(&archive, &["archive", "export"]);
    assert_eq!(code, 0, "{stderr}");
    let records: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 16);
    for record in &records {
        assert_eq!(record["experiment"]["id"], id.as_str());
        let release = match record["subject"]["label"].as_str().unwrap() {
            "current" => RELEASE_OLD,
            _ => RELEASE_NEW,
        };
        assert_eq!(record["subject"]["kernel_release"], release);
        assert_eq!(record["env"]["vm"]["accelerator"], "tcg");
    }
    let compare = |id: &str| {
        let (code, stdout, stderr) = run(
            &archive,
            &[
                "compare",
                "current",
                "patched",
                "--experiment",
                id,
                "--layout",
                "matrix",
            ],
        );
        assert_eq!(code, 0, "{stderr}");
        stdout
    };
    let table = compare(&id);
    // Each kind of line that runs the experiment again (ab's own,
    // compare's, the site's), pasted into a shell, names the same
    // experiment and finds every run archived: no boot.
    let (code, email, stderr) = run(
        &archive,
        &[
            "compare",
            "current",
            "patched",
            "--experiment",
            &id,
            "--email",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let site = dir.path().join("site");
    let (code, _, stderr) = run(&archive, &["publish", site.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let site_lines: Vec<String> = crate::command_lines::site_commands(&site)
        .into_iter()
        .filter(|line| line.starts_with("netbisect ab "))
        .collect();
    assert_eq!(site_lines.len(), 1, "{site_lines:?}");
    for line in printed
        .iter()
        .chain(&crate::command_lines::printed_commands(&email))
        .chain(&site_lines)
    {
        let output = crate::reproduce::paste(&archive, line);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(boot_lines(&stderr).is_empty(), "{line}\n{stderr}");
        assert_eq!(experiment_id(&stderr), id, "{line}");
        let again = String::from_utf8_lossy(&output.stdout);
        assert!(again.contains("current"), "{again}");
    }
    // Another experiment with the same labels, the kernels swapped: its
    // runs do not join the first one's.
    let (code, _, stderr) = ab([KERNEL_NEW, KERNEL_OLD], "1", false);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(boot_lines(&stderr).len(), 2, "{stderr}");
    assert_ne!(experiment_id(&stderr), id);
    assert_eq!(compare(&id), table);
}

/// `ab --strict-settings` keeps no run the guest's kernel did not grant
/// every setting of: such a configuration fails, is named, and is
/// measured by the next run of the command. The guest's kernel reads a
/// sysctl written with a leading zero as octal: asked `060`, it keeps 48.
#[test]
fn ab_with_strict_settings_keeps_no_run_the_kernel_did_not_grant() {
    if !slow() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let ab = |strict: bool| {
        let mut args = vec![
            "ab",
            "--kernel-a",
            KERNEL_OLD,
            "--kernel-b",
            KERNEL_NEW,
            "-n",
            "1",
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "-l",
            "0.2",
            "--sweep",
            "net.ipv4.tcp_fin_timeout=060,30",
        ];
        if strict {
            args.push("--strict-settings");
        }
        run(&archive, &args)
    };
    let stored = || {
        let (code, text, stderr) = run(&archive, &["archive", "export"]);
        assert_eq!(code, 0, "{stderr}");
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .map(|record| record["spec"]["system"]["sysctls"].to_string())
            .collect::<Vec<_>>()
    };
    let (code, stdout, stderr) = ab(true);
    assert_eq!(code, 3, "{stderr}");
    for label in ["current", "patched"] {
        assert!(
            stderr.contains(&format!(
                "{label} ({}), net.ipv4.tcp_fin_timeout=060: the kernel did not grant \
                 net.ipv4.tcp_fin_timeout=060 (got 48) (--strict-settings keeps no such run)",
                if label == "current" {
                    RELEASE_OLD
                } else {
                    RELEASE_NEW
                }
            )),
            "{stderr}"
        );
    }
    assert!(stderr.contains("2 of the experiment's runs"), "{stderr}");
    // The configuration that was granted is compared; the other is not.
    assert!(stdout.contains("tcp_fin_timeout=30"), "{stdout}");
    let kept = stored();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(
        kept.iter().all(|sysctls| !sysctls.contains("060")),
        "{kept:?}"
    );
    let id = experiment_id(&stderr);
    // Without it the same experiment measures only what it lacks, and
    // keeps the refused configuration with a warning.
    let (code, _, stderr) = ab(false);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(experiment_id(&stderr), id);
    assert_eq!(boot_lines(&stderr).len(), 2, "{stderr}");
    assert!(
        stderr.contains("the kernel did not grant net.ipv4.tcp_fin_timeout=060 (got 48)"),
        "{stderr}"
    );
    assert_eq!(stored().len(), 4);
}

#[test]
fn kvm_is_tried_then_tcg_said_and_recorded() {
    if !slow() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let (code, stdout, stderr) = run(
        &archive,
        &[
            "bench",
            "--json",
            "--kernel",
            KERNEL_NEW,
            "--vm-timeout",
            TIMEOUT,
            "-l",
            "0.5",
            "--no-archive",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let record: Value = serde_json::from_str(stdout.trim()).unwrap();
    let accelerator = record["env"]["vm"]["accelerator"].as_str().unwrap();
    match accelerator {
        "kvm" => assert!(Path::new("/dev/kvm").exists()),
        "tcg" => assert!(
            stderr.contains("TCG"),
            "falling back to TCG must be said: {stderr}"
        ),
        other => panic!("accelerator {other}"),
    }
}

/// A small history of guest kernels: each commit picks an image, and the
/// build leaves beside it the guest settings `--vm-settings` reads; from
/// `culprit` on they shrink the guest's TCP buffers to one page, a large
/// and deterministic regression.
fn kernel_history(repo: &GitRepo, kernels: &Path, culprit: usize) -> Vec<git2::Oid> {
    let build = format!(
        "cp {}/\"$(cat pick)\" bzImage\n\
         if [ \"$(cat buffers)\" = small ]; then\n\
         \x20   printf 'sysctl net.ipv4.tcp_rmem=4096 4096 4096\\n' > guest.conf\n\
         \x20   printf 'sysctl net.ipv4.tcp_wmem=4096 4096 4096\\n' >> guest.conf\n\
         else\n\
         \x20   echo '# defaults' > guest.conf\n\
         fi\n",
        kernels.display()
    );
    let ids = repo.line(
        None,
        4,
        |idx| {
            let pick = if idx < 2 { "old\n" } else { "new\n" };
            let buffers = if idx >= culprit {
                "small\n"
            } else {
                "default\n"
            };
            vec![
                ("pick", pick),
                ("buffers", buffers),
                ("build.sh", build.as_str()),
                (".gitignore", "bzImage\nguest.conf\n"),
            ]
        },
        |idx| format!("guest change {idx}"),
    );
    repo.checkout_main(*ids.last().unwrap());
    ids
}

/// A repository of four commits whose `build.sh` picks the old kernel
/// for the first two and the new one after, its bisection started with
/// the kernel options the VM bisection tests share.
struct KernelRange {
    dir: tempfile::TempDir,
    archive: PathBuf,
    repo: PathBuf,
    ids: Vec<git2::Oid>,
}

impl KernelRange {
    fn started() -> KernelRange {
        let dir = tempfile::tempdir().unwrap();
        let kernels = dir.path().join("kernels");
        std::fs::create_dir(&kernels).unwrap();
        std::fs::copy(KERNEL_OLD, kernels.join("old")).unwrap();
        std::fs::copy(KERNEL_NEW, kernels.join("new")).unwrap();
        let repo = dir.path().join("repo");
        let ids = kernel_history(&GitRepo::init(&repo), &kernels, 2);
        let range = KernelRange {
            archive: dir.path().join("archive.db"),
            dir,
            repo,
            ids,
        };
        let (good, bad) = (range.ids[0].to_string(), range.ids[3].to_string());
        let (code, _, stderr) = range.run(&[
            "bisect",
            "start",
            "--good",
            &good,
            "--bad",
            &bad,
            "--build",
            "sh build.sh",
            "--kernel",
            "bzImage",
            "--bench",
            "-t TCP_STREAM -l 0.4 -i 3,3",
            "--vm-settings",
            "guest.conf",
            "--vm-accel",
            "tcg",
            "--vm-cpus",
            "1",
            "--vm-timeout",
            TIMEOUT,
            "--end-repeats",
            "3",
            "--confirm-repeats",
            "1",
            // TCG throughput on a loaded two-core host swings several-fold
            // between runs: room for the ends to become clear.
            "--max-repeats",
            "12",
        ]);
        assert_eq!(code, 0, "{stderr}");
        range
    }

    /// netbisect with `args` in the repository: exit code, stdout, stderr.
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let output = crate::netbisect_with(&self.archive)
            .args(args)
            .current_dir(&self.repo)
            .env("TMPDIR", self.dir.path())
            .env("XDG_CACHE_HOME", self.dir.path())
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

#[test]
fn a_kernel_range_is_bisected_through_vm_boots_and_resumes_after_kill() {
    if !slow() {
        return;
    }
    let _guests = one_guest();
    let started = Instant::now();
    let range = KernelRange::started();
    let (dir, archive, repo_path, ids) = (&range.dir, &range.archive, &range.repo, &range.ids);
    let in_repo = |args: &[&str]| range.run(args);

    // Killed with -9 once a few runs are archived, then resumed.
    let mut child = std::process::Command::new(BINARY)
        .args(["bisect", "run"])
        .env("NETBISECT_ARCHIVE", archive)
        .env("TMPDIR", dir.path())
        .env("XDG_CACHE_HOME", dir.path())
        .current_dir(repo_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    let runs_archived = || {
        let (_, list, _) = in_repo(&["archive", "list", "--json"]);
        serde_json::from_str::<Value>(&list)
            .ok()
            .and_then(|list| list.as_array().map(Vec::len))
            .unwrap_or(0)
    };
    loop {
        if runs_archived() >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "no runs archived in time");
        assert!(
            child.try_wait().unwrap().is_none(),
            "bisect run ended early"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill on the id of a child this test started and has not
    // reaped yet.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    assert!(child.wait().unwrap().code().is_none());
    // The guest of the killed run goes with it.
    nothing_left_running(&format!("{}/netbisect-vm-", dir.path().display()));
    let runs_before = runs_archived();

    let (code, stdout, stderr) = in_repo(&["bisect", "run", "--json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["result"]["kind"], "first_bad", "{report}");
    assert_eq!(
        report["result"]["commit"]["id"],
        ids[2].to_string(),
        "{report}"
    );
    // The runs archived before the kill were used, none measured again.
    let runs_after = runs_archived();
    assert!(runs_after >= runs_before);
    assert_eq!(report["n_measurements"], runs_after, "{report}");
    // Every run came from a guest of the image its commit picked.
    let (_, export, _) = in_repo(&["archive", "export"]);
    for line in export.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        let commit = record["subject"]["commit"].as_str().unwrap();
        let idx = ids.iter().position(|id| id.to_string() == commit).unwrap();
        let release = if idx < 2 { RELEASE_OLD } else { RELEASE_NEW };
        assert_eq!(record["subject"]["kernel_release"], release);
        assert_eq!(record["env"]["vm"]["network"], "loopback");
    }
    eprintln!(
        "kernel bisection with a kill -9: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn two_jobs_bisect_a_kernel_range_with_two_vms_on_cpus_of_their_own() {
    if !slow() {
        return;
    }
    let _guests = every_core();
    let started = Instant::now();
    let range = KernelRange::started();
    let (dir, ids) = (&range.dir, &range.ids);
    let in_repo = |args: &[&str]| range.run(args);
    let (code, stdout, stderr) = in_repo(&["bisect", "run", "--jobs", "2", "--json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["result"]["kind"], "first_bad", "{report}");
    assert_eq!(
        report["result"]["commit"]["id"],
        ids[2].to_string(),
        "{report}"
    );
    // Every run after the first (which learns the configuration, before
    // the slots) came from a VM pinned to its slot's CPU; both slots ran.
    let (_, export, _) = in_repo(&["archive", "export"]);
    let mut pinned = std::collections::BTreeSet::new();
    let mut unpinned = 0;
    for line in export.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        assert_eq!(record["schema"], "netbisect.run/1.3");
        let commit = record["subject"]["commit"].as_str().unwrap();
        let idx = ids.iter().position(|id| id.to_string() == commit).unwrap();
        let release = if idx < 2 { RELEASE_OLD } else { RELEASE_NEW };
        assert_eq!(record["subject"]["kernel_release"], release);
        match record["env"]["vm"]["host_cpus"].as_str() {
            Some(cpus) => {
                pinned.insert(cpus.to_string());
            }
            None => unpinned += 1,
        }
    }
    assert_eq!(unpinned, 1, "{export}");
    assert_eq!(pinned.len(), 2, "{pinned:?}");
    nothing_left_running(&format!("{}/netbisect-vm-", dir.path().display()));
    eprintln!(
        "kernel bisection with two jobs: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn bisect_start_checks_its_kernel_options_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let repo_path = dir.path().join("repo");
    let repo = GitRepo::init(&repo_path);
    let first = repo.commit_files(&[("pick", "old\n")], &[], "first");
    let second = repo.commit_files(&[("pick", "new\n")], &[first], "second");
    repo.checkout_main(second);
    let (good, bad) = (first.to_string(), second.to_string());
    let start = |extra: &[&str]| {
        let mut args = vec![
            "bisect", "start", "--good", &good, "--bad", &bad, "--build", "true",
        ];
        args.extend_from_slice(extra);
        let output = crate::netbisect_with(&archive)
            .args(&args)
            .current_dir(&repo_path)
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = start(&["--bench", "-l 0.1", "--vm-net", "pair"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("need --kernel"), "{stderr}");
    let (code, stderr) = start(&["--bench", "-l 0.1", "--kernel", "/boot/vmlinuz"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("a path in the worktree"), "{stderr}");
    let (code, stderr) = start(&["--measure", "true", "--kernel", "bzImage"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("give --bench"), "{stderr}");
    let (code, stderr) = start(&["--bench", "-l 0.1 --kernel x", "--kernel", "bzImage"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("give them to bisect start"), "{stderr}");
    let (code, stderr) = start(&["--bench", "-l 0.1 -H 127.0.0.1", "--kernel", "bzImage"]);
    assert_eq!(code, 2, "{stderr}");
}

/// Processes whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(needle))
        .collect()
}

/// Starts netbisect with `args` and waits until its guest's qemu runs,
/// then sends `signal`: netbisect must exit 130 at once, with its guest
/// and the directory shared with it gone.
fn interrupted_while_the_guest_runs(args: &[&str], signal: i32) {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let needle = format!("{}/netbisect-vm-", dir.path().display());
    let mut command = std::process::Command::new(BINARY);
    command
        .args(args)
        .env("NETBISECT_ARCHIVE", &archive)
        .env("TMPDIR", dir.path())
        .env("XDG_CACHE_HOME", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: signal() is async-signal-safe, as pre_exec requires. A
    // background job of a non-interactive shell starts with SIGINT
    // ignored, which netbisect keeps: restore the default.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !processes_with(&needle)
        .iter()
        .any(|cmdline| cmdline.contains("qemu-system"))
    {
        assert!(child.try_wait().unwrap().is_none(), "ended before boot");
        assert!(Instant::now() < deadline, "qemu did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill on the id of a child this test started and has not
    // reaped yet.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("netbisect did not end within 30 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    nothing_left_running(&needle);
    let shared: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("netbisect-vm-")
        })
        .collect();
    assert!(shared.is_empty(), "{shared:?}");
}

#[test]
fn a_signal_kills_the_guest_of_bench_and_ab_and_exits_130() {
    if !vm_ready() {
        return;
    }
    let _guests = one_guest();
    interrupted_while_the_guest_runs(
        &[
            "bench",
            "--kernel",
            KERNEL_OLD,
            "--vm-accel",
            "tcg",
            "-l",
            "30",
        ],
        libc::SIGINT,
    );
    interrupted_while_the_guest_runs(
        &[
            "ab",
            "--kernel-a",
            KERNEL_OLD,
            "--kernel-b",
            KERNEL_NEW,
            "-n",
            "2",
            "--vm-accel",
            "tcg",
            "-l",
            "30",
        ],
        libc::SIGTERM,
    );
}

#[test]
fn an_experiment_killed_mid_boot_resumes_without_measuring_again() {
    if !slow() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let log_path = dir.path().join("ab.log");
    let args = [
        "ab",
        "--kernel-a",
        KERNEL_OLD,
        "--kernel-b",
        KERNEL_NEW,
        "-n",
        "1",
        "--vm-accel",
        "tcg",
        "--vm-timeout",
        TIMEOUT,
        "-l",
        "2",
        "--sweep",
        "m=1K,16K",
    ];
    let mut child = std::process::Command::new(BINARY)
        .args(args)
        .env("NETBISECT_ARCHIVE", &archive)
        .env("TMPDIR", dir.path())
        .env("XDG_CACHE_HOME", dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    // Killed once the first run of the first boot is archived, while the
    // guest runs the second.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if log.contains(" 1/2 ") && log.contains(" done in ") {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "ab ended early: {log}");
        assert!(Instant::now() < deadline, "no run finished: {log}");
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    nothing_left_running(&format!("{}/netbisect-vm-", dir.path().display()));
    let exported = |archive: &Path| -> Vec<Value> {
        let (code, text, stderr) = run(archive, &["archive", "export"]);
        assert_eq!(code, 0, "{stderr}");
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let after_kill = exported(&archive);
    assert_eq!(after_kill.len(), 1, "the finished run, whole, and no other");
    // The same command again measures only what the experiment lacks:
    // the boot of A for its other configuration, then B's.
    let (code, _, stderr) = run(&archive, &args);
    assert_eq!(code, 0, "{stderr}");
    let boots = boot_lines(&stderr);
    assert_eq!(boots.len(), 2, "{stderr}");
    assert!(boots[0].contains("current") && boots[0].contains("for 1 configuration"));
    assert!(
        stderr.contains("1 run of it is archived already"),
        "{stderr}"
    );
    let all = exported(&archive);
    assert_eq!(all.len(), 4);
    let mut configurations: Vec<(String, u64)> = all
        .iter()
        .map(|record| {
            (
                record["subject"]["label"].as_str().unwrap().to_string(),
                record["spec"]["send_size_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    configurations.sort();
    configurations.dedup();
    assert_eq!(configurations.len(), 4, "each configuration once a side");
    assert_eq!(all[0]["experiment"], after_kill[0]["experiment"]);
}

#[test]
fn pair_nics_offer_offloads_and_an_offload_axis_sets_them_per_configuration() {
    if !vm_ready() {
        return;
    }
    let _guests = one_guest();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("the tap-backed pair needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let (code, stdout, stderr) = run(
        &archive,
        &[
            "--json",
            "bench",
            "--kernel",
            KERNEL_NEW,
            "--vm-net",
            "pair",
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "-l",
            "0.3",
            "--sweep",
            "gso=on,off",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let records: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{stdout}");
    let mut gso_seen = Vec::new();
    for record in &records {
        assert_eq!(
            record["env"]["vm"]["network_backend"], "virtio-net, taps on a bridge",
            "{record}"
        );
        let features = &record["env"]["local"]["interface"]["features"];
        // A tap-backed virtio-net NIC offers what a real NIC does.
        assert_eq!(features["tx-tcp-segmentation"], true, "{features}");
        assert_eq!(features["tx-scatter-gather"], true, "{features}");
        let asked = record["spec"]["system"]["features"]["gso"]
            .as_bool()
            .unwrap();
        let granted = &record["system"]["features"]["gso"];
        assert_eq!(granted["requested"], asked, "{record}");
        assert_eq!(granted["granted"], asked, "{record}");
        assert_eq!(features["tx-generic-segmentation"], asked, "{features}");
        gso_seen.push(asked);
    }
    gso_seen.sort_unstable();
    assert_eq!(gso_seen, [false, true]);
    // An MTU is made on both NICs (the far one in its namespace first):
    // the connection's segments grow with it.
    let (code, stdout, stderr) = run(
        &archive,
        &[
            "--json",
            "bench",
            "--kernel",
            KERNEL_NEW,
            "--vm-net",
            "pair",
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "-l",
            "0.3",
            "--set",
            "mtu=9000",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let record: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(record["system"]["mtu"]["granted"], 9000, "{record}");
    let mss = record["iterations"][0]["ends"]["local"]["tcp_info"]["snd_mss"]
        .as_u64()
        .unwrap();
    assert!(mss > 1500, "segments of {mss} bytes: the far NIC kept 1500");
}

/// Where the guest finds its input and output directories.
const GUEST_INPUT: &str = "/run/netbisect/in";
const GUEST_OUTPUT: &str = "/run/netbisect/out";

/// A directory for a hostile guest's test: TMPDIR of its runs (their
/// boot directories are made there), its archive, and `share/`, where the
/// payload is, which the guest reads at the same path through
/// `--vm-share` (it sees nothing else of this host but `/usr`). Under the
/// build's target directory, so that the boot directories are on the
/// file system of the netbisect binary, which is then linked, not
/// copied, into the guest's input. None (the test says why) where the
/// path holds a character the payload's command line cannot carry.
fn hostile_dir() -> Option<tempfile::TempDir> {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(target).unwrap();
    let dir = tempfile::Builder::new()
        .prefix("hostile-")
        .tempdir_in(target)
        .unwrap();
    std::fs::create_dir(dir.path().join("share")).unwrap();
    let text = dir.path().to_string_lossy().into_owned();
    // The payload's path is written into a sed expression in single
    // quotes inside the double quotes of a kernel argument.
    if text.contains(|c: char| c.is_control() || "'\"\\|&".contains(c)) {
        skip(format!(
            "the guest's command line cannot name the target directory {text}"
        ));
        return None;
    }
    Some(dir)
}

/// The `--vm-append` arguments that make the guest run `script` (a file
/// the guest reaches through `--vm-share`) where it would run the
/// runner's guest script: busybox is the initramfs's init, and runs the
/// runner's own /init with that one command changed.
fn hostile_append(script: &Path) -> Vec<String> {
    vec![
        "rdinit=/bin/busybox".to_string(),
        "--".to_string(),
        "sh".to_string(),
        "-c".to_string(),
        format!(
            "\"/bin/busybox sed 's|sh {GUEST_INPUT}/guest.sh|sh {}|' /init > /hostile-init \
             && exec /bin/busybox sh /hostile-init\"",
            script.display()
        ),
    ]
}

/// `bench --kernel` with a guest that runs `script` instead of the
/// runner's (written to `dir/share`, which the guest reads), and the
/// `extra` arguments; TMPDIR and the archive in `dir`.
fn hostile_command(dir: &Path, script: &str, extra: &[&str]) -> std::process::Command {
    let share = dir.join("share");
    let path = share.join("hostile.sh");
    std::fs::write(&path, script).unwrap();
    let mut command = std::process::Command::new(BINARY);
    command
        .args([
            "bench",
            "--kernel",
            KERNEL_OLD,
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            TIMEOUT,
            "-l",
            "0.5",
        ])
        .arg("--vm-share")
        .arg(&share)
        .args(extra);
    for arg in hostile_append(&path) {
        command.arg("--vm-append").arg(arg);
    }
    command
        .env("NETBISECT_ARCHIVE", dir.join("archive.db"))
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .env("TMPDIR", dir)
        .env("XDG_CACHE_HOME", dir);
    command
}

/// After a hostile guest's run: no qemu left, nothing archived, and the
/// boot's directory gone.
fn nothing_kept_of_a_hostile_run(dir: &Path, stderr: &str) {
    nothing_left_running(&format!("{}/netbisect-vm-", dir.display()));
    let (_, listed, _) = run(&dir.join("archive.db"), &["--json", "archive", "list"]);
    assert_eq!(listed.trim(), "", "{stderr}");
    assert_eq!(boot_dirs(dir), Vec::<PathBuf>::new());
}

/// Runs `bench --kernel` with a guest that runs `script` instead of the
/// runner's; returns the exit code and stderr.
fn bench_with_hostile_guest(dir: &Path, script: &str, extra: &[&str]) -> (i32, String) {
    let output = hostile_command(dir, script, extra).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    nothing_kept_of_a_hostile_run(dir, &stderr);
    (output.status.code().unwrap_or(-1), stderr)
}

/// The mode and bytes of a file.
fn mode_and_bytes(path: &Path) -> (u32, Vec<u8>) {
    use std::os::unix::fs::PermissionsExt;
    (
        std::fs::metadata(path).unwrap().permissions().mode(),
        std::fs::read(path).unwrap(),
    )
}

#[test]
fn a_hostile_guest_can_neither_change_the_binary_nor_make_the_host_read_a_device() {
    if !slow() {
        return;
    }
    let Some(dir) = hostile_dir() else {
        return;
    };
    let _guests = one_guest();
    let binary = std::fs::canonicalize(BINARY).unwrap();
    let before = mode_and_bytes(&binary);
    // The guest, root in its VM, mounts its input directory (where the
    // binary is a link to this very file) and its root read-write, and
    // goes for the binary through both (this host's path to it is not in
    // the guest's root); then it says run 0 ended well, its record a link
    // to /dev/zero, and its setup error one too.
    let script = format!(
        "in={GUEST_INPUT} d={GUEST_OUTPUT} bin={bin}\n\
         : > \"$d/started\"\n\
         mount -o remount,rw \"$in\"; mount -o remount,rw /\n\
         for b in \"$in/netbisect\" \"$bin\"; do\n\
         \x20 chmod 0777 \"$b\"; chmod u+s \"$b\"\n\
         \x20 echo hostile >> \"$b\"; printf x | dd of=\"$b\" conv=notrunc 2>/dev/null\n\
         \x20 truncate -s 0 \"$b\"; touch -d 2001-01-01 \"$b\"\n\
         \x20 mv \"$b\" \"$b.moved\"; rm -f \"$b\"; cp /bin/true \"$b\"\n\
         done\n\
         ln -s /dev/zero \"$d/setup-error\"\n\
         ln -s /dev/zero \"$d/err-000\"\n\
         ln -s /dev/zero \"$d/record-000.json\"\n\
         echo 0 > \"$d/status.tmp\" && mv \"$d/status.tmp\" \"$d/status-000\"\n\
         : > \"$d/status\"\n",
        bin = binary.display()
    );
    let started = Instant::now();
    let (code, stderr) = bench_with_hostile_guest(dir.path(), &script, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("the guest left record-000.json unreadable: it is a symbolic link"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(400), "{stderr}");
    let after = mode_and_bytes(&binary);
    assert_eq!(
        before.0, after.0,
        "the guest changed the binary's mode: {:o} -> {:o}",
        before.0, after.0
    );
    assert!(before.1 == after.1, "the guest changed the binary's bytes");
    assert!(!Path::new(&format!("{}.moved", binary.display())).exists());

    // A guest that ends without a run, its setup error a link to
    // /dev/zero: read at the guest's end, and refused as a link too.
    let script = format!(
        "d={GUEST_OUTPUT}\n\
         : > \"$d/started\"\n\
         ln -s /dev/zero \"$d/setup-error\"\n"
    );
    let (code, stderr) = bench_with_hostile_guest(dir.path(), &script, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("the guest left setup-error unreadable: it is a symbolic link"),
        "{stderr}"
    );
}

#[test]
fn a_guest_record_of_another_label_and_testbed_is_refused_and_not_archived() {
    if !slow() {
        return;
    }
    let Some(dir) = hostile_dir() else {
        return;
    };
    let _guests = one_guest();
    // The guest runs the test it was given, as the runner's script does,
    // but tells its bench another label and testbed.
    let script = format!(
        "in={GUEST_INPUT} d={GUEST_OUTPUT}\n\
         : > \"$d/started\"\n\
         sed -e 's/\"--label\",\"asked\"/\"--label\",\"other\"/' \
         -e 's/\"--testbed\",\"vm-loopback\"/\"--testbed\",\"elsewhere\"/' \
         \"$in/plan.json\" > /tmp/plan.json\n\
         \"$in/netbisect\" guest-runs --plan /tmp/plan.json --output \"$d\" 2> \"$d/runs.err\"\n\
         echo $? > \"$d/status.tmp\" && mv \"$d/status.tmp\" \"$d/status\"\n"
    );
    let (code, stderr) = bench_with_hostile_guest(dir.path(), &script, &["--label", "asked"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("the guest's record is not of the run asked"),
        "{stderr}"
    );
    assert!(
        stderr.contains("its testbed is elsewhere, not vm-loopback"),
        "{stderr}"
    );
    assert!(stderr.contains("its label is other, not asked"), "{stderr}");
}

/// Starts `command` (a hostile guest's, whose TMPDIR is `dir`) and waits
/// until its guest has made `ready` in its output directory; returns the
/// child and the boot's directory.
fn spawn_until_ready(
    mut command: std::process::Command,
    dir: &Path,
) -> (std::process::Child, PathBuf) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(400);
    loop {
        if let Some(boot) = boot_dirs(dir)
            .into_iter()
            .find(|boot| boot.join("output/ready").exists())
        {
            return (child, boot);
        }
        if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "the guest did not get ready: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the user nobody may do with the boot directory `boot` in
/// `tmpdir`: the lines of what it could (`listed-tmpdir` first, which it
/// must, else the check proves nothing); None where this test cannot
/// become nobody (not root, or no setpriv).
fn done_as_nobody(tmpdir: &Path, boot: &Path) -> Option<String> {
    if !rustix::process::geteuid().is_root() || !on_path("setpriv") {
        return None;
    }
    let output = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args([
            "sh",
            "-c",
            "ls \"$1\" >/dev/null 2>&1 && echo listed-tmpdir\n\
             ls \"$2\" >/dev/null 2>&1 && echo entered-boot\n\
             cat \"$2/output/id\" >/dev/null 2>&1 && echo read-program\n\
             \"$2/output/id\" >/dev/null 2>&1 && echo ran-program\n\
             cat \"$2/console.log\" >/dev/null 2>&1 && echo read-console\n\
             cat \"$2/input/spec-000.json\" >/dev/null 2>&1 && echo read-input\n",
            "sh",
        ])
        .arg(tmpdir)
        .arg(boot)
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Every path under `dir`, links not followed.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if std::fs::symlink_metadata(&path).unwrap().is_dir() {
                pending.push(path.clone());
            }
            found.push(path);
        }
    }
    found
}

#[test]
fn a_guest_that_plants_a_setuid_program_leaves_nothing_others_may_read_or_run() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !slow() {
        return;
    }
    let Some(dir) = hostile_dir() else {
        return;
    };
    let _guests = one_guest();
    // TMPDIR as /tmp is: every user may pass through it and list it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    // The guest, root in its VM, copies a program into its output
    // directory and makes it setuid and setgid root, a directory and
    // another program writable and runnable by all, a link and a device;
    // then it waits while this test looks.
    let script = format!(
        "d={GUEST_OUTPUT}\n\
         : > \"$d/started\"\n\
         cp /usr/bin/id \"$d/id\" && chmod 6755 \"$d/id\"\n\
         mkdir \"$d/sub\" && cp /usr/bin/id \"$d/sub/id\" && chmod 4777 \"$d/sub/id\"\n\
         chmod 0777 \"$d/sub\" \"$d\"\n\
         ln -s /usr/bin/id \"$d/link\"\n\
         mknod \"$d/null\" c 1 3\n\
         ls -ln \"$d\" > \"$d/listing\"\n\
         : > \"$d/ready\"\n\
         i=0\n\
         while [ ! -e \"$d/go\" ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done\n"
    );
    let command = hostile_command(dir.path(), &script, &[]);
    let (child, boot) = spawn_until_ready(command, dir.path());
    let output = boot.join("output");
    // In the guest's eyes the program is setuid: the attack was made.
    let listing = std::fs::read_to_string(output.join("listing")).unwrap();
    assert!(listing.contains("-rwsr-sr-x"), "{listing}");
    // The boot's directory is this user's only, and what the guest made
    // is neither setuid, setgid nor executable, nor for others to read.
    let meta = std::fs::symlink_metadata(&boot).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o700, "{}", boot.display());
    assert_eq!(meta.uid(), rustix::process::geteuid().as_raw());
    let made = walk(&output);
    assert!(made.iter().any(|path| path.ends_with("sub/id")), "{made:?}");
    for path in &made {
        let meta = std::fs::symlink_metadata(path).unwrap();
        let allowed = if meta.is_dir() { 0o700 } else { 0o600 };
        assert!(
            meta.is_dir() || meta.is_file(),
            "{} is neither a file nor a directory",
            path.display()
        );
        assert_eq!(
            meta.mode() & 0o7777 & !allowed,
            0,
            "{} is {:o}",
            path.display(),
            meta.mode()
        );
    }
    // Another user reaches nothing of it, while the guest runs.
    match done_as_nobody(dir.path(), &boot) {
        Some(done) if done.contains("listed-tmpdir") => {
            assert_eq!(done.trim(), "listed-tmpdir", "nobody could: {done}");
        }
        Some(_) => eprintln!(
            "a_guest_that_plants_a_setuid_program: {} is out of nobody's reach, \
             so only the modes were checked",
            dir.path().display()
        ),
        None => {
            eprintln!("a_guest_that_plants_a_setuid_program: not root, only the modes were checked")
        }
    }
    std::fs::write(output.join("go"), b"").unwrap();
    let ended = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&ended.stderr);
    assert_ne!(ended.status.code(), Some(0), "{stderr}");
    nothing_kept_of_a_hostile_run(dir.path(), &stderr);
}

/// The console file an error names.
fn console_named(stderr: &str) -> String {
    let path = stderr
        .split_whitespace()
        .find(|word| word.contains("netbisect-console-"))
        .map(|word| PathBuf::from(word.trim_end_matches([';', ')', ','])))
        .unwrap_or_else(|| panic!("no console path in {stderr}"));
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_guest_reads_nothing_of_the_host_users_files() {
    use std::os::unix::fs::PermissionsExt;
    if !slow() {
        return;
    }
    let Some(dir) = hostile_dir() else {
        return;
    };
    let _guests = one_guest();
    // The user's home, outside what the guest is given, with a file
    // only the user may read; and a file of the share, which the guest
    // must read, so that a payload that reads nothing cannot pass.
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let secret = home.join("secret");
    let secret_text = format!("netbisect-secret-{}", std::process::id());
    std::fs::write(&secret, &secret_text).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let control = dir.path().join("share/control");
    let control_text = format!("netbisect-control-{}", std::process::id());
    std::fs::write(&control, &control_text).unwrap();
    // The guest reads the secret by its path; mounts every 9p tag it is
    // offered that is not mounted yet; and tries the secret's path, and
    // every tail of it, under the root of each 9p mount.
    let script = format!(
        "s={secret}\n\
         : > \"{GUEST_OUTPUT}/started\"\n\
         echo \"hostile: control $(cat {control})\"\n\
         echo \"hostile: direct $(cat \"$s\" 2>&1)\"\n\
         echo \"hostile: etc $(ls /etc | tr '\\n' ' ')\"\n\
         for f in /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag; do\n\
         \x20 t=$(cat \"$f\"); mkdir -p \"/tmp/m/$t\"\n\
         \x20 mount -t 9p -o trans=virtio,version=9p2000.L \"$t\" \"/tmp/m/$t\" 2>/dev/null \
         && echo \"hostile: mounted $t\"\n\
         done\n\
         for m in $(awk '$3 == \"9p\" {{ print $2 }}' /proc/mounts); do\n\
         \x20 p=${{s#/}}\n\
         \x20 while :; do\n\
         \x20   cat \"$m/$p\" 2>/dev/null | sed 's/^/hostile: leaked /'\n\
         \x20   case $p in */*) p=${{p#*/}} ;; *) break ;; esac\n\
         \x20 done\n\
         done\n\
         echo 'hostile: done'\n",
        secret = secret.display(),
        control = control.display(),
    );
    let mut command = hostile_command(dir.path(), &script, &[]);
    command.env("HOME", &home);
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    nothing_kept_of_a_hostile_run(dir.path(), &stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let console = console_named(&stderr);
    assert!(
        console.contains(&format!("hostile: control {control_text}")),
        "{console}"
    );
    assert!(console.contains("hostile: done"), "{console}");
    assert!(!console.contains(&secret_text), "{console}");
    // The guest's /etc is its own: no password hashes of this host.
    let etc = console
        .lines()
        .find(|line| line.contains("hostile: etc "))
        .unwrap_or_else(|| panic!("{console}"));
    assert!(etc.contains("passwd"), "{etc}");
    assert!(!etc.contains("shadow"), "{etc}");
}

#[test]
fn a_guest_writing_past_its_output_bound_is_stopped_with_the_limit_named() {
    if !slow() {
        return;
    }
    let Some(dir) = hostile_dir() else {
        return;
    };
    let _guests = one_guest();
    // 300 MiB into the output directory, then a wait the host must not
    // sit through.
    let script = format!(
        "d={GUEST_OUTPUT}\n\
         : > \"$d/started\"\n\
         dd if=/dev/zero of=\"$d/big\" bs=1M count=300 2>/dev/null\n\
         echo 'hostile: written'\n\
         sleep 600\n"
    );
    let started = Instant::now();
    let (code, stderr) = bench_with_hostile_guest(dir.path(), &script, &[]);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains(
            "the guest passed the limit of 256 MiB written to this host (its output \
             directory and console log together); the VM was stopped"
        ),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(300), "{stderr}");
}

#[test]
fn a_second_ab_of_a_running_experiment_stops_or_waits_and_measures_nothing_again() {
    if !slow() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let args = [
        "ab",
        "--kernel-a",
        KERNEL_OLD,
        "--kernel-b",
        KERNEL_NEW,
        "-n",
        "1",
        "--vm-accel",
        "tcg",
        "--vm-timeout",
        TIMEOUT,
        "-l",
        "0.3",
    ];
    let command = |extra: &[&str]| {
        let mut command = std::process::Command::new(BINARY);
        command
            .args(args)
            .args(extra)
            .env("NETBISECT_ARCHIVE", &archive)
            .env_remove("NETBISECT_TEMPLATE_DIR")
            .env("TMPDIR", dir.path())
            .env("XDG_CACHE_HOME", dir.path())
            .env("XDG_STATE_HOME", dir.path().join("state"));
        command
    };
    let mut first = command(&[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(first.stderr.take().unwrap()).lines();
    // The first boot is said after the lock is taken.
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push(line.clone());
        if line.contains(": booting ") {
            break;
        }
    }
    let first_log = std::thread::spawn(move || {
        seen.extend(lines.map_while(Result::ok));
        seen
    });
    let refused = command(&[]).output().unwrap();
    let refused_text = String::from_utf8_lossy(&refused.stderr).into_owned();
    let waited = command(&["--wait"]).output().unwrap();
    let waited_text = String::from_utf8_lossy(&waited.stderr).into_owned();
    let first_status = first.wait().unwrap();
    let first_text = first_log.join().unwrap().join("\n");
    assert!(first_status.success(), "{first_text}");
    assert_eq!(refused.status.code(), Some(2), "{refused_text}");
    assert!(
        refused_text.contains("is being measured by another netbisect ab (pid"),
        "{refused_text}"
    );
    assert!(refused_text.contains("--wait"), "{refused_text}");
    assert_eq!(waited.status.code(), Some(0), "{waited_text}");
    assert!(
        waited_text.contains("waiting for it to end"),
        "{waited_text}"
    );
    assert!(
        waited_text.contains("2 runs of it are archived already"),
        "{waited_text}"
    );
    // One configuration, two kernels, one round: two runs, none twice.
    let (code, text, stderr) = run(&archive, &["archive", "export"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(text.lines().count(), 2, "{text}");
}

#[test]
fn an_experiment_whose_every_boot_fails_says_so_and_compares_nothing() {
    if !slow() {
        return;
    }
    let _guests = one_guest();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    // No guest reaches its test within a second under emulation.
    let (code, stdout, stderr) = run(
        &archive,
        &[
            "ab",
            "--kernel-a",
            KERNEL_OLD,
            "--kernel-b",
            KERNEL_NEW,
            "-n",
            "1",
            "--vm-accel",
            "tcg",
            "--vm-timeout",
            "1",
            "-l",
            "0.3",
        ],
    );
    assert_ne!(code, 0, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("failed, on both kernels (named above): nothing to compare"),
        "{stderr}"
    );
    assert_eq!(boot_lines(&stderr).len(), 2, "{stderr}");
}
