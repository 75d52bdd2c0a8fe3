//! The VM runner: boots a kernel image with qemu, the host's root file
//! system shared read-only over 9p (so the host's netbisect binary runs in
//! the guest unchanged), runs `netbisect bench --json` inside, and brings
//! the record back through a host directory shared with the guest, which
//! console noise cannot corrupt.
//!
//! The guest's userspace is an initramfs written here (see [`initramfs`]):
//! busybox, the few modules the guest needs and an init that mounts the
//! host's root and runs the guest script; qemu boots the kernel unpacked,
//! at its PVH entry (see [`vmlinux`]). Under TCG on a shared two-core
//! host, virtme-ng's general-purpose guest (systemd-tmpfiles, udev) and
//! the emulated decompression of the bzImage took 22-49 s from the start
//! of the boot to the test; this takes 6-11 s.
//!
//! It knows nothing of archives or git: it takes the bench arguments the
//! guest should run with and returns the record's bytes and the [`VmEnv`]
//! describing the guest; the commands wire it to the archive and to
//! bisect's measurer.
//!
//! The accelerator is decided by trying: KVM when `/dev/kvm` exists and a
//! guest reaches the test within [`KVM_PROBE`], else qemu's TCG. A guest
//! that does not finish within its timeout is killed with its whole
//! process group; failures keep the last [`CONSOLE_TAIL_LINES`] lines of
//! the guest console in a file whose path the error names.

mod initramfs;
mod kernel;
mod vmlinux;

pub use kernel::{KernelImage, check_image};

use bench_core::env::VmEnv;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The runner.
const RUNNER: &str = "qemu";
/// qemu's program.
const QEMU: &str = "qemu-system-x86_64";
/// Lines of the guest console kept when a guest fails.
pub const CONSOLE_TAIL_LINES: usize = 40;
/// How long a KVM guest may take to reach the test before KVM is judged
/// not to work on this host.
pub const KVM_PROBE: Duration = Duration::from_secs(25);
/// How long a killed guest's processes may take to be gone.
const GROUP_EXIT_WAIT: Duration = Duration::from_secs(5);
/// How often the runner is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Where the guest sees the shared directory: a fixed place, so that the
/// guest's command line (which names it) is the same at every boot.
const GUEST_SHARED_DIR: &str = "/run/netbisect";
/// Where a busybox is looked for when it is not on PATH.
const BUSYBOX_PLACES: &[&str] = &["/bin/busybox", "/usr/bin/busybox"];
/// The kernel command line before the user's: the console on the serial
/// port, a panic powers the guest off at once (qemu runs with
/// -no-reboot).
const BASE_APPEND: &str = "console=ttyS0 panic=-1";
/// The control port of the server in the guest's second namespace.
const PAIR_PORT: u16 = 12865;

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
        }
    }
}

/// What the guest runs: `netbisect bench` with these arguments (the
/// runner adds `--json`, `--no-archive` and, for the NIC pair, the
/// server's address).
#[derive(Clone, Debug)]
pub struct GuestJob {
    /// The host's netbisect binary; the guest runs it from the shared
    /// directory.
    pub binary: PathBuf,
    /// `bench` arguments.
    pub bench_args: Vec<String>,
    /// Files to place in the shared directory before boot, by name; the
    /// placeholder `{shared}` in `bench_args` names that directory.
    pub files: Vec<(String, Vec<u8>)>,
    /// For [`NetMode::Host`]: the tap link and the port of the server on
    /// the host's end of it.
    pub host: Option<(TapLink, u16)>,
    /// Use IPv6 between the NICs of the pair.
    pub ipv6: bool,
}

/// What came back from a guest.
#[derive(Clone, Debug)]
pub struct GuestResult {
    /// The record as the guest wrote it.
    pub record: Vec<u8>,
    /// How the guest was made.
    pub vm: VmEnv,
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
    Interrupted(#[from] bisect::interrupt::Interrupted),
    /// The test inside the guest failed.
    #[error("the test in the guest failed: {message} (console: {})", console.display())]
    Guest {
        /// What the guest said.
        message: String,
        /// The console tail.
        console: PathBuf,
    },
}

impl VmError {
    /// True for what the user fixes before anything boots (exit 2).
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            VmError::NoImage(_)
                | VmError::NotAKernel(_)
                | VmError::MissingTool { .. }
                | VmError::KernelLacks { .. }
                | VmError::BadOption(_)
        )
    }
}

/// The host's tap device of [`NetMode::Host`] and the addresses of its
/// two ends: the host's (the tap's own IPv4 address) and the guest's (the
/// next free one of the tap's subnet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapLink {
    /// The tap device.
    pub tap: String,
    /// The host's address, where the server listens.
    pub host: Ipv4Addr,
    /// The guest's address.
    pub guest: Ipv4Addr,
    /// Length of the subnet's prefix.
    pub prefix: u8,
}

/// `/sys/class/net/*/tun_flags` bit of a tap (not tun) device.
const IFF_TAP: u32 = 0x0002;

/// Checks that `tap` is a tap device of this host (of this network
/// namespace), up, with an IPv4 address in a subnet that leaves room for
/// the guest's; returns the link.
pub fn tap_link(tap: &str) -> Result<TapLink, VmError> {
    let bad = |why: String| VmError::BadOption(format!("--vm-tap {tap}: {why}"));
    if tap.is_empty()
        || tap.len() > 15
        || tap.contains(['/', ',', '='])
        || tap.contains(char::is_whitespace)
    {
        return Err(bad("not a network device name".to_string()));
    }
    let sys = Path::new("/sys/class/net").join(tap);
    if !sys.exists() {
        return Err(bad(format!(
            "no such device; create it: ip tuntap add dev {tap} mode tap user $USER"
        )));
    }
    let read_hex = |name: &str| {
        std::fs::read_to_string(sys.join(name))
            .ok()
            .and_then(|text| u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok())
    };
    if read_hex("tun_flags").is_none_or(|flags| flags & IFF_TAP == 0) {
        return Err(bad(
            "not a tap device (ip tuntap add ... mode tap)".to_string()
        ));
    }
    if read_hex("flags").is_none_or(|flags| flags & libc::IFF_UP as u32 == 0) {
        return Err(bad(format!("the device is down: ip link set {tap} up")));
    }
    let Some((host, prefix)) = bench_core::host::interface_ipv4(tap) else {
        return Err(bad(format!(
            "no IPv4 address: ip addr add 10.0.0.1/24 dev {tap} (or any free subnet)"
        )));
    };
    let guest = guest_address(host, prefix).ok_or_else(|| {
        bad(format!(
            "{host}/{prefix} leaves no address for the guest: give a /30 or wider"
        ))
    })?;
    Ok(TapLink {
        tap: tap.to_string(),
        host,
        guest,
        prefix,
    })
}

/// The address after `host` in its subnet (the one before, when `host`
/// is the last), never the subnet's own address or its broadcast.
fn guest_address(host: Ipv4Addr, prefix: u8) -> Option<Ipv4Addr> {
    if prefix > 30 {
        return None;
    }
    let mask = u32::MAX << (32 - u32::from(prefix));
    let host = u32::from(host);
    let network = host & mask;
    let broadcast = network | !mask;
    if host == network || host == broadcast {
        return None;
    }
    let guest = if host + 1 < broadcast {
        host + 1
    } else {
        host - 1
    };
    (guest > network).then(|| Ipv4Addr::from(guest))
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

fn find_on_path(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// The accelerator found to work in this process, so that the second
/// guest of an `ab` run or a bisection does not probe again.
static WORKING_ACCEL: Mutex<Option<&'static str>> = Mutex::new(None);

/// Boots `image`, runs `job` inside, and returns the record it wrote.
/// Notes for the user (the accelerator chosen) go to `notify`; failed
/// guests leave their console tail in `console_dir`.
pub fn run_guest(
    image: &KernelImage,
    options: &VmOptions,
    job: &GuestJob,
    console_dir: &Path,
    notify: &mut dyn FnMut(&str),
) -> Result<GuestResult, VmError> {
    let known = *WORKING_ACCEL.lock().unwrap_or_else(|e| e.into_inner());
    let kvm_present = Path::new("/dev/kvm").exists();
    let first = match (options.accel, known) {
        (AccelChoice::Tcg, _) => "tcg",
        (AccelChoice::Kvm, _) => "kvm",
        (AccelChoice::Auto, Some(known)) => known,
        (AccelChoice::Auto, None) if kvm_present => "kvm",
        (AccelChoice::Auto, None) => {
            notify("no /dev/kvm: the guest runs under TCG (emulation, slower)");
            "tcg"
        }
    };
    let probing = options.accel == AccelChoice::Auto && known.is_none() && first == "kvm";
    let preparing = Instant::now();
    let kernel = boot_kernel(image, notify);
    let boot = Boot {
        kernel: &kernel,
        prepared: preparing.elapsed(),
    };
    match boot_once(image, &boot, options, job, console_dir, first, probing) {
        Err(Attempt::KvmFailed(reason)) => {
            notify(&format!(
                "KVM did not work here ({reason}): the guest runs under TCG \
                 (emulation, slower)"
            ));
            remember("tcg");
            boot_once(image, &boot, options, job, console_dir, "tcg", false)
                .map_err(Attempt::into_error)
        }
        Err(other) => Err(other.into_error()),
        Ok(result) => {
            remember(first);
            Ok(result)
        }
    }
}

/// The kernel qemu is given: the image's uncompressed kernel when it can
/// be had (see [`vmlinux`]), else the image.
fn boot_kernel(image: &KernelImage, notify: &mut dyn FnMut(&str)) -> PathBuf {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let unpacked = std::fs::read(&image.path)
        .map_err(|err| err.to_string())
        .and_then(|bytes| vmlinux::uncompressed(&bytes, image.release.as_deref()));
    match unpacked {
        Ok(path) => path,
        Err(reason) => {
            if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                notify(&format!(
                    "booting the compressed image, which is slower under TCG: {reason}"
                ));
            }
            image.path.clone()
        }
    }
}

/// What one boot starts from.
struct Boot<'a> {
    /// The kernel given to qemu.
    kernel: &'a Path,
    /// The time taken to have it, counted in the boot's overhead.
    prepared: Duration,
}

fn remember(accel: &'static str) {
    *WORKING_ACCEL.lock().unwrap_or_else(|e| e.into_inner()) = Some(accel);
}

/// How one boot ended when it gave no record.
enum Attempt {
    /// A KVM probe that failed; TCG comes next.
    KvmFailed(String),
    /// A failure to report.
    Failed(VmError),
}

impl Attempt {
    fn into_error(self) -> VmError {
        match self {
            Attempt::Failed(err) => err,
            Attempt::KvmFailed(reason) => VmError::BadOption(format!("KVM failed: {reason}")),
        }
    }
}

impl From<VmError> for Attempt {
    fn from(err: VmError) -> Self {
        Attempt::Failed(err)
    }
}

/// The name of the netbisect binary in the shared directory.
const GUEST_BINARY: &str = "netbisect";

/// Puts the host's netbisect binary at `to`: a hard link where both are
/// on one file system, else a copy.
fn place_binary(from: &Path, to: &Path) -> Result<(), VmError> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(io(format!("copy {} for the guest", from.display())))
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> VmError {
    let what = what.into();
    move |source| VmError::Io { what, source }
}

fn quote(text: &str) -> String {
    shlex::try_quote(text)
        .map(|quoted| quoted.into_owned())
        .unwrap_or_else(|_| "''".to_string())
}

/// The script the guest runs: sysctls, the NIC pair, then the test,
/// every outcome written to files in the shared directory.
fn guest_script(shared: &Path, options: &VmOptions, job: &GuestJob) -> String {
    let dir = quote(&shared.to_string_lossy());
    let bin = quote(&job.binary.to_string_lossy());
    let mut script = String::new();
    let _ = writeln!(script, "#!/bin/sh\nd={dir}");
    script.push_str("fail() { echo \"$1\" > \"$d/setup-error\"; exit 0; }\n");
    for (key, value) in &options.sysctls {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        let _ = writeln!(
            script,
            "[ -w {path} ] || fail {why}\nprintf '%s\\n' {value} > {path} 2>/dev/null || fail {refused}",
            path = quote(&path),
            why = quote(&format!("the guest kernel has no sysctl {key}")),
            value = quote(value),
            refused = quote(&format!("the guest kernel refused {key}={value}")),
        );
    }
    let mut extra: Vec<String> = Vec::new();
    match options.net {
        NetMode::Loopback => {}
        NetMode::Pair => {
            let (client, server, prefix, nodad) = if job.ipv6 {
                ("fd55::1", "fd55::2", "64", " nodad")
            } else {
                ("10.55.0.1", "10.55.0.2", "24", "")
            };
            let family = if job.ipv6 { "-6 " } else { "" };
            let _ = write!(
                script,
                "set -- $(ls /sys/class/net | grep -vx lo | sort)\n\
                 [ $# -ge 2 ] || fail 'the guest has no pair of NICs'\n\
                 near=$1 far=$2\n\
                 ip netns add nbpeer || fail 'cannot create a network namespace in the guest'\n\
                 ip link set \"$far\" netns nbpeer || fail \"cannot move $far to a namespace\"\n\
                 ip {family}addr add {client}/{prefix} dev \"$near\"{nodad} || fail \"cannot address $near\"\n\
                 ip link set \"$near\" up\n\
                 ip -n nbpeer {family}addr add {server}/{prefix} dev \"$far\"{nodad} || fail \"cannot address $far\"\n\
                 ip -n nbpeer link set \"$far\" up\n\
                 ip -n nbpeer link set lo up\n\
                 ip netns exec nbpeer {bin} serve --listen {server} --no-auth -p {PAIR_PORT} \
                 > \"$d/serve.log\" 2>&1 &\n\
                 i=0\n\
                 until ip netns exec nbpeer cat /proc/net/tcp /proc/net/tcp6 2>/dev/null \
                 | grep -qi ':{PAIR_PORT:04X} .* 0A '; do\n\
                 \x20 i=$((i+1)); [ $i -lt 300 ] || fail 'the server in the guest did not start'\n\
                 \x20 sleep 0.1\n\
                 done\n"
            );
            extra.extend(["-H".to_string(), server.to_string()]);
            extra.extend(["-p".to_string(), PAIR_PORT.to_string()]);
        }
        NetMode::Host => {
            if let Some((link, port)) = &job.host {
                let _ = write!(
                    script,
                    "set -- $(ls /sys/class/net | grep -vx lo | sort)\n\
                     [ $# -ge 1 ] || fail 'the guest has no NIC'\n\
                     ip addr add {guest}/{prefix} dev \"$1\" || fail \"cannot address $1\"\n\
                     ip link set \"$1\" up || fail \"cannot set $1 up\"\n",
                    guest = link.guest,
                    prefix = link.prefix,
                );
                extra.extend(["-H".to_string(), link.host.to_string()]);
                extra.extend(["-p".to_string(), port.to_string()]);
                extra.extend(["--token-file".to_string(), "{shared}/token".to_string()]);
            }
        }
    }
    let shared_text = shared.to_string_lossy();
    let mut words = vec![
        bin,
        "bench".to_string(),
        "--json".to_string(),
        "--no-archive".to_string(),
    ];
    words.extend(
        job.bench_args
            .iter()
            .chain(&extra)
            .map(|arg| quote(&arg.replace("{shared}", &shared_text))),
    );
    let _ = write!(
        script,
        ": > \"$d/started\"\n\
         {} > \"$d/record.json\" 2> \"$d/bench.err\"\n\
         echo $? > \"$d/status.tmp\" && mv \"$d/status.tmp\" \"$d/status\"\n",
        words.join(" ")
    );
    script
}

fn boot_once(
    image: &KernelImage,
    boot: &Boot<'_>,
    options: &VmOptions,
    job: &GuestJob,
    console_dir: &Path,
    accel: &'static str,
    probing: bool,
) -> Result<GuestResult, Attempt> {
    let started = Instant::now();
    let work = tempfile::Builder::new()
        .prefix("netbisect-vm-")
        .tempdir()
        .map_err(io("create the directory shared with the guest"))?;
    // The guest sees `shared` only; the initramfs and the console stay
    // beside it.
    let dir = work.path().join("shared");
    std::fs::create_dir(&dir).map_err(io("create the directory shared with the guest"))?;
    for (name, bytes) in &job.files {
        // Only for this user (and the guest, which runs as root): the
        // host mode's token is one of them.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join(name))
            .map_err(io(format!("create {name}")))?;
        std::io::Write::write_all(&mut file, bytes).map_err(io(format!("write {name}")))?;
    }
    // The guest's tmpfs on /tmp, /var/tmp and /run hides what the host
    // keeps there, a netbisect built or installed under /tmp included: the
    // guest runs the binary from the shared directory, linked or copied.
    place_binary(&job.binary, &dir.join(GUEST_BINARY))?;
    let job = &GuestJob {
        binary: Path::new(GUEST_SHARED_DIR).join(GUEST_BINARY),
        ..job.clone()
    };
    let script = guest_script(Path::new(GUEST_SHARED_DIR), options, job);
    std::fs::write(dir.join("guest.sh"), script).map_err(io("write the guest script"))?;
    let initrd = work.path().join("initramfs.cpio");
    let busybox = busybox()?;
    let command = format!("sh {GUEST_SHARED_DIR}/guest.sh; echo o > /proc/sysrq-trigger; sleep 30");
    initramfs::write(
        &initramfs::Contents {
            busybox: &busybox,
            release: image.release.as_deref(),
            nics: options.net != NetMode::Loopback,
            shared_dir: GUEST_SHARED_DIR,
            command: &command,
        },
        &initrd,
    )?;
    let console_path = work.path().join("console.log");
    let console = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&console_path)
        .map_err(io("create the console log"))?;
    let console_err = console.try_clone().map_err(io("open the console log"))?;

    let mut append = BASE_APPEND.to_string();
    for extra in &options.append {
        append.push(' ');
        append.push_str(extra);
    }
    let mut qemu: Vec<String> = vec![
        QEMU.to_string(),
        "-nodefaults".to_string(),
        "-no-user-config".to_string(),
        "-display".to_string(),
        "none".to_string(),
        "-no-reboot".to_string(),
        "-accel".to_string(),
        accel.to_string(),
    ];
    // Under TCG the CPU has RDRAND, which the kernel trusts to seed its
    // random numbers at once: without it, the first getrandom() of the
    // test waits seconds for entropy.
    let cpu = if accel == "kvm" {
        "host"
    } else {
        "qemu64,+rdrand"
    };
    qemu.extend(["-cpu".to_string(), cpu.to_string()]);
    qemu.extend([
        "-smp".to_string(),
        options.cpus.to_string(),
        "-m".to_string(),
        format!("{}M", options.memory_mib),
        "-kernel".to_string(),
        boot.kernel.to_string_lossy().into_owned(),
        "-initrd".to_string(),
        initrd.to_string_lossy().into_owned(),
        "-append".to_string(),
        append,
        "-chardev".to_string(),
        format!(
            "file,id=nbconsole,path={},append=on",
            qemu_value(&console_path)
        ),
        "-serial".to_string(),
        "chardev:nbconsole".to_string(),
        "-virtfs".to_string(),
        format!(
            "local,path=/,mount_tag={},security_model=none,readonly=on,multidevs=remap",
            initramfs::ROOT_TAG
        ),
        "-virtfs".to_string(),
        format!(
            "local,path={},mount_tag={},security_model=none,multidevs=remap",
            qemu_value(&dir),
            initramfs::SHARED_TAG
        ),
    ]);
    match options.net {
        NetMode::Loopback => {}
        NetMode::Pair => {
            // Two NICs on a hub of their own: a wire between them, which
            // no host socket or device sees.
            for end in 1..=2 {
                qemu.extend([
                    "-netdev".to_string(),
                    format!("hubport,id=nbpair{end},hubid=0"),
                    "-device".to_string(),
                    format!("virtio-net-pci,netdev=nbpair{end},mac=52:54:00:55:00:0{end}"),
                ]);
            }
        }
        NetMode::Host => {
            let tap = options.tap.as_deref().unwrap_or_default();
            qemu.extend([
                "-netdev".to_string(),
                format!("tap,id=nbhost,ifname={tap},script=no,downscript=no"),
                "-device".to_string(),
                "virtio-net-pci,netdev=nbhost".to_string(),
            ]);
        }
    }

    // qemu runs under a shell that also watches a pipe from this process:
    // when this process dies, however it dies (kill -9 included), the
    // pipe closes and the watcher kills the whole group, qemu with it.
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("exec 3<&0; \"$@\" & v=$!; { read _ <&3; kill -9 0; } & wait $v")
        .arg("sh")
        .args(&qemu)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(console)
        .stderr(console_err)
        .process_group(0);
    let mut child = command.spawn().map_err(|source| {
        Attempt::Failed(VmError::Io {
            what: format!("start {QEMU}"),
            source,
        })
    })?;
    // Held until the guest is done; see the watcher above.
    let _lifeline = child.stdin.take();
    let mut guest = Guest::new(child);
    let timeout = Duration::from_secs_f64(options.timeout_s);
    let started_marker = dir.join("started");
    let mut reached_test: Option<Duration> = None;
    let exit = loop {
        if reached_test.is_none() && started_marker.exists() {
            reached_test = Some(boot.prepared + started.elapsed());
        }
        if let Err(interrupted) = bisect::interrupt::check() {
            guest.kill();
            return Err(Attempt::Failed(interrupted.into()));
        }
        match guest.child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(source) => {
                guest.kill();
                return Err(Attempt::Failed(VmError::Io {
                    what: format!("wait for {QEMU}"),
                    source,
                }));
            }
        }
        let elapsed = started.elapsed();
        if probing && reached_test.is_none() && elapsed >= KVM_PROBE.min(timeout) {
            guest.kill();
            return Err(Attempt::KvmFailed(format!(
                "the guest did not reach the test within {} s",
                KVM_PROBE.min(timeout).as_secs()
            )));
        }
        if elapsed >= timeout {
            break None;
        }
        std::thread::sleep(POLL_INTERVAL);
    };
    // Whatever is left of the group (the watcher) goes with it.
    guest.kill();
    if exit.is_none() {
        let console = keep_console(&console_path, console_dir)?;
        return Err(Attempt::Failed(VmError::TimedOut {
            seconds: options.timeout_s,
            console,
        }));
    }
    let read = |name: &str| std::fs::read(dir.join(name)).ok();
    if let Some(message) = read("setup-error") {
        let console = keep_console(&console_path, console_dir)?;
        return Err(Attempt::Failed(VmError::Guest {
            message: String::from_utf8_lossy(&message).trim().to_string(),
            console,
        }));
    }
    let Some(status) = read("status") else {
        if probing && reached_test.is_none() {
            return Err(Attempt::KvmFailed(last_line(&console_path)));
        }
        let console = keep_console(&console_path, console_dir)?;
        let reason = if reached_test.is_some() {
            "it stopped during the test: a panic or a crash".to_string()
        } else {
            format!("{}: boot failed", boot_failure(&console_path))
        };
        return Err(Attempt::Failed(VmError::Boot { reason, console }));
    };
    let status = String::from_utf8_lossy(&status).trim().to_string();
    if status != "0" {
        let console = keep_console(&console_path, console_dir)?;
        let stderr = read("bench.err").unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr);
        let message = stderr
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| line.strip_prefix("netbisect: error: ").unwrap_or(line))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Attempt::Failed(VmError::Guest {
            message: format!("netbisect bench exited with {status}: {message}"),
            console,
        }));
    }
    let record = read("record.json").unwrap_or_default();
    let vm = VmEnv {
        runner: RUNNER.to_string(),
        runner_version: runner_version(),
        accelerator: accel.to_string(),
        vcpus: options.cpus,
        memory_mib: options.memory_mib,
        network: options.net.name().to_string(),
        network_backend: match options.net {
            NetMode::Loopback => None,
            NetMode::Pair => Some("virtio-net, qemu hub".to_string()),
            NetMode::Host => Some(format!(
                "virtio-net, tap {}",
                options.tap.as_deref().unwrap_or_default()
            )),
        },
        append: options.append.clone(),
        sysctls: options.sysctls.clone(),
        boot_to_test_s: reached_test
            .map(|elapsed| (elapsed.as_secs_f64() * 1000.0).round() / 1000.0),
    };
    Ok(GuestResult { record, vm })
}

/// A path as a value of a qemu option, where a comma is written twice.
fn qemu_value(path: &Path) -> String {
    path.to_string_lossy().replace(',', ",,")
}

/// The runner's process (the leader of its own process group) and all it
/// started: killed together, at the latest when dropped. While it runs,
/// a SIGINT or SIGTERM kills the group at once (see
/// [`bisect::interrupt`]).
struct Guest {
    child: std::process::Child,
    group: i32,
}

impl Guest {
    fn new(child: std::process::Child) -> Guest {
        let group = i32::try_from(child.id()).unwrap_or(0);
        bisect::interrupt::set_running_group(group);
        Guest { child, group }
    }

    /// Kills the group, reaps the runner and waits (a few seconds at
    /// most) until no member of the group is left: a killed qemu takes a
    /// moment to free the guest's memory.
    fn kill(&mut self) {
        if self.group <= 0 {
            return;
        }
        bisect::interrupt::set_running_group(0);
        // SAFETY: kill has no memory effects; a group that is gone only
        // makes it fail with ESRCH.
        unsafe {
            libc::kill(-self.group, libc::SIGKILL);
        }
        let _ = self.child.wait();
        let deadline = Instant::now() + GROUP_EXIT_WAIT;
        // SAFETY: as above; signal 0 only asks whether the group exists.
        while unsafe { libc::kill(-self.group, 0) } == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.group = 0;
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        self.kill();
    }
}

fn runner_version() -> Option<String> {
    static VERSION: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    VERSION
        .get_or_init(|| {
            // "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7)"
            let output = Command::new(QEMU)
                .arg("--version")
                .stdin(Stdio::null())
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&output.stdout);
            let mut words = text.split_whitespace();
            words.find(|word| *word == "version")?;
            words.next().map(str::to_string)
        })
        .clone()
}

fn console_lines(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(|line| {
            line.chars()
                .filter(|c| !c.is_control() || *c == '\t')
                .collect::<String>()
        })
        .filter(|line| !line.trim().is_empty())
        .collect()
}

fn last_line(path: &Path) -> String {
    console_lines(path)
        .pop()
        .map(|line| line.trim().chars().take(160).collect())
        .unwrap_or_else(|| "no console output".to_string())
}

/// Why a guest did not reach the test, from its console: what the
/// guest's init or a kernel panic said last, else the last line.
fn boot_failure(path: &Path) -> String {
    let lines = console_lines(path);
    let said = lines.iter().rev().find_map(|line| {
        line.find(initramfs::INIT_NAME)
            .or_else(|| line.find("Kernel panic"))
            .map(|at| line[at..].trim().chars().take(200).collect::<String>())
    });
    said.unwrap_or_else(|| last_line(path))
}

/// Saves the last lines of the console in `dir`; returns the file.
fn keep_console(console: &Path, dir: &Path) -> Result<PathBuf, VmError> {
    let lines = console_lines(console);
    let tail = &lines[lines.len().saturating_sub(CONSOLE_TAIL_LINES)..];
    std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
    let file = tempfile::Builder::new()
        .prefix("netbisect-console-")
        .suffix(".log")
        .tempfile_in(dir)
        .map_err(io(format!("create a console log in {}", dir.display())))?;
    let mut text = tail.join("\n");
    text.push('\n');
    std::fs::write(file.path(), text).map_err(io("write the console log"))?;
    let (_, path) = file.keep().map_err(|err| VmError::Io {
        what: "keep the console log".to_string(),
        source: err.error,
    })?;
    Ok(path)
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

    #[test]
    fn the_guest_takes_the_next_free_address_of_the_taps_subnet() {
        let guest = |host: &str, prefix| guest_address(host.parse().unwrap(), prefix);
        assert_eq!(guest("10.77.0.1", 24), Some("10.77.0.2".parse().unwrap()));
        assert_eq!(
            guest("10.77.0.254", 24),
            Some("10.77.0.253".parse().unwrap())
        );
        assert_eq!(
            guest("192.168.5.1", 30),
            Some("192.168.5.2".parse().unwrap())
        );
        assert_eq!(
            guest("192.168.5.2", 30),
            Some("192.168.5.1".parse().unwrap())
        );
        assert_eq!(guest("10.77.0.0", 24), None);
        assert_eq!(guest("10.77.0.255", 24), None);
        assert_eq!(guest("10.77.0.1", 31), None);
    }

    #[test]
    fn the_guest_script_quotes_what_it_is_given() {
        let mut options = VmOptions::default();
        options
            .sysctls
            .insert("net.core.rmem_max".to_string(), "1; reboot".to_string());
        options.net = NetMode::Pair;
        let job = GuestJob {
            binary: PathBuf::from("/opt/net bisect"),
            bench_args: vec!["--label".to_string(), "it's".to_string()],
            files: Vec::new(),
            host: None,
            ipv6: false,
        };
        let script = guest_script(Path::new("/tmp/x y"), &options, &job);
        assert!(script.contains("printf '%s\\n' '1; reboot' > /proc/sys/net/core/rmem_max"));
        assert!(script.contains("'/opt/net bisect' bench --json --no-archive --label"));
        assert!(script.contains("-H 10.55.0.2 -p 12865"));
        assert!(script.contains("d='/tmp/x y'"));
    }
}
