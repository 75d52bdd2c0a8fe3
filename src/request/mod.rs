//! What a test is made of, from the command line: `bench`'s flags (and
//! the same flags in bisect's and verdict's `--bench "SPEC"`) turned into
//! a validated [`BenchRequest`], netperf's sizes and pairs read as
//! netperf reads them, and a whole `bench` command line into a
//! [`BenchInvocation`]: the request, what becomes of its run, and whether
//! it runs once, as a size sweep or in a VM. Every input error is found
//! here or, for the ranges of single values, by clap's value parsers
//! (`cli::values`), before any connection or boot. The clap types end
//! here: what follows takes these plain options.

pub mod axes;
pub mod command;
pub mod recipe;
mod test_options;
pub mod vm;

use crate::cli::{BenchArgs, BenchSpecLine};
use crate::exit::{self, InputError};
use crate::store::RunOutput;
use crate::vm::{GuestSubject, VmOptions};
use axes::{AxisKey, Configuration};
use bench_core::auth::Token;
use bench_core::client::ClientOptions;
use bench_core::datapath::InterimFigures;
use bench_core::run::{BenchRequest, InterimReports};
use clap::Parser;
use run_record::record::{Subject, check_name};
use run_record::spec::{
    AddressFamily, ConfidenceSpec, DEFAULT_CONFIDENCE_ITERATIONS, RunSpec, Setting, SweepParameter,
    SweepSpec, SystemSettings, TestKind, parse_sweep,
};
use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A `bench` command line as plain options.
pub struct BenchInvocation {
    /// The test, as this host runs it (a sweep's base).
    pub request: BenchRequest,
    /// How the run is printed and whether it is stored.
    pub output: RunOutput,
    /// Once here, as a size sweep, or in a VM.
    pub mode: BenchMode,
}

/// How a `bench` test runs.
pub enum BenchMode {
    /// Once, on this host.
    Once,
    /// One run per size (one `--sweep m=` or `r=`), as a sweep table.
    Sweep(SizeSweep),
    /// One run per configuration of several `--sweep` axes, on this host.
    Configurations(Vec<Configuration>),
    /// In a VM booting a kernel under test (`--kernel`), every
    /// configuration in one boot (boxed: its VM options outweigh the
    /// other modes).
    Kernel(Box<KernelRun>),
}

/// A checked `--sweep`: the sizes and one spec per size.
pub struct SizeSweep {
    /// The sweep as given.
    pub sweep: SweepSpec,
    /// The spec of each size, in order.
    pub specs: Vec<RunSpec>,
}

/// A test in a VM: the image, its VM, and what the guest's record is
/// told of its subject.
pub struct KernelRun {
    /// The kernel image.
    pub image: PathBuf,
    /// How its VM is made, a settings file's lines included.
    pub options: VmOptions,
    /// The commit, label and testbed given on the command line.
    pub subject: GuestSubject,
    /// The configurations to run, in order (one without `--sweep`).
    pub configurations: Vec<Configuration>,
    /// The command its runs keep (`bench --kernel ...`, see [`command`]).
    pub command: Vec<String>,
}

impl BenchInvocation {
    /// Reads `bench`'s arguments; every input error before any
    /// connection or boot (the image itself is checked by its command).
    pub fn from_args(args: &BenchArgs) -> exit::Result<BenchInvocation> {
        let output = run_output(args);
        let in_vm = args.vm.kernel.is_some() || args.vm.options.any();
        if in_vm {
            let Some(image) = &args.vm.kernel else {
                return Err(InputError("--vm-* options need --kernel IMAGE".to_string()).into());
            };
            vm::check_guest_bench_args(args)?;
            let request = request_from_args(args)?;
            let configurations = configurations_of(args, &request)?;
            let options = vm::vm_options_with_settings(&args.vm.options)?;
            return Ok(BenchInvocation {
                request,
                output,
                mode: BenchMode::Kernel(Box::new(KernelRun {
                    image: image.clone(),
                    options,
                    subject: guest_subject(args),
                    configurations,
                    command: command::bench_command(args),
                })),
            });
        }
        let size_sweep = match args.sweep.as_slice() {
            [text]
                if args.config.is_empty()
                    && matches!(
                        text.split_once('=').map(|(key, _)| key.trim()),
                        Some("m" | "r")
                    ) =>
            {
                Some(text)
            }
            _ => None,
        };
        if (!args.sweep.is_empty() || !args.config.is_empty()) && size_sweep.is_none() {
            let request = request_from_args(args)?;
            let configurations = configurations_of(args, &request)?;
            return Ok(BenchInvocation {
                request,
                output,
                mode: BenchMode::Configurations(configurations),
            });
        }
        if let Some(text) = size_sweep {
            let sweep = parse_sweep(text).map_err(|err| InputError(err.to_string()))?;
            let fixed_elsewhere = match sweep.parameter {
                SweepParameter::SendSize => args.send_size.is_some(),
                SweepParameter::RequestResponseSize => args.request_response.is_some(),
            };
            if fixed_elsewhere {
                let (key, option) = (sweep.parameter.key(), sweep.parameter.option());
                return Err(InputError(format!(
                    "--sweep {key}= sets {option} for each run; leave {option} out"
                ))
                .into());
            }
            let request = request_from_args(args)?;
            let specs = sweep
                .resolve(&request.spec)
                .map_err(|err| InputError(format!("invalid --sweep: {err}")))?;
            return Ok(BenchInvocation {
                request,
                output,
                mode: BenchMode::Sweep(SizeSweep { sweep, specs }),
            });
        }
        Ok(BenchInvocation {
            request: request_from_args(args)?,
            output,
            mode: BenchMode::Once,
        })
    }
}

/// The configurations of bench's `--sweep` axes over its flags (one, the
/// request's own, without); every one checked.
pub fn configurations_of(
    args: &BenchArgs,
    request: &BenchRequest,
) -> exit::Result<Vec<Configuration>> {
    if args.sweep.is_empty() && args.config.is_empty() {
        return Ok(vec![Configuration {
            spec: request.spec.clone(),
            name: Vec::new(),
        }]);
    }
    let axes = axes::parse_axes(&args.sweep, &args.config)?;
    for axis in axes.iter().flat_map(|group| group.keys()) {
        let fixed = match axis {
            AxisKey::Test => None,
            AxisKey::SendSize => args.send_size.is_some().then_some("-m"),
            AxisKey::RecvSize => args.recv_size.is_some().then_some("-M"),
            AxisKey::RequestResponse => args.request_response.is_some().then_some("-r"),
            AxisKey::LocalBuffer => args.local_buffer.is_some().then_some("-s"),
            AxisKey::RemoteBuffer => args.remote_buffer.is_some().then_some("-S"),
            AxisKey::Burst => args.first_burst.is_some().then_some("-b"),
            AxisKey::Setting(key) => args
                .settings
                .iter()
                .any(|text| {
                    text.split_once('=')
                        .is_some_and(|(given, _)| given.trim() == key)
                })
                .then_some("--set"),
        };
        if let Some(option) = fixed {
            return Err(InputError(format!(
                "--sweep {}= sets it for each configuration; leave {option} out",
                axis.name()
            ))
            .into());
        }
    }
    let spec_of = |test: TestKind| -> Result<RunSpec, InputError> {
        if test == request.spec.test {
            return Ok(request.spec.clone());
        }
        spec_from_args(args, test).map_err(|err| InputError(format!("{test}: {err:#}")))
    };
    Ok(axes::configurations(&axes, request.spec.test, &spec_of)?)
}

/// bench's `--no-archive`, `-f` and `-P`.
pub fn run_output(args: &BenchArgs) -> RunOutput {
    RunOutput {
        archive: !args.no_archive,
        units: args.units.units.clone(),
        banner: args.banner != Some(0),
        strict_settings: args.strict_settings,
    }
}

/// What a guest's bench is told of its subject: only what the command
/// line gives (without a commit, the guest takes its kernel's).
pub fn guest_subject(args: &BenchArgs) -> GuestSubject {
    GuestSubject {
        commit: args.commit.clone(),
        label: args.label.clone(),
        testbed: args.testbed.clone(),
    }
}

/// Turns the arguments into a validated request; every input error is
/// found here, before any connection.
pub fn request_from_args(args: &BenchArgs) -> exit::Result<BenchRequest> {
    let test: TestKind = args.test.parse()?;
    let spec = spec_from_args(args, test)?;
    let test_options = test_options::parse(test, &args.test_options)?;
    request_with_spec(args, spec, test_options.data_port)
}

/// The spec bench's flags give for `test` (the `-t` of an experiment's
/// `t=` axis), checked.
pub fn spec_from_args(args: &BenchArgs, test: TestKind) -> exit::Result<RunSpec> {
    let family = family_of(args);
    let mut spec = RunSpec::defaults(test);
    spec.family = family;
    if let Some(length) = args.length {
        spec.duration_s = length;
    }
    if let Some(text) = &args.local_buffer {
        spec.local_socket_buffer_bytes = Some(parse_size("-s", text)?);
    }
    if let Some(text) = &args.remote_buffer {
        spec.remote_socket_buffer_bytes = Some(parse_size("-S", text)?);
    }
    if let Some(text) = &args.send_size {
        spec.send_size_bytes = parse_size("-m", text)?;
    }
    if let Some(text) = &args.recv_size {
        spec.recv_size_bytes = parse_size("-M", text)?;
    }
    if let Some(text) = &args.request_response {
        let (request, response) = split_pair(text);
        if let Some(request) = request {
            spec.request_size_bytes = parse_size("-r", request)?;
        }
        if let Some(response) = response {
            spec.response_size_bytes = parse_size("-r", response)?;
        }
    }
    spec.nodelay = args.nodelay;
    if let Some(burst) = args.first_burst {
        spec.first_burst = burst;
    }
    if let Some(text) = &args.cpus {
        let (local, remote) = if text.contains(',') {
            split_pair(text)
        } else {
            (Some(text.as_str()), Some(text.as_str()))
        };
        spec.cpu_pinning.local = local.map(parse_cpu).transpose()?;
        spec.cpu_pinning.remote = remote.map(parse_cpu).transpose()?;
    }
    if let Some(text) = &args.confidence {
        spec.confidence = Some(parse_confidence(text)?);
        let (max, min) = DEFAULT_CONFIDENCE_ITERATIONS;
        spec.iterations_max = max;
        spec.iterations_min = min;
    }
    if let Some(text) = &args.iterations {
        let (max, min) = split_pair(text);
        let parse = |part: &str| {
            part.parse::<u32>()
                .map_err(|_| InputError(format!("invalid iteration count '{part}' for -i")))
        };
        if let Some(max) = max {
            spec.iterations_max = parse(max)?;
            spec.iterations_min = spec.iterations_min.min(spec.iterations_max);
        }
        if let Some(min) = min {
            spec.iterations_min = parse(min)?;
        }
    }
    spec.local_cpu = args.local_cpu;
    spec.remote_cpu = args.remote_cpu;
    if let Some(flows) = args.flows {
        spec.flows = flows;
    }
    spec.threads = args.threads;
    if let Some(warmup) = args.warmup {
        spec.warmup_s = warmup;
    }
    test_options::refuse_clashing_globals(args)?;
    let test_options = test_options::parse(test, &args.test_options)?;
    test_options.apply(&mut spec);
    if !args.settings.is_empty() {
        let mut system = SystemSettings::default();
        for text in &args.settings {
            system.set(Setting::parse(text).map_err(|err| InputError(err.to_string()))?);
        }
        spec.system = Some(system);
    }
    if let Some(path) = &args.vm.spec_file {
        // The host resolved the spec from the user's flags; the guest
        // runs exactly that.
        let text = std::fs::read(path)
            .map_err(|err| InputError(format!("cannot read {}: {err}", path.display())))?;
        spec = serde_json::from_slice(&text)
            .map_err(|err| InputError(format!("{} is not a test spec: {err}", path.display())))?;
    }
    spec.validate().map_err(|err| InputError(err.to_string()))?;
    Ok(spec)
}

/// What to say above a failed run's cause: a setting that could not be
/// made is not a test that failed (the test never ran).
pub fn failed_run_context(err: &bench_core::run::BenchError) -> &'static str {
    match err {
        bench_core::run::BenchError::Settings(_) => {
            "a setting asked could not be made, so the test did not run; no run was recorded"
        }
        _ => "the test failed; no run was recorded",
    }
}

/// The request of `spec` with the rest of bench's flags: where the server
/// is, the subject, the testbed, interim reports.
fn request_with_spec(
    args: &BenchArgs,
    spec: RunSpec,
    data_port: Option<bench_core::protocol::PortRange>,
) -> exit::Result<BenchRequest> {
    // A name no archive would store is refused before anything runs.
    for (option, name) in [
        ("--commit", &args.commit),
        ("--label", &args.label),
        ("--testbed", &args.testbed),
    ] {
        if let Some(name) = name {
            check_name(option, name).map_err(|err| InputError(err.to_string()))?;
        }
    }
    // The range of -D is clap's (`cli::values::interim_seconds`).
    let interim = args.interim.map(|seconds| InterimReports {
        every: Duration::from_secs_f64(seconds),
        report: Arc::new(print_interim),
    });

    let release = bench_core::host::running_release();
    let commit = match &args.commit {
        Some(commit) => Some(commit.clone()),
        None => release
            .as_deref()
            .and_then(|release| run_record::kernel::parse_release(release).commit),
    };
    let subject = Subject {
        commit,
        describe: None,
        kernel_release: release,
        label: args.label.clone(),
    };
    let data_ports = data_port.or(args.data_port);
    if let Some(range) = data_ports {
        range
            .check_flows(spec.flows.max(1))
            .map_err(|err| InputError(err.to_string()))?;
    }
    let server = match &args.host {
        None => None,
        Some(host) => {
            let mut options = ClientOptions::new(host, args.port);
            options.data_ports = data_ports;
            if let Some(path) = &args.token_file {
                options.token =
                    Some(Token::from_file(path).map_err(|err| InputError(err.to_string()))?);
            }
            Some(options)
        }
    };
    let testbed = match (&args.testbed, &args.host) {
        (Some(testbed), _) => testbed.clone(),
        (None, Some(host)) => host.clone(),
        (None, None) => "loopback".to_string(),
    };
    Ok(BenchRequest {
        spec,
        server,
        subject,
        testbed,
        interim,
    })
}

/// One interim report on stderr, in netperf's demo-mode words.
fn print_interim(figures: &InterimFigures) {
    let text = match figures.transaction_rate {
        Some(rate) => format!(
            "Interim result: {rate:10.2} Trans/s over {:.3} seconds ending at {:.3}\n",
            figures.interval_s, figures.since_start_s
        ),
        None => format!(
            "Interim result: {:10.2} 10^6bits/s over {:.3} seconds ending at {:.3}\n",
            figures.throughput_bps / 1e6,
            figures.interval_s,
            figures.since_start_s
        ),
    };
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// `-I level[,width]`: the level in percent and the full width of the
/// interval in percent of the mean (netperf's default width: 5).
fn parse_confidence(text: &str) -> Result<ConfidenceSpec, InputError> {
    let invalid = || InputError(format!("invalid confidence '{text}' for -I (LEVEL,WIDTH)"));
    let (level, width) = split_pair(text);
    let level_pct = level.ok_or_else(invalid)?.parse().map_err(|_| invalid())?;
    let width_pct = match width {
        Some(width) => width.parse().map_err(|_| invalid())?,
        None => 5.0,
    };
    Ok(ConfidenceSpec {
        level_pct,
        width_pct,
    })
}

fn family_of(args: &BenchArgs) -> AddressFamily {
    let host_is_ipv6 = args
        .host
        .as_deref()
        .and_then(|host| host.parse::<IpAddr>().ok())
        .is_some_and(|ip| ip.is_ipv6());
    if args.ipv6 || (host_is_ipv6 && !args.ipv4) {
        AddressFamily::Ipv6
    } else {
        AddressFamily::Ipv4
    }
}

/// Splits "A,B" into its halves; an empty half is `None`, and a lone value
/// is the first half.
fn split_pair(text: &str) -> (Option<&str>, Option<&str>) {
    fn non_empty(part: &str) -> Option<&str> {
        let part = part.trim();
        (!part.is_empty()).then_some(part)
    }
    match text.split_once(',') {
        Some((first, second)) => (non_empty(first), non_empty(second)),
        None => (non_empty(text), None),
    }
}

fn parse_cpu(text: &str) -> Result<u32, InputError> {
    text.trim()
        .parse()
        .map_err(|_| InputError(format!("invalid CPU '{text}' for -T")))
}

/// A size as netperf reads it: a number with an optional suffix, K, M, G
/// for powers of 2 and k, m, g for powers of 10.
fn parse_size(option: &str, text: &str) -> Result<u32, InputError> {
    run_record::spec::parse_size(option, text).map_err(|err| InputError(err.to_string()))
}

/// Parses `--bench "SPEC"` with the flags of `netbisect bench` into a
/// request. `--commit` and `--no-archive` are refused: the commit is the
/// one measured, and every run is archived.
pub fn parse_bench_spec(text: &str) -> exit::Result<BenchRequest> {
    let words = shlex::split(text)
        .ok_or_else(|| InputError(format!("cannot split --bench '{text}': unbalanced quotes")))?;
    let line = BenchSpecLine::try_parse_from(&words).map_err(|err| {
        let message = err.to_string();
        let first = message.lines().next().unwrap_or("").trim();
        InputError(format!(
            "invalid --bench '{text}': {}",
            first.strip_prefix("error: ").unwrap_or(first)
        ))
    })?;
    if line.args.commit.is_some() {
        return Err(InputError(
            "--bench takes no --commit: the commit is the one measured".to_string(),
        )
        .into());
    }
    if line.args.vm.kernel.is_some() || line.args.vm.options.any() {
        return Err(InputError(
            "--bench takes no --kernel or --vm-* options: give them to bisect start".to_string(),
        )
        .into());
    }
    if line.args.no_archive {
        return Err(InputError(
            "--bench takes no --no-archive: every run of a bisection is archived".to_string(),
        )
        .into());
    }
    request_from_args(&line.args)
}

/// Parses `--bench "SPEC"` for a test in a VM: as [`parse_bench_spec`],
/// refusing what a guest cannot take.
pub fn parse_guest_bench_spec(text: &str) -> exit::Result<BenchRequest> {
    let request = parse_bench_spec(text)?;
    let words = shlex::split(text).unwrap_or_default();
    if let Ok(line) = BenchSpecLine::try_parse_from(&words) {
        vm::check_guest_bench_args(&line.args)?;
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_netperf() {
        assert_eq!(parse_size("-m", "128K").unwrap(), 131_072);
        assert_eq!(parse_size("-m", "128k").unwrap(), 128_000);
        assert_eq!(parse_size("-m", "1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("-m", "64").unwrap(), 64);
        assert!(parse_size("-m", "8G").is_err());
        assert!(parse_size("-m", "x").is_err());
        assert!(parse_size("-m", "").is_err());
        assert_eq!(split_pair("1,2"), (Some("1"), Some("2")));
        assert_eq!(split_pair(",2"), (None, Some("2")));
        assert_eq!(split_pair("3"), (Some("3"), None));
    }

    #[test]
    fn confidence_parses_like_netperf() {
        let confidence = parse_confidence("95,5").unwrap();
        assert_eq!((confidence.level_pct, confidence.width_pct), (95, 5.0));
        // The width defaults to netperf's 5%.
        assert_eq!(parse_confidence("99").unwrap().width_pct, 5.0);
        assert_eq!(parse_confidence("99,2.5").unwrap().width_pct, 2.5);
        assert!(parse_confidence(",5").is_err());
        assert!(parse_confidence("high").is_err());
    }
}
