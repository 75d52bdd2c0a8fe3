//! qemu for one guest: its command line (the machine, the kernel and
//! initramfs, the console to a file, the input directory and the
//! directories of the guest's root read-only, the output directory with
//! the guest's modes kept apart, and the NICs of the network mode), the
//! runner that starts it under a watcher of this process and the limits
//! of what it writes, and what the record's `vm` section says of it.

use super::guest_dir::{GuestDir, MAX_OUTPUT_BYTES};
use super::{NetMode, QEMU, RUNNER, VmError, VmOptions, initramfs, io};
use child_process::group::GroupChild;
use run_record::env::VmEnv;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// What one boot starts from.
pub(super) struct Boot<'a> {
    /// The kernel given to qemu.
    pub(super) kernel: &'a Path,
    /// The time taken to have it, counted in the boot's overhead.
    pub(super) prepared: Duration,
}

/// qemu's command line: the machine, the kernel and initramfs, the
/// console to a file, the input directory and the guest root's
/// directories read-only and the output directory over 9p, and the NICs
/// of the network mode.
pub(super) fn qemu_arguments(
    boot: &Boot<'_>,
    options: &VmOptions,
    guest_dir: &GuestDir,
    accel: &'static str,
) -> Vec<String> {
    let append = super::kernel_command_line(options);
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
            "local,path={},mount_tag={},security_model=none,readonly=on,multidevs=remap",
            qemu_value(&guest_dir.input),
            initramfs::INPUT_TAG
        ),
        // The guest's modes and owners are kept in files of qemu's beside
        // what it writes (mapped-file, which any file system takes, tmpfs
        // without user xattrs too), never given to the files themselves:
        // on this host they are this user's, 0600 and directories 0700,
        // whatever the guest makes of them (setuid, executable, devices,
        // links).
        "-virtfs".to_string(),
        format!(
            "local,path={},mount_tag={},security_model=mapped-file,fmode=0600,dmode=0700,\
             multidevs=remap",
            qemu_value(&guest_dir.output),
            initramfs::SHARED_TAG
        ),
    ]);
    for dir in &guest_dir.root.mounts {
        qemu.extend([
            "-virtfs".to_string(),
            format!(
                "local,path={},mount_tag={},security_model=none,readonly=on,multidevs=remap",
                qemu_value(&dir.path),
                dir.tag
            ),
        ]);
    }
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
/// When qemu ends, the shell ends the watcher and reaps it before it
/// exits itself, so that no orphan of the group is left for init to reap.
const WATCHER: &str = "exec 3<&0; \"$@\" & v=$!; { read _ <&3; kill -9 0; } & w=$!; \
     wait $v; s=$?; kill $w 2>/dev/null; wait $w 2>/dev/null; exit $s";

/// What the runner's shell does before the watcher: no file qemu writes
/// (the console log, a file of the output directory) may pass the bound
/// of what the guest holds on this host, by more than one 512-byte block
/// (so that the bound's check sees it passed); a write past it fails
/// instead of killing qemu (SIGXFSZ ignored), and qemu leaves no core.
fn limits() -> String {
    let blocks = MAX_OUTPUT_BYTES / 512 + 1;
    format!("ulimit -c 0 2>/dev/null; ulimit -f {blocks} 2>/dev/null; trap '' XFSZ; ")
}

/// Starts qemu under a shell that also watches a pipe from this process:
/// when this process dies, however it dies (kill -9 included), the pipe
/// closes and the watcher kills the whole group, qemu with it. The pair's
/// taps are made in a network namespace of the runner's own, which goes
/// with it: nothing is left behind on the host.
pub(super) fn start_runner(
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
             ip link set {PAIR_TAP}1 mtu 65521 up && ip link set {PAIR_TAP}2 mtu 65521 up && \
             ip link set nbbridge up || \
             {{ echo 'netbisect-runner: cannot bridge the taps of --vm-net pair'; exit 97; }}; \
             {limits}{WATCHER}",
            limits = limits()
        );
        command.args(["--net", "--", "sh", "-c", &setup]);
        command
    } else {
        let mut command = Command::new("sh");
        command.args(["-c", &format!("{}{WATCHER}", limits())]);
        command
    };
    command.arg("sh");
    // Pinned, qemu and every thread it starts stay on the slot's CPUs.
    if let Some(cpus) = &options.host_cpus {
        command.args(["taskset", "-c", cpus]);
    }
    command
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
pub(super) struct Runner {
    pub(super) group: GroupChild,
    _lifeline: Option<std::process::ChildStdin>,
}

impl Runner {
    pub(super) fn kill(&mut self) {
        self.group.kill();
    }
}

/// The record's `vm` section: how the guest was made.
pub(super) fn vm_env(options: &VmOptions, accel: &str, reached_test: Option<Duration>) -> VmEnv {
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
        host_cpus: options.host_cpus.clone(),
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
