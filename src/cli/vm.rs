//! The arguments of kernels under test: `--kernel IMAGE` and how its VM
//! is made (`--vm-*`).

use super::values;
use clap::Args;
use std::path::PathBuf;

/// `--kernel IMAGE` of `bench`, and how its VM is made.
#[derive(Debug, Args)]
pub struct KernelArgs {
    /// Boot this kernel image (bzImage) in a VM with qemu and run the test
    /// inside it; the record comes back to this host's archive
    #[arg(long, value_name = "IMAGE")]
    pub kernel: Option<PathBuf>,
    /// How the VM is made.
    #[command(flatten)]
    pub options: VmOptionArgs,
    /// The resolved test spec as JSON (the host hands it to the guest)
    #[arg(long, value_name = "FILE", hide = true)]
    pub spec_file: Option<PathBuf>,
}

/// The options of the VM a kernel is tested in; they need a kernel.
#[derive(Debug, Default, Args)]
pub struct VmOptionArgs {
    /// Where the traffic flows: inside the guest over loopback, between
    /// two virtio-net NICs of the guest (one per network namespace), or
    /// from the guest to a server on this host [default: loopback]
    #[arg(long, value_enum, value_name = "MODE")]
    pub vm_net: Option<VmNetArg>,
    /// Virtual CPUs of the guest [default: 2]
    #[arg(long, value_name = "N", value_parser = values::vm_cpus)]
    pub vm_cpus: Option<u32>,
    /// Memory of the guest, MiB (M and G suffixes allowed) [default: 1G]
    #[arg(long, value_name = "SIZE", value_parser = values::vm_memory_mib)]
    pub vm_memory: Option<u64>,
    /// Arguments added to the guest kernel's command line (repeatable)
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub vm_append: Vec<String>,
    /// Set a sysctl in the guest before the test (repeatable)
    #[arg(long, value_name = "KEY=VALUE")]
    pub vm_sysctl: Vec<String>,
    /// A file of guest settings, one per line: "sysctl KEY=VALUE" or
    /// "append ARGS" ('#' starts a comment). With bisect, a path in the
    /// worktree read at each step, so that the build can leave it
    #[arg(long, value_name = "FILE")]
    pub vm_settings: Option<PathBuf>,
    /// With --vm-net host: the tap device of this host the guest's NIC is
    /// attached to; it must be up, with an IPv4 address (the server's)
    #[arg(long, value_name = "IFACE")]
    pub vm_tap: Option<String>,
    /// Seconds from the start of the boot to the end of the test before
    /// the guest is killed [default: 300]
    #[arg(long, value_name = "SECS", value_parser = values::vm_timeout)]
    pub vm_timeout: Option<f64>,
    /// Accelerator: KVM if it works (tried, with a timeout), else TCG
    #[arg(long, value_enum, value_name = "ACCEL")]
    pub vm_accel: Option<VmAccelArg>,
    /// Run the NICs' backend in the host kernel (vhost-net): needs KVM,
    /// /dev/vhost-net and NICs on taps (--vm-net host, or pair as root)
    #[arg(long)]
    pub vm_vhost: bool,
    /// A directory of this host the guest may read, at the same path
    /// (repeatable): the guest sees only /usr and a small /etc of this
    /// host otherwise
    #[arg(long, value_name = "DIR")]
    pub vm_share: Vec<PathBuf>,
    /// Transmit queue size of the guest's virtio-net NICs: 256, 512 or
    /// 1024 descriptors (qemu keeps 256 for backends other than
    /// vhost-user)
    #[arg(long, value_name = "N", value_parser = values::vm_tx_queue_size)]
    pub vm_tx_queue_size: Option<u32>,
}

impl VmOptionArgs {
    /// True when any VM option was given.
    pub fn any(&self) -> bool {
        self.vm_net.is_some()
            || self.vm_cpus.is_some()
            || self.vm_memory.is_some()
            || !self.vm_append.is_empty()
            || !self.vm_sysctl.is_empty()
            || self.vm_settings.is_some()
            || self.vm_tap.is_some()
            || self.vm_timeout.is_some()
            || self.vm_accel.is_some()
            || self.vm_vhost
            || self.vm_tx_queue_size.is_some()
            || !self.vm_share.is_empty()
    }
}

/// `--vm-net`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum VmNetArg {
    /// Loopback inside the guest
    Loopback,
    /// Two virtio-net NICs of the guest looped to each other
    Pair,
    /// The guest to `netbisect serve` on this host
    Host,
}

/// `--vm-accel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum VmAccelArg {
    /// KVM when it works, else TCG
    Auto,
    /// KVM only
    Kvm,
    /// TCG (emulation) only
    Tcg,
}
