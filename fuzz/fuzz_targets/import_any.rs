//! Format detection and every importer behind it, on arbitrary bytes.
#![no_main]

use archive::import::{ImportOptions, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse(data, &ImportOptions::default());
});
