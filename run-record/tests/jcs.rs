//! RFC 8785 (JSON Canonicalization Scheme) test vectors, from the RFC's
//! text, against `run_record::canonical::to_canonical_bytes`.
//!
//! The data files under tests/data/jcs/ hold the RFC's examples: the
//! sample of section 3.2.2, the property sorting of section 3.2.3, the
//! UTF-8 generation of section 3.2.4 and the number table of Appendix B.

use run_record::canonical::{CanonicalError, to_canonical_bytes};
use serde_json::Value;
use std::path::PathBuf;

fn data(name: &str) -> Vec<u8> {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "data", "jcs", name]
        .iter()
        .collect();
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn canonical_of_file(name: &str) -> Vec<u8> {
    let value: Value = serde_json::from_slice(&data(name)).unwrap();
    to_canonical_bytes(&value).unwrap()
}

fn assert_bytes_eq(actual: &[u8], expected: &[u8]) {
    assert_eq!(
        String::from_utf8_lossy(actual),
        String::from_utf8_lossy(expected)
    );
    assert_eq!(actual, expected);
}

#[test]
fn sample_of_section_3_2_2() {
    assert_bytes_eq(
        &canonical_of_file("sample-input.json"),
        &data("sample-output.json"),
    );
}

#[test]
fn property_sorting_of_section_3_2_3() {
    // Keys sort by UTF-16 code units: the emoji (a surrogate pair starting
    // at 0xD83D) comes before U+FB33, although its UTF-8 bytes sort after.
    assert_bytes_eq(
        &canonical_of_file("sorting-input.json"),
        &data("sorting-output.json"),
    );
}

#[test]
fn utf8_generation_of_section_3_2_4() {
    let expected: Vec<u8> = String::from_utf8(data("utf8-output.hex"))
        .unwrap()
        .split_whitespace()
        .map(|byte| u8::from_str_radix(byte, 16).unwrap())
        .collect();
    assert_bytes_eq(&canonical_of_file("utf8-input.json"), &expected);
}

/// The rows of Appendix B: bits of a double and the text it must become,
/// or `None` where it must be refused.
fn number_rows() -> Vec<(u64, Option<String>)> {
    String::from_utf8(data("numbers.txt"))
        .unwrap()
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (bits, text) = line.split_once(' ').unwrap();
            let bits = u64::from_str_radix(bits, 16).unwrap();
            let text = (text != "error").then(|| text.to_string());
            (bits, text)
        })
        .collect()
}

#[test]
fn numbers_of_appendix_b() {
    let rows = number_rows();
    assert_eq!(rows.len(), 26);
    for (bits, expected) in rows {
        let number = f64::from_bits(bits);
        match expected {
            Some(expected) => {
                // The row itself is consistent: the text reads back as the
                // same double (zero and minus zero compare equal).
                assert_eq!(expected.parse::<f64>().unwrap(), number, "{bits:016x}");
                let value = Value::from(number);
                assert!(value.is_number(), "{bits:016x}");
                let bytes = to_canonical_bytes(&value).unwrap();
                assert_eq!(String::from_utf8(bytes).unwrap(), expected, "{bits:016x}");
                // The same inside a container.
                let bytes = to_canonical_bytes(&serde_json::json!([number])).unwrap();
                assert_eq!(bytes, format!("[{expected}]").into_bytes());
            }
            None => {
                // A serde_json Value cannot hold NaN or infinity (it would
                // become null), so the typed number is what must fail.
                assert!(serde_json::Number::from_f64(number).is_none());
                let err = to_canonical_bytes(&number).unwrap_err();
                assert!(
                    matches!(err, CanonicalError::NonFinite { .. }),
                    "{bits:016x}: {err}"
                );
                assert_eq!(
                    err.to_string(),
                    "non-finite number (NaN or infinity) at $ cannot be written as JSON"
                );
            }
        }
    }
}

#[test]
fn parsed_numbers_come_out_in_shortest_form() {
    // The RFC's sample writes these numbers in other spellings.
    let value: Value =
        serde_json::from_str("[1E30, 4.50, 2e-3, 0.000000000000000000000000001, -0.0, 1e21]")
            .unwrap();
    assert_eq!(
        to_canonical_bytes(&value).unwrap(),
        b"[1e+30,4.5,0.002,1e-27,0,1e+21]"
    );
}
