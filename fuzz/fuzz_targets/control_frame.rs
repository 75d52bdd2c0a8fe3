//! The control-frame decoder on arbitrary bytes: a frame or an error,
//! never a panic, and never more memory than the frame limit.
#![no_main]

use bench_core::protocol::{read_frame, write_frame};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let mut input = data;
    // Several frames may follow each other; read until the first error.
    while let Ok(frame) = read_frame(&mut input, Duration::from_secs(1)) {
        // What was read writes back and reads back the same.
        let mut bytes = Vec::new();
        if write_frame(&mut bytes, &frame).is_ok() {
            let again = read_frame(&mut bytes.as_slice(), Duration::from_secs(1))
                .expect("a written frame reads back");
            assert_eq!(again, frame);
        }
    }
});
