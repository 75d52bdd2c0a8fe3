//! The netperf importer (classic, omni -k and -o) on arbitrary text.
#![no_main]

use archive::import::{ImportOptions, netperf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok((_, records)) = netperf::parse(text, &ImportOptions::default()) {
            // Whatever is accepted is a valid, sealed record.
            for record in records {
                let bytes = record.to_canonical_bytes().expect("an imported run encodes");
                run_record::record::RunRecord::from_slice(&bytes)
                    .expect("an imported run reads back");
            }
        }
    }
});
