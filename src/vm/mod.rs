//! The VM runner: boots a kernel image with qemu, runs `netbisect bench
//! --json` inside (the host's binary, unchanged, from a directory shared
//! with the guest read-only over 9p), and brings the record back through
//! a host directory shared with the guest, which console noise cannot
//! corrupt.
//!
//! The guest is not trusted: a kernel and its userspace from an arbitrary
//! commit range may be hostile. It sees a root assembled from what it
//! needs (see [`guest_root`]: this host's `/usr` read-only and a small
//! `/etc`, not this host's `/`), writes only to its output directory,
//! whose modes never become this host's, within a bound of bytes and
//! files, and everything of a boot lies in a directory only this user
//! may enter (see [`guest_dir`]).
//!
//! The guest's userspace is an initramfs written here (see [`initramfs`]):
//! busybox, the few modules the guest needs and an init that assembles
//! the guest's root and runs the guest script; qemu boots the kernel
//! unpacked, at its PVH entry (see [`vmlinux`]). Under TCG on a shared
//! two-core host, virtme-ng's general-purpose guest (systemd-tmpfiles,
//! udev) and the emulated decompression of the bzImage took 22-49 s from
//! the start of the boot to the test; this takes 6-11 s.
//!
//! It knows nothing of archives or git: it takes the bench arguments the
//! guest should run with and returns the record's bytes and the
//! [`VmEnv`](run_record::env::VmEnv) describing the guest; [`run_test`]
//! turns a bench request into those arguments and the bytes into a
//! sealed record, and the commands store it (`bench --kernel`, `ab`) or
//! hand it to bisect's measurer.
//!
//! The accelerator is decided by trying: KVM when `/dev/kvm` exists and a
//! guest reaches the test within [`KVM_PROBE`], else qemu's TCG. A guest
//! that does not finish within its timeout is killed with its whole
//! process group; failures keep the last [`CONSOLE_TAIL_LINES`] lines of
//! the guest console in a file whose path the error names.

mod boot;
mod console;
mod guest_dir;
mod guest_root;
mod initramfs;
mod kernel;
mod qemu;
mod script;
mod settings;
mod tap;
mod test;
mod vmlinux;

pub use boot::{GuestEvents, run_guest};
pub use guest_root::check_shares;
pub use kernel::{KernelImage, check_image};
pub use script::{GuestPlan, PlannedRun, run_file};
pub use settings::GuestSettings;
pub use tap::{TapLink, tap_link};
pub use test::{GuestSubject, KernelUnderTest, Notes, TestOutcome, run_test, run_tests};

use crate::exit::{Code, ExitCoded};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The runner.
const RUNNER: &str = "qemu";

/// qemu's program.
const QEMU: &str = "qemu-system-x86_64";

/// Lines of the guest console kept when a guest fails.
pub const CONSOLE_TAIL_LINES: usize = 40;

/// How long a KVM guest may take to reach the test before KVM is judged
/// not to work on this host.
pub const KVM_PROBE: Duration = Duration::from_secs(25);

/// How often the runner is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Where the guest sees its input and output directories (`in`, `out`):
/// a fixed place, so that the guest's command line (which names it) is the
/// same at every boot.
const GUEST_DIR: &str = "/run/netbisect";

/// Where a busybox is looked for when it is not on PATH.
const BUSYBOX_PLACES: &[&str] = &["/bin/busybox", "/usr/bin/busybox"];

/// The kernel command line before the user's: the console on the serial
/// port, a panic powers the guest off at once (qemu runs with
/// -no-reboot), and no check of the timer's interrupt at boot: under
/// emulation on a busy host the check can miss its ticks and panic
/// ("IO-APIC + timer doesn't work"), though the timer works.
const BASE_APPEND: &str = "console=ttyS0 panic=-1 no_timer_check";

/// Where the guest's traffic flows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetMode {
    /// Over the guest's loopback.
    #[default]
    Loopback,
    /// Between two virtio-net NICs looped to each other, one end in a
    /// network namespace of its own.
    Pair,
    /// From the guest to a server on the host, over the VM's virtio-net
    /// NIC attached to a tap device of the host.
    Host,
}

impl NetMode {
    /// The name used on the command line and in the record.
    pub fn name(self) -> &'static str {
        match self {
            NetMode::Loopback => "loopback",
            NetMode::Pair => "pair",
            NetMode::Host => "host",
        }
    }
}

/// Which accelerator to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccelChoice {
    /// KVM if it works, else TCG.
    #[default]
    Auto,
    /// KVM only.
    Kvm,
    /// TCG only.
    Tcg,
}

/// How the guest is made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VmOptions {
    /// Where the traffic flows.
    pub net: NetMode,
    /// Virtual CPUs.
    pub cpus: u32,
    /// Memory, MiB.
    pub memory_mib: u64,
    /// Kernel command line arguments to add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub append: Vec<String>,
    /// Sysctls to set in the guest before the test.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
    /// Seconds the guest may take from boot to the end of the test.
    pub timeout_s: f64,
    /// The accelerator.
    pub accel: AccelChoice,
    /// For [`NetMode::Host`]: the host's tap device the guest's NIC is
    /// attached to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap: Option<String>,
    /// The NICs' backend in the host kernel (vhost-net).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vhost: bool,
    /// The NICs' transmit queue size, descriptors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_queue_size: Option<u32>,
    /// Directories of this host the guest sees read-only, at the same
    /// path, beside its root (`--vm-share`): absolute, links resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<PathBuf>,
    /// The host's CPUs qemu is pinned to, as a CPU list (`2-3`): each
    /// slot of `bisect run --jobs` gets its own. Not an option of the
    /// command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<String>,
}

impl Default for VmOptions {
    fn default() -> Self {
        VmOptions {
            net: NetMode::Loopback,
            cpus: 2,
            memory_mib: 1024,
            append: Vec::new(),
            sysctls: BTreeMap::new(),
            timeout_s: 300.0,
            accel: AccelChoice::Auto,
            tap: None,
            vhost: false,
            tx_queue_size: None,
            shares: Vec::new(),
            host_cpus: None,
        }
    }
}

/// What the guest runs: `netbisect bench` once per run, in order, with
/// each run's arguments (the runner adds `--json`, `--no-archive` and,
/// for the NIC pair, the server's address).
#[derive(Clone, Debug)]
pub struct GuestJob {
    /// The host's netbisect binary; the guest runs it from its input
    /// directory, which it may only read.
    pub binary: PathBuf,
    /// The runs, in order.
    pub runs: Vec<GuestRun>,
    /// Files to place in the input directory before boot, by name.
    pub files: Vec<(String, Vec<u8>)>,
    /// For [`NetMode::Host`]: the tap link and the port of the server on
    /// the host's end of it.
    pub host: Option<(TapLink, u16)>,
    /// Use IPv6 between the NICs of the pair.
    pub ipv6: bool,
}

/// One run of a guest's job.
#[derive(Clone, Debug, Default)]
pub struct GuestRun {
    /// `bench` arguments; the placeholder `{input}` names the guest's
    /// input directory.
    pub bench_args: Vec<String>,
    /// For [`NetMode::Pair`]: a spec file (in the input directory) whose
    /// settings the far NIC's namespace makes before the run.
    pub peer_settings: Option<String>,
}

/// What one run of a guest gave, as it finished.
#[derive(Clone, Debug, PartialEq)]
pub enum RunOutput {
    /// The record the guest's bench printed, as it wrote it.
    Record(Vec<u8>),
    /// Why the run gave no record: the bench's exit status and what it
    /// said on stderr.
    Failed(String),
}

/// Why a guest could not be run or did not give a record.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// The image does not exist.
    #[error("kernel image {0} does not exist")]
    NoImage(PathBuf),
    /// The file is not a kernel.
    #[error("{0} is not a kernel image (no x86 boot header; give a bzImage)")]
    NotAKernel(PathBuf),
    /// The image path names something that cannot be a kernel image.
    #[error("kernel image {} is {why}", path.display())]
    BadImage {
        /// The path given.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// The kernel command line is longer than the image takes.
    #[error(
        "the kernel command line is {length} bytes, over the {max} that {} takes \
         (its setup header's cmdline_size); shorten --vm-append",
        image.display()
    )]
    CommandLineTooLong {
        /// The image.
        image: PathBuf,
        /// The command line's length, bytes.
        length: usize,
        /// The longest the image takes.
        max: usize,
    },
    /// A program the runner needs is missing.
    #[error("{program} not found on PATH: {install}")]
    MissingTool {
        /// The program.
        program: &'static str,
        /// How to get it.
        install: &'static str,
    },
    /// The kernel lacks what the guest needs.
    #[error("kernel {release} lacks {what}: {detail}; {hint}")]
    KernelLacks {
        /// Its release.
        release: String,
        /// What it lacks.
        what: &'static str,
        /// How that was seen.
        detail: String,
        /// What to do.
        hint: String,
    },
    /// A bad option value.
    #[error("{0}")]
    BadOption(String),
    /// A host-side file operation failed.
    #[error("failed to {what}")]
    Io {
        /// What was attempted.
        what: String,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// The guest ended without running the test.
    #[error(
        "the guest did not run the test ({reason}); the last lines of its console are in {}",
        console.display()
    )]
    Boot {
        /// What was seen.
        reason: String,
        /// The console tail.
        console: PathBuf,
    },
    /// The guest ran past its timeout and was killed.
    #[error(
        "the guest did not finish within {seconds} s and was killed; the last lines \
         of its console are in {}",
        console.display()
    )]
    TimedOut {
        /// The timeout.
        seconds: f64,
        /// The console tail.
        console: PathBuf,
    },
    /// A signal came; the guest was killed.
    #[error("the guest was killed: {0}")]
    Interrupted(#[from] child_process::interrupt::Interrupted),
    /// The guest left an output the host refuses to read.
    #[error("the guest left {name} unreadable: {why}")]
    GuestOutput {
        /// The file's name in the output directory.
        name: String,
        /// Why it is refused.
        why: String,
    },
    /// The guest passed a bound of what it may leave on this host and was
    /// stopped.
    #[error("the guest passed the limit of {limit} {what}; the VM was stopped")]
    OutputLimit {
        /// The limit, with its unit.
        limit: String,
        /// What it bounds.
        what: &'static str,
    },
    /// One run of the guest gave no record.
    #[error("the test in the guest failed: {0}")]
    RunFailed(String),
    /// The test inside the guest failed.
    #[error("the test in the guest failed: {message} (console: {})", console.display())]
    Guest {
        /// What the guest said.
        message: String,
        /// The console tail.
        console: PathBuf,
    },
}

impl ExitCoded for VmError {
    /// What the user fixes before anything boots is an input error; a
    /// signal that killed the guest, an interruption; the rest, what
    /// went wrong in or around the guest, a runtime failure.
    fn exit_code(&self) -> Code {
        match self {
            VmError::NoImage(_)
            | VmError::NotAKernel(_)
            | VmError::BadImage { .. }
            | VmError::CommandLineTooLong { .. }
            | VmError::MissingTool { .. }
            | VmError::KernelLacks { .. }
            | VmError::BadOption(_) => Code::Input,
            VmError::Interrupted(interrupted) => interrupted.exit_code(),
            VmError::Io { .. }
            | VmError::Boot { .. }
            | VmError::TimedOut { .. }
            | VmError::GuestOutput { .. }
            | VmError::OutputLimit { .. }
            | VmError::RunFailed(_)
            | VmError::Guest { .. } => Code::Runtime,
        }
    }
}

/// The kernel command line of a guest made with `options`: the runner's
/// base, then the user's `--vm-append` arguments.
fn kernel_command_line(options: &VmOptions) -> String {
    let mut append = BASE_APPEND.to_string();
    for extra in &options.append {
        append.push(' ');
        append.push_str(extra);
    }
    append
}

/// Checks that the command line of `options` fits what `image` takes: a
/// longer one is cut or refused by the kernel, whose guest then never
/// reaches the test.
pub fn check_command_line(image: &KernelImage, options: &VmOptions) -> Result<(), VmError> {
    let length = kernel_command_line(options).len();
    if length > image.cmdline_max {
        return Err(VmError::CommandLineTooLong {
            image: image.path.clone(),
            length,
            max: image.cmdline_max,
        });
    }
    Ok(())
}

/// Checks a sysctl given as `KEY=VALUE`.
pub fn parse_sysctl(text: &str) -> Result<(String, String), VmError> {
    let bad = |why: &str| VmError::BadOption(format!("invalid --vm-sysctl '{text}': {why}"));
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| bad("expected KEY=VALUE"))?;
    let key = key.trim();
    let valid_key = !key.is_empty()
        && key.contains('.')
        && key
            .split('.')
            .all(|part| !part.is_empty() && part != ".." && !part.contains('/'))
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !valid_key {
        return Err(bad("KEY is a dotted sysctl name such as net.ipv4.tcp_rmem"));
    }
    if value.contains(['\n', '\r', '\0']) {
        return Err(bad("VALUE is one line"));
    }
    Ok((key.to_string(), value.trim().to_string()))
}

/// Checks vhost-net and the queue size against what this host and qemu
/// can give, before anything boots.
pub fn check_nic_options(options: &VmOptions) -> Result<(), VmError> {
    if options.tx_queue_size.is_some_and(|size| size > 256) {
        return Err(VmError::BadOption(
            "--vm-tx-queue-size over 256: qemu gives a virtio-net NIC a larger transmit \
             queue only with a vhost-user backend, which netbisect does not make"
                .to_string(),
        ));
    }
    if !options.vhost {
        return Ok(());
    }
    let nics_on_taps = match options.net {
        NetMode::Host => true,
        NetMode::Pair => qemu::pair_backend() == qemu::PairBackend::Taps,
        NetMode::Loopback => false,
    };
    if !nics_on_taps {
        return Err(VmError::BadOption(
            "--vm-vhost needs NICs on taps: --vm-net host, or --vm-net pair as root".to_string(),
        ));
    }
    if options.accel == AccelChoice::Tcg || !std::path::Path::new("/dev/kvm").exists() {
        return Err(VmError::BadOption(
            "--vm-vhost needs KVM (vhost-net cannot serve a TCG guest), and this host has \
             no /dev/kvm or --vm-accel tcg was given"
                .to_string(),
        ));
    }
    if !std::path::Path::new("/dev/vhost-net").exists() {
        return Err(VmError::BadOption(
            "--vm-vhost needs /dev/vhost-net (modprobe vhost_net)".to_string(),
        ));
    }
    Ok(())
}

/// Checks that the runner's programs exist, before anything boots.
pub fn check_tools() -> Result<(), VmError> {
    if find_on_path(QEMU).is_none() {
        return Err(VmError::MissingTool {
            program: QEMU,
            install: "install qemu (Debian: apt-get install qemu-system-x86)",
        });
    }
    busybox().map(|_| ())
}

/// A statically linked busybox, which the guest's initramfs holds.
fn busybox() -> Result<PathBuf, VmError> {
    let missing = VmError::MissingTool {
        program: "busybox",
        install: "install a statically linked busybox (Debian: apt-get install busybox-static)",
    };
    let found = find_on_path("busybox")
        .into_iter()
        .chain(BUSYBOX_PLACES.iter().map(PathBuf::from))
        .find(|path| std::fs::read(path).is_ok_and(|bytes| initramfs::is_static_elf(&bytes)));
    found.ok_or(missing)
}

pub(super) fn find_on_path(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> VmError {
    let what = what.into();
    move |source| VmError::Io { what, source }
}

/// `text` quoted for the guest's shell.
fn quote(text: &str) -> String {
    shlex::try_quote(text)
        .map(|quoted| quoted.into_owned())
        .unwrap_or_else(|_| "''".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctls_are_dotted_names_with_one_line_values() {
        assert_eq!(
            parse_sysctl("net.ipv4.tcp_rmem=4096 4096 4096").unwrap(),
            (
                "net.ipv4.tcp_rmem".to_string(),
                "4096 4096 4096".to_string()
            )
        );
        assert!(parse_sysctl("net.ipv4.tcp_rmem").is_err());
        assert!(parse_sysctl("=1").is_err());
        assert!(parse_sysctl("../../etc/passwd=1").is_err());
        assert!(parse_sysctl("net/ipv4/x=1").is_err());
        assert!(parse_sysctl("tcp_rmem=1").is_err());
    }
}
