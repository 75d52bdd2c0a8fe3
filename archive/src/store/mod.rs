//! The store: one SQLite file holding every run record verbatim.
//!
//! Each run is kept as its canonical bytes (RFC 8785) under its content id,
//! beside indexed columns for the queries `list`, `compare` and `history`
//! make: commit, describe, label, config_key, testbed, test, source tool,
//! start time and one column per
//! [`Metric`](run_record::record::Metric). Storing a run whose id is
//! already present changes nothing, which makes imports and merges
//! idempotent.
//!
//! Durability and concurrency: the file is in WAL mode with foreign keys
//! on; every write is one `BEGIN IMMEDIATE` transaction, so a process
//! killed at any moment leaves either all or none of a write, and
//! concurrent writers wait for each other (busy timeout) instead of
//! failing, while readers keep reading the last committed state.
//! `synchronous = NORMAL` keeps commits durable across a crash of the
//! process; only a power loss can undo the last commits, never corrupt
//! the file.
//!
//! A file that is not an archive, is damaged, or has a newer schema is
//! refused with an error before anything is written to it. Before the
//! first write of an open archive, `PRAGMA quick_check` runs when the
//! file was not closed cleanly (a `-wal` file was there) or is small
//! enough for the check to take well under a second
//! ([`QUICK_CHECK_MAX_BYTES`]); on larger files SQLite's own checks of
//! the pages a write touches stand guard. A damaged file refuses writes
//! and names `netbisect archive check`.
//!
//! Reading ([`Archive::open_read_only`]) never creates a file and works on
//! an archive the user may only read: a file or directory without write
//! permission, or a read-only mount, is opened `immutable` (no locks, no
//! `-wal` or `-shm` left behind to lock the owner out), or read-only
//! through the owner's `-wal` when a writer is active.
//!
//! The parts: [`Archive`] and [`CanonicalRun`] here; `open` (opening,
//! creating and migrating a file, the checks before the first write, and
//! what a failure is called), `write` (storing and merging runs), `query`
//! (the selections `list`, `show`, `compare` and `history` make) and
//! `check` (`archive check`).

use crate::ArchiveError;
use run_record::canonical;
use run_record::record::{RecordError, RunRecord};
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

mod check;
mod open;
mod query;
mod series;
mod write;

pub use check::{CheckReport, DamagedRun};
pub use open::{BUSY_TIMEOUT, QUICK_CHECK_MAX_BYTES};
pub use query::{MetricValue, RunQuery, StoredRun};
pub use series::SeriesRun;
pub use write::{MergeCounts, StoreCounts, StoreOutcome};

/// A validated run record together with its canonical bytes, ready to
/// store.
#[derive(Clone, Debug)]
pub struct CanonicalRun {
    record: RunRecord,
    bytes: Vec<u8>,
}

impl CanonicalRun {
    /// Wraps a sealed record; fails when its id is not that of its content
    /// (call [`RunRecord::seal`] first).
    pub fn from_record(record: RunRecord) -> Result<CanonicalRun, ArchiveError> {
        let computed = record.compute_id()?;
        if computed != record.id {
            return Err(ArchiveError::NotSealed {
                stated: record.id,
                computed,
            });
        }
        let bytes = record.to_canonical_bytes()?;
        Ok(CanonicalRun { record, bytes })
    }

    /// Reads and validates one JSON run record (any formatting) and keeps
    /// its canonical form. Members a newer minor revision added are kept.
    pub fn from_json(text: &[u8]) -> Result<CanonicalRun, RecordError> {
        let record = RunRecord::from_slice(text)?;
        let struct_bytes = record.to_canonical_bytes()?;
        // Input that is already canonical (the usual case for JSON lines)
        // needs no second pass; anything else is canonicalised from the
        // document as written, so no member is lost.
        let bytes = if struct_bytes == text.trim_ascii() {
            struct_bytes
        } else {
            let tree: Value = serde_json::from_slice(text)
                .map_err(|err| RecordError::Invalid(err.to_string()))?;
            canonical::to_canonical_bytes(&tree)?
        };
        Ok(CanonicalRun { record, bytes })
    }

    /// The record.
    pub fn record(&self) -> &RunRecord {
        &self.record
    }

    /// Its canonical bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// An open archive file.
pub struct Archive {
    pub(crate) connection: Connection,
    path: PathBuf,
    /// Whether `quick_check` is due before the first write.
    check_before_write: std::cell::Cell<bool>,
}

impl Archive {
    /// The file this archive lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::CURRENT_VERSION;
    use open::migrate_from;
    use run_record::record::{CpuFigures, Iteration, Metric};
    use run_record::spec::TestKind;
    use rusqlite::{Connection, params};
    use test_fixtures::record::RecordBuilder;

    fn cpu_record() -> RunRecord {
        let cpu = CpuFigures {
            local_util_pct: Some(42.5),
            remote_util_pct: Some(40.0),
            ..CpuFigures::default()
        };
        let summary_cpu = cpu.clone();
        RecordBuilder::new(TestKind::TcpStream)
            .started_at("2026-01-01T00:00:00.000000Z")
            .finished_at("2026-01-01T00:00:10.000000Z")
            .commit("abcdef")
            .iteration(Iteration {
                elapsed_s: 10.0,
                throughput_bps: 1e9,
                cpu: Some(cpu),
                ..Iteration::default()
            })
            .summary_with(|summary| summary.cpu = Some(summary_cpu))
            .build()
    }

    #[test]
    fn migrates_an_empty_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.db");
        std::fs::write(&path, b"").unwrap();
        let archive = Archive::open(&path).unwrap();
        assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
        assert!(archive.check().unwrap().is_clean());
    }

    #[test]
    fn migrates_a_version_1_file_and_backfills_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        let record = cpu_record();
        {
            // A file as version 1 wrote it: its schema and one run.
            let connection = Connection::open(&path).unwrap();
            connection.execute_batch("BEGIN").unwrap();
            migrate_from(&connection, 0, 1).unwrap();
            connection
                .execute(
                    "INSERT INTO runs (id, commit_id, describe, label, config_key, testbed, \
                     test, source_tool, started_at, n_iterations, throughput_bps, \
                     transaction_rate, record) \
                     VALUES (?1, ?2, NULL, NULL, ?3, ?4, ?5, ?6, ?7, 1, 1e9, NULL, ?8)",
                    params![
                        record.id,
                        "abcdef",
                        record.config_key,
                        "lab",
                        "TCP_STREAM",
                        "netbisect",
                        record.started_at,
                        record.to_canonical_bytes().unwrap()
                    ],
                )
                .unwrap();
            connection.execute_batch("COMMIT").unwrap();
            let version: u32 = connection
                .query_row("PRAGMA user_version", [], |row| row.get(0))
                .unwrap();
            assert_eq!(version, 1);
        }
        let archive = Archive::open(&path).unwrap();
        assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
        let values = archive
            .metric_values(&RunQuery::default(), Metric::LocalCpuPct)
            .unwrap();
        assert_eq!(values.len(), 1);
        assert_eq!(values[0].value, 42.5);
        assert_eq!(values[0].run_id, record.id);
        let values = archive
            .metric_values(&RunQuery::default(), Metric::LatencyP99Us)
            .unwrap();
        assert!(values.is_empty());
        // The history columns are filled from the record.
        for metric in [
            Metric::ThroughputBps,
            Metric::LocalCpuPct,
            Metric::LatencyP99Us,
        ] {
            let runs = archive
                .series_runs(&RunQuery::default(), metric)
                .unwrap()
                .unwrap();
            assert_eq!(runs, vec![SeriesRun::of(&record, metric).unwrap()]);
        }
        let report = archive.check().unwrap();
        assert!(report.is_clean(), "{report:?}");
        assert_eq!(report.n_runs, 1);
    }

    /// Records started at `times`, in that order, each of its own
    /// throughput.
    fn records_at(times: &[&str]) -> Vec<RunRecord> {
        times
            .iter()
            .enumerate()
            .map(|(idx, time)| {
                RecordBuilder::new(TestKind::TcpStream)
                    .started_at(time)
                    .finished_at("2026-01-02T00:00:00Z")
                    .throughput(10.0, 1e9 + idx as f64)
                    .build()
            })
            .collect()
    }

    #[test]
    fn runs_order_by_time_whatever_the_fraction_of_their_times() {
        // In time order; as strings, `23.5Z` sorts before `23Z`.
        let times = [
            "2026-01-01T00:00:22.9Z",
            "2026-01-01T00:00:23Z",
            "2026-01-01T00:00:23.25Z",
            "2026-01-01T00:00:23.5Z",
            "2026-01-01T00:00:24Z",
        ];
        let records = records_at(&times);
        let ids: Vec<&str> = records.iter().map(|record| record.id.as_str()).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        {
            let mut archive = Archive::open(&path).unwrap();
            for record in records.iter().rev() {
                archive
                    .store(&CanonicalRun::from_record(record.clone()).unwrap())
                    .unwrap();
            }
            let stored = archive.records(&RunQuery::default()).unwrap();
            let order: Vec<&str> = stored.iter().map(|record| record.id.as_str()).collect();
            assert_eq!(order, ids);
            let series = archive
                .series_runs(&RunQuery::default(), Metric::ThroughputBps)
                .unwrap()
                .unwrap();
            let order: Vec<&str> = series.iter().map(|run| run.id.as_str()).collect();
            assert_eq!(order, ids);
            assert!(archive.check().unwrap().is_clean());
        }
        // An archive of version 6 kept each record's time as it was; the
        // migration writes them all with six fraction digits.
        {
            let connection = Connection::open(&path).unwrap();
            for (record, time) in records.iter().zip(times) {
                for table in ["runs", "run_series"] {
                    let column = if table == "runs" { "id" } else { "run_id" };
                    connection
                        .execute(
                            &format!("UPDATE {table} SET started_at = ?1 WHERE {column} = ?2"),
                            params![time, record.id],
                        )
                        .unwrap();
                }
            }
            connection.pragma_update(None, "user_version", 6).unwrap();
        }
        let archive = Archive::open(&path).unwrap();
        assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
        let stored = archive.records(&RunQuery::default()).unwrap();
        let order: Vec<&str> = stored.iter().map(|record| record.id.as_str()).collect();
        assert_eq!(order, ids);
        let report = archive.check().unwrap();
        assert!(report.is_clean(), "{report:?}");
    }

    #[test]
    fn a_stored_run_gives_history_what_its_record_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut archive = Archive::open(&dir.path().join("a.db")).unwrap();
        let record = cpu_record();
        archive
            .store(&CanonicalRun::from_record(record.clone()).unwrap())
            .unwrap();
        for metric in Metric::ALL {
            let runs = archive
                .series_runs(&RunQuery::default(), metric)
                .unwrap()
                .unwrap();
            assert_eq!(
                runs,
                vec![SeriesRun::of(&record, metric).unwrap()],
                "{metric}"
            );
        }
        let none = RunQuery {
            label: Some("no such label".to_string()),
            ..RunQuery::default()
        };
        assert!(
            archive
                .series_runs(&none, Metric::ThroughputBps)
                .unwrap()
                .unwrap()
                .is_empty()
        );
        assert!(archive.check().unwrap().is_clean());
        // A history column changed behind the record's back is caught.
        archive
            .connection
            .execute(
                "UPDATE run_series SET series = '{\"throughput_bps\":[1.0]}'",
                [],
            )
            .unwrap();
        let report = archive.check().unwrap();
        assert_eq!(report.damaged_runs.len(), 1, "{report:?}");
        assert_eq!(
            report.damaged_runs[0].problem,
            "its run_series row disagrees with the record: series"
        );
        // So is a run whose history row is gone.
        archive
            .connection
            .execute("DELETE FROM run_series", [])
            .unwrap();
        let report = archive.check().unwrap();
        assert_eq!(report.damaged_runs.len(), 1, "{report:?}");
        assert_eq!(report.damaged_runs[0].problem, "missing from run_series");
        let err = archive
            .series_runs(&RunQuery::default(), Metric::ThroughputBps)
            .unwrap_err();
        assert!(err.to_string().contains("missing from run_series"), "{err}");
    }
}
