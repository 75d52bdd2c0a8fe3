//! Journals as netbisect 0.1.0 writes them for a bisection of one
//! measurement at a time (schema 1.3, no `jobs`, no `started`, no
//! `slot`), kept as files: each was written by a bisection stopped by
//! SIGINT, and each `-resumed` file by the same bisection resumed to its
//! end. A resume by this crate must walk the same path: the journal it
//! writes is event for event the `-resumed` file, and its answer the
//! same.
//!
//! The testbed below is what measured them: its values depend only on
//! the commit and on how many repeats of it were taken before, so a
//! resume measures what the stopped bisection would have.

use bisect::engine;
use bisect::graph::{CommitGraph, CommitInfo};
use bisect::journal::{BoxError, JournalEvent, MemoryJournal};
use bisect::progress::Status;
use bisect::report::{BisectResult, Outcome};
use bisect::{BisectConfig, Measurement, Measurer, Sample};
use std::collections::BTreeMap;
use std::path::Path;

/// The range of the journals: `good`, then `c0` to `c39`.
const N_COMMITS: usize = 40;
/// The first commit of the lower throughput.
const CULPRIT: &str = "c23";
/// A commit whose build fails: every repeat of it is a skip.
const UNBUILDABLE: &str = "c24";

/// splitmix64's finaliser (Steele, Lea and Flood, 2014).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The throughput of repeat `repeat` of `commit`: 1 Gbit/s before the
/// culprit, 10% less from it on, within 2% either side.
fn value_of(commit: &str, repeat: u64) -> f64 {
    let index = commit
        .strip_prefix('c')
        .and_then(|n| n.parse::<usize>().ok());
    let culprit_idx: usize = CULPRIT[1..].parse().unwrap();
    let mean = if index.is_some_and(|index| index >= culprit_idx) {
        0.9e9
    } else {
        1e9
    };
    let key = commit
        .bytes()
        .fold(repeat, |acc, byte| mix(acc ^ u64::from(byte)));
    let uniform = (mix(key) >> 11) as f64 / (1u64 << 53) as f64;
    (mean * (1.0 + 0.04 * (uniform - 0.5))).round()
}

/// The testbed that measured the journals, taking up after `events`.
struct Testbed {
    /// Fresh repeats taken of each commit.
    taken: BTreeMap<String, u64>,
    /// Fresh repeats taken by this testbed.
    n_fresh: u32,
}

impl Testbed {
    fn after(events: &[JournalEvent]) -> Testbed {
        let mut taken = BTreeMap::new();
        for event in events {
            if let JournalEvent::Sample { commit, .. } = event {
                *taken.entry(commit.clone()).or_default() += 1;
            }
        }
        Testbed { taken, n_fresh: 0 }
    }
}

impl Measurer for Testbed {
    /// One run of the good end (as `bisect run` takes first) and two of
    /// the bad end are in the archive.
    fn archived(&mut self, commit: &CommitInfo) -> Result<Vec<Sample>, BoxError> {
        let runs: &[&str] = match commit.id.as_str() {
            "good" => &["run-good-0"],
            "c39" => &["run-c39-a", "run-c39-b"],
            _ => &[],
        };
        Ok(runs
            .iter()
            .zip(1000..)
            .map(|(run, repeat)| Sample {
                value: value_of(&commit.id, repeat),
                run_id: Some(run.to_string()),
            })
            .collect())
    }

    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError> {
        self.n_fresh += 1;
        if commit.id == UNBUILDABLE {
            return Ok(Measurement::Skip("build failed (exit 2)".to_string()));
        }
        let taken = self.taken.entry(commit.id.clone()).or_default();
        let repeat = *taken;
        *taken += 1;
        Ok(Measurement::Sample(Sample {
            value: value_of(&commit.id, repeat),
            run_id: Some(format!("run-{}-{repeat}", commit.id)),
        }))
    }

    fn seconds_per_sample(&self) -> Option<f64> {
        Some(42.0)
    }
}

/// The journal file `name`, one JSON event a line, as the archive keeps
/// each event.
fn journal_file(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/journals")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

fn decode(lines: &[String]) -> Vec<JournalEvent> {
    lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{line}: {err}")))
        .collect()
}

fn encode(events: &[JournalEvent]) -> Vec<String> {
    events
        .iter()
        .map(|event| serde_json::to_string(event).unwrap())
        .collect()
}

/// The options the journal was started with.
fn config_of(events: &[JournalEvent]) -> BisectConfig {
    match &events[0] {
        JournalEvent::Start { config, .. } => config.clone(),
        other => panic!("the journal starts with {other:?}"),
    }
}

fn culprit(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Finished(report) => match &report.result {
            BisectResult::FirstBad { commit, .. } => &commit.id,
            BisectResult::Range { .. } => panic!("a range: {report:?}"),
        },
        Outcome::Refused(refusal) => panic!("refused: {refusal:?}"),
    }
}

/// Resumes the stopped bisection of `method`, checks it against the
/// journal of its resume, and returns the status of the stopped one.
fn resume(method: &str) -> Status {
    let stopped = journal_file(&format!("{method}-interrupted.jsonl"));
    let resumed = journal_file(&format!("{method}-resumed.jsonl"));
    let stopped_events = decode(&stopped);
    // The files are what serde writes, byte for byte.
    assert_eq!(encode(&stopped_events), stopped);
    // One measurement at a time: no jobs in the start, no slots.
    assert!(
        matches!(&stopped_events[0], JournalEvent::Start { jobs: 1, .. })
            && !stopped[0].contains("\"jobs\""),
        "{}",
        stopped[0]
    );
    assert!(
        stopped_events.iter().all(|event| match event {
            JournalEvent::Sample { slot, .. } | JournalEvent::Skip { slot, .. } => slot.is_none(),
            JournalEvent::Started { .. } => false,
            _ => true,
        }),
        "{method}"
    );
    assert!(stopped.last().unwrap().contains("\"interrupted\""));
    let graph = CommitGraph::linear(N_COMMITS);
    let config = config_of(&stopped_events);

    let mut journal = MemoryJournal {
        events: stopped_events.clone(),
    };
    let mut testbed = Testbed::after(&stopped_events);
    let outcome = engine::run(&graph, &config, &mut testbed, &mut journal, &mut |_| {})
        .unwrap_or_else(|err| panic!("{method}: {err}"));
    assert_eq!(culprit(&outcome), CULPRIT, "{method}");
    assert_eq!(encode(&journal.events), resumed, "{method}");
    // Only what was not journaled was measured.
    let n_new = resumed.len() - stopped.len();
    let n_measured = resumed[stopped.len()..]
        .iter()
        .filter(|line| line.contains("\"event\":\"sample\"") || line.contains("\"event\":\"skip\""))
        .count();
    assert!(n_new > n_measured && n_measured > 0, "{method}");
    assert_eq!(testbed.n_fresh as usize, n_measured, "{method}");

    // The whole journal replays to the same answer, measuring nothing
    // and writing nothing.
    let resumed_events = decode(&resumed);
    let mut again = MemoryJournal {
        events: resumed_events.clone(),
    };
    let mut idle = Testbed::after(&resumed_events);
    let replayed = engine::run(&graph, &config, &mut idle, &mut again, &mut |_| {}).unwrap();
    // Compared as printed: the verdict of a skipped commit has no
    // likelihood ratio (NaN), which equals nothing.
    assert_eq!(format!("{replayed:?}"), format!("{outcome:?}"), "{method}");
    assert_eq!(encode(&again.events), resumed, "{method}");
    assert_eq!(idle.n_fresh, 0, "{method}");
    let status = engine::status(&graph, &config, &resumed_events).unwrap();
    assert_eq!(
        format!("{:?}", status.outcome),
        format!("{:?}", Some(&outcome)),
        "{method}"
    );
    assert!(status.next_commit.is_none(), "{method}");

    engine::status(&graph, &config, &stopped_events).unwrap()
}

#[test]
fn a_stopped_posterior_bisection_resumes_as_it_did() {
    let status = resume("posterior");
    // The signal came while c23 was measured a second time.
    let next = status.next_commit.expect("a commit to measure next");
    assert_eq!((next.id.as_str(), status.next_n_samples), ("c23", 1));
    assert!(status.outcome.is_none());
    assert!(status.estimate.is_some());
}

#[test]
fn a_stopped_sequential_bisection_resumes_as_it_did() {
    let status = resume("sequential");
    // The signal came while the unbuildable c24 was tried.
    let next = status.next_commit.expect("a commit to measure next");
    assert_eq!((next.id.as_str(), status.next_n_samples), ("c24", 0));
    assert!(status.outcome.is_none());
    assert!(status.estimate.is_some());
}
