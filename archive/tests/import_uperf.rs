//! uperf's text output, run here over loopback with pbench-uperf's TCP
//! request/response profile at two sizes: every figure as printed, the
//! sizes from the profile's name, unknown profiles refused by line; and
//! the labels of several outputs in one input.

use archive::import::{self, Format, ImportError, ImportOptions};
use run_record::record::RunRecord;
use run_record::spec::TestKind;
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
        imported_at: Some(UNIX_EPOCH + Duration::from_secs(1_796_020_000)),
        ..ImportOptions::default()
    }
}

fn runs(name: &str, options: &ImportOptions) -> Vec<RunRecord> {
    let imported =
        import::parse(&data(name), options).unwrap_or_else(|err| panic!("{name}: {err}"));
    assert_eq!(imported.format, Format::Uperf);
    imported
        .runs
        .iter()
        .map(|run| run.record().clone())
        .collect()
}

fn close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= expected.abs() * 1e-12,
        "{actual} != {expected}"
    );
}

#[test]
fn tcp_rr_at_two_sizes_imports_with_its_figures() {
    let small = runs("peer-outputs/uperf-tcp-rr-64B-1i.txt", &options());
    let [small] = small.as_slice() else {
        panic!("{small:?}")
    };
    assert_eq!(small.source.tool, "uperf");
    assert_eq!(small.spec.test, TestKind::TcpRr);
    assert_eq!(
        (
            small.spec.request_size_bytes,
            small.spec.response_size_bytes
        ),
        (64, 64)
    );
    assert_eq!(small.spec.flows, 1);
    assert_eq!(small.endpoint.host, "127.0.0.1");
    let iteration = &small.iterations[0];
    // Txn2: 57.34MB / 10.21(s) = 47.11Mb/s 92009op/s, read through the
    // live progress uperf writes with carriage returns.
    assert_eq!(iteration.elapsed_s, 10.21);
    close(iteration.throughput_bps, 47.11e6);
    assert_eq!(iteration.reported_operation_rate, Some(92_009.0));
    // A transaction is one write and one read: two operations.
    assert_eq!(iteration.transaction_rate, Some(46_004.5));
    assert_eq!(iteration.transactions, None);
    assert!(iteration.reported_latency.is_none());
    assert_eq!(small.spec.duration_s, 10.0);

    let large = runs("peer-outputs/uperf-tcp-rr-1024B-1i-a.txt", &options());
    let [large] = large.as_slice() else {
        panic!("{large:?}")
    };
    assert_eq!(
        (
            large.spec.request_size_bytes,
            large.spec.response_size_bytes
        ),
        (1024, 1024)
    );
    let iteration = &large.iterations[0];
    close(iteration.throughput_bps, 999.50e6);
    assert_eq!(iteration.reported_operation_rate, Some(122_010.0));
    // -a prints each transaction's count and times: Txn1 of that table
    // is the summary's Txn2.
    assert_eq!(iteration.transactions, Some(622_890));
    let latency = iteration.reported_latency.as_ref().unwrap();
    assert_eq!(latency.mean_us, Some(15.97));
    close(latency.max_us.unwrap(), 35_390.0);
    assert_eq!(latency.min_us, Some(7.86));
    assert_ne!(small.config_key, large.config_key);
}

#[test]
fn an_unknown_profile_or_a_broken_line_is_refused_by_line() {
    let err = import::parse(
        &data("peer-outputs/refused/uperf-profile-netperf.txt"),
        &options(),
    )
    .unwrap_err();
    let ImportError::Parse { line, message } = err else {
        panic!("{err}")
    };
    assert_eq!(line, 1);
    assert!(
        message.starts_with("uperf profile \"netperf\" is not one netbisect knows"),
        "{message}"
    );
    let text = String::from_utf8(data("peer-outputs/uperf-tcp-rr-64B-1i.txt")).unwrap();
    let cut = text.replace("   92009op/s", "");
    let err = import::parse(cut.as_bytes(), &options()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("line 3: expected a uperf transaction line"),
        "{err}"
    );
    let udp = text.replace("profile:tcp-rr-64b-1i", "profile:udp-stream-64b-1i");
    assert!(import::parse(udp.as_bytes(), &options()).is_err());
}

#[test]
fn outputs_of_one_mail_take_their_labels_in_order() {
    let mut labelled = options();
    labelled.output_labels = vec!["small".to_string(), "large".to_string()];
    let mail = runs("email/uperf-tcp-rr-sizes-quoted.txt", &labelled);
    let labels: Vec<_> = mail.iter().map(|r| r.subject.label.as_deref()).collect();
    assert_eq!(labels, [Some("small"), Some("large")]);
    assert_eq!(mail[0].spec.request_size_bytes, 64);
    assert_eq!(mail[1].iterations[0].transactions, Some(622_890));
    labelled.output_labels.pop();
    let err = import::parse(&data("email/uperf-tcp-rr-sizes-quoted.txt"), &labelled).unwrap_err();
    assert_eq!(
        err,
        ImportError::LabelCount {
            labels: 1,
            outputs: 2
        }
    );
    // netperf outputs too; and an output naming its sides takes none.
    let mut labelled = options();
    labelled.output_labels = vec!["before".to_string(), "after".to_string()];
    let two = import::parse(&data("email/two-outputs-wrapped-72-quoted.txt"), &labelled).unwrap();
    let labels: Vec<_> = two
        .runs
        .iter()
        .map(|r| r.record().subject.label.clone())
        .collect();
    assert_eq!(
        labels,
        [Some("before".to_string()), Some("after".to_string())]
    );
    labelled.output_labels = vec!["mine".to_string()];
    let err = import::parse(&data("email/udp-stream-side-names.txt"), &labelled).unwrap_err();
    assert!(
        err.to_string()
            .contains("this output names its sides (\"current\")"),
        "{err}"
    );
}

/// A uperf output cut at any byte gives an error or runs whose figures of
/// the summary are the whole output's: a cut never makes a figure up.
#[test]
fn a_cut_output_never_gives_another_figure() {
    for name in [
        "peer-outputs/uperf-tcp-rr-64B-1i-a.txt",
        "email/uperf-tcp-rr-sizes-quoted.txt",
    ] {
        let input = data(name);
        let whole = runs(name, &options());
        let figures = |run: &RunRecord| {
            let iteration = &run.iterations[0];
            (
                run.spec.request_size_bytes,
                iteration.elapsed_s,
                iteration.throughput_bps,
                iteration.reported_operation_rate,
            )
        };
        for cut in 0..input.len() {
            if let Ok(part) = import::parse(&input[..cut], &options()) {
                for (run, expected) in part.runs.iter().zip(&whole) {
                    assert_eq!(
                        figures(run.record()),
                        figures(expected),
                        "{name} cut at byte {cut}"
                    );
                }
            }
        }
    }
}
