//! Every peer output in tests/data/peer-outputs imports with the right
//! figures; malformed inputs import nothing and name the line.

use archive::import::{self, Format, ImportError, ImportOptions};
use run_record::record::{RunRecord, Subject};
use run_record::spec::{AddressFamily, TestKind};
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

fn data(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn options() -> ImportOptions {
    ImportOptions {
        subject: Subject {
            commit: Some("0123abcd".to_string()),
            label: Some("base".to_string()),
            ..Subject::default()
        },
        testbed: Some("lab1".to_string()),
        imported_at: Some(UNIX_EPOCH + Duration::from_secs(1_796_020_000)),
        ..ImportOptions::default()
    }
}

fn import_one(name: &str) -> (Format, RunRecord) {
    let imported =
        import::parse(&data(name), &options()).unwrap_or_else(|err| panic!("{name}: {err}"));
    assert_eq!(imported.runs.len(), 1, "{name}");
    let record = imported.runs[0].record().clone();
    // Every import is a valid record whose stored bytes read back.
    let reread = RunRecord::from_slice(imported.runs[0].bytes()).unwrap();
    assert_eq!(reread, record);
    (imported.format, record)
}

/// The socket buffers an import reports as granted: local send and
/// receive, remote send and receive.
fn granted(record: &RunRecord) -> [Option<u32>; 4] {
    let buffers = record.spec.reported_socket_buffers.clone().unwrap();
    [
        buffers.local_send_bytes,
        buffers.local_recv_bytes,
        buffers.remote_send_bytes,
        buffers.remote_recv_bytes,
    ]
}

fn close(actual: f64, expected: f64) {
    let tolerance = expected.abs() * 1e-9 + 1e-9;
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} != {expected}"
    );
}

#[test]
fn netperf_tcp_stream_with_cpu() {
    let (format, record) = import_one("peer-outputs/netperf-TCP_STREAM-l10-cC-default.txt");
    assert_eq!(format, Format::NetperfClassic);
    assert_eq!(record.source.tool, "netperf");
    assert_eq!(record.spec.test, TestKind::TcpStream);
    assert_eq!(record.subject.commit.as_deref(), Some("0123abcd"));
    assert_eq!(record.testbed, "lab1");
    assert_eq!(record.endpoint.host, "127.0.0.1");
    assert_eq!(record.spec.send_size_bytes, 16384);
    // netperf prints the buffers granted, not asked for: no -s/-S.
    assert_eq!(record.spec.local_socket_buffer_bytes, None);
    assert_eq!(record.spec.remote_socket_buffer_bytes, None);
    assert_eq!(granted(&record), [Some(16384), None, None, Some(131072)]);
    assert_eq!(record.spec.duration_s, 10.0);
    assert!(record.spec.local_cpu && record.spec.remote_cpu);
    let iteration = &record.iterations[0];
    close(iteration.elapsed_s, 10.0);
    close(iteration.throughput_bps, 11831.79e6);
    let cpu = iteration.cpu.as_ref().unwrap();
    assert_eq!(cpu.local_util_pct, Some(84.33));
    assert_eq!(cpu.remote_util_pct, Some(84.33));
    assert_eq!(cpu.local_service_demand, Some(1.168));
    assert_eq!(cpu.remote_service_demand, Some(1.168));
    close(record.summary.throughput_bps.mean, 11831.79e6);
    assert_eq!(record.summary.n_iterations, 1);
    // netperf prints no time: the run starts when it is imported.
    assert!(record.source.undated);
    assert_eq!(record.started_at, "2026-11-30T06:26:40.000000Z");
    assert_eq!(record.finished_at, "2026-11-30T06:26:50.000000Z");
}

#[test]
fn netperf_tcp_stream_sizes() {
    let (_, record) = import_one("peer-outputs/netperf-TCP_STREAM-l10-cC-m1432-S2280.txt");
    assert_eq!(record.spec.send_size_bytes, 1432);
    assert_eq!(granted(&record), [Some(16384), None, None, Some(4560)]);
    close(record.iterations[0].elapsed_s, 10.08);
    close(record.iterations[0].throughput_bps, 324.84e6);
    let cpu = record.iterations[0].cpu.as_ref().unwrap();
    assert_eq!(cpu.local_service_demand, Some(34.386));

    let (_, record) = import_one("peer-outputs/netperf-TCP_STREAM-l10-cC-m16384-s87380-S87380.txt");
    // `-s 87380 -S 87380` printed as Linux granted them, doubled; the
    // request is not in the text.
    assert_eq!(granted(&record), [Some(174760), None, None, Some(174760)]);
    assert_eq!(record.spec.local_socket_buffer_bytes, None);
    close(record.iterations[0].throughput_bps, 8442.34e6);
    let cpu = record.iterations[0].cpu.as_ref().unwrap();
    assert_eq!(cpu.local_util_pct, Some(66.39));
}

#[test]
fn netperf_tcp_stream_plain() {
    let (_, record) = import_one("peer-outputs/netperf-TCP_STREAM-l10-plain.txt");
    close(record.iterations[0].throughput_bps, 11967.53e6);
    assert!(record.iterations[0].cpu.is_none());
    assert!(!record.spec.local_cpu && !record.spec.remote_cpu);
    // Bytes are derived from throughput and elapsed time.
    // netperf prints a rate, not a byte count: none is made up.
    assert_eq!(record.iterations[0].bytes_received, None);
    assert_eq!(record.iterations[0].bytes_sent, None);
    assert_eq!(record.iterations[0].messages_sent, None);
}

#[test]
fn netperf_tcp_rr_variants() {
    let (_, record) = import_one("peer-outputs/netperf-TCP_RR-l10-cC-default.txt");
    assert_eq!(record.spec.test, TestKind::TcpRr);
    assert_eq!(record.spec.request_size_bytes, 1);
    assert_eq!(record.spec.response_size_bytes, 1);
    assert_eq!(
        granted(&record),
        [Some(16384), Some(131072), Some(16384), Some(131072)]
    );
    let iteration = &record.iterations[0];
    assert_eq!(iteration.transaction_rate, Some(7899.48));
    // netperf prints the rate, not the count of transactions.
    assert_eq!(iteration.transactions, None);
    close(iteration.throughput_bps, 7899.48 * 2.0 * 8.0);
    let cpu = iteration.cpu.as_ref().unwrap();
    assert_eq!(cpu.local_util_pct, Some(48.91));
    assert_eq!(cpu.remote_service_demand, Some(123.829));
    let rate = record.summary.transaction_rate.as_ref().unwrap();
    assert_eq!(rate.mean, 7899.48);

    let (_, record) = import_one("peer-outputs/netperf-TCP_RR-l10-cC-r64,64.txt");
    assert_eq!(record.spec.request_size_bytes, 64);
    assert_eq!(record.spec.response_size_bytes, 64);
    assert_eq!(record.iterations[0].transaction_rate, Some(8954.77));
    let cpu = record.iterations[0].cpu.as_ref().unwrap();
    assert_eq!(cpu.local_service_demand, Some(90.511));

    let (_, record) = import_one("peer-outputs/netperf-TCP_RR-l10-plain.txt");
    assert_eq!(record.iterations[0].transaction_rate, Some(8336.84));
    assert!(record.iterations[0].cpu.is_none());
}

#[test]
fn netperf_udp_rr() {
    let (_, record) = import_one("peer-outputs/netperf-UDP_RR-l10-cC-default.txt");
    assert_eq!(record.spec.test, TestKind::UdpRr);
    assert_eq!(record.iterations[0].transaction_rate, Some(9501.15));
    assert_eq!(
        granted(&record),
        [Some(212992), Some(212992), Some(212992), Some(212992)]
    );
    let cpu = record.iterations[0].cpu.as_ref().unwrap();
    assert_eq!(cpu.remote_util_pct, Some(39.72));
}

#[test]
fn netperf_udp_stream_two_lines() {
    let (_, record) = import_one("peer-outputs/netperf-UDP_STREAM-l10-cC-m1472.txt");
    assert_eq!(record.spec.test, TestKind::UdpStream);
    assert_eq!(record.spec.send_size_bytes, 1472);
    assert_eq!(granted(&record), [Some(212992), None, None, Some(212992)]);
    let iteration = &record.iterations[0];
    close(iteration.throughput_bps, 1875.6e6);
    // The sender's figure is kept as printed, not made from the counts.
    assert_eq!(iteration.reported_sent_throughput_bps, Some(1930.5e6));
    assert_eq!(iteration.messages_sent, Some(1_639_404));
    assert_eq!(iteration.messages_received, Some(1_592_774));
    assert_eq!(iteration.bytes_received, None);
    let cpu = iteration.cpu.as_ref().unwrap();
    assert_eq!(cpu.local_util_pct, Some(72.21));
    assert_eq!(cpu.remote_util_pct, Some(72.21));
    assert_eq!(cpu.local_service_demand, Some(6.129));
    let udp = record.summary.udp.as_ref().unwrap();
    assert_eq!(udp.messages_sent, 1_639_404);
    assert_eq!(udp.messages_received, 1_592_774);
    close(udp.loss_pct, 100.0 * 46_630.0 / 1_639_404.0);
}

#[test]
fn netperf_omni_keyval_and_csv() {
    let (format, record) = import_one("peer-outputs/netperf-TCP_RR-l10-omni-k-latency.txt");
    assert_eq!(format, Format::NetperfKeyval);
    assert_eq!(record.spec.test, TestKind::TcpRr);
    let iteration = &record.iterations[0];
    assert_eq!(iteration.transaction_rate, Some(8166.36));
    let latency = iteration.reported_latency.as_ref().unwrap();
    assert_eq!(latency.min_us, Some(16.0));
    assert_eq!(latency.mean_us, Some(121.96));
    assert_eq!(latency.p50_us, Some(110.0));
    assert_eq!(latency.p90_us, Some(152.0));
    assert_eq!(latency.p99_us, Some(494.0));
    assert_eq!(latency.max_us, Some(13097.0));
    assert_eq!(latency.stddev_us, Some(153.34));
    assert_eq!(latency.p999_us, None);
    let p99 = record.samples(run_record::record::Metric::LatencyP99Us);
    assert_eq!(p99, vec![494.0]);

    let (format, record) = import_one("peer-outputs/netperf-TCP_RR-l10-omni-o-latency.txt");
    assert_eq!(format, Format::NetperfCsv);
    let iteration = &record.iterations[0];
    assert_eq!(iteration.transaction_rate, Some(8519.28));
    let latency = iteration.reported_latency.as_ref().unwrap();
    assert_eq!(latency.min_us, Some(16.0));
    assert_eq!(latency.mean_us, Some(116.89));
    assert_eq!(latency.p99_us, Some(447.0));

    let (format, record) = import_one("peer-outputs/netperf-TCP_STREAM-l10-omni-k-default.txt");
    assert_eq!(format, Format::NetperfKeyval);
    assert_eq!(record.spec.test, TestKind::TcpStream);
    close(record.iterations[0].throughput_bps, 11614.56e6);
    close(record.iterations[0].elapsed_s, 10.01);
    assert_eq!(record.spec.send_size_bytes, 16384);
    // Sizes at the end of the run are not requests.
    assert_eq!(record.spec.local_socket_buffer_bytes, None);
}

#[test]
fn iperf3_tcp() {
    let (format, record) = import_one("peer-outputs/iperf3-tcp-t10.json");
    assert_eq!(format, Format::Iperf3);
    assert_eq!(record.source.tool, "iperf3");
    assert_eq!(record.source.version.as_deref(), Some("3.12"));
    assert_eq!(record.spec.test, TestKind::TcpStream);
    assert_eq!(record.spec.send_size_bytes, 131072);
    assert_eq!(record.endpoint.port, Some(5201));
    assert_eq!(record.started_at, "2026-11-30T06:27:21.000000Z");
    let iteration = &record.iterations[0];
    close(iteration.throughput_bps, 15594189005.663734);
    assert_eq!(iteration.bytes_sent, Some(19_494_338_560));
    assert_eq!(iteration.bytes_received, Some(19_494_338_560));
    close(iteration.elapsed_s, 10.000822);
    let cpu = iteration.cpu.as_ref().unwrap();
    assert_eq!(cpu.local_util_pct, Some(97.17492546386373));
    assert_eq!(cpu.remote_util_pct, Some(46.27554987425046));
    let release = record.env.local.kernel_release.as_deref();
    assert_eq!(release, Some("6.18.44-fc-v657"));
}

#[test]
fn iperf3_udp() {
    let (_, record) = import_one("peer-outputs/iperf3-udp-b0-t10.json");
    assert_eq!(record.spec.test, TestKind::UdpStream);
    assert_eq!(record.spec.send_size_bytes, 32768);
    let iteration = &record.iterations[0];
    close(iteration.throughput_bps, 31148330038.959686);
    assert_eq!(iteration.messages_sent, Some(1_310_590));
    assert_eq!(iteration.messages_received, Some(1_188_224));
    assert_eq!(iteration.bytes_received, Some(38_935_724_032));
    let udp = record.summary.udp.as_ref().unwrap();
    close(udp.loss_pct, 9.33663464546502);
}

#[test]
fn netperf_variants_by_header() {
    let (_, record) = import_one("peer-outputs/variants/netperf-TCP_STREAM-I99,5-fg-warning.txt");
    close(record.iterations[0].throughput_bps, 11.83e9);
    let requested = record.spec.confidence.as_ref().unwrap();
    assert_eq!(requested.level_pct, 99);
    close(requested.width_pct, 5.0);
    let outcome = record.summary.confidence.as_ref().unwrap();
    assert!(!outcome.met);
    close(outcome.width_pct, 6.686);

    let (_, record) = import_one("peer-outputs/variants/netperf-TCP_STREAM-I99,5-fK-c-ipv6.txt");
    assert_eq!(record.spec.family, AddressFamily::Ipv6);
    assert_eq!(record.endpoint.host, "::1");
    close(record.iterations[0].throughput_bps, 1444310.43 * 8192.0);
    let cpu = record.iterations[0].cpu.as_ref().unwrap();
    assert_eq!(cpu.local_util_pct, Some(84.33));
    assert_eq!(cpu.remote_util_pct, None);
    assert_eq!(cpu.remote_service_demand, None);
    assert!(record.spec.local_cpu && !record.spec.remote_cpu);
    assert!(record.summary.confidence.is_none());

    let (_, record) = import_one("peer-outputs/variants/netperf-TCP_MAERTS-fM.txt");
    assert_eq!(record.spec.test, TestKind::TcpMaerts);
    close(
        record.iterations[0].throughput_bps,
        1426.61 * 8.0 * 1024.0 * 1024.0,
    );
    assert_eq!(granted(&record), [None, Some(131072), Some(16384), None]);

    let (_, record) = import_one("peer-outputs/variants/netperf-TCP_CRR-c.txt");
    assert_eq!(record.spec.test, TestKind::TcpCrr);
    assert_eq!(record.iterations[0].transaction_rate, Some(2671.06));
    let cpu = record.iterations[0].cpu.as_ref().unwrap();
    assert_eq!(cpu.local_util_pct, Some(50.12));
    assert_eq!(cpu.local_service_demand, Some(375.271));
    assert_eq!(cpu.remote_util_pct, None);

    let (_, record) = import_one("peer-outputs/variants/netperf-UDP_STREAM-fk-plain.txt");
    close(record.iterations[0].throughput_bps, 1875600.7e3);
    assert_eq!(record.iterations[0].messages_received, Some(1_592_774));
    assert!(record.iterations[0].cpu.is_none());

    let (format, record) = import_one("peer-outputs/variants/netperf-TCP_STREAM-omni-o-fg.txt");
    assert_eq!(format, Format::NetperfCsv);
    close(record.iterations[0].throughput_bps, 11.61e9);
    let cpu = record.iterations[0].cpu.as_ref().unwrap();
    assert_eq!(cpu.local_util_pct, Some(80.25));
    assert_eq!(cpu.remote_util_pct, None);
}

#[test]
fn same_input_gives_same_id() {
    let first = import_one("peer-outputs/netperf-TCP_RR-l10-plain.txt").1;
    let second = import_one("peer-outputs/netperf-TCP_RR-l10-plain.txt").1;
    assert_eq!(first.id, second.id);
    let mut other = options();
    other.subject.commit = Some("fedc".to_string());
    let third = import::parse(&data("peer-outputs/netperf-TCP_RR-l10-plain.txt"), &other).unwrap();
    assert_ne!(third.runs[0].record().id, first.id);
    // The commit is not part of the config_key.
    assert_eq!(third.runs[0].record().config_key, first.config_key);
}

#[test]
fn malformed_inputs_name_the_line() {
    let err = import::parse(&data("malformed/text.txt"), &options()).unwrap_err();
    assert_eq!(
        err,
        ImportError::Unrecognised {
            line: 1,
            text: "hello world".to_string()
        }
    );
    let err = import::parse(&data("malformed/netperf-bad-number.txt"), &options()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 7: throughput: \"oops\" is not a number"
    );
    let err = import::parse(&data("malformed/iperf3-truncated.json"), &options()).unwrap_err();
    assert!(matches!(err, ImportError::Parse { line: 1, .. }), "{err}");
    let err = import::parse(b"\n\n", &options()).unwrap_err();
    assert_eq!(err, ImportError::Empty);
}

#[test]
fn netperf_banner_notes_keep_the_first_burst_and_nodelay() {
    let text = String::from_utf8(data("peer-outputs/netperf-TCP_RR-l10-plain.txt")).unwrap();
    assert!(text.contains(": demo : first burst 0"));
    let plain = import::parse(text.as_bytes(), &options()).unwrap();
    let plain = plain.runs[0].record().clone();
    assert_eq!(plain.spec.first_burst, 0);
    assert!(!plain.spec.nodelay);

    let burst_text = text.replace(": first burst 0", ": first burst 16 : nodelay");
    let burst = import::parse(burst_text.as_bytes(), &options()).unwrap();
    let burst = burst.runs[0].record().clone();
    assert_eq!(burst.spec.first_burst, 16);
    assert!(burst.spec.nodelay);
    // Different bursts never share a configuration.
    assert_ne!(burst.config_key, plain.config_key);

    let bad = text.replace(": first burst 0", ": first burst many");
    let err = import::parse(bad.as_bytes(), &options()).unwrap_err();
    assert_eq!(err.to_string(), "line 1: invalid first burst \"many\"");
}

fn import_all(name: &str, options: &ImportOptions) -> Vec<RunRecord> {
    let imported =
        import::parse(&data(name), options).unwrap_or_else(|err| panic!("{name}: {err}"));
    imported
        .runs
        .iter()
        .map(|run| {
            let record = run.record().clone();
            assert_eq!(RunRecord::from_slice(run.bytes()).unwrap(), record);
            record
        })
        .collect()
}

#[test]
fn a_quoted_table_of_labelled_rows_gives_a_run_per_row() {
    let runs = import_all("email/quoted-labelled-tcp-stream.txt", &options());
    assert_eq!(runs.len(), 2);
    let labels: Vec<_> = runs.iter().map(|r| r.subject.label.as_deref()).collect();
    assert_eq!(labels, [Some("current"), Some("patched")]);
    close(runs[0].iterations[0].throughput_bps, 11967.53e6);
    close(runs[1].iterations[0].throughput_bps, 11830.00e6);
    for run in &runs {
        assert_eq!(run.spec.test, TestKind::TcpStream);
        assert_eq!(run.spec.send_size_bytes, 16384);
        assert_eq!(granted(run)[3], Some(131072));
        // The old banner's "+/-2.500% @ 95% conf." is the -I request.
        let requested = run.spec.confidence.as_ref().unwrap();
        assert_eq!(requested.level_pct, 95);
        close(requested.width_pct, 5.0);
        assert_eq!(run.subject.commit.as_deref(), Some("0123abcd"));
    }
    // Same test, same testbed: the two sides pair.
    assert_eq!(runs[0].config_key, runs[1].config_key);
}

#[test]
fn side_names_are_mapped_or_prefixed() {
    let mut options = options();
    options
        .side_labels
        .insert("Org".to_string(), "base".to_string());
    options.label_prefix = Some("v6.8-".to_string());
    let runs = import_all("email/labelled-tcp-rr.txt", &options);
    let labels: Vec<_> = runs.iter().map(|r| r.subject.label.as_deref()).collect();
    assert_eq!(labels, [Some("v6.8-base"), Some("v6.8-New")]);
    assert_eq!(runs[0].iterations[0].transaction_rate, Some(8336.84));
    assert_eq!(runs[1].iterations[0].transaction_rate, Some(8954.77));
    assert_eq!(granted(&runs[0])[..2], [Some(16384), Some(131072)]);
}

#[test]
fn netperfs_old_udp_banner_parses_under_nested_quotes() {
    let runs = import_all("email/old-udp-banner.txt", &options());
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.spec.test, TestKind::UdpStream);
    assert_eq!(run.spec.send_size_bytes, 1472);
    close(run.iterations[0].throughput_bps, 1875.6e6);
    let udp = run.summary.udp.as_ref().unwrap();
    assert_eq!(
        (udp.messages_sent, udp.messages_received),
        (1_639_404, 1_592_774)
    );
    // netperf's Errors column is kept.
    assert_eq!(udp.send_errors, Some(0));
}

#[test]
fn one_file_of_many_outputs_gives_many_runs() {
    let runs = import_all("email/many-outputs.txt", &options());
    let tests: Vec<TestKind> = runs.iter().map(|r| r.spec.test).collect();
    assert_eq!(
        tests,
        [TestKind::TcpStream, TestKind::TcpRr, TestKind::UdpStream]
    );
    close(runs[0].iterations[0].throughput_bps, 11967.53e6);
    assert_eq!(runs[1].iterations[0].transaction_rate, Some(8336.84));
    close(runs[2].iterations[0].throughput_bps, 1875.6e6);
}

fn parse_error(text: &str) -> String {
    import::parse(text.as_bytes(), &options())
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_tables_are_refused_with_their_line() {
    let quoted = String::from_utf8(data("email/quoted-labelled-tcp-stream.txt")).unwrap();
    // A UDP banner over a TCP_STREAM table.
    let text = quoted.replace("> TCP STREAM TEST", "> UDP UNIDIRECTIONAL SEND TEST");
    assert_eq!(
        parse_error(&text),
        "line 6: the table's columns do not match the banner's UDP_STREAM: no messages column"
    );
    // A side name with nothing after it.
    let text = quoted.replace(
        "> patched  131072  16384  16384    10.00    11830.00",
        "> patched",
    );
    assert_eq!(
        parse_error(&text),
        "line 12: \"patched\" has no figures after it"
    );
    // A column missing from a row.
    let text = quoted.replace("16384    10.00    11830.00", "10.00    11830.00");
    assert_eq!(
        parse_error(&text),
        "line 12: 4 figures for the 5 columns of the header (line 6)"
    );
    // UDP_STREAM without its receiving line.
    let udp = String::from_utf8(data("email/old-udp-banner.txt")).unwrap();
    let text = udp.replace(
        ">> 212992           10.00     1592774            1875.6\n",
        "",
    );
    assert_eq!(
        parse_error(&text),
        "line 6: UDP_STREAM results take 2 lines; the line after this one is missing"
    );
}

#[test]
fn an_undated_run_is_identified_by_its_content_only() {
    let input = data("peer-outputs/netperf-TCP_RR-l10-plain.txt");
    let first = import::parse(&input, &options()).unwrap();
    let mut later = options();
    later.imported_at = Some(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let second = import::parse(&input, &later).unwrap();
    let (first, second) = (first.runs[0].record(), second.runs[0].record());
    assert_ne!(first.started_at, second.started_at);
    assert_eq!(first.id, second.id);
    // The content still counts.
    let edited = String::from_utf8(input)
        .unwrap()
        .replace("8336.84", "8336.85");
    let third = import::parse(edited.as_bytes(), &later).unwrap();
    assert_ne!(third.runs[0].record().id, first.id);
    // iperf3 says when it ran: its time is its own and in its id.
    let (_, iperf) = import_one("peer-outputs/iperf3-tcp-t10.json");
    assert!(!iperf.source.undated);
}

#[test]
fn implausible_figures_are_refused_with_the_reason() {
    let stream = String::from_utf8(data("peer-outputs/netperf-TCP_STREAM-l10-plain.txt")).unwrap();
    let negative = stream.replace("11967.53", "-11967.53");
    assert_eq!(
        parse_error(&negative),
        "line 7: implausible figure: throughput -11967530000 is negative"
    );
    let no_time = stream.replace("10.00", " 0.00");
    assert_eq!(
        parse_error(&no_time),
        "line 7: implausible figure: elapsed time 0 s (a run takes time)"
    );
    let iperf = String::from_utf8(data("peer-outputs/iperf3-tcp-t10.json")).unwrap();
    let tree: serde_json::Value = serde_json::from_str(&iperf).unwrap();
    let stamp = tree["start"]["timestamp"]["timesecs"].as_u64().unwrap();
    let future = iperf.replace(&stamp.to_string(), "1900000000");
    assert_eq!(
        parse_error(&future),
        "line 1: implausible figure: start 2030-03-17T17:46:40.000000Z is more than a day \
         after the import"
    );
}

#[test]
fn figures_must_be_whole_or_refused() {
    // A row that ends the input without its newline may be cut short.
    let stream = String::from_utf8(data("peer-outputs/netperf-TCP_STREAM-l10-plain.txt")).unwrap();
    let cut = &stream[..stream.find("11967.53").unwrap() + "11967.5".len()];
    assert_eq!(
        parse_error(cut),
        "line 7: the input ends inside this line (cut short?): \
         \"131072  16384  16384    10.00    11967.5\""
    );
    // A request/response table without its second line.
    let rr = String::from_utf8(data("peer-outputs/netperf-TCP_RR-l10-plain.txt")).unwrap();
    let cut = &rr[..rr.rfind("16384  131072").unwrap()];
    assert_eq!(
        parse_error(cut),
        "line 7: TCP_RR results take 2 lines; the line after this one is missing"
    );
}

/// Every netperf output the tests hold, cut at every byte offset, gives
/// either the whole output's runs, figure for figure, or an error: never
/// a run with a figure the whole output does not have. A cut between two
/// whole runs (two outputs, two labelled rows) gives the runs before it.
/// Every offset is tried, which covers more than sampling offsets would.
#[test]
fn an_output_cut_anywhere_gives_all_its_runs_or_an_error() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let mut names = Vec::new();
    for sub in ["peer-outputs", "peer-outputs/variants", "email"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            // uperf's outputs have parts a cut can leave out whole; they
            // are cut in their own test. A hand-made table holds no output
            // to cut: it is refused whole.
            let netperf = name.starts_with("netperf")
                || (sub == "email" && !name.starts_with("uperf") && !name.starts_with("handmade"));
            if name.ends_with(".txt") && netperf {
                names.push(format!("{sub}/{name}"));
            }
        }
    }
    assert!(names.len() >= 15, "{names:?}");
    for name in &names {
        let input = data(name);
        let whole = import::parse(&input, &options()).unwrap_or_else(|err| panic!("{name}: {err}"));
        let whole_ids: Vec<&str> = whole
            .runs
            .iter()
            .map(|run| run.record().id.as_str())
            .collect();
        for cut in 0..input.len() {
            if let Ok(part) = import::parse(&input[..cut], &options()) {
                let ids: Vec<&str> = part
                    .runs
                    .iter()
                    .map(|run| run.record().id.as_str())
                    .collect();
                assert!(
                    !ids.is_empty() && whole_ids.starts_with(&ids),
                    "{name} cut at byte {cut} gave other runs:\n{}",
                    String::from_utf8_lossy(&input[..cut])
                );
            }
        }
    }
}

#[test]
fn prose_around_an_output_is_not_read() {
    let stream = String::from_utf8(data("peer-outputs/netperf-TCP_STREAM-l10-plain.txt")).unwrap();
    let email = format!(
        "Hi,\n\nWe ran the TEST to see whether it helps, netperf to the \
         peer:\n\n{stream}\nThe TEST from yesterday agrees.\n"
    );
    let imported = import::parse(email.as_bytes(), &options()).unwrap();
    assert_eq!(imported.runs.len(), 1);
    close(
        imported.runs[0].record().iterations[0].throughput_bps,
        11967.53e6,
    );
}
