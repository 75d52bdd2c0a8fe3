//! The lab's queue, regressions and outbox on both backends: a job is
//! leased to one worker at a time and comes back when its lease
//! expires, a job finished twice stores one run, concurrent takers take
//! every job once, a regression is opened and bisected once whatever the
//! number of trackers, and its report leaves the outbox once, after its
//! failures are retried.

use super::{Place, canonical, places, record};
use archive::lab::{
    BisectionEnd, Finished, JobFilter, JobState, MAX_ATTEMPTS, NewJob, Opened, RegressionState,
    WorkerNote,
};
use archive::{Archive, CanonicalRun, RunQuery};
use run_record::spec::TestKind;
use std::collections::BTreeMap;
use std::time::Duration;

fn job(pool: &str, key: &str, priority: i64) -> NewJob {
    NewJob {
        pool: pool.to_string(),
        kind: "measure".to_string(),
        owner: "track:t1".to_string(),
        key: key.to_string(),
        payload: format!(r#"{{"commit":"{key}"}}"#),
        priority,
    }
}

fn run_of(idx: usize) -> CanonicalRun {
    canonical(record(
        &format!("c{idx:04}"),
        "lab",
        1e9 + idx as f64 * 1e3,
        TestKind::TcpStream,
    ))
}

const LONG: Duration = Duration::from_secs(60);

#[test]
fn a_job_is_leased_to_one_worker_and_comes_back_when_its_lease_expires() {
    for place in places() {
        let location = place.location();
        let mut archive = Archive::open_location(&location).unwrap();
        let ids = archive
            .enqueue_jobs(&[job("a", "k1", 0), job("a", "k2", 5), job("b", "k3", 9)])
            .unwrap();
        // The same key again adds nothing, and names the job it is.
        assert_eq!(
            archive.enqueue_jobs(&[job("a", "k1", 7)]).unwrap(),
            [ids[0]]
        );
        let pools = ["a".to_string()];

        // The highest priority of the worker's pools first.
        let first = archive.take_job("w1", &pools, LONG).unwrap().unwrap();
        assert_eq!(
            (first.key.as_str(), first.attempts),
            ("k2", 1),
            "{location}"
        );
        assert_eq!(first.state, JobState::Leased);
        assert_eq!(first.worker.as_deref(), Some("w1"));
        let second = archive.take_job("w2", &pools, LONG).unwrap().unwrap();
        assert_eq!(second.key, "k1");
        assert!(archive.take_job("w3", &pools, LONG).unwrap().is_none());
        assert!(archive.take_job("w3", &[], LONG).unwrap().is_none());

        // A lease extended stays; one released comes back at once.
        let lease = first.lease().unwrap();
        assert!(archive.heartbeat_job(lease, LONG).unwrap());
        assert!(archive.release_job(second.lease().unwrap()).unwrap());
        let again = archive.take_job("w3", &pools, LONG).unwrap().unwrap();
        assert_eq!((again.key.as_str(), again.attempts), ("k1", 2));
        // The released lease is dead: it cannot finish the job.
        let run = run_of(1);
        assert_eq!(
            archive
                .finish_job(second.lease().unwrap(), std::slice::from_ref(&run), "{}")
                .unwrap(),
            Finished::LeaseLost
        );
        assert_eq!(archive.count().unwrap(), 0);

        // A lease that expires: the job is taken over, and its first
        // worker, thought dead, stores nothing when it comes back.
        let short = Duration::from_millis(200);
        assert!(
            archive
                .heartbeat_job(again.lease().unwrap(), short)
                .unwrap()
        );
        std::thread::sleep(Duration::from_millis(400));
        let taken_over = archive.take_job("w4", &pools, LONG).unwrap().unwrap();
        assert_eq!((taken_over.id, taken_over.attempts), (again.id, 3));
        assert!(!archive.heartbeat_job(again.lease().unwrap(), LONG).unwrap());
        assert_eq!(
            archive
                .finish_job(again.lease().unwrap(), std::slice::from_ref(&run), "{}")
                .unwrap(),
            Finished::LeaseLost
        );
        assert_eq!(archive.count().unwrap(), 0);
        let result = format!(r#"{{"run_id":"{}"}}"#, run.record().id);
        let lease = taken_over.lease().unwrap();
        assert_eq!(
            archive
                .finish_job(lease, std::slice::from_ref(&run), &result)
                .unwrap(),
            Finished::Done
        );
        // Finishing again (an answer lost on the way back) stores
        // nothing more and says so.
        assert_eq!(
            archive
                .finish_job(lease, std::slice::from_ref(&run), &result)
                .unwrap(),
            Finished::AlreadyDone
        );
        assert_eq!(archive.count().unwrap(), 1);
        let done = archive
            .jobs(&JobFilter {
                states: vec![JobState::Done],
                ..JobFilter::default()
            })
            .unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].result.as_deref(), Some(result.as_str()));
        assert_eq!(done[0].worker.as_deref(), Some("w4"));

        // A done job's key adds nothing either.
        assert_eq!(
            archive.enqueue_jobs(&[job("a", "k1", 0)]).unwrap(),
            [ids[0]]
        );
        assert_eq!(
            archive
                .cancel_jobs("track:t1", "the track stopped")
                .unwrap(),
            1,
            "k3, queued in pool b"
        );
        let failed = archive
            .jobs(&JobFilter {
                owner: Some("track:t1".to_string()),
                states: vec![JobState::Failed],
            })
            .unwrap();
        assert_eq!(failed.len(), 1);
        assert!(failed[0].result.as_deref().unwrap().contains("stopped"));
        assert!(archive.check().unwrap().is_clean(), "{location}");
    }
}

#[test]
fn a_job_whose_workers_keep_dying_is_given_up() {
    for place in places() {
        let mut archive = Archive::open_location(&place.location()).unwrap();
        archive.enqueue_jobs(&[job("a", "poison", 0)]).unwrap();
        let pools = ["a".to_string()];
        for attempt in 1..=MAX_ATTEMPTS {
            let taken = archive
                .take_job("w", &pools, Duration::from_millis(1))
                .unwrap()
                .unwrap();
            assert_eq!(taken.attempts, attempt);
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(archive.take_job("w", &pools, LONG).unwrap().is_none());
        let jobs = archive.jobs(&JobFilter::default()).unwrap();
        assert_eq!(jobs[0].state, JobState::Failed);
        assert!(
            jobs[0]
                .result
                .as_deref()
                .unwrap()
                .contains("lease expired 5 times")
        );
    }
}

/// Takes and finishes jobs of pool `a` until none is left, once every
/// taker has its archive open; returns the keys it finished.
fn take_all(
    place: &Place,
    worker: &str,
    runs: &BTreeMap<String, CanonicalRun>,
    start: &std::sync::Barrier,
) -> Vec<String> {
    let mut archive = Archive::open_location(&place.location()).unwrap();
    start.wait();
    let mut finished = Vec::new();
    let pools = ["a".to_string()];
    while let Some(job) = archive.take_job(worker, &pools, LONG).unwrap() {
        let run = &runs[&job.key];
        let result = format!(r#"{{"run_id":"{}"}}"#, run.record().id);
        match archive
            .finish_job(job.lease().unwrap(), std::slice::from_ref(run), &result)
            .unwrap()
        {
            Finished::Done => finished.push(job.key),
            other => panic!("{worker}: {other:?} for {}", job.key),
        }
        // As a measurement would, leave the others time to take theirs.
        std::thread::sleep(Duration::from_millis(5));
    }
    finished
}

#[test]
fn concurrent_takers_take_every_job_once() {
    for place in places() {
        let mut archive = Archive::open_location(&place.location()).unwrap();
        let n_jobs = 40;
        let runs: BTreeMap<String, CanonicalRun> = (0..n_jobs)
            .map(|idx| (format!("k{idx:02}"), run_of(idx)))
            .collect();
        let jobs: Vec<NewJob> = runs.keys().map(|key| job("a", key, 0)).collect();
        archive.enqueue_jobs(&jobs).unwrap();
        let start = std::sync::Barrier::new(4);
        let finished: Vec<Vec<String>> = std::thread::scope(|scope| {
            let takers: Vec<_> = (0..4)
                .map(|taker| {
                    let (place, runs, start) = (&place, &runs, &start);
                    scope.spawn(move || take_all(place, &format!("w{taker}"), runs, start))
                })
                .collect();
            takers
                .into_iter()
                .map(|taker| taker.join().unwrap())
                .collect()
        });
        let mut all: Vec<String> = finished.concat();
        all.sort();
        assert_eq!(all, runs.keys().cloned().collect::<Vec<_>>());
        assert_eq!(archive.count().unwrap(), n_jobs as u64);
        let done = archive.jobs(&JobFilter::default()).unwrap();
        assert!(
            done.iter()
                .all(|job| job.state == JobState::Done && job.attempts == 1)
        );
        // Several takers did take some.
        assert!(finished.iter().filter(|keys| !keys.is_empty()).count() >= 2);
    }
}

#[test]
fn a_regression_is_opened_and_bisected_once_and_its_report_sent_once() {
    for place in places() {
        let location = place.location();
        let mut archive = Archive::open_location(&location).unwrap();
        archive.note_track("t1", r#"{"branch":"main"}"#).unwrap();
        assert_eq!(archive.tracks().unwrap()[0].key, "t1");

        // Trackers that confirm the same regression at once open one.
        let opened: Vec<Opened> = std::thread::scope(|scope| {
            let openers: Vec<_> = (0..4)
                .map(|_| {
                    let location = &location;
                    scope.spawn(move || {
                        let mut archive = Archive::open_location(location).unwrap();
                        archive
                            .open_regression("t1", "g1", "b1", r#"{"change_pct":-5}"#)
                            .unwrap()
                    })
                })
                .collect();
            openers
                .into_iter()
                .map(|opener| opener.join().unwrap())
                .collect()
        });
        let new: Vec<i64> = opened
            .iter()
            .filter_map(|opened| match opened {
                Opened::New(id) => Some(*id),
                _ => None,
            })
            .collect();
        assert_eq!(new.len(), 1, "{location}: {opened:?}");
        let id = new[0];
        assert!(opened.iter().all(|opened| matches!(
            opened,
            Opened::New(found) | Opened::Existing(found) if *found == id
        )));
        // A dismissed suspicion is kept once, and is no active one.
        assert!(archive.dismiss_suspicion("t1", "g0", "b0", "{}").unwrap());
        assert!(!archive.dismiss_suspicion("t1", "g0", "b0", "{}").unwrap());
        assert_eq!(
            archive.open_regression("t1", "g0", "b0", "{}").unwrap(),
            Opened::Existing(archive.regressions(Some("t1")).unwrap()[1].id)
        );
        // Another range of the same track waits for this one.
        assert_eq!(
            archive.open_regression("t1", "g1", "b2", "{}").unwrap(),
            Opened::AnotherActive(id)
        );
        assert!(matches!(
            archive.open_regression("t2", "g1", "b1", "{}").unwrap(),
            Opened::New(_)
        ));

        // One driver at a time; its hold expires as a lease does.
        assert!(
            archive
                .hold_regression(id, "d1", Duration::from_millis(200))
                .unwrap()
        );
        assert!(!archive.hold_regression(id, "d2", LONG).unwrap());
        std::thread::sleep(Duration::from_millis(400));
        assert!(archive.hold_regression(id, "d2", LONG).unwrap());
        let session = archive.start_session("/src/app", "{}").unwrap();
        assert!(
            !archive
                .set_regression_session(id, "d1", session.id)
                .unwrap()
        );
        assert!(
            archive
                .set_regression_session(id, "d2", session.id)
                .unwrap()
        );
        let end = BisectionEnd::Culprit {
            culprit: "c19".to_string(),
            report: "the report".to_string(),
            command: Some("sendmail -t".to_string()),
        };
        assert!(!archive.end_regression_bisection(id, "d1", &end).unwrap());
        assert!(archive.end_regression_bisection(id, "d2", &end).unwrap());
        // Ended: no second end, no second report.
        assert!(!archive.end_regression_bisection(id, "d2", &end).unwrap());
        assert!(!archive.hold_regression(id, "d3", LONG).unwrap());
        let regression = archive.regressions(Some("t1")).unwrap().remove(0);
        assert_eq!(regression.state, RegressionState::Bisected);
        assert_eq!(
            archive.regressions(Some("t1")).unwrap()[1].state,
            RegressionState::Dismissed
        );
        assert_eq!(regression.culprit.as_deref(), Some("c19"));
        assert_eq!(regression.session_id, Some(session.id));
        // The next regression of the track may open now.
        assert!(matches!(
            archive.open_regression("t1", "g1", "b2", "{}").unwrap(),
            Opened::New(_)
        ));

        // The outbox: a failed command is retried after its delay, and
        // a report sent is never taken again.
        let taken = archive.take_notification("s1", LONG).unwrap().unwrap();
        assert_eq!((taken.body.as_str(), taken.attempts), ("the report", 1));
        assert!(archive.take_notification("s2", LONG).unwrap().is_none());
        let retry = Duration::from_millis(300);
        assert!(
            archive
                .notification_failed(taken.hold(), "exit 1", retry)
                .unwrap()
        );
        assert!(archive.take_notification("s2", LONG).unwrap().is_none());
        std::thread::sleep(Duration::from_millis(500));
        let again = archive.take_notification("s2", LONG).unwrap().unwrap();
        assert_eq!(
            (again.attempts, again.last_error.as_deref()),
            (2, Some("exit 1"))
        );
        // The first sender's hold is stale: it cannot mark it sent.
        assert!(!archive.notification_sent(taken.hold()).unwrap());
        assert!(archive.notification_sent(again.hold()).unwrap());
        assert!(archive.take_notification("s3", LONG).unwrap().is_none());
        let kept = archive.notifications().unwrap();
        assert_eq!(kept.len(), 1);
        assert!(kept[0].sent_us.is_some() && kept[0].last_error.is_none());

        // Fixed later, once; the suspicion that confirmed it is no
        // longer under way.
        assert!(
            archive
                .note_suspicion("t1#fix", "c29", "c30", "{}")
                .unwrap()
        );
        assert!(
            archive
                .note_suspicion("t1#fix", "c28", "c29", "{}")
                .unwrap()
        );
        assert!(archive.mark_regression_fixed(id, "c30", "t1#fix").unwrap());
        assert!(!archive.mark_regression_fixed(id, "c31", "t1#fix").unwrap());
        let regression = archive.regressions(Some("t1")).unwrap().remove(0);
        assert_eq!(regression.state, RegressionState::Fixed);
        assert_eq!(regression.fixed_by.as_deref(), Some("c30"));
        let left: Vec<(String, RegressionState)> = archive
            .regressions(Some("t1#fix"))
            .unwrap()
            .into_iter()
            .map(|suspicion| (suspicion.bad, suspicion.state))
            .collect();
        assert_eq!(left, [("c29".to_string(), RegressionState::Suspected)]);

        // A regression bisected without a notification command keeps its
        // report, with nothing to send.
        let other = archive.regressions(Some("t2")).unwrap().remove(0);
        assert!(archive.hold_regression(other.id, "d1", LONG).unwrap());
        let quiet = BisectionEnd::Culprit {
            culprit: "c7".to_string(),
            report: "kept".to_string(),
            command: None,
        };
        assert!(
            archive
                .end_regression_bisection(other.id, "d1", &quiet)
                .unwrap()
        );
        assert!(archive.take_notification("s1", LONG).unwrap().is_none());
        assert_eq!(archive.notifications().unwrap().len(), 2);

        // Workers say what they do.
        let note = WorkerNote {
            name: "lab-a1".to_string(),
            pool: "lab-a".to_string(),
            host: "box1".to_string(),
            pid: 42,
            job_id: Some(7),
        };
        archive.note_worker(&note).unwrap();
        archive
            .note_worker(&WorkerNote {
                job_id: None,
                ..note.clone()
            })
            .unwrap();
        let workers = archive.workers().unwrap();
        assert_eq!(workers.len(), 1);
        assert_eq!(workers[0].job_id, None);
        assert!(workers[0].seen_us >= workers[0].started_us);
        assert!(archive.check().unwrap().is_clean(), "{location}");
    }
}

#[test]
fn a_file_of_schema_8_gets_the_lab_when_a_writer_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("archive.db");
    let mut archive = Archive::open(&path).unwrap();
    archive.store(&run_of(1)).unwrap();
    drop(archive);
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute_batch(
            "DROP TABLE lab_notifications; DROP TABLE lab_regressions; \
             DROP TABLE lab_tracks; DROP TABLE lab_workers; DROP TABLE lab_jobs; \
             ALTER TABLE runs DROP COLUMN stored_by; ALTER TABLE runs DROP COLUMN stored_from; \
             PRAGMA user_version = 8;",
        )
        .unwrap();
    drop(connection);
    let location = archive::Location::File(path.clone());
    let mut upgrades = Vec::new();
    let mut archive =
        Archive::open_location_noting(&location, &mut |upgrade| upgrades.push(upgrade)).unwrap();
    assert_eq!(upgrades.len(), 1);
    assert_eq!((upgrades[0].from, upgrades[0].to), (8, 11));
    assert_eq!(archive.records(&RunQuery::default()).unwrap().len(), 1);
    archive.enqueue_jobs(&[job("a", "k", 0)]).unwrap();
    assert_eq!(archive.jobs(&JobFilter::default()).unwrap().len(), 1);
    assert!(archive.check().unwrap().is_clean());
}
