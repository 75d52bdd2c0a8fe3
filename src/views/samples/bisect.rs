//! What the samples of `bisect-report`, `bisect-status` and `plan`
//! share: the commits of one bisection of a range of 29 commits, its
//! steps, and an estimate to start from.

use bisect::decision::Verdict;
use bisect::estimate::Estimate;
use bisect::graph::CommitInfo;
use bisect::report::StepReport;

/// Commit `n` of the range (0 is the good end, 29 the bad one), as git
/// would give it: every one by the same author at the same time.
pub fn commit(n: u32) -> CommitInfo {
    let id = match n {
        0 => "a946c0b157090786f6006f40a6a5c1fdbadc743b",
        15 => "7d972f049a6f1f49817796bd9f9f8eff50bbb738",
        17 => "7fb89f45dbd81620989acb97bb347c34ceb9bd92",
        18 => "cb19392565192c82b32c7bdbf1fed30d810cf923",
        19 => "3a8f03be43dd22102fa9b8b6dcc22803e113a610",
        22 => "cfc87b724f9b70bd5c0867c6c04ac45623b3bdf4",
        29 => "302d1bd51551a1be8a647f19f97cb51c5bb14834",
        other => panic!("commit {other} is not one of the samples' commits"),
    };
    CommitInfo {
        id: id.into(),
        subject: format!("commit {n}"),
        author: "Ann <a@b.c>".into(),
        date: "2026-11-30T07:47:48.000000Z".into(),
    }
}

/// A step of the bisection: `commit`'s samples, their mean, the verdict
/// and what it left.
pub fn step(
    step: u32,
    commit: u32,
    samples: &[f64],
    mean: f64,
    (verdict, llr): (Verdict, f64),
    candidates_after: u32,
) -> StepReport {
    StepReport {
        step,
        commit: self::commit(commit),
        samples: samples.to_vec(),
        mean,
        verdict,
        llr,
        final_llr: None,
        skip_reason: None,
        candidates_after,
    }
}

/// The five steps of the throughput bisection: 15 good, 22 and 19 bad,
/// 17 and 18 good.
pub fn throughput_steps() -> Vec<StepReport> {
    vec![
        step(
            1,
            15,
            &[24002525331.96437, 22290455443.191723],
            23146490387.57805,
            (Verdict::Old, -7.977222648375852),
            14,
        ),
        step(
            2,
            22,
            &[191050361.28797257, 217402397.41513664, 241579231.4785413],
            216677330.06055018,
            (Verdict::New, 8.515260544104725),
            7,
        ),
        step(
            3,
            19,
            &[
                245750662.2449715,
                271767075.71970487,
                307567571.93693465,
                267721890.00422594,
                152320072.93825537,
                248851768.47855866,
                259102115.83391577,
                197146835.08464593,
            ],
            243778499.03015158,
            (Verdict::New, 8.464004173336285),
            4,
        ),
        step(
            4,
            17,
            &[22181392211.93635, 14698422808.93216],
            18439907510.434258,
            (Verdict::Old, -9.455141641577349),
            2,
        ),
        step(
            5,
            18,
            &[
                20745765343.89415,
                26285911583.23208,
                20684281591.612293,
                5205897900.179246,
                13212798694.821419,
                12832580918.50732,
                23047044013.240074,
            ],
            17430611435.069515,
            (Verdict::Old, -11.922166567568603),
            1,
        ),
    ]
}

/// An estimate with every figure zero, of one job: the cases set what
/// they show.
pub fn estimate() -> Estimate {
    Estimate {
        n_commits: 0,
        step_pct: 0.0,
        cv_pct: 0.0,
        seconds_per_run: 0.0,
        n_trials: 0,
        correct_pct: 0.0,
        refused_pct: 0.0,
        mean_measurements: 0.0,
        p95_measurements: 0,
        max_measurements: 0,
        mean_seconds: 0.0,
        p95_seconds: 0.0,
        mean_after_ends: 0.0,
        p95_after_ends: 0,
        jobs: 1,
        mean_rounds: 0.0,
        p95_rounds: 0,
    }
}
