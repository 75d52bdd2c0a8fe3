//! The run-record reader on arbitrary bytes: whatever it accepts writes
//! back to the same canonical bytes.
#![no_main]

use run_record::record::RunRecord;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = RunRecord::from_slice(data) {
        let bytes = record.to_canonical_bytes().expect("a record read encodes");
        let again = RunRecord::from_slice(&bytes).expect("canonical bytes read back");
        assert_eq!(again, record);
    }
});
