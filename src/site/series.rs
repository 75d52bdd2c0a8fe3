//! A history as a chart: each point of [`archive::history::History`]
//! with the 95% Student-t interval on the mean of its pooled samples
//! (every iteration of every run at the point), and its change points
//! marked with their change and p value, as `history` prints them.

use super::chart::{ChartMarker, ChartPoint, SeriesChart};
use archive::history::{History, PointRuns, SeriesOrder};
use run_record::stats::{self, StatsError};

/// Confidence level of every interval drawn.
pub const LEVEL: f64 = 0.95;

/// How values of a unit are shown: the divisor from the archive's unit
/// and the name of the unit shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// Values are divided by this.
    pub divisor: f64,
    /// The unit shown.
    pub unit: String,
}

/// The scale of `unit` (the archive's), throughput in netperf's `-f`
/// `letter` (`m` for 10^6bits/s); an unknown letter is `m`.
pub fn scale_of(unit: &str, letter: &str) -> Scale {
    if unit != "bits/s" {
        let shown = match unit {
            "trans/s" => "Trans/s",
            "us" => "usec",
            other => other,
        };
        return Scale {
            divisor: 1.0,
            unit: shown.to_string(),
        };
    }
    let (divisor, name) = match letter {
        "k" => (1e3, "10^3bits/s"),
        "g" => (1e9, "10^9bits/s"),
        "K" => (8.0 * 1024.0, "KBytes/s"),
        "M" => (8.0 * 1024.0 * 1024.0, "MBytes/s"),
        "G" => (8.0 * 1024.0 * 1024.0 * 1024.0, "GBytes/s"),
        _ => (1e6, "10^6bits/s"),
    };
    Scale {
        divisor,
        unit: name.to_string(),
    }
}

/// A change as `history` prints it: `change -9.9% (p<0.0001)`.
pub fn change_text(change_pct: Option<f64>, p_value: f64) -> String {
    let change = match change_pct {
        Some(pct) => format!("{pct:+.1}%"),
        None => "from zero".to_string(),
    };
    let p = if p_value < 0.0001 {
        "p<0.0001".to_string()
    } else {
        format!("p={p_value:.4}")
    };
    format!("change {change} ({p})")
}

/// One point's figures in the chart's unit.
#[derive(Clone, Debug, PartialEq)]
pub struct PointFigures {
    /// The point's label.
    pub label: String,
    /// Runs and samples at the point.
    pub n_runs: usize,
    /// Samples at the point.
    pub n_samples: usize,
    /// Mean of the samples.
    pub mean: f64,
    /// Median of the samples.
    pub median: f64,
    /// The 95% interval on the mean; `None` with one sample.
    pub interval: Option<(f64, f64)>,
    /// The change of level starting here, as text.
    pub change: Option<String>,
    /// The ids of the point's runs, in the order the history took them.
    pub run_ids: Vec<String>,
    /// The commit of the point's runs, as the first of them names it;
    /// `None` when they name none.
    pub commit: Option<String>,
    /// That commit's subject, where the caller knows it (from a
    /// repository): the hover shows it.
    pub subject: Option<String>,
    /// The page of the point's runs, where the caller writes one: the
    /// point links to it.
    pub page: Option<String>,
}

/// The figures of every point of `history` that has samples, scaled.
/// `points` are the runs the history was computed from, in its order.
pub fn point_figures(
    history: &History,
    points: &[PointRuns<'_>],
    scale: &Scale,
) -> Result<Vec<PointFigures>, StatsError> {
    let mut figures = Vec::new();
    for (point, runs) in history.points.iter().zip(points) {
        let Some(mean) = point.mean else { continue };
        let samples: Vec<f64> = runs
            .runs
            .iter()
            .flat_map(|run| run.samples.iter().map(|value| value / scale.divisor))
            .collect();
        let interval = if samples.len() > 1 {
            let interval = stats::mean_interval(&samples, LEVEL)?;
            Some((interval.low, interval.high))
        } else {
            None
        };
        figures.push(PointFigures {
            label: point.label.clone(),
            n_runs: point.n_runs,
            n_samples: point.n_samples,
            mean: mean / scale.divisor,
            median: stats::percentile(&samples, 50.0)?,
            interval,
            change: point
                .change
                .as_ref()
                .map(|change| change_text(change.change_pct, change.p_value)),
            run_ids: runs.runs.iter().map(|run| run.id.clone()).collect(),
            commit: runs.runs.first().and_then(|run| run.commit.clone()),
            subject: None,
            page: None,
        });
    }
    Ok(figures)
}

/// The chart of `figures` (from [`point_figures`]).
pub fn history_chart(
    caption: &str,
    order: SeriesOrder,
    scale: &Scale,
    figures: &[PointFigures],
) -> SeriesChart {
    let mut points = Vec::with_capacity(figures.len());
    let mut markers = Vec::new();
    for (idx, point) in figures.iter().enumerate() {
        let (low, high) = point.interval.unwrap_or((point.mean, point.mean));
        let mut detail = commit_lines(order, point);
        detail.push_str(&format!(
            "mean {} {}, median {}\n",
            super::chart::format_value(point.mean),
            scale.unit,
            super::chart::format_value(point.median),
        ));
        match point.interval {
            Some((low, high)) => detail.push_str(&format!(
                "95% interval {} to {}\n",
                super::chart::format_value(low),
                super::chart::format_value(high)
            )),
            None => detail.push_str("one sample: no interval\n"),
        }
        detail.push_str(&format!(
            "{} run{}, {} sample{}",
            point.n_runs,
            if point.n_runs == 1 { "" } else { "s" },
            point.n_samples,
            if point.n_samples == 1 { "" } else { "s" }
        ));
        if let Some(change) = &point.change {
            detail.push('\n');
            detail.push_str(change);
            markers.push(ChartMarker {
                index: idx,
                text: change.clone(),
            });
        }
        let label = match order {
            SeriesOrder::Git => point.label.chars().take(8).collect(),
            // "2024-01-01T00:00:00Z": month, day and time of day.
            SeriesOrder::Time => point
                .label
                .get(5..19)
                .unwrap_or(&point.label)
                .replace('T', " "),
        };
        points.push(ChartPoint {
            label,
            center: point.mean,
            low,
            high,
            detail,
            link: point.page.clone(),
        });
    }
    SeriesChart {
        caption: caption.to_string(),
        x_name: match order {
            SeriesOrder::Git => "commit, in git order".to_string(),
            SeriesOrder::Time => "run, in time order (UTC)".to_string(),
        },
        y_name: format!("mean, {} (95% interval)", scale.unit),
        points,
        markers,
    }
}

/// The first lines of a point's hover: its label (a commit in git order,
/// with its subject where known), and in time order the commit of its
/// run on a line of its own.
fn commit_lines(order: SeriesOrder, point: &PointFigures) -> String {
    let subject = point.subject.as_deref().unwrap_or("");
    match (order, &point.commit) {
        (SeriesOrder::Git, _) => format!("{} {subject}", point.label).trim_end().to_string() + "\n",
        (SeriesOrder::Time, Some(commit)) => {
            let short: String = commit.chars().take(12).collect();
            format!(
                "{}\ncommit {}\n",
                point.label,
                format!("{short} {subject}").trim_end()
            )
        }
        (SeriesOrder::Time, None) => format!("{}\n", point.label),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_read_as_history_prints_them() {
        assert_eq!(change_text(Some(-9.93), 0.00001), "change -9.9% (p<0.0001)");
        assert_eq!(change_text(Some(4.0), 0.0123), "change +4.0% (p=0.0123)");
    }

    #[test]
    fn throughput_follows_the_unit_letter() {
        assert_eq!(scale_of("bits/s", "m").unit, "10^6bits/s");
        assert_eq!(scale_of("bits/s", "g").divisor, 1e9);
        assert_eq!(scale_of("trans/s", "m").divisor, 1.0);
    }
}
