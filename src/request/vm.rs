//! The command line of a test in a VM: `--vm-*` into the runner's
//! [`VmOptions`], and what a guest's bench cannot take.

use crate::cli::{BenchArgs, VmAccelArg, VmNetArg, VmOptionArgs};
use crate::exit::{self, InputError};
use crate::vm::{self, AccelChoice, GuestSettings, NetMode, VmOptions};

/// The VM options from the command line, with the lines of its
/// `--vm-settings` file added.
pub fn vm_options_with_settings(args: &VmOptionArgs) -> exit::Result<VmOptions> {
    let settings = args
        .vm_settings
        .as_deref()
        .map(GuestSettings::read)
        .transpose()?;
    vm_options(args, settings.as_ref())
}

/// The VM options from the command line, with a settings file's lines
/// added (the command line's sysctls win).
pub fn vm_options(
    args: &VmOptionArgs,
    settings: Option<&GuestSettings>,
) -> exit::Result<VmOptions> {
    let defaults = VmOptions::default();
    let mut options = VmOptions {
        net: match args.vm_net {
            None | Some(VmNetArg::Loopback) => NetMode::Loopback,
            Some(VmNetArg::Pair) => NetMode::Pair,
            Some(VmNetArg::Host) => NetMode::Host,
        },
        cpus: args.vm_cpus.unwrap_or(defaults.cpus),
        memory_mib: args.vm_memory.unwrap_or(defaults.memory_mib),
        accel: match args.vm_accel {
            None | Some(VmAccelArg::Auto) => AccelChoice::Auto,
            Some(VmAccelArg::Kvm) => AccelChoice::Kvm,
            Some(VmAccelArg::Tcg) => AccelChoice::Tcg,
        },
        timeout_s: args.vm_timeout.unwrap_or(defaults.timeout_s),
        tap: args.vm_tap.clone(),
        vhost: args.vm_vhost,
        tx_queue_size: args.vm_tx_queue_size,
        shares: vm::check_shares(&args.vm_share).map_err(|err| InputError(err.to_string()))?,
        ..defaults
    };
    match (options.net, &options.tap) {
        (NetMode::Host, None) => {
            return Err(InputError(
                "--vm-net host needs --vm-tap IFACE: a tap device of this host with an \
                 IPv4 address, which the guest's NIC is attached to"
                    .to_string(),
            )
            .into());
        }
        (NetMode::Loopback | NetMode::Pair, Some(_)) => {
            return Err(InputError("--vm-tap is for --vm-net host".to_string()).into());
        }
        _ => {}
    }
    if let Some(settings) = settings {
        options.append.extend(settings.append.iter().cloned());
        options.sysctls.extend(settings.sysctls.iter().cloned());
    }
    options.append.extend(args.vm_append.iter().cloned());
    for text in &args.vm_sysctl {
        let (key, value) = vm::parse_sysctl(text).map_err(|err| InputError(err.to_string()))?;
        options.sysctls.insert(key, value);
    }
    Ok(options)
}

/// Refuses what a test in a VM cannot take.
pub fn check_guest_bench_args(args: &BenchArgs) -> Result<(), InputError> {
    if args.host.is_some() {
        return Err(InputError(
            "-H with --kernel: the server is chosen by --vm-net (host: this host)".to_string(),
        ));
    }
    if args.interim.is_some() {
        return Err(InputError("-D is not supported with --kernel".to_string()));
    }
    if args.token_file.is_some() {
        return Err(InputError(
            "--token-file is not used with --kernel".to_string(),
        ));
    }
    Ok(())
}
