//! One guest's life: the accelerator tried (KVM, else TCG, remembered for
//! the process), the shared directory and the initramfs made, qemu
//! started in a process group of its own under a watcher that kills the
//! group when netbisect dies, the guest waited for, and what it left in
//! the shared directory read back.

use super::console::{boot_failure, keep_console, last_line};
use super::script::guest_script;
use super::{
    AccelChoice, BASE_APPEND, GUEST_SHARED_DIR, GuestJob, GuestResult, KVM_PROBE, KernelImage,
    NetMode, POLL_INTERVAL, QEMU, RUNNER, VmError, VmOptions, busybox, initramfs, io, vmlinux,
};
use child_process::group::GroupChild;
use run_record::env::VmEnv;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// One boot: the shared directory made, qemu started, the guest waited
/// for and what it left read back.
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
    let guest_dir = GuestDir::prepare(image, options, job)?;
    let qemu = qemu_arguments(boot, options, &guest_dir, accel);
    let mut runner = start_runner(&qemu, &guest_dir)?;
    let waited = wait_for_guest(&mut runner, &guest_dir, boot, options, started, probing);
    // Whatever is left of the group (the watcher) goes with it.
    runner.kill();
    let reached_test = match waited? {
        Waited::Exited { reached_test } => reached_test,
        Waited::TimedOut => {
            let console = keep_console(&guest_dir.console, console_dir)?;
            return Err(Attempt::Failed(VmError::TimedOut {
                seconds: options.timeout_s,
                console,
            }));
        }
    };
    let record = read_outcome(&guest_dir, console_dir, reached_test, probing)?;
    Ok(GuestResult {
        record,
        vm: vm_env(options, accel, reached_test),
    })
}

/// The host's side of one boot: a temporary directory holding the
/// directory shared with the guest, the initramfs and the console log.
struct GuestDir {
    /// Removed with everything in it when dropped.
    _work: tempfile::TempDir,
    /// Shared with the guest, which sees only this.
    shared: PathBuf,
    /// The initramfs.
    initrd: PathBuf,
    /// The console log.
    console: PathBuf,
}

impl GuestDir {
    /// Writes what the guest needs: `job`'s files, the netbisect binary,
    /// the guest script and the initramfs.
    fn prepare(
        image: &KernelImage,
        options: &VmOptions,
        job: &GuestJob,
    ) -> Result<GuestDir, VmError> {
        let work = tempfile::Builder::new()
            .prefix("netbisect-vm-")
            .tempdir()
            .map_err(io("create the directory shared with the guest"))?;
        // The guest sees `shared` only; the initramfs and the console stay
        // beside it.
        let shared = work.path().join("shared");
        std::fs::create_dir(&shared).map_err(io("create the directory shared with the guest"))?;
        for (name, bytes) in &job.files {
            // Only for this user (and the guest, which runs as root): the
            // host mode's token is one of them.
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(shared.join(name))
                .map_err(io(format!("create {name}")))?;
            std::io::Write::write_all(&mut file, bytes).map_err(io(format!("write {name}")))?;
        }
        // The guest's tmpfs on /tmp, /var/tmp and /run hides what the host
        // keeps there, a netbisect built or installed under /tmp included:
        // the guest runs the binary from the shared directory, linked or
        // copied.
        place_binary(&job.binary, &shared.join(GUEST_BINARY))?;
        let job = &GuestJob {
            binary: Path::new(GUEST_SHARED_DIR).join(GUEST_BINARY),
            ..job.clone()
        };
        let script = guest_script(Path::new(GUEST_SHARED_DIR), options, job);
        std::fs::write(shared.join("guest.sh"), script).map_err(io("write the guest script"))?;
        let initrd = work.path().join("initramfs.cpio");
        let busybox = busybox()?;
        let command =
            format!("sh {GUEST_SHARED_DIR}/guest.sh; echo o > /proc/sysrq-trigger; sleep 30");
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
        let console = work.path().join("console.log");
        Ok(GuestDir {
            _work: work,
            shared,
            initrd,
            console,
        })
    }

    /// What the guest wrote under `name`, if anything.
    fn read(&self, name: &str) -> Option<Vec<u8>> {
        std::fs::read(self.shared.join(name)).ok()
    }
}

/// qemu's command line: the machine, the kernel and initramfs, the
/// console to a file, the host's root read-only and the shared directory
/// over 9p, and the NICs of the network mode.
fn qemu_arguments(
    boot: &Boot<'_>,
    options: &VmOptions,
    guest_dir: &GuestDir,
    accel: &'static str,
) -> Vec<String> {
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
        guest_dir.initrd.to_string_lossy().into_owned(),
        "-append".to_string(),
        append,
        "-chardev".to_string(),
        format!(
            "file,id=nbconsole,path={},append=on",
            qemu_value(&guest_dir.console)
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
            qemu_value(&guest_dir.shared),
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
    qemu
}

/// Starts qemu under a shell that also watches a pipe from this process:
/// when this process dies, however it dies (kill -9 included), the pipe
/// closes and the watcher kills the whole group, qemu with it.
fn start_runner(qemu: &[String], guest_dir: &GuestDir) -> Result<Runner, VmError> {
    let console = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&guest_dir.console)
        .map_err(io("create the console log"))?;
    let console_err = console.try_clone().map_err(io("open the console log"))?;
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("exec 3<&0; \"$@\" & v=$!; { read _ <&3; kill -9 0; } & wait $v")
        .arg("sh")
        .args(qemu)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(console)
        .stderr(console_err);
    let mut group = GroupChild::spawn(&mut command).map_err(|source| VmError::Io {
        what: format!("start {QEMU}"),
        source,
    })?;
    // Held until the guest is done; see the watcher above.
    let lifeline = group.child().stdin.take();
    Ok(Runner {
        group,
        _lifeline: lifeline,
    })
}

/// The runner's process group (qemu and its watcher) and the pipe whose
/// closing makes the watcher kill it.
struct Runner {
    group: GroupChild,
    _lifeline: Option<std::process::ChildStdin>,
}

impl Runner {
    fn kill(&mut self) {
        self.group.kill();
    }
}

/// How the wait for a guest ended.
enum Waited {
    /// qemu exited; when the guest reached the test, after how long.
    Exited { reached_test: Option<Duration> },
    /// The guest ran past its timeout.
    TimedOut,
}

/// Waits for qemu to exit, noting when the guest reached the test; gives
/// up at the timeout, on a signal, or for a KVM probe that does not reach
/// the test in time.
fn wait_for_guest(
    runner: &mut Runner,
    guest_dir: &GuestDir,
    boot: &Boot<'_>,
    options: &VmOptions,
    started: Instant,
    probing: bool,
) -> Result<Waited, Attempt> {
    let timeout = Duration::from_secs_f64(options.timeout_s);
    let started_marker = guest_dir.shared.join("started");
    let mut reached_test: Option<Duration> = None;
    loop {
        if reached_test.is_none() && started_marker.exists() {
            reached_test = Some(boot.prepared + started.elapsed());
        }
        if let Err(interrupted) = child_process::interrupt::check() {
            return Err(Attempt::Failed(interrupted.into()));
        }
        match runner.group.try_wait() {
            Ok(Some(_)) => return Ok(Waited::Exited { reached_test }),
            Ok(None) => {}
            Err(source) => {
                return Err(Attempt::Failed(VmError::Io {
                    what: format!("wait for {QEMU}"),
                    source,
                }));
            }
        }
        let elapsed = started.elapsed();
        if probing && reached_test.is_none() && elapsed >= KVM_PROBE.min(timeout) {
            return Err(Attempt::KvmFailed(format!(
                "the guest did not reach the test within {} s",
                KVM_PROBE.min(timeout).as_secs()
            )));
        }
        if elapsed >= timeout {
            return Ok(Waited::TimedOut);
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// The record a guest that ended left, or why there is none: its setup
/// error, a boot that never reached the test, a crash during it, or the
/// test's own failure.
fn read_outcome(
    guest_dir: &GuestDir,
    console_dir: &Path,
    reached_test: Option<Duration>,
    probing: bool,
) -> Result<Vec<u8>, Attempt> {
    if let Some(message) = guest_dir.read("setup-error") {
        let console = keep_console(&guest_dir.console, console_dir)?;
        return Err(Attempt::Failed(VmError::Guest {
            message: String::from_utf8_lossy(&message).trim().to_string(),
            console,
        }));
    }
    let Some(status) = guest_dir.read("status") else {
        if probing && reached_test.is_none() {
            return Err(Attempt::KvmFailed(last_line(&guest_dir.console)));
        }
        let console = keep_console(&guest_dir.console, console_dir)?;
        let reason = if reached_test.is_some() {
            "it stopped during the test: a panic or a crash".to_string()
        } else {
            format!("{}: boot failed", boot_failure(&guest_dir.console))
        };
        return Err(Attempt::Failed(VmError::Boot { reason, console }));
    };
    let status = String::from_utf8_lossy(&status).trim().to_string();
    if status != "0" {
        let console = keep_console(&guest_dir.console, console_dir)?;
        let stderr = guest_dir.read("bench.err").unwrap_or_default();
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
    Ok(guest_dir.read("record.json").unwrap_or_default())
}

/// The record's `vm` section: how the guest was made.
fn vm_env(options: &VmOptions, accel: &str, reached_test: Option<Duration>) -> VmEnv {
    VmEnv {
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
    }
}

/// A path as a value of a qemu option, where a comma is written twice.
fn qemu_value(path: &Path) -> String {
    path.to_string_lossy().replace(',', ",,")
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
