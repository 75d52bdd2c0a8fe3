//! Pruning on both backends: each filter selects what it says, a dry run
//! changes nothing, the runs removed take their history rows with them
//! (the archive checks clean), and a run is kept, and said to be, when a
//! bisection's journal names it, a bisection's lab job measured it, or a
//! lab regression that is not dismissed names its commit.

use super::{canonical, places, record};
use archive::lab::{NewJob, Opened};
use archive::store::{Citation, PruneSelection, Pruned};
use archive::{Archive, ArchiveError, CanonicalRun, RunQuery};
use run_record::spec::TestKind;
use std::collections::BTreeSet;
use std::time::Duration;

/// A run of `commit` with `label` on `testbed`, started at `started_at`.
fn run(commit: &str, label: &str, testbed: &str, started_at: &str) -> CanonicalRun {
    let mut record = record(commit, label, 1e9, TestKind::TcpStream);
    record.testbed = testbed.to_string();
    record.started_at = started_at.to_string();
    record.seal().unwrap();
    canonical(record)
}

fn ids(runs: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    runs.into_iter().collect()
}

fn removed(pruned: &Pruned) -> BTreeSet<String> {
    ids(pruned.removed.iter().map(|run| run.id.clone()))
}

/// A job of `owner` whose payload is `payload`, finished by storing `run`.
fn finish_job(archive: &mut Archive, key: &str, payload: &str, run: &CanonicalRun) -> i64 {
    let job = NewJob {
        pool: "lab".to_string(),
        kind: "measure".to_string(),
        owner: "track".to_string(),
        key: key.to_string(),
        payload: payload.to_string(),
        priority: 0,
    };
    archive.enqueue_jobs(&[job]).unwrap();
    let taken = archive
        .take_job("w1", &["lab".to_string()], Duration::from_secs(60))
        .unwrap()
        .unwrap();
    let result = format!(
        r#"{{"schema":"r","run_id":"{}","worker":"w1","seconds":1.0}}"#,
        run.record().id
    );
    archive
        .finish_job(taken.lease().unwrap(), std::slice::from_ref(run), &result)
        .unwrap();
    taken.id
}

#[test]
fn each_filter_selects_what_it_says_and_a_dry_run_changes_nothing() {
    for place in places() {
        let location = place.location();
        let mut archive = Archive::open_location(&location).unwrap();
        let old_a = run("c0001", "base", "lab-a", "2025-01-01T00:00:00.000000Z");
        let old_b = run("c0002", "patched", "lab-b", "2025-02-01T00:00:00.000000Z");
        let new_a = run("c0003", "patched", "lab-a", "2026-11-01T00:00:00.000000Z");
        let new_b = run("c0004", "base", "lab-b", "2026-11-02T00:00:00.000000Z");
        let all = [&old_a, &old_b, &new_a, &new_b];
        archive.store_all(&all.map(|run| run.clone())).unwrap();
        let id = |run: &CanonicalRun| run.record().id.clone();
        let select = |query: RunQuery, commits: Option<&[&str]>| PruneSelection {
            query,
            commits: commits.map(|commits| commits.iter().map(|c| c.to_string()).collect()),
        };
        let cases = [
            (
                select(
                    RunQuery {
                        started_before: Some("2026-01-01T00:00:00.000000Z".to_string()),
                        ..RunQuery::default()
                    },
                    None,
                ),
                ids([id(&old_a), id(&old_b)]),
            ),
            (
                select(
                    RunQuery {
                        testbed: Some("lab-b".to_string()),
                        ..RunQuery::default()
                    },
                    None,
                ),
                ids([id(&old_b), id(&new_b)]),
            ),
            (
                select(
                    RunQuery {
                        label: Some("patched".to_string()),
                        testbed: Some("lab-a".to_string()),
                        ..RunQuery::default()
                    },
                    None,
                ),
                ids([id(&new_a)]),
            ),
            (
                select(RunQuery::default(), Some(&["c0001", "c0004", "c9999"])),
                ids([id(&old_a), id(&new_b)]),
            ),
        ];
        for (selection, expected) in &cases {
            assert!(selection.is_narrowed());
            let pruned = archive.prune(selection, true).unwrap();
            assert_eq!(&removed(&pruned), expected, "{location}: {selection:?}");
            assert!(pruned.dry_run && pruned.kept.is_empty());
            assert_eq!(archive.count().unwrap(), 4, "{location}: a dry run removed");
        }
        assert!(!PruneSelection::default().is_narrowed());
        let limited = PruneSelection {
            query: RunQuery {
                limit: Some(1),
                ..RunQuery::default()
            },
            commits: None,
        };
        assert!(matches!(
            archive.prune(&limited, false),
            Err(ArchiveError::InvalidQuery(_))
        ));

        let pruned = archive.prune(&cases[0].0, false).unwrap();
        assert_eq!(removed(&pruned), cases[0].1);
        assert!(!pruned.dry_run);
        let left = ids(archive
            .runs(&RunQuery::default())
            .unwrap()
            .into_iter()
            .map(|run| run.id));
        assert_eq!(left, ids([id(&new_a), id(&new_b)]), "{location}");
        // The history rows went with their runs.
        assert!(archive.check().unwrap().is_clean(), "{location}");
        // Pruning the same again removes nothing.
        assert!(
            archive
                .prune(&cases[0].0, false)
                .unwrap()
                .removed
                .is_empty()
        );
        drop(archive);
        let reopened = Archive::open_location(&location).unwrap();
        assert_eq!(reopened.count().unwrap(), 2);
    }
}

#[test]
fn runs_a_bisection_or_a_regression_cites_are_kept_and_said_why() {
    for place in places() {
        let location = place.location();
        let mut archive = Archive::open_location(&location).unwrap();
        let old = |commit: &str, minute: u32| {
            run(
                commit,
                "lab",
                "lab-a",
                &format!("2025-01-01T00:{minute:02}:00.000000Z"),
            )
        };
        let journaled = old("c0001", 1);
        let found_by_journal = old("c0002", 2);
        let at_good = old("c0010", 3);
        let at_culprit = old("c0011", 4);
        let at_dismissed = old("c0020", 5);
        let of_slot_job = old("c0030", 6);
        let of_point_job = old("c0031", 7);
        let free = old("c0040", 8);
        archive
            .store_all(&[
                journaled.clone(),
                found_by_journal.clone(),
                at_good.clone(),
                at_culprit.clone(),
                at_dismissed.clone(),
                free.clone(),
            ])
            .unwrap();

        let session = archive
            .start_session("/repo", r#"{"good":"c0001"}"#)
            .unwrap();
        let sample = format!(
            r#"{{"event":"sample","commit":"c0001","sample":{{"value":1.0,"run_id":"{}"}}}}"#,
            journaled.record().id
        );
        let archived = format!(
            r#"{{"event":"archived","commit":"c0002","samples":[{{"value":1.0,"run_id":"{}"}}]}}"#,
            found_by_journal.record().id
        );
        archive.append_event(session.id, &sample).unwrap();
        archive.append_event(session.id, &archived).unwrap();
        archive.end_session(session.id).unwrap();

        let Opened::New(regression_id) = archive
            .open_regression("track", "c0010", "c0012", "{}")
            .unwrap()
        else {
            panic!("{location}: the regression was not opened");
        };
        let driver = "driver";
        assert!(
            archive
                .hold_regression(regression_id, driver, Duration::from_secs(60))
                .unwrap()
        );
        assert!(
            archive
                .set_regression_session(regression_id, driver, session.id)
                .unwrap()
        );
        let end = archive::lab::BisectionEnd::Culprit {
            culprit: "c0011".to_string(),
            report: "report".to_string(),
            command: None,
        };
        assert!(
            archive
                .end_regression_bisection(regression_id, driver, &end)
                .unwrap()
        );
        assert!(
            archive
                .dismiss_suspicion("track", "c0020", "c0021", "{}")
                .unwrap()
        );
        let slot_job = finish_job(
            &mut archive,
            "slot",
            r#"{"commit":"c0030","slot":{"session":1}}"#,
            &of_slot_job,
        );
        finish_job(
            &mut archive,
            "point",
            r#"{"commit":"c0031"}"#,
            &of_point_job,
        );
        assert_eq!(archive.count().unwrap(), 8);

        let every_old = PruneSelection {
            query: RunQuery {
                started_before: Some("2026-01-01T00:00:00.000000Z".to_string()),
                ..RunQuery::default()
            },
            commits: None,
        };
        for dry_run in [true, false] {
            let pruned = archive.prune(&every_old, dry_run).unwrap();
            let id = |run: &CanonicalRun| run.record().id.clone();
            assert_eq!(
                removed(&pruned),
                ids([id(&at_dismissed), id(&of_point_job), id(&free)]),
                "{location}"
            );
            let kept: Vec<(String, Citation)> = pruned
                .kept
                .iter()
                .map(|kept| (kept.run.id.clone(), kept.cited_by))
                .collect();
            let bisection = Citation::Bisection {
                session_id: session.id,
            };
            let by_regression = Citation::Regression { regression_id };
            assert_eq!(
                kept,
                [
                    (id(&journaled), bisection),
                    (id(&found_by_journal), bisection),
                    (id(&at_good), by_regression),
                    (id(&at_culprit), by_regression),
                    (id(&of_slot_job), Citation::Job { job_id: slot_job }),
                ],
                "{location}"
            );
        }
        assert_eq!(archive.count().unwrap(), 5);
        assert!(archive.check().unwrap().is_clean(), "{location}");
    }
}
