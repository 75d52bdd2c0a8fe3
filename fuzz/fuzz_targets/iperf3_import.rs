//! The iperf3 -J importer on arbitrary text.
#![no_main]

use archive::import::{ImportOptions, iperf3};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(record) = iperf3::parse(text, &ImportOptions::default()) {
            let bytes = record.to_canonical_bytes().expect("an imported run encodes");
            run_record::record::RunRecord::from_slice(&bytes).expect("an imported run reads back");
        }
    }
});
