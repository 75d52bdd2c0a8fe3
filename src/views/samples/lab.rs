//! Samples of `lab`: a lab of two workers, one at a job and one gone,
//! with jobs queued and taken (one lease expired) and regressions in
//! every state, as `track status` shows it; and the regressions alone,
//! one report failing, as `regressions` shows them.

use super::Sample;
use crate::views::lab::{LAB_SCHEMA, LabContext, LabStatus, ReportState};
use archive::lab::{Job, JobState, Regression, RegressionState, Track, Worker};

/// 2026-12-04T09:00:00Z.
const NOW_US: i64 = 1_796_374_800_000_000;

const C1: &str = "4e5b5d3c2a1f0e9d8c7b6a5f4e3d2c1b0a998877";
const C2: &str = "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b";
const C3: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0ffeeddcc";
const TRACK: &str = "7d1c0e6a2b9f4c3d8e5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a";

fn job(id: i64, kind: &str, commit: &str, state: JobState, worker: Option<&str>) -> Job {
    Job {
        id,
        pool: "lab-a".into(),
        kind: kind.into(),
        owner: if kind == "slot" {
            "bisection 3".into()
        } else {
            TRACK.into()
        },
        key: format!("{TRACK}/{commit}/1"),
        payload: format!(r#"{{"commit":"{commit}"}}"#),
        priority: if kind == "slot" { 30 } else { 20 },
        state,
        worker: worker.map(str::to_string),
        attempts: i64::from(worker.is_some()),
        created_us: NOW_US - 300_000_000,
        leased_us: worker.map(|_| NOW_US - 20_000_000),
        lease_expires_us: worker.map(|name| {
            if name == "lab-a2" {
                NOW_US - 15_000_000
            } else {
                NOW_US + 40_000_000
            }
        }),
        finished_us: None,
        result: None,
    }
}

fn regression(id: i64, state: RegressionState, culprit: Option<&str>) -> Regression {
    Regression {
        id,
        track: TRACK.into(),
        good: C1.into(),
        bad: C2.into(),
        state,
        detail: r#"{"difference":{"diff_pct":-5.23}}"#.into(),
        session_id: (state != RegressionState::Open).then_some(id),
        culprit: culprit.map(str::to_string),
        fixed_by: (state == RegressionState::Fixed).then(|| C3.to_string()),
        driver: None,
        driver_expires_us: None,
        opened_us: NOW_US - 3_600_000_000,
        updated_us: NOW_US - 60_000_000,
    }
}

fn report(regression_id: i64, sent: bool, attempts: i64) -> ReportState {
    ReportState {
        regression_id,
        sent_us: sent.then_some(NOW_US - 30_000_000),
        has_command: true,
        attempts,
        last_error: (!sent && attempts > 0)
            .then(|| "the notification command failed (exit 75): no route".into()),
    }
}

fn lab() -> LabStatus {
    LabStatus {
        schema: LAB_SCHEMA,
        now_us: NOW_US,
        tracks: vec![Track {
            key: TRACK.into(),
            spec: r#"{"branch":"net-next","repo":"/srv/src/linux","pool":"lab-a"}"#.into(),
            created_us: NOW_US - 86_400_000_000,
            seen_us: NOW_US - 2_000_000,
        }],
        workers: vec![
            Worker {
                name: "lab-a1".into(),
                pool: "lab-a".into(),
                host: "testbox-1".into(),
                pid: 4242,
                job_id: Some(41),
                started_us: NOW_US - 7_200_000_000,
                seen_us: NOW_US - 3_000_000,
            },
            Worker {
                name: "lab-a2".into(),
                pool: "lab-a".into(),
                host: "testbox-2".into(),
                pid: 977,
                job_id: Some(40),
                started_us: NOW_US - 7_200_000_000,
                seen_us: NOW_US - 600_000_000,
            },
        ],
        jobs: vec![
            job(40, "slot", C2, JobState::Leased, Some("lab-a2")),
            job(41, "measure", C3, JobState::Leased, Some("lab-a1")),
            job(42, "measure", C1, JobState::Queued, None),
        ],
        regressions: vec![
            regression(1, RegressionState::Fixed, Some(C2)),
            regression(2, RegressionState::Bisected, Some(C2)),
            regression(3, RegressionState::Bisecting, None),
        ],
        notifications: vec![report(1, true, 1), report(2, true, 2)],
        seconds_per_job: Some(21.4),
    }
}

pub fn samples() -> Vec<Sample> {
    let status = lab();
    let mut listing = lab();
    listing.regressions = vec![
        regression(4, RegressionState::Bisected, Some(C2)),
        regression(5, RegressionState::Refused, None),
        regression(6, RegressionState::Open, None),
    ];
    listing.notifications = vec![report(4, false, 3)];
    let empty = LabStatus {
        tracks: Vec::new(),
        workers: Vec::new(),
        jobs: Vec::new(),
        regressions: Vec::new(),
        notifications: Vec::new(),
        seconds_per_job: None,
        ..lab()
    };
    vec![
        Sample::new("lab", "status", &LabContext::new(&status, true)),
        Sample::new("lab", "regressions", &LabContext::new(&listing, false)),
        Sample::new("lab", "empty", &LabContext::new(&empty, true)),
    ]
}
