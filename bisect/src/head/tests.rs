use super::*;
use crate::sim::Rng;

/// `n` points of one sample each around `level`, with 2% noise.
fn flat(rng: &mut Rng, n: usize, level: f64) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| vec![level * (1.0 + 0.02 * rng.normal())])
        .collect()
}

fn config() -> HeadConfig {
    HeadConfig::new(Direction::HigherIsBetter, 1.0)
}

#[test]
fn too_few_samples_warm_up_and_a_flat_branch_is_steady() {
    let mut rng = Rng::new(3);
    let points = flat(&mut rng, 4, 100.0);
    assert_eq!(
        check_head(&points, &config()),
        HeadCheck::Warming { n_samples: 3 }
    );
    // Points without samples are not there.
    let mut with_gaps = flat(&mut rng, 30, 100.0);
    with_gaps.insert(10, Vec::new());
    assert_eq!(check_head(&with_gaps, &config()), HeadCheck::Steady);
}

#[test]
fn a_drop_at_the_head_is_suspected_a_rise_is_not() {
    let mut rng = Rng::new(5);
    let mut points = flat(&mut rng, 25, 100.0);
    points.push(vec![90.0]);
    let HeadCheck::Suspect(suspicion) = check_head(&points, &config()) else {
        panic!("a 10% drop is not suspected");
    };
    // The range holds the drop, whichever of the points before it the
    // window's noise leaves on the new level's side.
    assert_eq!(suspicion.head, 25);
    assert!(
        suspicion.first_bad <= 25 && suspicion.last_good >= 20,
        "{suspicion:?}"
    );
    assert_eq!(suspicion.last_good + 1, suspicion.first_bad);
    assert!(
        suspicion.change_pct < -4.0 && suspicion.z > 3.0,
        "{suspicion:?}"
    );
    // Two points on the new level: the first of them is the first bad.
    points.push(vec![90.5]);
    let HeadCheck::Suspect(suspicion) = check_head(&points, &config()) else {
        panic!("two low points are not suspected");
    };
    assert!(
        suspicion.first_bad <= 25 && suspicion.head == 26,
        "{suspicion:?}"
    );
    // A rise is no regression of throughput, but is one of latency.
    let mut rise = flat(&mut rng, 25, 100.0);
    rise.push(vec![110.0]);
    assert_eq!(check_head(&rise, &config()), HeadCheck::Steady);
    let latency = HeadConfig::new(Direction::LowerIsBetter, 1.0);
    assert!(matches!(check_head(&rise, &latency), HeadCheck::Suspect(_)));
    assert!(matches!(
        check_head(&points, &config().reversed()),
        HeadCheck::Steady
    ));
}

#[test]
fn a_suspicion_is_confirmed_by_measuring_both_again_or_dismissed() {
    let mut rng = Rng::new(7);
    let mut points = flat(&mut rng, 25, 100.0);
    points.push(vec![90.0]);
    let config = config();
    let mut n_repeats = 0;
    let mut pinned = None;
    let confirmed = loop {
        match next_at_head(&points, &config, &|_, _| false, pinned) {
            HeadNext::Measure(suspicion, wanted) => {
                assert_eq!(suspicion.head, 25);
                pinned = Some((suspicion.last_good, suspicion.compared));
                for point in wanted {
                    let level = if point >= 25 { 90.0 } else { 100.0 };
                    points[point].push(level * (1.0 + 0.02 * rng.normal()));
                    n_repeats += 1;
                }
            }
            HeadNext::Confirmed(suspicion, difference) => break (suspicion, difference),
            other => panic!("{other:?}"),
        }
    };
    assert!(confirmed.1.diff_pct < -5.0, "{:?}", confirmed.1);
    // The ends' first repeats, five of each, at least, besides the
    // samples the suspicion was chosen on.
    assert!(n_repeats >= 10, "{n_repeats}");
    // The same suspicion remembered as dismissed is left alone.
    let pair = (confirmed.0.last_good, confirmed.0.compared);
    assert_eq!(
        next_at_head(&points, &config, &|good, head| (good, head) == pair, None),
        HeadNext::Steady
    );

    // A low sample by chance: measured again, the head is like the rest.
    let mut points = flat(&mut rng, 25, 100.0);
    points.push(vec![93.0]);
    let mut pinned = None;
    let dismissed = loop {
        match next_at_head(&points, &config, &|_, _| false, pinned) {
            HeadNext::Measure(suspicion, wanted) => {
                pinned = Some((suspicion.last_good, suspicion.compared));
                for point in wanted {
                    points[point].push(100.0 * (1.0 + 0.02 * rng.normal()));
                }
            }
            HeadNext::Dismissed(suspicion) => break suspicion,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(dismissed.compared, 25);
}
