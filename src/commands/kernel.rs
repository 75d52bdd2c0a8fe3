//! Kernels under test: `bench --kernel IMAGE` and `ab`, which wire the VM
//! runner ([`crate::vm`]) to bench's arguments and to the archive; bisect
//! reaches the same code through [`run_in_vm`].
//!
//! The host resolves and checks the whole test before anything boots, and
//! hands the guest the resolved spec as a file in the shared directory;
//! the guest's record comes back through that directory, gets the `vm`
//! section, is sealed again and stored here.

use super::request::{check_guest_bench_args, request_from_args};
use super::store::{hand_over_to_archive, store_and_print};
use crate::cli::{AbArgs, BenchArgs, CompareArgs, GlobalArgs, VmAccelArg, VmNetArg, VmOptionArgs};
use crate::exit::{Code, InputError};
use crate::vm::{self, AccelChoice, GuestJob, KernelImage, NetMode, VmOptions};
use anyhow::Context;
use bench_core::run::BenchRequest;
use bench_core::server::{self, Server, ServerConfig};
use run_record::record::RunRecord;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Guest settings from a `--vm-settings` file.
#[derive(Debug, Default, PartialEq)]
pub struct GuestSettings {
    /// `append ARGS` lines.
    pub append: Vec<String>,
    /// `sysctl KEY=VALUE` lines.
    pub sysctls: Vec<(String, String)>,
}

/// Reads a settings file: `sysctl KEY=VALUE` and `append ARGS` lines,
/// blank lines and `#` comments.
pub fn read_settings(path: &Path) -> anyhow::Result<GuestSettings> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| InputError(format!("cannot read {}: {err}", path.display())))?;
    let mut settings = GuestSettings::default();
    for (line_idx, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        match word {
            "sysctl" => settings.sysctls.push(vm::parse_sysctl(rest).map_err(|err| {
                InputError(format!("{}:{}: {err}", path.display(), line_idx + 1))
            })?),
            "append" if !rest.is_empty() => settings.append.push(rest.to_string()),
            _ => {
                return Err(InputError(format!(
                    "{}:{}: expected \"sysctl KEY=VALUE\" or \"append ARGS\", got '{line}'",
                    path.display(),
                    line_idx + 1
                ))
                .into());
            }
        }
    }
    Ok(settings)
}

/// The VM options from the command line, with a settings file's lines
/// added (the command line's sysctls win).
pub fn vm_options(
    args: &VmOptionArgs,
    settings: Option<&GuestSettings>,
) -> anyhow::Result<VmOptions> {
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

/// A kernel ready to boot: checked image, options, and the tools found.
pub struct KernelUnderTest {
    /// The image.
    pub image: KernelImage,
    /// How its VM is made.
    pub options: VmOptions,
}

/// Checks everything a boot needs, before anything boots: the options,
/// the image, the runner's programs and the kernel's features.
pub fn prepare(image: &Path, options: VmOptions) -> anyhow::Result<KernelUnderTest> {
    let image = vm::check_image(image, options.net)?;
    vm::check_tools()?;
    if let Some(tap) = &options.tap {
        vm::tap_link(tap)?;
    }
    Ok(KernelUnderTest { image, options })
}

/// Boots `kernel`, runs `request`'s test inside, and returns the sealed
/// record with its `vm` section. `commit` and `label` are handed to the
/// guest's bench; without a commit the guest takes it from its kernel's
/// release. Failed guests leave their console in `console_dir`.
#[expect(
    clippy::too_many_arguments,
    reason = "each is one plain fact of the run; a struct would only rename them"
)]
pub fn run_in_vm(
    kernel: &KernelUnderTest,
    request: &BenchRequest,
    commit: Option<&str>,
    label: Option<&str>,
    testbed: Option<&str>,
    console_dir: &Path,
    quiet: bool,
    verbose: bool,
) -> anyhow::Result<RunRecord> {
    let spec = serde_json::to_vec(&request.spec).context("failed to encode the test spec")?;
    let binary = std::env::current_exe().context("cannot find the netbisect binary")?;
    let testbed = testbed
        .map(str::to_string)
        .unwrap_or_else(|| format!("vm-{}", kernel.options.net.name()));
    let mut bench_args = vec![
        "--spec-file".to_string(),
        "{shared}/spec.json".to_string(),
        "--testbed".to_string(),
        testbed,
    ];
    if let Some(commit) = commit {
        bench_args.extend(["--commit".to_string(), commit.to_string()]);
    }
    if let Some(label) = label {
        bench_args.extend(["--label".to_string(), label.to_string()]);
    }
    let mut files = vec![("spec.json".to_string(), spec)];
    // The host mode's server runs here, on the tap's address, for this
    // one run, and takes only the guest, which is given its token.
    let host_server = match (kernel.options.net, &kernel.options.tap) {
        (NetMode::Host, Some(tap)) => {
            if request.spec.family == run_record::spec::AddressFamily::Ipv6 {
                return Err(InputError("--vm-net host runs over IPv4: drop -6".into()).into());
            }
            let link = vm::tap_link(tap)?;
            let (token, token_text) = one_run_token()?;
            files.push(("token".to_string(), token_text));
            let mut config = ServerConfig::new(std::net::SocketAddr::new(link.host.into(), 0));
            config.token = Some(token);
            let server = Server::bind(config, server::quiet())
                .context("cannot start the server for the guest")?;
            let port = server.local_addr().port();
            let handle = server.spawn().context("cannot start the server")?;
            Some((handle, link, port))
        }
        _ => None,
    };
    let job = GuestJob {
        binary,
        bench_args,
        files,
        host: host_server
            .as_ref()
            .map(|(_, link, port)| (link.clone(), *port)),
        ipv6: request.spec.family == run_record::spec::AddressFamily::Ipv6,
    };
    if verbose {
        eprintln!(
            "netbisect: booting {} (release {}, features checked from {})",
            kernel.image.path.display(),
            kernel.image.release.as_deref().unwrap_or("unknown"),
            kernel.image.features_from
        );
    }
    let mut notify = |text: &str| {
        if !quiet {
            eprintln!("netbisect: {text}");
        }
    };
    let outcome = vm::run_guest(
        &kernel.image,
        &kernel.options,
        &job,
        console_dir,
        &mut notify,
    );
    if let Some((handle, _, _)) = host_server {
        handle.stop();
    }
    let result =
        outcome.with_context(|| format!("testing kernel {}", kernel.image.path.display()))?;
    let mut record =
        RunRecord::from_slice(&result.record).context("the guest's run record is not readable")?;
    record.env.vm = Some(result.vm);
    record.seal().context("failed to seal the run record")?;
    Ok(record)
}

/// A fresh random token for one run of the host mode, and its text for
/// the guest's token file.
fn one_run_token() -> anyhow::Result<(bench_core::auth::Token, Vec<u8>)> {
    let text = format!(
        "{}{}\n",
        bench_core::auth::new_challenge()?,
        bench_core::auth::new_challenge()?
    );
    // A token is read from a file only this user may read.
    let dir = tempfile::Builder::new()
        .prefix("netbisect-token-")
        .tempdir()
        .context("cannot create a directory for the guest's token")?;
    let path = dir.path().join("token");
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .context("cannot write the guest's token")?;
        file.write_all(text.as_bytes())
            .context("cannot write the guest's token")?;
    }
    let token = bench_core::auth::Token::from_file(&path)?;
    Ok((token, text.into_bytes()))
}

/// Where the console tails of failed guests go outside a bisection.
fn console_dir() -> PathBuf {
    std::env::temp_dir()
}

/// `netbisect bench --kernel IMAGE`.
pub fn bench(global: &GlobalArgs, args: &BenchArgs) -> anyhow::Result<Code> {
    let Some(image) = &args.vm.kernel else {
        return Err(InputError("--vm-* options need --kernel IMAGE".to_string()).into());
    };
    check_guest_bench_args(args)?;
    // A signal kills the guest at once; the shared directory is removed
    // on the way out, which then exits 130.
    bisect::interrupt::install(bisect::interrupt::Mode::Journal);
    let request = request_from_args(args)?;
    let settings = args
        .vm
        .options
        .vm_settings
        .as_deref()
        .map(read_settings)
        .transpose()?;
    let options = vm_options(&args.vm.options, settings.as_ref())?;
    let kernel = prepare(image, options)?;
    let record = run_in_vm(
        &kernel,
        &request,
        args.commit.as_deref(),
        args.label.as_deref(),
        args.testbed.as_deref(),
        &console_dir(),
        global.quiet,
        global.verbose > 0,
    )?;
    store_and_print(global, args, &record)
}

/// `netbisect ab`: A and B booted in turn, every run archived under its
/// side's label, then the comparison of the two labels.
pub fn ab(global: &GlobalArgs, args: &AbArgs) -> anyhow::Result<Code> {
    if args.bench.vm.kernel.is_some() {
        return Err(InputError("ab takes --kernel-a and --kernel-b, not --kernel".into()).into());
    }
    if args.bench.label.is_some() {
        return Err(InputError("ab takes --label-a and --label-b, not --label".into()).into());
    }
    if args.bench.no_archive {
        return Err(InputError("ab compares archived runs: --no-archive is refused".into()).into());
    }
    if args.label_a == args.label_b {
        return Err(InputError("--label-a and --label-b must differ".into()).into());
    }
    check_guest_bench_args(&args.bench)?;
    let request = request_from_args(&args.bench)?;
    let settings = args
        .bench
        .vm
        .options
        .vm_settings
        .as_deref()
        .map(read_settings)
        .transpose()?;
    let options = vm_options(&args.bench.vm.options, settings.as_ref())?;
    bisect::interrupt::install(bisect::interrupt::Mode::Journal);
    let side_a = prepare(&args.kernel_a, options.clone())?;
    let side_b = prepare(&args.kernel_b, options)?;
    // Options of the comparison are checked before the first boot.
    let compare_args = CompareArgs {
        first: format!("label:{}", args.label_a),
        second: format!("label:{}", args.label_b),
        alpha: args.alpha,
        min_effect: 0.0,
        test: None,
        testbed: None,
        layout: crate::cli::CompareLayout::Netperf,
        email: false,
        units: crate::cli::UnitsArg {
            units: args.bench.units.units.clone(),
        },
    };
    archive::compare::compare(
        &[],
        &[],
        &archive::compare::CompareOptions {
            alpha: args.alpha,
            ..Default::default()
        },
    )
    .map_err(|err| InputError(err.to_string()))?;
    for round in 1..=args.rounds {
        for (kernel, label) in [(&side_a, &args.label_a), (&side_b, &args.label_b)] {
            if !global.quiet {
                eprintln!(
                    "netbisect: round {round}/{}: {label} ({})",
                    args.rounds,
                    kernel.image.path.display()
                );
            }
            let record = run_in_vm(
                kernel,
                &request,
                args.bench.commit.as_deref(),
                Some(label),
                args.bench.testbed.as_deref(),
                &console_dir(),
                global.quiet,
                global.verbose > 0,
            )?;
            hand_over_to_archive(global, &record, &args.bench)?;
        }
    }
    super::compare::run(global, &compare_args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_files_take_sysctls_and_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("guest.conf");
        std::fs::write(
            &path,
            "# small buffers\nsysctl net.ipv4.tcp_rmem=4096 4096 4096\n\nappend mitigations=off\n",
        )
        .unwrap();
        let settings = read_settings(&path).unwrap();
        assert_eq!(settings.append, vec!["mitigations=off".to_string()]);
        assert_eq!(
            settings.sysctls,
            vec![(
                "net.ipv4.tcp_rmem".to_string(),
                "4096 4096 4096".to_string()
            )]
        );
        std::fs::write(&path, "reboot now\n").unwrap();
        let err = read_settings(&path).unwrap_err();
        assert!(err.to_string().contains(":1: expected"), "{err}");
    }
}
