//! `archive check`, what both backends share of it: the report
//! ([`CheckReport`]), and the checks of a run's row ([`run_problem`]: its
//! columns and figures against its record) and of its history row
//! ([`check_series_row`]), each over a row of either backend. What reads
//! the rows, and what stands in for the database's own checks, is each
//! backend's (`sqlite/check.rs`, `postgres/check.rs`).

use super::CanonicalRun;
use super::query::{MISSING_SERIES, N_RUN_COLUMNS, RUN_COLUMNS, StoredRun};
use super::row::Columns;
use crate::ArchiveError;
use crate::schema::{self, V2_METRICS};
use run_record::record::{Metric, RunRecord};
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
    /// What could not be read at all, and why (a damaged file): nothing
    /// is said of the runs there.
    pub unreadable: Vec<String>,
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
        self.integrity == ["ok"]
            && self.foreign_key_violations == 0
            && self.damaged_runs.is_empty()
            && self.unreadable.is_empty()
    }
}

/// What a history says of a run whose `run_series` row has another label
/// than the run (on PostgreSQL, where `run_series` holds the label), and
/// what `archive check` says of it.
pub(crate) const SERIES_LABEL_DISAGREES: &str = "its run_series row disagrees with its run: label";

/// Which figure columns beyond [`RUN_COLUMNS`] and the record a `runs`
/// table has: an older file has fewer.
#[derive(Clone, Copy)]
pub(crate) struct FigureColumns {
    /// One column per metric of [`V2_METRICS`] (from the file's version 2).
    pub metrics: bool,
    /// `imported_at` (from the file's version 4).
    pub imported_at: bool,
}

impl FigureColumns {
    /// The columns a run's check reads, in the order [`run_problem`]
    /// reads them: [`RUN_COLUMNS`], the record, then the figures.
    pub(crate) fn columns(self) -> String {
        let mut columns = format!("{RUN_COLUMNS}, record");
        if self.metrics {
            for metric in V2_METRICS {
                columns.push_str(", ");
                columns.push_str(schema::metric_column(metric));
            }
        }
        if self.imported_at {
            columns.push_str(", imported_at");
        }
        columns
    }

    /// How many columns [`FigureColumns::columns`] names.
    pub(crate) fn len(self) -> usize {
        N_RUN_COLUMNS
            + 1
            + if self.metrics { V2_METRICS.len() } else { 0 }
            + usize::from(self.imported_at)
    }
}

/// What is wrong with the run of a row of [`FigureColumns::columns`]:
/// its columns do not read, or disagree with its record; `None` when
/// nothing is.
pub(crate) fn run_problem(row: &impl Columns, figure_columns: FigureColumns) -> Option<DamagedRun> {
    // The id as far as it reads: a row whose id does not is still listed.
    let id = row.read::<String>(0).unwrap_or_default();
    let problem = match checked_row(row, figure_columns) {
        Ok((run, bytes, figures)) => verify_row(&run, bytes, &figures).err(),
        Err(err) => Some(format!("its columns: {err}")),
    }?;
    Some(DamagedRun { id, problem })
}

/// The run, its record's bytes and its figures, as a row of
/// [`FigureColumns::columns`] has them.
fn checked_row(
    row: &impl Columns,
    figure_columns: FigureColumns,
) -> Result<(StoredRun, &[u8], StoredFigures), ArchiveError> {
    let run = StoredRun::from_row(row)?;
    let bytes = row.read_bytes(N_RUN_COLUMNS)?;
    let mut figures = StoredFigures::default();
    let mut idx = N_RUN_COLUMNS + 1;
    if figure_columns.metrics {
        for metric in V2_METRICS {
            figures.metrics.push((metric, row.read(idx)?));
            idx += 1;
        }
    }
    if figure_columns.imported_at {
        figures.imported_at = Some(row.read(idx)?);
    }
    Ok((run, bytes, figures))
}

/// The selection of every run with its history row, for
/// [`check_series_row`]: `join` is how `runs` meets `run_series`, and
/// `label_differs` is true where a history row's label is not its run's
/// (`false` where `run_series` has no label).
pub(crate) fn series_check_sql(join: &str, label_differs: &str) -> String {
    format!(
        "SELECT runs.id, run_series.spec_key, run_series.series, runs.record, \
         run_series.run_id IS NOT NULL, {label_differs} \
         FROM {join} ORDER BY runs.started_at, runs.id"
    )
}

/// Adds to `damaged_runs` what is wrong with the history row of the run
/// of a row of [`series_check_sql`]: missing, or disagreeing with the
/// record (`spec_key`, `series`) or with the run (its label). A run
/// already listed (its record does not decode) is passed over.
pub(crate) fn check_series_row(
    row: &impl Columns,
    damaged_runs: &mut Vec<DamagedRun>,
) -> Result<(), ArchiveError> {
    let id: String = row.read(0)?;
    if damaged_runs.iter().any(|damaged| damaged.id == id) {
        return Ok(());
    }
    if !row.read::<bool>(4)? {
        damaged_runs.push(DamagedRun {
            problem: MISSING_SERIES.to_string(),
            id,
        });
        return Ok(());
    }
    let mut problems = Vec::new();
    problems.extend(series_problem(
        row.read_bytes(3)?,
        row.read(1)?,
        row.read(2)?,
    ));
    if row.read::<bool>(5)? {
        problems.push(SERIES_LABEL_DISAGREES.to_string());
    }
    if !problems.is_empty() {
        damaged_runs.push(DamagedRun {
            problem: problems.join("; "),
            id,
        });
    }
    Ok(())
}

/// The figures of a `runs` row beyond [`StoredRun`]: the column of each
/// metric of [`V2_METRICS`] and `imported_at`, where the schema has them.
#[derive(Clone, Debug, Default)]
struct StoredFigures {
    /// Each metric column read, with its value.
    metrics: Vec<(Metric, Option<f64>)>,
    /// `imported_at`, when the schema has it.
    imported_at: Option<Option<String>>,
}

/// What is wrong with a run's history row (`spec_key`, `series`) given
/// its record's bytes, if anything; nothing is said of bytes that do not
/// decode (their run is listed already).
fn series_problem(
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
/// the row's columns and figures.
fn verify_row(run: &StoredRun, bytes: &[u8], figures: &StoredFigures) -> Result<(), String> {
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
        (
            "started_at",
            run_record::time::sortable_utc(&record.started_at) != run.started_at,
        ),
        (
            "n_iterations",
            record.summary.n_iterations != run.n_iterations,
        ),
        (
            "throughput_bps",
            record.summary.throughput_bps.mean != run.throughput_bps,
        ),
        (
            "transaction_rate",
            record
                .summary
                .transaction_rate
                .as_ref()
                .map(|rate| rate.mean)
                != run.transaction_rate,
        ),
    ];
    let mut wrong: Vec<&str> = mismatches
        .iter()
        .filter(|(_, differs)| *differs)
        .map(|(name, _)| *name)
        .collect();
    // Every figure is compared exactly: a column holds the very f64 the
    // record's figure was when it was stored.
    for (metric, value) in &figures.metrics {
        if record.value(*metric) != *value {
            wrong.push(schema::metric_column(*metric));
        }
    }
    if let Some(imported_at) = &figures.imported_at {
        let expected = record.source.undated.then(|| record.started_at.clone());
        if *imported_at != expected {
            wrong.push("imported_at");
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "columns disagree with the record: {}",
            wrong.join(", ")
        ))
    }
}
