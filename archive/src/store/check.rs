//! `archive check`: the file's integrity, its foreign keys, and every
//! stored run against its columns and its history row.

use super::query::{MISSING_SERIES, RunQuery, StoredRun, series_join};
use super::{CanonicalRun, SqliteArchive};
use crate::ArchiveError;
use crate::schema::{self, CURRENT_VERSION};
use run_record::record::RunRecord;
use serde::Serialize;

/// What `check` found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    /// Schema version of the file.
    pub schema_version: u32,
    /// Newest schema version this build knows.
    pub supported_version: u32,
    /// Lines of `PRAGMA integrity_check` on SQLite, the problems the
    /// checks of [`CheckReport::integrity_checks`] found on PostgreSQL
    /// (`["ok"]` when sound).
    pub integrity: Vec<String>,
    /// What `integrity` rests on where it is not SQLite's own
    /// `PRAGMA integrity_check`: one line per check made (empty on
    /// SQLite).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub integrity_checks: Vec<String>,
    /// Rows that break a foreign key.
    pub foreign_key_violations: u64,
    /// Runs stored.
    pub n_runs: u64,
    /// Runs whose bytes do not decode, or disagree with their columns.
    pub damaged_runs: Vec<DamagedRun>,
}

/// A stored run that failed verification.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DamagedRun {
    /// The id column.
    pub id: String,
    /// What is wrong.
    pub problem: String,
}

impl CheckReport {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.integrity == ["ok"] && self.foreign_key_violations == 0 && self.damaged_runs.is_empty()
    }
}

impl SqliteArchive {
    /// Checks the file (`PRAGMA integrity_check`, foreign keys) and every
    /// stored run: its bytes decode to a valid record whose id and indexed
    /// columns match the row.
    pub fn check(&self) -> Result<CheckReport, ArchiveError> {
        let schema_version = self.schema_version()?;
        let mut integrity = Vec::new();
        {
            let mut statement = self.connection.prepare("PRAGMA integrity_check")?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                integrity.push(row.get::<_, String>(0)?);
            }
        }
        let mut foreign_key_violations = 0;
        {
            let mut statement = self.connection.prepare("PRAGMA foreign_key_check")?;
            let mut rows = statement.query([])?;
            while rows.next()?.is_some() {
                foreign_key_violations += 1;
            }
        }
        let mut n_runs = 0;
        let mut damaged_runs = Vec::new();
        self.for_each_record(&RunQuery::default(), |run, bytes| {
            n_runs += 1;
            if let Err(problem) = verify_row(run, bytes) {
                damaged_runs.push(DamagedRun {
                    id: run.id.clone(),
                    problem,
                });
            }
            Ok::<(), ArchiveError>(())
        })?;
        if schema_version >= schema::SERIES_VERSION {
            self.check_series(schema_version, &mut damaged_runs)?;
        }
        Ok(CheckReport {
            schema_version,
            supported_version: CURRENT_VERSION,
            integrity,
            integrity_checks: Vec::new(),
            foreign_key_violations,
            n_runs,
            damaged_runs,
        })
    }

    /// Adds to `damaged_runs` every run missing from `run_series` or whose
    /// row there (`spec_key`, `series`) disagrees with its record; runs
    /// whose record does not decode are already listed. A `run_series`
    /// row without its run is a foreign key violation.
    fn check_series(
        &self,
        version: u32,
        damaged_runs: &mut Vec<DamagedRun>,
    ) -> Result<(), ArchiveError> {
        let mut statement = self.connection.prepare(&format!(
            "SELECT id, spec_key, series, record, run_id IS NOT NULL FROM {} \
             ORDER BY runs.started_at, id",
            series_join(version)
        ))?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let id: String = row.get(0)?;
            let spec_key: Option<String> = row.get(1)?;
            let series: Option<String> = row.get(2)?;
            let bytes: Vec<u8> = row.get(3)?;
            let has_series: bool = row.get(4)?;
            if damaged_runs.iter().any(|damaged| damaged.id == id) {
                continue;
            }
            if !has_series {
                damaged_runs.push(DamagedRun {
                    problem: MISSING_SERIES.to_string(),
                    id,
                });
                continue;
            }
            if let Some(problem) = series_problem(&bytes, spec_key, series) {
                damaged_runs.push(DamagedRun { problem, id });
            }
        }
        Ok(())
    }
}

/// What is wrong with a run's history row (`spec_key`, `series`) given
/// its record's bytes, if anything; nothing is said of bytes that do not
/// decode (their run is listed already).
pub(crate) fn series_problem(
    bytes: &[u8],
    spec_key: Option<String>,
    series: Option<String>,
) -> Option<String> {
    let record = RunRecord::from_slice(bytes).ok()?;
    let mut wrong = Vec::new();
    if record.compute_spec_key().ok() != spec_key {
        wrong.push("spec_key");
    }
    if schema::series_json(&record).ok() != series {
        wrong.push("series");
    }
    (!wrong.is_empty()).then(|| {
        format!(
            "its run_series row disagrees with the record: {}",
            wrong.join(", ")
        )
    })
}

/// Checks that a row's bytes are a valid canonical record agreeing with
/// the row's columns.
pub(crate) fn verify_row(run: &StoredRun, bytes: &[u8]) -> Result<(), String> {
    let canonical = CanonicalRun::from_json(bytes).map_err(|err| err.to_string())?;
    if canonical.bytes != bytes {
        return Err("stored bytes are not canonical".to_string());
    }
    let record = &canonical.record;
    let mismatches = [
        ("id", record.id != run.id),
        ("commit", record.subject.commit != run.commit),
        ("describe", record.subject.describe != run.describe),
        ("label", record.subject.label != run.label),
        ("config_key", record.config_key != run.config_key),
        ("testbed", record.testbed != run.testbed),
        ("test", record.spec.test != run.test),
        ("source_tool", record.source.tool != run.source_tool),
        ("started_at", record.started_at != run.started_at),
    ];
    let wrong: Vec<&str> = mismatches
        .iter()
        .filter(|(_, differs)| *differs)
        .map(|(name, _)| *name)
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "columns disagree with the record: {}",
            wrong.join(", ")
        ))
    }
}
