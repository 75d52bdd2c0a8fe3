//! One guest's life: the accelerator tried (KVM, else TCG, remembered for
//! the process), the guest's directories and the initramfs made (see
//! [`super::guest_dir`]), qemu started in a process group of its own under
//! a watcher that kills the group when netbisect dies, the guest waited
//! for while each run it finishes is handed over, and how it ended read
//! back.

use super::console::{boot_failure, keep_console, last_line};
use super::guest_dir::{GuestDir, MAX_MESSAGE_BYTES};
use super::{
    AccelChoice, BASE_APPEND, GuestJob, KVM_PROBE, KernelImage, NetMode, POLL_INTERVAL, QEMU,
    RUNNER, RunOutput, VmError, VmOptions, initramfs, io, vmlinux,
};
use child_process::group::GroupChild;
use run_record::env::VmEnv;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The accelerator found to work in this process, so that the second
/// guest of an `ab` run or a bisection does not probe again.
static WORKING_ACCEL: Mutex<Option<&'static str>> = Mutex::new(None);

/// What a guest's caller is told while it runs: notes for the user (the
/// accelerator chosen) and each run as it finishes, with the `vm` section
/// of its record.
pub struct GuestEvents<'a> {
    /// A note for the user.
    pub notify: &'a mut dyn FnMut(&str),
    /// Run `run_idx` of the job finished, as the guest described itself
    /// then.
    pub finished: &'a mut dyn FnMut(usize, RunOutput, &VmEnv),
}

/// Boots `image` and runs `job`'s runs inside, handing each over as it
/// finishes; a guest that dies loses only the runs it had not finished.
/// Failed guests leave their console tail in `console_dir`.
pub fn run_guest(
    image: &KernelImage,
    options: &VmOptions,
    job: &GuestJob,
    console_dir: &Path,
    events: &mut GuestEvents<'_>,
) -> Result<VmEnv, VmError> {
    let notify = &mut *events.notify;
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
    let mut once = |accel, probing| {
        boot_once(
            image,
            &boot,
            options,
            job,
            console_dir,
            accel,
            probing,
            &mut *events.finished,
        )
    };
    match once(first, probing) {
        Err(Attempt::KvmFailed(reason)) => {
            (events.notify)(&format!(
                "KVM did not work here ({reason}): the guest runs under TCG \
                 (emulation, slower)"
            ));
            remember("tcg");
            once("tcg", false).map_err(Attempt::into_error)
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

/// One boot: the guest's directories made, qemu started, the guest
/// waited for while its finished runs are handed to `finished`, and how
/// it ended read back.
#[expect(
    clippy::too_many_arguments,
    reason = "what to boot, how, and where its outcomes go: one plain fact each"
)]
fn boot_once(
    image: &KernelImage,
    boot: &Boot<'_>,
    options: &VmOptions,
    job: &GuestJob,
    console_dir: &Path,
    accel: &'static str,
    probing: bool,
    finished: &mut dyn FnMut(usize, RunOutput, &VmEnv),
) -> Result<VmEnv, Attempt> {
    let started = Instant::now();
    let guest_dir = GuestDir::prepare(image, options, job)?;
    let qemu = qemu_arguments(boot, options, &guest_dir, accel);
    let mut runner = start_runner(&qemu, &guest_dir, options)?;
    let mut watch = Watch {
        started,
        prepared: boot.prepared,
        reached_test: None,
        n_finished: 0,
        n_runs: job.runs.len(),
    };
    let waited = wait_for_guest(
        &mut runner,
        &guest_dir,
        options,
        accel,
        probing,
        &mut watch,
        finished,
    );
    // Whatever is left of the group (the watcher) goes with it.
    runner.kill();
    match waited? {
        Waited::Exited => {}
        Waited::TimedOut => {
            let console = keep_console(&guest_dir.console, console_dir)?;
            return Err(Attempt::Failed(VmError::TimedOut {
                seconds: options.timeout_s,
                console,
            }));
        }
    }
    // Runs the guest finished while qemu was ending.
    collect_finished(&guest_dir, options, accel, &mut watch, finished)?;
    check_ending(&guest_dir, console_dir, &watch, probing)?;
    Ok(vm_env(options, accel, watch.reached_test))
}

/// qemu's command line: the machine, the kernel and initramfs, the
/// console to a file, the host's root and the input directory read-only
/// and the output directory over 9p, and the NICs of the network mode.
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
            "local,path={},mount_tag={},security_model=none,readonly=on,multidevs=remap",
            qemu_value(&guest_dir.input),
            initramfs::INPUT_TAG
        ),
        "-virtfs".to_string(),
        format!(
            "local,path={},mount_tag={},security_model=none,multidevs=remap",
            qemu_value(&guest_dir.output),
            initramfs::SHARED_TAG
        ),
    ]);
    match options.net {
        NetMode::Loopback => {}
        NetMode::Pair => {
            for end in 1..=2 {
                let netdev = match pair_backend() {
                    // Two taps with virtio-net headers on a bridge of a
                    // network namespace of their own (see start_runner):
                    // the NICs offer checksum, SG, TSO and GSO as a
                    // tap-backed virtio-net NIC does.
                    PairBackend::Taps => format!(
                        "tap,id=nbpair{end},ifname={PAIR_TAP}{end},script=no,downscript=no,\
                         vnet_hdr=on{}",
                        vhost(options)
                    ),
                    // A hub of their own: a wire between them, which no
                    // host socket or device sees, but which carries no
                    // virtio-net header, so the NICs come up without
                    // offloads.
                    PairBackend::Hub => format!("hubport,id=nbpair{end},hubid=0"),
                };
                qemu.extend([
                    "-netdev".to_string(),
                    netdev,
                    "-device".to_string(),
                    format!(
                        "virtio-net-pci,netdev=nbpair{end},mac=52:54:00:55:00:0{end}{}",
                        queue_size(options)
                    ),
                ]);
            }
        }
        NetMode::Host => {
            let tap = options.tap.as_deref().unwrap_or_default();
            qemu.extend([
                "-netdev".to_string(),
                format!(
                    "tap,id=nbhost,ifname={tap},script=no,downscript=no{}",
                    vhost(options)
                ),
                "-device".to_string(),
                format!("virtio-net-pci,netdev=nbhost{}", queue_size(options)),
            ]);
        }
    }
    qemu
}

/// `,vhost=on` for a tap netdev when vhost-net is asked.
fn vhost(options: &VmOptions) -> &'static str {
    if options.vhost {
        ",vhost=on,vhostforce=on"
    } else {
        ""
    }
}

/// `,tx_queue_size=N` for a NIC when a size is asked.
fn queue_size(options: &VmOptions) -> String {
    options
        .tx_queue_size
        .map_or_else(String::new, |size| format!(",tx_queue_size={size}"))
}

/// What joins the two NICs of [`NetMode::Pair`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PairBackend {
    /// Two taps with virtio-net headers on a bridge, in a network
    /// namespace made for the guest (root only).
    Taps,
    /// qemu's hub: no root needed, no offloads.
    Hub,
}

/// The name of the pair's taps (`nbtap1`, `nbtap2`), inside the guest's
/// own network namespace.
const PAIR_TAP: &str = "nbtap";

/// Taps when this process may make them (root, /dev/net/tun, unshare
/// and ip on PATH), else the hub.
pub(super) fn pair_backend() -> PairBackend {
    let root = rustix::process::geteuid().is_root();
    let tools = ["unshare", "ip"]
        .iter()
        .all(|tool| super::find_on_path(tool).is_some());
    if root && tools && Path::new("/dev/net/tun").exists() {
        PairBackend::Taps
    } else {
        PairBackend::Hub
    }
}

/// The runner's shell: qemu started in the background under a watcher of
/// this process's pipe on its stdin.
const WATCHER: &str = "exec 3<&0; \"$@\" & v=$!; { read _ <&3; kill -9 0; } & wait $v";

/// Starts qemu under a shell that also watches a pipe from this process:
/// when this process dies, however it dies (kill -9 included), the pipe
/// closes and the watcher kills the whole group, qemu with it. The pair's
/// taps are made in a network namespace of the runner's own, which goes
/// with it: nothing is left behind on the host.
fn start_runner(
    qemu: &[String],
    guest_dir: &GuestDir,
    options: &VmOptions,
) -> Result<Runner, VmError> {
    let console = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&guest_dir.console)
        .map_err(io("create the console log"))?;
    let console_err = console.try_clone().map_err(io("open the console log"))?;
    let taps = options.net == NetMode::Pair && pair_backend() == PairBackend::Taps;
    let mut command = if taps {
        let mut command = Command::new("unshare");
        let setup = format!(
            "for end in 1 2; do ip tuntap add dev {PAIR_TAP}$end mode tap vnet_hdr || \
             {{ echo 'netbisect-runner: cannot make a tap for --vm-net pair'; exit 97; }}; done; \
             ip link add nbbridge type bridge && \
             ip link set {PAIR_TAP}1 master nbbridge && ip link set {PAIR_TAP}2 master nbbridge && \
             ip link set {PAIR_TAP}1 up && ip link set {PAIR_TAP}2 up && ip link set nbbridge up || \
             {{ echo 'netbisect-runner: cannot bridge the taps of --vm-net pair'; exit 97; }}; \
             {WATCHER}"
        );
        command.args(["--net", "--", "sh", "-c", &setup]);
        command
    } else {
        let mut command = Command::new("sh");
        command.args(["-c", WATCHER]);
        command
    };
    command
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
    /// qemu exited.
    Exited,
    /// The guest made no progress within its timeout.
    TimedOut,
}

/// What the host has seen of a guest so far.
struct Watch {
    /// When the boot started.
    started: Instant,
    /// The time taken to have the kernel, counted in the boot's overhead.
    prepared: Duration,
    /// After how long the guest reached its first test.
    reached_test: Option<Duration>,
    /// Runs finished and handed over, in order.
    n_finished: usize,
    /// Runs of the job.
    n_runs: usize,
}

/// Waits for qemu to exit, noting when the guest reached its first test
/// and handing over each run as it finishes; gives up when the guest
/// makes no progress within its timeout (counted from the start of the
/// boot, then from the end of each run), on a signal, or for a KVM probe
/// that does not reach the test in time.
fn wait_for_guest(
    runner: &mut Runner,
    guest_dir: &GuestDir,
    options: &VmOptions,
    accel: &str,
    probing: bool,
    watch: &mut Watch,
    finished: &mut dyn FnMut(usize, RunOutput, &VmEnv),
) -> Result<Waited, Attempt> {
    let timeout = Duration::from_secs_f64(options.timeout_s);
    let mut last_progress = watch.started;
    loop {
        if watch.reached_test.is_none() && guest_dir.has("started") {
            watch.reached_test = Some(watch.prepared + watch.started.elapsed());
        }
        if collect_finished(guest_dir, options, accel, watch, finished)? > 0 {
            last_progress = Instant::now();
        }
        if let Err(interrupted) = child_process::interrupt::check() {
            return Err(Attempt::Failed(interrupted.into()));
        }
        match runner.group.try_wait() {
            Ok(Some(_)) => return Ok(Waited::Exited),
            Ok(None) => {}
            Err(source) => {
                return Err(Attempt::Failed(VmError::Io {
                    what: format!("wait for {QEMU}"),
                    source,
                }));
            }
        }
        let elapsed = watch.started.elapsed();
        if probing && watch.reached_test.is_none() && elapsed >= KVM_PROBE.min(timeout) {
            return Err(Attempt::KvmFailed(format!(
                "the guest did not reach the test within {} s",
                KVM_PROBE.min(timeout).as_secs()
            )));
        }
        if last_progress.elapsed() >= timeout {
            return Ok(Waited::TimedOut);
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Hands over every run the guest has finished since the last call, in
/// order; returns how many.
fn collect_finished(
    guest_dir: &GuestDir,
    options: &VmOptions,
    accel: &str,
    watch: &mut Watch,
    finished: &mut dyn FnMut(usize, RunOutput, &VmEnv),
) -> Result<usize, VmError> {
    let mut n_new = 0;
    while watch.n_finished < watch.n_runs {
        let Some(output) = guest_dir.finished_run(watch.n_finished)? else {
            break;
        };
        let vm = vm_env(options, accel, watch.reached_test);
        finished(watch.n_finished, output, &vm);
        watch.n_finished += 1;
        n_new += 1;
    }
    Ok(n_new)
}

/// How a guest that ended got there: its setup error, a boot that never
/// reached the test, a crash during a run (the finished ones are kept),
/// or the end of its script.
fn check_ending(
    guest_dir: &GuestDir,
    console_dir: &Path,
    watch: &Watch,
    probing: bool,
) -> Result<(), Attempt> {
    if let Some(message) = guest_dir.read("setup-error", MAX_MESSAGE_BYTES)? {
        let console = keep_console(&guest_dir.console, console_dir)?;
        return Err(Attempt::Failed(VmError::Guest {
            message: String::from_utf8_lossy(&message).trim().to_string(),
            console,
        }));
    }
    if watch.n_finished == watch.n_runs && guest_dir.has("status") {
        return Ok(());
    }
    if probing && watch.reached_test.is_none() {
        return Err(Attempt::KvmFailed(last_line(&guest_dir.console)));
    }
    let console = keep_console(&guest_dir.console, console_dir)?;
    let reason = if watch.reached_test.is_some() {
        format!(
            "it stopped during run {} of {}: a panic or a crash",
            watch.n_finished + 1,
            watch.n_runs
        )
    } else {
        format!("{}: boot failed", boot_failure(&guest_dir.console))
    };
    Err(Attempt::Failed(VmError::Boot { reason, console }))
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
            NetMode::Pair => Some(
                match pair_backend() {
                    PairBackend::Taps => "virtio-net, taps on a bridge",
                    PairBackend::Hub => "virtio-net, qemu hub",
                }
                .to_string(),
            ),
            NetMode::Host => Some(format!(
                "virtio-net, tap {}",
                options.tap.as_deref().unwrap_or_default()
            )),
        },
        append: options.append.clone(),
        sysctls: options.sysctls.clone(),
        vhost: options.vhost,
        tx_queue_size: options.tx_queue_size,
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
