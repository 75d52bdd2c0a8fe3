//! Inputs the fuzz targets (`scripts/fuzz.sh`) found crashing an importer,
//! kept so that they never do again: each is refused or imported as a
//! valid record, without a panic.

use archive::import::{ImportOptions, iperf3, netperf, parse};
use run_record::record::RunRecord;
use std::path::Path;

fn check_accepted(record: &RunRecord) {
    let bytes = record.to_canonical_bytes().unwrap();
    RunRecord::from_slice(&bytes).unwrap();
}

fn input(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz-regressions")
        .join(name);
    std::fs::read(path).unwrap()
}

#[test]
fn a_netperf_elapsed_time_beyond_any_duration_does_not_panic() {
    // An elapsed time of 4.4e46 s overflowed Duration.
    let bytes = input("netperf-elapsed-too-big.txt");
    let text = String::from_utf8_lossy(&bytes);
    if let Ok((_, records)) = netperf::parse(&text, &ImportOptions::default()) {
        records.iter().for_each(check_accepted);
    }
    let _ = parse(&bytes, &ImportOptions::default());
}

#[test]
fn iperf3_counts_that_overflow_u64_do_not_panic() {
    // Messages times the message size overflowed u64.
    let bytes = input("iperf3-count-overflow.json");
    let text = String::from_utf8_lossy(&bytes);
    if let Ok(record) = iperf3::parse(&text, &ImportOptions::default()) {
        check_accepted(&record);
    }
    let _ = parse(&bytes, &ImportOptions::default());
}

#[test]
fn an_iperf3_start_past_the_year_9999_is_refused() {
    // timesecs of 1.1e17 gave a started_at of year 3535055380, which the
    // record reader (rightly) refuses: the importer must not write it.
    let bytes = input("iperf3-start-past-9999.json");
    let text = String::from_utf8_lossy(&bytes);
    let err = iperf3::parse(&text, &ImportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("past the year 9999"), "{err}");
    if let Ok(imported) = parse(&bytes, &ImportOptions::default()) {
        panic!("imported: {imported:?}");
    }
}
