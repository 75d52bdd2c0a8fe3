//! What a history reads of a run ([`SeriesRun`]): the archive's columns
//! give it without decoding the record ([`crate::Archive::series_runs`],
//! a row of either backend read by [`SeriesRun::from_row`]),
//! and a record gives it directly ([`SeriesRun::of`]). Of a run's stored
//! series, an object of every metric's values, only the history's metric
//! is built ([`metric_samples`]).

use super::query::MISSING_SERIES;
use super::row::Columns;
use crate::ArchiveError;
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

    /// The series run a row of [`SERIES_RUN_COLUMNS`] gives, of which
    /// only `metric`'s array of the stored series is read
    /// ([`metric_samples`]). A run missing from `run_series` (no spec
    /// key) is [`ArchiveError::DamagedRun`]; a run without a stored
    /// series has no values.
    pub(crate) fn from_row(row: &impl Columns, metric: Metric) -> Result<SeriesRun, ArchiveError> {
        let id: String = row.read(0)?;
        let damaged = |detail: String| ArchiveError::DamagedRun {
            id: id.clone(),
            detail,
        };
        let commit = row.read(1)?;
        let started_at = row.read(2)?;
        let test_name: String = row.read(3)?;
        let test = TestKind::from_str(&test_name).map_err(|err| damaged(err.to_string()))?;
        let spec_key = row
            .read::<Option<String>>(4)?
            .ok_or_else(|| damaged(MISSING_SERIES.to_string()))?;
        let samples = match row.read_text_or_null(5)? {
            Some(text) => metric_samples(text, metric)
                .map_err(|err| damaged(format!("its stored series of {metric}: {err}")))?,
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

/// The columns of `runs` joined to `run_series` (`query::SERIES_JOIN`) a
/// [`SeriesRun`] is read from, in the order [`SeriesRun::from_row`] reads
/// them.
pub(crate) const SERIES_RUN_COLUMNS: &str = "runs.id, runs.commit_id, runs.started_at, runs.test, \
     run_series.spec_key, run_series.series";

/// The values of `metric` in `series`, a `run_series` object
/// ([`crate::schema::series_json`]); a metric the object does not name
/// has none. Only that metric's array is built: the other values are
/// skipped unparsed, since a history reads one metric of a series that
/// holds all of them, and builds thousands.
pub(crate) fn metric_samples(series: &str, metric: Metric) -> Result<Vec<f64>, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(series);
    let samples = serde::de::DeserializeSeed::deserialize(
        OneMetric {
            name: metric.name(),
        },
        &mut deserializer,
    )?;
    // Trailing text makes the series malformed, as it would a whole parse.
    deserializer.end()?;
    Ok(samples.unwrap_or_default())
}

/// Reads a series object for the array under `name`, if any.
struct OneMetric {
    name: &'static str,
}

impl<'de> serde::de::DeserializeSeed<'de> for OneMetric {
    type Value = Option<Vec<f64>>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for OneMetric {
    type Value = Option<Vec<f64>>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("an object of metric names to arrays of numbers")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut samples = None;
        while let Some(is_metric) = map.next_key_seed(KeyIs(self.name))? {
            if is_metric {
                // A repeated key: the last one counts, as in a whole parse.
                samples = Some(map.next_value::<Vec<f64>>()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(samples)
    }
}

/// Whether a key is the given name, told without copying the key.
struct KeyIs(&'static str);

impl<'de> serde::de::DeserializeSeed<'de> for KeyIs {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeyIs {
    type Value = bool;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a metric name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_metric_asked_for_is_read() {
        let series = r#"{"latency_p99_us":[1.5,2],"throughput_bps":[9.4e9,9.41e9]}"#;
        assert_eq!(
            metric_samples(series, Metric::ThroughputBps).unwrap(),
            [9.4e9, 9.41e9]
        );
        assert_eq!(
            metric_samples(series, Metric::LatencyP99Us).unwrap(),
            [1.5, 2.0]
        );
        // A metric the run did not measure has no values.
        assert!(
            metric_samples(series, Metric::LocalCpuPct)
                .unwrap()
                .is_empty()
        );
        assert!(
            metric_samples("{}", Metric::ThroughputBps)
                .unwrap()
                .is_empty()
        );
        // An escaped key is the name it spells.
        let escaped = r#"{"throughput\u005fbps":[1.0]}"#;
        assert_eq!(
            metric_samples(escaped, Metric::ThroughputBps).unwrap(),
            [1.0]
        );
    }

    #[test]
    fn a_malformed_series_is_an_error_wherever_it_is_malformed() {
        for series in [
            "",
            "[]",
            "{\"throughput_bps\":[1.0,null]}",
            "{\"throughput_bps\":\"fast\"}",
            "{\"latency_p99_us\":[1.0,}",
            "{\"throughput_bps\":[1.0]} trailing",
            "{\"throughput_bps\":[1.0]",
        ] {
            assert!(
                metric_samples(series, Metric::ThroughputBps).is_err(),
                "{series}"
            );
        }
    }
}
