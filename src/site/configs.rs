//! The configurations of an archive and their pages: every spec key
//! (test spec and testbed, as `history` follows one) with the history of
//! its test's primary metric, drawn as a chart and listed as a table.

use super::chart::{format_value, series_svg};
use super::html::{Cell, escape, table};
use super::series::{PointFigures, Scale, history_chart, point_figures, scale_of};
use crate::store::series_runs;
use anyhow::Context;
use archive::history::{
    HistoryOptions, PointRuns, SeriesOrder, history, points_in_commit_order, points_in_time_order,
};
use archive::store::SeriesRun;
use archive::{Archive, RunQuery, StoredRun};
use run_record::record::{Metric, RunRecord};
use run_record::spec::TestKind;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

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
) -> anyhow::Result<Vec<ConfigPage>> {
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

fn config_page(
    archive: &Archive,
    by_id: &BTreeMap<&str, &StoredRun>,
    spec_key: &str,
    runs: &[SeriesRun],
    metric: Metric,
    commits: Option<&[String]>,
) -> anyhow::Result<ConfigPage> {
    // Runs are never empty here: each spec key came from a run.
    let representative = &runs[0].id;
    let (_, bytes) = archive
        .find(representative)
        .context("failed to read the archive")?;
    let record = RunRecord::from_slice(&bytes)
        .with_context(|| format!("run {representative} in the archive is damaged"))?;
    let title = archive::figures::spec_title(&record.spec, &record.testbed);
    let command = archive::figures::spec_command(&record.spec);

    let mut note = String::new();
    let (points, order): (Vec<PointRuns<'_>>, SeriesOrder) = match commits {
        Some(commits) => {
            let points = points_in_commit_order(commits, runs);
            if points.is_empty() {
                note = "No run of this configuration is of a commit of the repository's \
                        range: its runs are shown in time order."
                    .to_string();
                (points_in_time_order(runs), SeriesOrder::Time)
            } else {
                let n_in = points.iter().map(|point| point.runs.len()).sum::<usize>();
                if n_in < runs.len() {
                    note = format!(
                        "{} of its {} runs are of commits outside the repository's range \
                         and are not shown.",
                        runs.len() - n_in,
                        runs.len()
                    );
                }
                (points, SeriesOrder::Git)
            }
        }
        None => (points_in_time_order(runs), SeriesOrder::Time),
    };
    let history = history(&points, &HistoryOptions::new(metric, order))
        .with_context(|| format!("failed to compute the history of {title}"))?;
    let scale = scale_of(&history.unit, "m");
    let figures = point_figures(&history, &points, &scale)
        .with_context(|| format!("failed to compute the intervals of {title}"))?;

    let mut body = format!("<h1>{}</h1>\n", escape(&title));
    let _ = writeln!(
        body,
        "<p>{} of {} run{}, {}; {} is better. Each point is the mean of every \
         iteration of its runs, with its 95% interval (Student's t); change \
         points are found as <code>netbisect history</code> finds them.</p>",
        escape(metric.name()),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        match history.order {
            SeriesOrder::Git => "commits in git order",
            SeriesOrder::Time => "runs in time order",
        },
        if history.higher_is_better {
            "higher"
        } else {
            "lower"
        },
    );
    if !note.is_empty() {
        let _ = writeln!(body, "<p class=\"note\">{}</p>", escape(&note));
    }
    let _ = writeln!(
        body,
        "<p>Runs again with <code>{}</code>; spec key <code>{}</code>.</p>",
        escape(&command),
        escape(spec_key)
    );
    if figures.is_empty() {
        body.push_str("<p>No run has a value of this metric.</p>\n");
    } else {
        let chart = history_chart(&title, history.order, &scale, &figures);
        let svg = series_svg(&chart).with_context(|| format!("failed to draw {title}"))?;
        let _ = writeln!(body, "<figure class=\"chart\">\n{}</figure>", svg.as_str());
        body.push_str(&points_table(&figures, history.order, &scale));
    }
    let config_keys: BTreeSet<&str> = runs
        .iter()
        .filter_map(|run| by_id.get(run.id.as_str()))
        .map(|run| run.config_key.as_str())
        .collect();
    let _ = writeln!(
        body,
        "<h2>Environments</h2>\n<p>{} config_key{} (a config_key also names the \
         environment of both ends):</p>\n<ul>",
        config_keys.len(),
        if config_keys.len() == 1 { "" } else { "s" }
    );
    for key in &config_keys {
        let _ = writeln!(body, "<li><code>{}</code></li>", escape(key));
    }
    body.push_str("</ul>\n");

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
        html: super::html::page(&title, &body),
        title,
    })
}

fn points_table(figures: &[PointFigures], order: SeriesOrder, scale: &Scale) -> String {
    let label = match order {
        SeriesOrder::Git => "commit",
        SeriesOrder::Time => "time",
    };
    let mean = format!("mean, {}", scale.unit);
    let rows: Vec<(Option<&str>, Vec<Cell>)> = figures
        .iter()
        .map(|point| {
            let interval = match point.interval {
                Some((low, high)) => format!("{} to {}", format_value(low), format_value(high)),
                None => "-".to_string(),
            };
            (
                point.change.as_ref().map(|_| "change"),
                vec![
                    Cell::Text(format!("<code>{}</code>", escape(&point.label))),
                    Cell::Num(point.n_runs.to_string()),
                    Cell::Num(point.n_samples.to_string()),
                    Cell::Num(format_value(point.mean)),
                    Cell::Num(format_value(point.median)),
                    Cell::Num(interval),
                    Cell::Text(escape(point.change.as_deref().unwrap_or(""))),
                ],
            )
        })
        .collect();
    table(
        &[
            label,
            "runs",
            "samples",
            &mean,
            "median",
            "95% interval",
            "change",
        ],
        &rows,
    )
}
