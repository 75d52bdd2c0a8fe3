//! The configurations of an archive and their pages: every spec key
//! (test spec and testbed, as `history` follows one) with the history of
//! its test's primary metric, drawn as a chart and listed as a table.

use super::IntervalView;
use super::chart::{DrawnSvg, format_value, series_svg};
use super::series::{PointFigures, history_chart, point_figures, scale_of};
use crate::exit::{self, Context};
use crate::store::series_runs;
use archive::history::{
    HistoryOptions, PointRuns, SeriesOrder, history, points_in_commit_order, points_in_time_order,
};
use archive::store::SeriesRun;
use archive::{Archive, RunQuery, StoredRun};
use run_record::record::{Metric, RunRecord};
use run_record::spec::TestKind;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One configuration's page and what the index says of it.
pub struct ConfigPage {
    /// File name of its page.
    pub file: String,
    /// Testbed of its runs.
    pub testbed: String,
    /// Its title (test, options, testbed), plain text.
    pub title: String,
    /// Runs in the archive.
    pub n_runs: usize,
    /// Points of its chart.
    pub n_points: usize,
    /// Change points found.
    pub n_change_points: usize,
    /// Start of its newest run.
    pub last_run: String,
    /// The config_keys of its runs, by which a tracked regression finds
    /// its configuration.
    pub config_keys: Vec<String>,
    /// The mean of each point of its chart, in the chart's unit, in the
    /// chart's order: its trend.
    pub trend: Vec<f64>,
    /// The newest point's mean and the unit, as the chart reads it.
    pub latest: Option<String>,
    /// The page.
    pub html: String,
}

/// The primary metric of a test kind, as bisect and compare judge it.
pub fn primary_metric(test: TestKind) -> Metric {
    if test.is_request_response() {
        Metric::TransactionRate
    } else {
        Metric::ThroughputBps
    }
}

/// Every configuration of the archive with its page; `commits` (oldest
/// first) put the points in git order, else runs are in time order.
pub fn config_pages(
    archive: &Archive,
    runs: &[StoredRun],
    commits: Option<&[String]>,
) -> exit::Result<Vec<ConfigPage>> {
    let by_id: BTreeMap<&str, &StoredRun> = runs.iter().map(|run| (run.id.as_str(), run)).collect();
    let tests: BTreeSet<TestKind> = runs.iter().map(|run| run.test).collect();
    let mut pages = Vec::new();
    for test in tests {
        let metric = primary_metric(test);
        let query = RunQuery {
            test: Some(test),
            ..RunQuery::default()
        };
        let mut by_spec: BTreeMap<String, Vec<SeriesRun>> = BTreeMap::new();
        for run in series_runs(archive, &query, metric)? {
            by_spec.entry(run.spec_key.clone()).or_default().push(run);
        }
        for (spec_key, spec_runs) in &by_spec {
            pages.push(config_page(
                archive, &by_id, spec_key, spec_runs, metric, commits,
            )?);
        }
    }
    pages.sort_by(|a, b| (&a.testbed, &a.title, &a.file).cmp(&(&b.testbed, &b.title, &b.file)));
    Ok(pages)
}

/// The points of a configuration's chart, in git order when `commits`
/// are given and some of its runs are of them, else in time order.
struct Ordered<'a> {
    points: Vec<PointRuns<'a>>,
    order: SeriesOrder,
    /// Commits were given and no run is of one of them.
    none_in_range: bool,
    /// Runs of commits outside the range given, left out.
    n_outside_range: usize,
}

/// The points of `runs`, ordered as [`Ordered`] says.
fn ordered<'a>(runs: &'a [SeriesRun], commits: Option<&[String]>) -> Ordered<'a> {
    let in_time_order = |none_in_range| Ordered {
        points: points_in_time_order(runs),
        order: SeriesOrder::Time,
        none_in_range,
        n_outside_range: 0,
    };
    let Some(commits) = commits else {
        return in_time_order(false);
    };
    let points = points_in_commit_order(commits, runs);
    if points.is_empty() {
        return in_time_order(true);
    }
    let n_in = points.iter().map(|point| point.runs.len()).sum::<usize>();
    Ordered {
        points,
        order: SeriesOrder::Git,
        none_in_range: false,
        n_outside_range: runs.len() - n_in,
    }
}

/// A point's row of a configuration's table.
#[derive(Serialize)]
struct PointRow<'a> {
    label: &'a str,
    n_runs: usize,
    n_samples: usize,
    mean: String,
    median: String,
    interval: Option<IntervalView>,
    change: Option<&'a str>,
}

/// A configuration's chart and the table of its points.
#[derive(Serialize)]
struct FiguresView<'a> {
    chart: DrawnSvg,
    unit: &'a str,
    points: Vec<PointRow<'a>>,
}

/// The context of `templates/site/config.html`.
#[derive(Serialize)]
struct ConfigView<'a> {
    title: &'a str,
    metric: &'a str,
    n_runs: usize,
    in_git_order: bool,
    higher_is_better: bool,
    none_in_range: bool,
    n_outside_range: usize,
    command: &'a str,
    spec_key: &'a str,
    /// `None` when no run has a value of the metric.
    figures: Option<FiguresView<'a>>,
    config_keys: Vec<&'a str>,
}

fn point_row(point: &PointFigures) -> PointRow<'_> {
    PointRow {
        label: &point.label,
        n_runs: point.n_runs,
        n_samples: point.n_samples,
        mean: format_value(point.mean),
        median: format_value(point.median),
        interval: point
            .interval
            .map(|(low, high)| IntervalView::new(low, high)),
        change: point.change.as_deref(),
    }
}

fn config_page(
    archive: &Archive,
    by_id: &BTreeMap<&str, &StoredRun>,
    spec_key: &str,
    runs: &[SeriesRun],
    metric: Metric,
    commits: Option<&[String]>,
) -> exit::Result<ConfigPage> {
    // Runs are never empty here: each spec key came from a run.
    let representative = &runs[0].id;
    let (_, bytes) = archive
        .find(representative)
        .context("failed to read the archive")?;
    let record = RunRecord::from_slice(&bytes)
        .with_context(|| format!("run {representative} in the archive is damaged"))?;
    let title = archive::figures::record_title(&record);
    let command = archive::figures::configuration_command(&record).render();

    let ordered = ordered(runs, commits);
    let history = history(&ordered.points, &HistoryOptions::new(metric, ordered.order))
        .with_context(|| format!("failed to compute the history of {title}"))?;
    let scale = scale_of(&history.unit, "m");
    let figures = point_figures(&history, &ordered.points, &scale)
        .with_context(|| format!("failed to compute the intervals of {title}"))?;
    let figures_view = if figures.is_empty() {
        None
    } else {
        let chart = history_chart(&title, history.order, &scale, &figures);
        Some(FiguresView {
            chart: series_svg(&chart).with_context(|| format!("failed to draw {title}"))?,
            unit: &scale.unit,
            points: figures.iter().map(point_row).collect(),
        })
    };
    let config_keys: BTreeSet<&str> = runs
        .iter()
        .filter_map(|run| by_id.get(run.id.as_str()))
        .map(|run| run.config_key.as_str())
        .collect();
    let html = super::render_page(
        "site/config.html",
        &ConfigView {
            title: &title,
            metric: metric.name(),
            n_runs: runs.len(),
            in_git_order: history.order == SeriesOrder::Git,
            higher_is_better: history.higher_is_better,
            none_in_range: ordered.none_in_range,
            n_outside_range: ordered.n_outside_range,
            command: &command,
            spec_key,
            figures: figures_view,
            config_keys: config_keys.iter().copied().collect(),
        },
    )?;

    let last_run = runs
        .iter()
        .map(|run| run.started_at.as_str())
        .max()
        .unwrap_or_default()
        .to_string();
    Ok(ConfigPage {
        file: format!("config-{}.html", spec_key.get(..16).unwrap_or(spec_key)),
        testbed: record.testbed.clone(),
        n_runs: runs.len(),
        n_points: figures.len(),
        n_change_points: history.n_change_points,
        last_run,
        config_keys: config_keys.into_iter().map(str::to_string).collect(),
        trend: figures.iter().map(|point| point.mean).collect(),
        latest: figures
            .last()
            .map(|point| format!("{} {}", format_value(point.mean), scale.unit)),
        html,
        title,
    })
}
