//! One guest's life: the accelerator tried (KVM, else TCG, remembered for
//! the process), the guest's directories and the initramfs made (see
//! [`super::guest_dir`]), qemu started in a process group of its own under
//! a watcher that kills the group when netbisect dies, the guest waited
//! for while each run it finishes is handed over, and how it ended read
//! back.

use super::console::{boot_failure, keep_console, last_line};
use super::guest_dir::{GuestDir, MAX_MESSAGE_BYTES};
use super::qemu::{Boot, Runner, qemu_arguments, start_runner, vm_env};
use super::{
    AccelChoice, GuestJob, KVM_PROBE, KernelImage, POLL_INTERVAL, QEMU, RunOutput, VmError,
    VmOptions, vmlinux,
};
use run_record::env::VmEnv;
use std::path::{Path, PathBuf};
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
    let unpacked = vmlinux::uncompressed(&image.path, image.release.as_deref());
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
    // What the guest wrote between the last look and its end.
    guest_dir.check_bounds()?;
    // Runs the guest finished while qemu was ending.
    collect_finished(&guest_dir, options, accel, &mut watch, finished)?;
    check_ending(&guest_dir, console_dir, &watch, probing)?;
    Ok(vm_env(options, accel, watch.reached_test))
}

/// How the wait for a guest ended.
enum Waited {
    /// qemu exited, or the guest finished its script (qemu is ended).
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

/// Waits for qemu to exit (or for the guest to finish its script and
/// every run), noting when the guest reached its first test
/// and handing over each run as it finishes; gives up when the guest
/// makes no progress within its timeout (counted from the start of the
/// boot, then from the end of each run), when it passes a bound of what
/// it may leave on this host (looked at every [`POLL_INTERVAL`]), on a
/// signal, or for a KVM probe that does not reach the test in time.
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
        guest_dir.check_bounds()?;
        // Every run handed over and the script at its end: nothing the
        // guest does from here (its power-off, seconds under emulation)
        // is waited for; the group is ended next.
        if watch.n_finished == watch.n_runs && guest_dir.has("status") {
            return Ok(Waited::Exited);
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
        guest_dir.discard_run(watch.n_finished);
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
            message: run_record::guest::guest_message(&message),
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
