//! Storing runs, what both backends share of it: what a store or a merge
//! counts ([`StoreCounts`], [`MergeCounts`]), and the values a run is
//! stored under ([`RunValues`]), computed once from its record, bound one
//! by one by SQLite's driver and gathered into a column's array for
//! PostgreSQL's ([`Value`]). How a batch becomes transactions and
//! statements is each backend's.

use super::CanonicalRun;
use super::check::FigureColumns;
use crate::ArchiveError;
use crate::schema::{self, V2_METRICS};
use serde::Serialize;

/// What storing one run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreOutcome {
    /// The run was new and is now stored.
    Added,
    /// A run with the same id was already stored; nothing changed.
    AlreadyPresent,
}

/// Counts of a batch store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreCounts {
    /// Runs that were new.
    pub added: u64,
    /// Runs already present.
    pub already_present: u64,
}

/// Counts of a merge, and the runs it left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MergeCounts {
    /// Runs in the other archive.
    pub examined: u64,
    /// Runs copied in.
    pub added: u64,
    /// Runs this archive already had.
    pub already_present: u64,
    /// Runs of the other archive refused, each named with the reason;
    /// the others were merged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<RefusedRun>,
}

/// A run a merge left out: its record is refused by the record check
/// (damaged, or beyond a limit the check holds records to), or it is
/// one the archive it is merged into refuses to store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RefusedRun {
    /// The run's id, as the other archive stores it.
    pub id: String,
    /// Why it was refused.
    pub reason: String,
}

/// The columns of `runs` a run is stored in, in the order of
/// [`RunValues::run`]: every column `archive check` reads back.
pub(crate) fn insert_columns() -> String {
    FigureColumns {
        metrics: true,
        imported_at: true,
    }
    .columns()
}

/// How many columns [`insert_columns`] names.
pub(crate) const N_INSERT_COLUMNS: usize = 23;

/// The columns of a run's history row, in the order of
/// [`RunValues::series`]: its key (`config_key`, `started_at`, `run_id`)
/// and what it holds. PostgreSQL's `run_series` has the run's label too
/// ([`RunValues::label`]).
pub(crate) const SERIES_COLUMNS: &str = "config_key, started_at, run_id, spec_key, series";

/// One value of a run's row.
pub(crate) enum Value<'run> {
    Text(Option<&'run str>),
    /// Text computed from the record (a time with six fraction digits, a
    /// spec key, a series).
    ComputedText(String),
    Integer(i64),
    Real(Option<f64>),
    Bytes(&'run [u8]),
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Value::Text(text) => text.to_sql(),
            Value::ComputedText(text) => text.to_sql(),
            Value::Integer(integer) => integer.to_sql(),
            Value::Real(real) => real.to_sql(),
            Value::Bytes(bytes) => bytes.to_sql(),
        }
    }
}

/// What a run is stored under: its `runs` row and its history row.
pub(crate) struct RunValues<'run> {
    /// The run's id.
    pub id: &'run str,
    /// Its `runs` row, in the order of [`insert_columns`].
    pub run: [Value<'run>; N_INSERT_COLUMNS],
    /// Its `run_series` row, in the order of [`SERIES_COLUMNS`].
    pub series: [Value<'run>; 5],
    /// Its label, which PostgreSQL's `run_series` holds too.
    pub label: Value<'run>,
}

impl<'run> RunValues<'run> {
    /// The values of `run`; a record whose series cannot be written is
    /// [`ArchiveError::DamagedRun`].
    pub(crate) fn of(run: &'run CanonicalRun) -> Result<RunValues<'run>, ArchiveError> {
        let record = &run.record;
        let spec_key = record.compute_spec_key()?;
        let series = schema::series_json(record).map_err(|err| ArchiveError::DamagedRun {
            id: record.id.clone(),
            detail: err.to_string(),
        })?;
        // Six fraction digits, so that the column orders as the times.
        let started_at = run_record::time::sortable_utc(&record.started_at);
        let [m0, m1, m2, m3, m4, m5, m6, m7, m8] =
            V2_METRICS.map(|metric| Value::Real(record.value(metric)));
        Ok(RunValues {
            id: &record.id,
            run: [
                Value::Text(Some(&record.id)),
                Value::Text(record.subject.commit.as_deref()),
                Value::Text(record.subject.describe.as_deref()),
                Value::Text(record.subject.label.as_deref()),
                Value::Text(Some(&record.config_key)),
                Value::Text(Some(&record.testbed)),
                Value::Text(Some(record.spec.test.name())),
                Value::Text(Some(&record.source.tool)),
                Value::ComputedText(started_at.clone()),
                Value::Integer(i64::from(record.summary.n_iterations)),
                Value::Real(Some(record.summary.throughput_bps.mean)),
                Value::Real(record.summary.transaction_rate.as_ref().map(|s| s.mean)),
                Value::Bytes(&run.bytes),
                m0,
                m1,
                m2,
                m3,
                m4,
                m5,
                m6,
                m7,
                m8,
                Value::Text(record.source.undated.then_some(record.started_at.as_str())),
            ],
            series: [
                Value::Text(Some(&record.config_key)),
                Value::ComputedText(started_at),
                Value::Text(Some(&record.id)),
                Value::ComputedText(spec_key),
                Value::ComputedText(series),
            ],
            label: Value::Text(record.subject.label.as_deref()),
        })
    }
}
