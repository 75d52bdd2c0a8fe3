//! `netbisect bench`: one socket test, netperf's flags, a netperf-like
//! table (or the canonical record with `--json`).

use super::test_options;
use crate::cli::{BenchArgs, GlobalArgs};
use crate::exit::{Code, InputError};
use crate::render::Renderer;
use anyhow::Context;
use bench_core::auth::Token;
use bench_core::client::ClientOptions;
use bench_core::datapath::InterimFigures;
use bench_core::record::{RunRecord, Subject};
use bench_core::run::{BenchRequest, InterimReports, bench};
use bench_core::spec::{
    AddressFamily, ConfidenceSpec, DEFAULT_CONFIDENCE_ITERATIONS, RunSpec, TestKind,
};
use std::io::Write;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

pub fn run(global: &GlobalArgs, args: &BenchArgs) -> anyhow::Result<Code> {
    if args.vm.kernel.is_some() || args.vm.options.any() {
        return super::kernel::bench(global, args);
    }
    // Nothing to journal: a signal ends the test at once with exit 130.
    bisect::interrupt::install(bisect::interrupt::Mode::ExitNow);
    if let Some(sweep) = &args.sweep {
        return super::sweep::run(global, args, sweep);
    }
    let request = request_from_args(args)?;
    let record = bench(&request).context("the test failed; no run was recorded")?;
    store_and_print(global, args, &record)
}

/// Stores a finished run (unless `--no-archive`) and prints it: the
/// record with `--json`, else its netperf table in bench's units. The
/// run is stored before it is printed, so a closed pipe loses nothing; a
/// run that cannot be stored is still printed, then the failure is
/// reported.
pub(super) fn store_and_print(
    global: &GlobalArgs,
    args: &BenchArgs,
    record: &RunRecord,
) -> anyhow::Result<Code> {
    let stored = hand_over_to_archive(global, record, args);
    let text = if global.json {
        let mut bytes = record
            .to_canonical_bytes()
            .context("failed to write the run record")?;
        bytes.push(b'\n');
        bytes
    } else {
        let banner = args.banner != Some(0);
        Renderer::new(global.template_dir.as_deref())
            .render(
                "run",
                &serde_json::json!({ "record": record, "units": args.units.units, "banner": banner }),
            )
            .context("failed to render the run")?
            .into_bytes()
    };
    std::io::stdout()
        .write_all(&text)
        .map_err(crate::exit::stdout_error)?;
    stored?;
    Ok(Code::Ok)
}

/// Stores a finished, sealed record in the archive, unless
/// `--no-archive`. Storing the same run twice is a no-op.
pub(super) fn hand_over_to_archive(
    global: &GlobalArgs,
    record: &RunRecord,
    args: &BenchArgs,
) -> anyhow::Result<()> {
    if args.no_archive {
        return Ok(());
    }
    let path = super::archive::archive_path(global)?;
    let mut archive = super::archive::open_archive(global)?;
    let run = archive::CanonicalRun::from_record(record.clone())
        .context("failed to prepare the run for the archive")?;
    archive
        .store(&run)
        .with_context(|| format!("failed to store the run in {}", path.display()))?;
    if global.verbose > 0 {
        eprintln!(
            "netbisect: stored run {} in {}",
            &record.id[..12],
            path.display()
        );
    }
    Ok(())
}

/// Turns the arguments into a validated request; every input error is
/// found here, before any connection.
pub fn request_from_args(args: &BenchArgs) -> anyhow::Result<BenchRequest> {
    let test: TestKind = args.test.parse()?;
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
    if let Some(path) = &args.vm.spec_file {
        // The host resolved the spec from the user's flags; the guest
        // runs exactly that.
        let text = std::fs::read(path)
            .map_err(|err| InputError(format!("cannot read {}: {err}", path.display())))?;
        spec = serde_json::from_slice(&text)
            .map_err(|err| InputError(format!("{} is not a test spec: {err}", path.display())))?;
    }
    spec.validate().map_err(|err| InputError(err.to_string()))?;
    let interim = match args.interim {
        None => None,
        Some(seconds) if seconds.is_finite() && (0.01..=3600.0).contains(&seconds) => {
            Some(InterimReports {
                every: Duration::from_secs_f64(seconds),
                report: Arc::new(print_interim),
            })
        }
        Some(seconds) => {
            return Err(InputError(format!(
                "interim interval (-D) must be between 0.01 and 3600, got {seconds}"
            ))
            .into());
        }
    };

    let release = bench_core::host::running_release();
    let commit = match &args.commit {
        Some(commit) => Some(commit.clone()),
        None => release
            .as_deref()
            .and_then(|release| bench_core::kernel::parse_release(release).commit),
    };
    let subject = Subject {
        commit,
        describe: None,
        kernel_release: release,
        label: args.label.clone(),
    };
    let server = match &args.host {
        None => None,
        Some(host) => {
            let mut options = ClientOptions::new(host, args.port);
            options.data_ports = test_options.data_port.or(args.data_port);
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
    bench_core::spec::parse_size(option, text).map_err(|err| InputError(err.to_string()))
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

#[cfg(test)]
mod render_tests {
    use crate::render::Renderer;
    use bench_core::client::combine;
    use bench_core::record::{BufferTruth, EndReport, RunRecord, SocketTruth};
    use bench_core::run::summarize;
    use bench_core::spec::{AddressFamily, RunSpec, TestKind};
    use test_fixtures::record::RecordBuilder;

    fn buffer(bytes: u64) -> BufferTruth {
        BufferTruth {
            requested_bytes: None,
            after_setup_bytes: bytes,
            at_end_bytes: bytes,
        }
    }

    fn end(local: &str, peer: &str, counts: [u64; 5], elapsed_s: f64) -> EndReport {
        let [
            bytes_sent,
            bytes_received,
            messages_sent,
            messages_received,
            transactions,
        ] = counts;
        EndReport {
            elapsed_s,
            bytes_sent,
            bytes_received,
            messages_sent,
            messages_received,
            transactions: (transactions > 0).then_some(transactions),
            timeouts: None,
            send_errors: Default::default(),
            tcp_info: None,
            socket: SocketTruth {
                local_address: local.to_string(),
                peer_address: peer.to_string(),
                send_buffer: buffer(16_384),
                recv_buffer: buffer(131_072),
            },
        }
    }

    /// A record with fixed figures, as a run of `test` would give.
    fn fixture(test: TestKind, family: AddressFamily) -> RunRecord {
        let mut spec = RunSpec::defaults(test);
        spec.family = family;
        let (client, server) = match family {
            AddressFamily::Ipv4 => ("127.0.0.1:40000", "127.0.0.1:40001"),
            AddressFamily::Ipv6 => (
                "[fd00:1234:5678:9abc:def0:1234:5678:9abc]:40000",
                "[fd00:1234:5678:9abc:def0:1234:5678:9abd]:40001",
            ),
        };
        let (local, remote) = match test {
            TestKind::TcpStream => (
                [34_359_738_368, 0, 2_097_152, 0, 0],
                [0, 34_359_738_368, 0, 1_048_576, 0],
            ),
            TestKind::TcpMaerts => ([0, 1 << 34, 0, 1 << 20, 0], [1 << 34, 0, 1 << 20, 0, 0]),
            TestKind::UdpStream => (
                [1_472_000_000, 0, 1_000_000, 0, 0],
                [0, 1_177_600_000, 0, 800_000, 0],
            ),
            _ => (
                [400_000, 400_000, 400_000, 400_000, 400_000],
                [400_000, 400_000, 400_000, 400_000, 400_000],
            ),
        };
        let local = end(client, server, local, 10.0);
        let remote = end(server, client, remote, 10.0);
        let mut iteration = combine(&spec, local, remote);
        if test == TestKind::UdpRr {
            iteration.lost_transactions = Some(3);
        }
        let iterations = vec![iteration];
        RecordBuilder::new(test)
            .summary(summarize(&spec, &iterations))
            .spec(spec)
            .started_at("2024-01-01T00:00:00Z")
            .finished_at("2024-01-01T00:00:10Z")
            .commit("abcdef123456")
            .label("patched")
            .testbed("loopback")
            .iterations(iterations)
            .build()
    }

    fn render(record: &RunRecord) -> String {
        let text = Renderer::new(None)
            .render("run", &serde_json::json!({ "record": record }))
            .unwrap();
        for line in text.lines() {
            assert!(line.is_ascii() && !line.contains('\t'), "{line:?}");
            assert!(line.len() <= 80, "too wide: {line:?}");
            assert_eq!(line, line.trim_end(), "trailing space: {line:?}");
        }
        text
    }

    #[test]
    fn run_tables_look_like_netperf() {
        for test in TestKind::ALL {
            let text = render(&fixture(test, AddressFamily::Ipv4));
            insta::assert_snapshot!(format!("run_{}", test.name().to_lowercase()), text);
        }
    }

    #[test]
    fn long_addresses_wrap_within_80_columns() {
        let text = render(&fixture(TestKind::TcpRr, AddressFamily::Ipv6));
        insta::assert_snapshot!("run_tcp_rr_ipv6", text);
    }
}
