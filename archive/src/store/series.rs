//! What a history reads of a run ([`SeriesRun`]): the archive's columns
//! give it without decoding the record ([`crate::Archive::series_runs`]),
//! and a record gives it directly ([`SeriesRun::of`]).

use crate::error::ArchiveError;
use crate::store::query::MISSING_SERIES;
use run_record::record::{Metric, RecordError, RunRecord};
use run_record::spec::TestKind;
use std::str::FromStr;

/// What a history needs of one run: where it goes in the series, which
/// configuration it is of, and its values of the history's metric.
/// [`crate::Archive::series_runs`] reads it from the archive's columns;
/// [`SeriesRun::of`] takes it from a record.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesRun {
    /// Run id.
    pub id: String,
    /// Commit under test.
    pub commit: Option<String>,
    /// Start of the run, RFC 3339 with six fraction digits
    /// ([`run_record::time::sortable_utc`]), so that runs order by it.
    pub started_at: String,
    /// Test kind.
    pub test: TestKind,
    /// The run's spec key ([`RunRecord::compute_spec_key`]).
    pub spec_key: String,
    /// The metric's value in each iteration that measured it.
    pub samples: Vec<f64>,
}

impl SeriesRun {
    /// The series run of `record` for `metric`.
    pub fn of(record: &RunRecord, metric: Metric) -> Result<SeriesRun, RecordError> {
        Ok(SeriesRun {
            id: record.id.clone(),
            commit: record.subject.commit.clone(),
            started_at: run_record::time::sortable_utc(&record.started_at),
            test: record.spec.test,
            spec_key: record.compute_spec_key()?,
            samples: record.samples(metric),
        })
    }

    /// The series run a row of either backend gives: the run's columns,
    /// its spec key from `run_series` (`None`: the run is missing there)
    /// and its stored values of `metric` as JSON text (`None`: none).
    pub(crate) fn from_columns(
        id: String,
        commit: Option<String>,
        started_at: String,
        test: &str,
        spec_key: Option<String>,
        samples: Option<String>,
        metric: Metric,
    ) -> Result<SeriesRun, ArchiveError> {
        let damaged = |detail: String| ArchiveError::DamagedRun {
            id: id.clone(),
            detail,
        };
        let test = TestKind::from_str(test).map_err(|err| damaged(err.to_string()))?;
        let spec_key = spec_key.ok_or_else(|| damaged(MISSING_SERIES.to_string()))?;
        let samples = match samples {
            Some(text) => serde_json::from_str::<Vec<f64>>(&text)
                .map_err(|err| damaged(format!("its stored {metric} values: {err}")))?,
            None => Vec::new(),
        };
        Ok(SeriesRun {
            id,
            commit,
            started_at,
            test,
            spec_key,
            samples,
        })
    }
}
