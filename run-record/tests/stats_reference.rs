//! The statistics of run-record against reference values computed once
//! with scipy and numpy by `scripts/stats-reference.py` and committed as
//! `tests/data/stats-reference.json`.
//!
//! The structs below declare the data file's layout on their own, so a
//! change to the generator that renames a field breaks this test rather
//! than silently skipping a comparison.

use run_record::stats::distributions::{
    normal_cdf, normal_quantile, student_t_cdf, student_t_quantile,
};
use run_record::stats::{
    MannWhitneyMethod, RatioMethod, mann_whitney_u, mean_interval, percentile, ratio_interval,
    student_t_test, welch_interval, welch_t_test,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    generator: String,
    t_quantiles: Vec<TQuantile>,
    normal_quantiles: Vec<NormalQuantile>,
    normal_cdf: Vec<NormalCdf>,
    t_cdf: Vec<TCdf>,
    mann_whitney: Vec<MannWhitneyCase>,
    welch: Vec<WelchCase>,
    mean_intervals: Vec<MeanIntervalCase>,
    percentiles: Vec<PercentileCase>,
    ratios: Vec<RatioCase>,
}

#[derive(Deserialize)]
struct RatioCase {
    name: String,
    first: Vec<f64>,
    second: Vec<f64>,
    level: f64,
    ratio: f64,
    method: String,
    low: f64,
    high: f64,
}

#[derive(Deserialize)]
struct TQuantile {
    p: f64,
    df: f64,
    value: f64,
}

#[derive(Deserialize)]
struct NormalQuantile {
    p: f64,
    value: f64,
}

#[derive(Deserialize)]
struct NormalCdf {
    x: f64,
    value: f64,
}

#[derive(Deserialize)]
struct TCdf {
    t: f64,
    df: f64,
    value: f64,
}

#[derive(Deserialize)]
struct MannWhitneyCase {
    name: String,
    first: Vec<f64>,
    second: Vec<f64>,
    method: String,
    resolved_method: String,
    u_first: f64,
    p_value: f64,
}

#[derive(Deserialize)]
struct WelchCase {
    name: String,
    first: Vec<f64>,
    second: Vec<f64>,
    t: f64,
    df: f64,
    p_value: f64,
    student_t: f64,
    student_p_value: f64,
    intervals: Vec<WelchIntervalCase>,
}

#[derive(Deserialize)]
struct WelchIntervalCase {
    level: f64,
    first_minus_second_low: f64,
    first_minus_second_high: f64,
}

#[derive(Deserialize)]
struct MeanIntervalCase {
    samples: Vec<f64>,
    level: f64,
    mean: f64,
    low: f64,
    high: f64,
}

#[derive(Deserialize)]
struct PercentileCase {
    values: Vec<f64>,
    pct: f64,
    value: f64,
}

fn reference() -> Reference {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/stats-reference.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let reference: Reference = serde_json::from_str(&text).unwrap();
    assert!(reference.generator.starts_with("scipy"));
    reference
}

/// Asserts `actual` is within `relative` of `expected`, relative to
/// `|expected|` (or absolutely near zero).
#[track_caller]
fn assert_close(what: &str, actual: f64, expected: f64, relative: f64) {
    let scale = expected.abs().max(1e-15);
    let error = (actual - expected).abs() / scale;
    assert!(
        error <= relative,
        "{what}: {actual} vs {expected} (relative error {error:e})"
    );
}

#[test]
fn t_quantiles() {
    let reference = reference();
    assert!(reference.t_quantiles.len() > 90);
    for case in &reference.t_quantiles {
        let actual = student_t_quantile(case.p, case.df).unwrap();
        let what = format!("t quantile p={} df={}", case.p, case.df);
        assert_close(&what, actual, case.value, 1e-9);
    }
}

#[test]
fn normal_quantiles_and_cdf() {
    let reference = reference();
    for case in &reference.normal_quantiles {
        let actual = normal_quantile(case.p).unwrap();
        assert_close(
            &format!("z quantile p={}", case.p),
            actual,
            case.value,
            1e-9,
        );
    }
    for case in &reference.normal_cdf {
        let actual = normal_cdf(case.x);
        assert_close(
            &format!("normal cdf x={}", case.x),
            actual,
            case.value,
            1e-12,
        );
    }
}

#[test]
fn t_cdf() {
    let reference = reference();
    for case in &reference.t_cdf {
        let actual = student_t_cdf(case.t, case.df).unwrap();
        let what = format!("t cdf t={} df={}", case.t, case.df);
        assert_close(&what, actual, case.value, 1e-10);
    }
}

fn method_named(name: &str) -> MannWhitneyMethod {
    match name {
        "auto" => MannWhitneyMethod::Auto,
        "exact" => MannWhitneyMethod::Exact,
        "asymptotic" => MannWhitneyMethod::Asymptotic,
        other => panic!("unknown method {other}"),
    }
}

#[test]
fn mann_whitney() {
    let reference = reference();
    assert!(reference.mann_whitney.len() >= 12);
    let mut n_exact = 0;
    let mut n_reversed = 0;
    for case in &reference.mann_whitney {
        let result = mann_whitney_u(&case.first, &case.second, method_named(&case.method)).unwrap();
        assert_eq!(result.u_first, case.u_first, "{}: U", case.name);
        assert_eq!(
            result.method,
            method_named(&case.resolved_method),
            "{}: method",
            case.name
        );
        assert_close(&case.name, result.p_value, case.p_value, 1e-8);
        n_exact += usize::from(result.method == MannWhitneyMethod::Exact);
        n_reversed += usize::from(case.name.ends_with("reversed"));
    }
    // Both orders of every pair, and both methods, are covered.
    assert_eq!(2 * n_reversed, reference.mann_whitney.len());
    assert!(n_exact >= 6);
}

#[test]
fn welch_and_student() {
    let reference = reference();
    for case in &reference.welch {
        let test = welch_t_test(&case.first, &case.second).unwrap();
        assert_close(&format!("{}: t", case.name), test.t, case.t, 1e-10);
        assert_close(&format!("{}: df", case.name), test.df, case.df, 1e-10);
        assert_close(
            &format!("{}: p", case.name),
            test.p_value,
            case.p_value,
            1e-8,
        );
        let pooled = student_t_test(&case.first, &case.second).unwrap();
        let what = format!("{}: student", case.name);
        assert_close(&what, pooled.t, case.student_t, 1e-10);
        assert_close(&what, pooled.p_value, case.student_p_value, 1e-8);
        for expected in &case.intervals {
            let interval = welch_interval(&case.first, &case.second, expected.level).unwrap();
            // scipy's interval is on first - second; ours on second - first.
            let what = format!("{}: interval at {}", case.name, expected.level);
            assert_close(&what, interval.low, -expected.first_minus_second_high, 1e-9);
            assert_close(&what, interval.high, -expected.first_minus_second_low, 1e-9);
        }
    }
}

#[test]
fn mean_intervals() {
    let reference = reference();
    for case in &reference.mean_intervals {
        let interval = mean_interval(&case.samples, case.level).unwrap();
        let what = format!("{} values at {}", case.samples.len(), case.level);
        assert_close(&what, interval.mean, case.mean, 1e-13);
        assert_close(&what, interval.low, case.low, 1e-10);
        assert_close(&what, interval.high, case.high, 1e-10);
    }
}

#[test]
fn percentiles() {
    let reference = reference();
    for case in &reference.percentiles {
        let actual = percentile(&case.values, case.pct).unwrap();
        let what = format!("p{} of {} values", case.pct, case.values.len());
        assert_close(&what, actual, case.value, 1e-12);
    }
}

#[test]
fn ratio_intervals() {
    let reference = reference();
    let mut methods = std::collections::BTreeSet::new();
    for case in &reference.ratios {
        let interval = ratio_interval(&case.first, &case.second, case.level).unwrap();
        let what = format!("{} at {}", case.name, case.level);
        let method = match interval.method {
            RatioMethod::Fieller => "fieller",
            RatioMethod::LogScale => "log_scale",
        };
        assert_eq!(method, case.method, "{what}");
        methods.insert(method);
        assert_close(&what, interval.ratio, case.ratio, 1e-13);
        assert_close(&what, interval.low, case.low, 1e-9);
        assert_close(&what, interval.high, case.high, 1e-9);
        // The relative form of a ratio of positive figures never reads
        // below -100%.
        assert!(interval.relative().low_pct > -100.0, "{what}");
    }
    assert_eq!(methods.len(), 2);
}
