//! Tests of the comparison of the ends: the futility bound, a promised
//! minimum effect, and the intervals, against reference values.

use super::*;

#[test]
fn a_hundredfold_drop_reads_above_minus_one_hundred_percent() {
    // The ends of a loopback bisection whose report once read
    // "-98.2% [-126.7%, -69.7%]".
    let good = [
        10418495124.5,
        7625127923.7,
        7068554605.8,
        22583090553.4,
        9543123023.9,
        18652021973.2,
        14349637025.9,
        7334694755.6,
        8394502987.5,
        10836738898.5,
        13233991372.8,
    ];
    let bad = [
        139092241.9,
        146681161.5,
        149534131.6,
        225707438.5,
        290969657.3,
        296805174.7,
        268905914.99,
        216117536.6,
        187394552.0,
        187134847.9,
    ];
    for difference in [
        Difference::welch(&good, &bad, 0.95).unwrap(),
        Difference::yuen(&good, &bad, 0.95).unwrap(),
    ] {
        assert!(difference.ci_low_pct > -100.0, "{difference:?}");
        assert!(difference.ci_low_pct < difference.diff_pct);
        assert!(difference.diff_pct < difference.ci_high_pct);
        assert!(difference.ci_high_pct < 0.0);
        assert!(difference.is_significant());
    }
}

/// Ten samples of each end in 2% noise around `good` and `bad`.
fn noisy_ends(good: f64, bad: f64) -> (Vec<f64>, Vec<f64>) {
    let wobble = [0.3, -1.1, 0.8, -0.2, 1.9, -1.6, 0.5, -0.7, 1.2, -0.9];
    let side = |mean: f64| -> Vec<f64> { wobble.iter().map(|w| mean * (1.0 + 0.02 * w)).collect() };
    (side(good), side(bad).into_iter().rev().collect())
}

#[test]
fn the_futility_bound_refuses_ends_equal_within_noise() {
    let (good, bad) = noisy_ends(100.0, 100.0);
    let config = DecisionConfig::default();
    assert_eq!(config.ends_test, EndsTest::Futility);
    let bound = futility(&good, &bad, &config).unwrap();
    // The alternative is one and a half noise scales, 1.5 * ~2%.
    assert!((2.0..4.5).contains(&bound.alternative_pct), "{bound:?}");
    assert!(bound.llr < FUTILITY_ERROR.ln(), "{bound:?}");
    assert_eq!(
        compare_ends(&good, &bad, &config),
        EndsDecision::Refuse(RefusalReason::Futile)
    );
    // Journals written before the bound go on measuring such ends.
    let legacy = DecisionConfig {
        ends_test: EndsTest::Interval,
        ..config.clone()
    };
    assert_eq!(
        compare_ends(&good, &bad, &legacy),
        EndsDecision::NeedMore(EndsWait::Unclear)
    );
    // A step of five noise scales is no futility, and clear.
    let (good, bad) = noisy_ends(100.0, 90.0);
    let bound = futility(&good, &bad, &config).unwrap();
    assert!(bound.llr > 0.0, "{bound:?}");
    assert_eq!(compare_ends(&good, &bad, &config), EndsDecision::Differ);
    // Each end's first repeats come first, whatever they show.
    let first = DecisionConfig {
        min_end_repeats: 12,
        ..config
    };
    assert_eq!(
        compare_ends(&good, &bad, &first),
        EndsDecision::NeedMore(EndsWait::FirstRepeats)
    );
}

#[test]
fn a_promised_effect_is_the_alternative_and_is_kept_while_the_interval_reaches_it() {
    let promised = |min_effect_pct: f64| DecisionConfig {
        min_effect_pct,
        futility_alternative: FutilityAlternative::MinEffect,
        ..DecisionConfig::default()
    };
    let by_noise = |min_effect_pct: f64| DecisionConfig {
        min_effect_pct,
        ..DecisionConfig::default()
    };
    // In ~2% noise the default alternative is 1.5 noise scales; a
    // promise of 2% is the alternative itself, and a smaller one asks
    // more of the ends before they are ruled out.
    let (good, bad) = noisy_ends(100.0, 100.0);
    let noise_bound = futility(&good, &bad, &by_noise(2.0)).unwrap();
    let promise_bound = futility(&good, &bad, &promised(2.0)).unwrap();
    assert!(noise_bound.alternative_pct > 2.5, "{noise_bound:?}");
    assert!(
        (promise_bound.alternative_pct - 2.0).abs() < 1e-9,
        "{promise_bound:?}"
    );
    assert_eq!(promise_bound.noise_pct, noise_bound.noise_pct);
    assert!(promise_bound.llr > noise_bound.llr);
    // A promise of nothing has no alternative to tell from none.
    assert_eq!(futility(&good, &bad, &promised(0.0)), None);
    // A 3.5% step, clear, whose interval still reaches 5%: under a
    // promise of 5% it is bisected; without one its estimate must
    // pass 5% first.
    let many =
        |side: Vec<f64>, n: usize| -> Vec<f64> { side.iter().cycle().take(n).copied().collect() };
    let (good, bad) = noisy_ends(100.0, 96.5);
    let (good, bad) = (many(good, 30), many(bad, 30));
    let difference = Difference::yuen(&good, &bad, END_CONFIDENCE).unwrap();
    assert!(
        difference.ci_high_pct < 0.0 && difference.ci_low_pct < -5.0,
        "{difference:?}"
    );
    assert_eq!(
        compare_ends(&good, &bad, &promised(5.0)),
        EndsDecision::Differ
    );
    assert_eq!(
        compare_ends(&good, &bad, &by_noise(5.0)),
        EndsDecision::NeedMore(EndsWait::Unclear)
    );
    // A 1% step, shown to lie inside a promised 5%, is refused as
    // before.
    let (good, bad) = noisy_ends(100.0, 99.0);
    let many = |side: Vec<f64>| many(side, 60);
    assert_eq!(
        compare_ends(&many(good), &many(bad), &promised(5.0)),
        EndsDecision::Refuse(RefusalReason::Equivalent)
    );
}

#[test]
fn the_log_likelihood_ratio_matches_reference_values() {
    // ln(cosh(x)) from Python's math.log(math.cosh(x)).
    for (x, reference) in [
        (0.5, 0.12011450695827745),
        (2.5, 1.8135681679291726),
        (-7.0, 6.306853650968428),
        (30.0, 29.306852819440056),
    ] {
        assert!((ln_cosh(x) - reference).abs() < 1e-12, "{x}");
    }
    // The bound: ln(0.02), from math.log(0.02).
    assert!((FUTILITY_ERROR.ln() - -3.912023005428146).abs() < 1e-15);
}

#[test]
fn a_decision_without_an_ends_test_is_one_written_before_it() {
    let mut value = serde_json::to_value(DecisionConfig::default()).unwrap();
    assert_eq!(value["ends_test"], "futility");
    value.as_object_mut().unwrap().remove("ends_test");
    // Without a promise the journal keeps the bytes it had.
    assert!(value.get("futility_alternative").is_none(), "{value}");
    let promised = DecisionConfig {
        futility_alternative: FutilityAlternative::MinEffect,
        ..DecisionConfig::default()
    };
    let promised = serde_json::to_value(&promised).unwrap();
    assert_eq!(promised["futility_alternative"], "min_effect");
    let read: DecisionConfig = serde_json::from_value(value).unwrap();
    assert_eq!(read.ends_test, EndsTest::Interval);
    // Journals written before a minimum effect could be promised
    // built the bound against the noise.
    assert_eq!(read.futility_alternative, FutilityAlternative::NoiseScale);
}

#[test]
fn noise_free_ends_have_no_futility_test() {
    let config = DecisionConfig::default();
    assert_eq!(futility(&[5.0; 6], &[5.0; 6], &config), None);
    assert_eq!(futility(&[5.0, 6.0], &[5.0, 6.0], &config), None);
    assert_eq!(ln_cosh(0.0), 0.0);
    assert!((ln_cosh(1000.0) - (1000.0 - std::f64::consts::LN_2)).abs() < 1e-9);
}

#[test]
fn ends_that_do_not_differ_are_refused() {
    let good = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2];
    let bad = [100.1, 100.9, 99.2, 100.4, 99.6, 100.0];
    let config = DecisionConfig {
        max_repeats: 6,
        ..DecisionConfig::default()
    };
    assert!(matches!(
        compare_ends(&good, &bad, &config),
        EndsDecision::Refuse(_)
    ));
    let bad = [90.1, 90.9, 89.2, 90.4, 89.6, 90.0];
    assert_eq!(compare_ends(&good, &bad, &config), EndsDecision::Differ);
}
