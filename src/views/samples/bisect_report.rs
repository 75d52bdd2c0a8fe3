//! Samples of `bisect-report`: a throughput regression found by the
//! sequential test and by the posterior, found among skipped commits, the
//! same with extreme figures and a long subject, and the three refusals.

use super::Sample;
use super::bisect::{commit, throughput_steps};
use crate::views::bisect_report::ReportContext;
use bisect::decision::{Method, Verdict};
use bisect::ends::{Difference, RefusalReason};
use bisect::report::{
    BisectReport, BisectResult, EndSummary, Outcome, REFUSAL_SCHEMA, REPORT_SCHEMA, Refusal,
};
use run_record::record::{Direction, RunRecord};
use run_record::spec::TestKind;
use test_fixtures::record::RecordBuilder;

/// The shell lines that reproduce the throughput bisection.
fn reproduce_throughput() -> Vec<String> {
    [
        "netbisect bisect start --repo /src/netdemo --good 'HEAD~29' \\",
        "  --bad HEAD --build 'sh build.sh' \\",
        "  --measure 'netbisect bench -t TCP_STREAM -l 0.1 -m \"$(cat out/sen'\\",
        "'d_size)\" --json --no-archive --commit \"$NETBISECT_COMMIT\"' \\",
        "  --metric throughput_bps --max-repeats 20",
        "netbisect bisect run",
    ]
    .map(str::to_string)
    .to_vec()
}

/// The first archived run of an end: `test` on the loopback testbed of a
/// two-CPU host running BBR.
fn end_run(test: TestKind) -> RunRecord {
    let mut record = RecordBuilder::new(test)
        .spec_with(|spec| {
            spec.duration_s = 0.1;
            spec.send_size_bytes = 65_536;
        })
        .testbed("loopback")
        .local_sysctl("net.ipv4.tcp_congestion_control", "bbr")
        .build_unsealed();
    record.env.local.cpu_model = Some("AMD EPYC".into());
    record.env.local.cpu_count = Some(2);
    record.env.local.kernel_release = Some("6.18.44".into());
    record
}

/// A difference of means with its 95% interval, in percent.
fn difference(means: [f64; 2], stddevs: [f64; 2], n: [u32; 2], pct: [f64; 3]) -> Difference {
    Difference {
        old_mean: means[0],
        new_mean: means[1],
        old_stddev: stddevs[0],
        new_stddev: stddevs[1],
        n_old: n[0],
        n_new: n[1],
        diff: means[1] - means[0],
        diff_pct: pct[0],
        level_pct: 95.0,
        ci_low_pct: pct[1],
        ci_high_pct: pct[2],
    }
}

/// The report of the throughput bisection, `result` what it found.
fn throughput_report(method: Method, result: BisectResult) -> BisectReport {
    let good = EndSummary {
        commit: commit(0),
        samples: vec![
            10418495124.53401,
            7625127923.682104,
            7068554605.811872,
            22583090553.431385,
            9543123023.875084,
            18652021973.190865,
            14349637025.894312,
            7334694755.636772,
            8394502987.543709,
            10836738898.497295,
            13233991372.760067,
        ],
        mean: 11821816204.077951,
        stddev: 5010582863.960496,
    };
    let bad = EndSummary {
        commit: commit(29),
        samples: vec![
            139092241.9013613,
            146681161.46485978,
            149534131.60123482,
            225707438.51349434,
            290969657.26688737,
            296805174.74499553,
            268905914.9874183,
            216117536.55154282,
            187394552.0471505,
            187134847.9005976,
        ],
        mean: 210834265.69795424,
        stddev: 59222224.27941033,
    };
    let ends = difference(
        [good.mean, bad.mean],
        [good.stddev, bad.stddev],
        [11, 10],
        [-98.21656620219466, -126.69156318672137, -69.74156921766794],
    );
    let final_llrs = [
        -10.847863386111408,
        8.855715065972513,
        19.608110629530916,
        -8.290009571151446,
        -20.40692262368187,
    ];
    let mut steps = throughput_steps();
    for (step, final_llr) in steps.iter_mut().zip(final_llrs) {
        step.final_llr = Some(final_llr);
    }
    BisectReport {
        schema: REPORT_SCHEMA.into(),
        metric: "throughput_bps".into(),
        direction: Direction::HigherIsBetter,
        first_parent: false,
        method,
        good,
        bad,
        ends: Some(ends),
        result,
        steps,
        n_measurements: 43,
        log: Vec::new(),
    }
}

/// Commit 19, first bad after commit 18, at `confidence_pct`.
fn first_bad(confidence_pct: f64) -> BisectResult {
    let steps = throughput_steps();
    BisectResult::FirstBad {
        commit: commit(19),
        parent: commit(18),
        culprit_samples: steps[2].samples.clone(),
        parent_samples: steps[4].samples.clone(),
        regression: Some(difference(
            [17430611435.069515, 243778499.03015158],
            [7301971428.994611, 48150491.35912371],
            [7, 8],
            [-98.6014346086582, -137.3430743361044, -59.859794881212],
        )),
        confidence_pct,
        confirmed: true,
    }
}

/// `report` with every throughput a million times larger, a long
/// subject and author on the culprit, and a failed build and an
/// undecided commit on the way.
fn extreme(mut report: BisectReport) -> BisectReport {
    let scale = |value: &mut f64| *value *= 1e6;
    for end in [&mut report.good, &mut report.bad] {
        end.samples.iter_mut().for_each(scale);
        scale(&mut end.mean);
        scale(&mut end.stddev);
    }
    for difference in report.ends.iter_mut() {
        for value in [
            &mut difference.old_mean,
            &mut difference.new_mean,
            &mut difference.old_stddev,
            &mut difference.new_stddev,
            &mut difference.diff,
        ] {
            scale(value);
        }
    }
    for step in &mut report.steps {
        step.samples.iter_mut().for_each(scale);
        scale(&mut step.mean);
    }
    report.steps[1].verdict = Verdict::Skip;
    report.steps[1].skip_reason = Some(
        "build failed (exit 2): make[2]: *** [scripts/Makefile.build:243: \
         net/ipv4/tcp_input.o] Error 1, with a reason long enough to wrap"
            .into(),
    );
    report.steps[2].verdict = Verdict::Unknown;
    report.n_measurements = 123_456;
    if let BisectResult::FirstBad {
        commit, regression, ..
    } = &mut report.result
    {
        commit.subject = "net: tcp: rework the autotuning of the receive window so that it \
                          follows the measured rate of the application rather than the rtt"
            .into();
        commit.author = "Maximiliana Featherstonehaugh-Vanderbilt \
                         <maximiliana.featherstonehaugh@very-long-domain.example.org>"
            .into();
        *regression = Some(difference(
            [17430611435069516.0, 243778499030151.56],
            [7301971428994611.0, 48150491359123.7],
            [7, 8],
            [-99.99, -1234.5, -0.04],
        ));
    }
    report
}

/// A refusal of the transaction-rate bisection, for `reason`.
fn refusal(reason: RefusalReason, max_end_repeats: u32) -> Refusal {
    let end = |n: u32, samples: &[f64], mean: f64, stddev: f64| EndSummary {
        commit: commit(n),
        samples: samples.to_vec(),
        mean,
        stddev,
    };
    let (good, bad, difference, smallest_step_pct, noise_pct) = match reason {
        RefusalReason::Futile => (
            end(
                0,
                &[
                    41000.5, 39800.2, 42410.9, 40150.0, 41900.3, 38990.1, 40620.4, 42050.8,
                ],
                40865.4,
                1178.2,
            ),
            end(
                29,
                &[
                    40100.5, 41820.2, 39850.9, 42150.0, 40270.3, 41610.1, 39400.2, 41300.7,
                ],
                40813.1,
                1000.4,
            ),
            difference(
                [40865.4, 40813.1],
                [1178.2, 1000.4],
                [8, 8],
                [-0.128, -2.9, 2.7],
            ),
            4.72,
            3.15,
        ),
        RefusalReason::Equivalent | RefusalReason::Cap => (
            end(
                0,
                &[41000.5, 40800.2, 41210.9, 40950.0, 41100.3, 40990.1],
                41008.6,
                140.1,
            ),
            end(
                29,
                &[40900.5, 41020.2, 40850.9, 41150.0, 40870.3, 41010.1],
                40967.0,
                111.8,
            ),
            difference(
                [41008.6, 40967.0],
                [140.1, 111.8],
                [6, 6],
                [-0.101, -0.52, 0.31],
            ),
            1.0,
            0.31,
        ),
    };
    Refusal {
        schema: REFUSAL_SCHEMA.into(),
        metric: "transaction_rate".into(),
        direction: Direction::HigherIsBetter,
        good,
        bad,
        difference: Some(difference),
        min_effect_pct: 1.0,
        reason: Some(reason),
        smallest_step_pct: Some(smallest_step_pct),
        noise_pct: Some(noise_pct),
        max_end_repeats: Some(max_end_repeats),
    }
}

pub fn samples() -> Vec<Sample> {
    let stream = end_run(TestKind::TcpStream);
    let rr = end_run(TestKind::TcpRr);
    let head = ["HEAD~29", "HEAD"];
    let reproduce_rr: Vec<String> = [
        "netbisect bisect start --repo /src/linux --good v6.7 --bad v6.8 \\",
        "  --build 'make -j8 bzImage' --bench '-t TCP_RR -l 5 -T 0,1' \\",
        "  --metric transaction_rate",
        "netbisect bisect run",
    ]
    .map(str::to_string)
    .to_vec();
    let report = |case: &str, outcome: &Outcome, revs: [&str; 2]| {
        let context = ReportContext::new(outcome, [Some(&stream); 2], revs, reproduce_throughput());
        Sample::new("bisect-report", case, &context)
    };
    let mut samples = vec![
        report(
            "loopback-send-size",
            &Outcome::Finished(throughput_report(
                Method::Sequential,
                first_bad(99.95870998833526),
            )),
            head,
        ),
        report(
            "posterior",
            &Outcome::Finished(throughput_report(Method::Posterior, first_bad(99.62))),
            head,
        ),
        report(
            "long-subject-extreme",
            &Outcome::Finished(extreme(throughput_report(
                Method::Sequential,
                first_bad(99.95870998833526),
            ))),
            [
                "v6.7-rc8-00123-gabcdef",
                "origin/net-next-with-a-long-branch-name",
            ],
        ),
    ];
    // Commit 17 skipped, so the culprit is one of three; a report whose
    // ends left no environment to describe.
    let mut range = throughput_report(
        Method::Sequential,
        BisectResult::Range {
            commits: vec![commit(15), commit(22), commit(19)],
        },
    );
    range.steps[3].verdict = Verdict::Skip;
    range.steps[3].skip_reason = Some("measure timed out after 3 s".into());
    let range = Outcome::Finished(range);
    let mut context = ReportContext::new(&range, [Some(&stream); 2], head, reproduce_throughput());
    context.environment.clear();
    samples.push(Sample::new("bisect-report", "range", &context));
    for (case, reason, max_end_repeats) in [
        ("refusal", RefusalReason::Equivalent, 100),
        ("refusal-cap", RefusalReason::Cap, 20),
        ("refusal-futile", RefusalReason::Futile, 100),
    ] {
        let outcome = Outcome::Refused(refusal(reason, max_end_repeats));
        let context = ReportContext::new(&outcome, [Some(&rr); 2], head, reproduce_rr.clone());
        samples.push(Sample::new("bisect-report", case, &context));
    }
    // A promised minimum effect the ends were ruled out against.
    let promised = Outcome::Refused(Refusal {
        min_effect_pct: 4.0,
        smallest_step_pct: Some(4.0),
        ..refusal(RefusalReason::Futile, 100)
    });
    let mut promised_reproduce = reproduce_rr.clone();
    let options = promised_reproduce.len() - 2;
    promised_reproduce[options].push_str(" --min-effect 4");
    let context = ReportContext::new(&promised, [Some(&rr); 2], head, promised_reproduce);
    samples.push(Sample::new(
        "bisect-report",
        "refusal-futile-promised",
        &context,
    ));
    // Three jobs at once: their rounds and wall-clock, and --jobs kept.
    let jobs = Outcome::Finished(throughput_report(Method::Posterior, first_bad(99.62)));
    let mut jobs_reproduce = reproduce_throughput();
    *jobs_reproduce.last_mut().unwrap() = "netbisect bisect run --jobs 3".to_string();
    let context = ReportContext::new(&jobs, [Some(&stream); 2], head, jobs_reproduce).with_timing(
        3,
        17,
        Some(431.5),
    );
    samples.push(Sample::new("bisect-report", "posterior-jobs", &context));
    samples
}
