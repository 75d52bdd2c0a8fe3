//! `netbisect bench`: one socket test, netperf's flags, a netperf-like
//! table (or the canonical record with `--json`). A test in a VM goes to
//! [`kernel`], a size sweep to [`sweep`], the product of several axes to
//! [`product`].

mod kernel;
mod product;
mod sweep;

use crate::cli::BenchArgs;
use crate::exit::{self, Code};
use crate::global_options::GlobalOptions;
use crate::progress::Reporter;
use crate::request::{BenchInvocation, BenchMode, failed_run_context};
use crate::store::{open_before_measuring, store_and_print};
use bench_core::run::bench;

pub fn run(global: &GlobalOptions, args: &BenchArgs) -> exit::Result<Code> {
    let invocation = BenchInvocation::from_args(args)?;
    if invocation.output.archive {
        open_before_measuring(global)?;
    }
    match &invocation.mode {
        BenchMode::Kernel(kernel) => kernel::run(global, &invocation, kernel),
        BenchMode::Sweep(sweep) => sweep::run(global, &invocation, sweep),
        BenchMode::Configurations(configurations) => {
            product::run(global, &invocation, configurations)
        }
        BenchMode::Once => {
            // netperf says what it runs before it runs it; so does bench,
            // on stderr, with the time it has been running.
            let progress = Reporter::new(global, 1u64);
            progress.status(&test_banner(&invocation.request));
            let record = bench(&invocation.request);
            progress.finish();
            let record = record.map_err(|err| {
                let context = failed_run_context(&err);
                exit::Failure::from(err).context(context)
            })?;
            store_and_print(global, &invocation.output, &record)
        }
    }
}

/// What a test is, before it runs: "TCP_STREAM test to loopback, 1
/// iteration of 10 s".
fn test_banner(request: &bench_core::run::BenchRequest) -> String {
    let spec = &request.spec;
    let to = match &request.server {
        Some(server) => format!("to {}", server.host),
        None => "over loopback".to_string(),
    };
    let iterations = if spec.iterations_max == spec.iterations_min {
        format!("{}", spec.iterations_max)
    } else {
        format!("{} to {}", spec.iterations_min, spec.iterations_max)
    };
    format!(
        "{} test {to}, {iterations} iteration{} of {} s",
        spec.test,
        if spec.iterations_max == 1 { "" } else { "s" },
        archive::figures::seconds(spec.duration_s)
    )
}

#[cfg(test)]
mod render_tests {
    use crate::render::Renderer;
    use crate::views::run::RunContext;
    use crate::views::units::Units;
    use bench_core::client::combine;
    use bench_core::run::summarize;
    use run_record::record::{BufferTruth, EndReport, RunRecord, SocketTruth};
    use run_record::spec::{AddressFamily, RunSpec, TestKind};
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
        let units = Units::parse("m").unwrap();
        let text = Renderer::new(None)
            .render("run", &RunContext::new(record, units, true, true))
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
