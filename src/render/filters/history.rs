//! The rows of `history`'s table, laid out in one call: [`rows_of`],
//! which the history's view calls, and the `history_rows` filter, which
//! gives a template of a user the same from the history's JSON.
//!
//! A history has a row per commit, or per run in time order: thousands
//! of them. Laid out by the template, each row took a dozen filter
//! calls and a 5000-run history spent more time in the template than in
//! reading the archive. The template keeps the title, the header and
//! the legend, written with the widths of the rows.
//!
//! The layout: label, samples, mean, spread, bar, marker. Labels longer
//! than 40 columns are cut (`...`); the bar takes what is left of 80
//! columns, at most 30, and runs from the smallest mean (one `#`) to the
//! largest; a change marker goes at the end of its row when at least 8
//! columns of bar remain beside it, else on a line of its own below
//! (under the bar, or as far left as it must be to end in 80 columns).

use super::{figure_text, fixed_text, netperf_divisor, plain, signed_pct_text};
use minijinja::value::{Kwargs, Serde, Value, ValueKind};
use minijinja::{Error, ErrorKind};
use serde::Serialize;

/// Widest label column.
const MAX_LABEL_WIDTH: usize = 40;
/// Widest bar.
const MAX_BAR_WIDTH: usize = 30;
/// Columns a change marker beside its row takes.
const MARKER_WIDTH: usize = 30;
/// Fewest columns of bar beside which a marker is still written.
const MIN_BAR_BESIDE_MARKER: usize = 8;
/// Widest line.
const LINE_WIDTH: usize = 80;

/// What the template needs of the laid-out rows.
#[derive(Debug, Serialize)]
pub struct HistoryRows {
    /// The label column's header: `commit` or `time`.
    pub label_header: &'static str,
    /// Columns of the label column.
    pub label_width: usize,
    /// Columns before the bar (label to spread, and the gap after it).
    pub fixed_width: usize,
    /// Columns of the longest bar.
    pub bar_width: usize,
    /// The lines of the rows, in order (a marker on a line of its own
    /// after its row).
    pub lines: Vec<String>,
}

/// One point of a history, as a row prints it.
pub struct Point {
    /// The commit, or the time as people read it, printed [`plain`].
    pub label: String,
    /// Samples at the point.
    pub n_samples: String,
    /// Their mean, in the history's unit.
    pub mean: Option<f64>,
    /// Their standard deviation, percent of the mean.
    pub spread_pct: Option<f64>,
    /// `(change_pct, p_value)` where a new level starts.
    pub change: Option<(Option<f64>, f64)>,
}

/// What the rows of a history are laid out with.
pub struct RowsOptions {
    /// Points in time order (labelled by time), else in git order.
    pub time_order: bool,
    /// The history's unit (`bits/s`, `us/KB`).
    pub unit: String,
    /// Bits per second in one unit of throughput (netperf's `-f`).
    pub throughput_divisor: f64,
    /// The smallest and the largest mean, where there are means.
    pub min_mean: Option<f64>,
    /// The largest mean.
    pub max_mean: Option<f64>,
    /// How many change points the history has.
    pub n_change_points: usize,
}

/// A number, or none, from a point's attribute.
fn optional_number(value: &Value, name: &str) -> Result<Option<f64>, Error> {
    let attribute = value.get_attr(name)?;
    if attribute.is_none() || attribute.is_undefined() {
        return Ok(None);
    }
    f64::try_from(attribute.clone()).map(Some).map_err(|_| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("{name} of a history point is not a number: {attribute}"),
        )
    })
}

fn point_of(value: &Value, time_order: bool) -> Result<Point, Error> {
    if value.kind() != ValueKind::Map {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("a history point is a map, not {}", value.kind()),
        ));
    }
    let label = value.get_attr("label")?;
    let label = label.as_str().unwrap_or_default();
    let label = if time_order {
        run_record::time::for_people(label)
    } else {
        label.to_string()
    };
    let change = value.get_attr("change")?;
    let change = if change.is_none() || change.is_undefined() {
        None
    } else {
        let p_value = optional_number(&change, "p_value")?
            .ok_or_else(|| Error::new(ErrorKind::InvalidOperation, "a change without a p value"))?;
        Some((optional_number(&change, "change_pct")?, p_value))
    };
    Ok(Point {
        label: plain(&label).into_owned(),
        n_samples: value.get_attr("n_samples")?.to_string(),
        mean: optional_number(value, "mean")?,
        spread_pct: optional_number(value, "spread_pct")?,
        change,
    })
}

/// The rows of a history's `points`, with the history's `order`,
/// `unit`, `units` (the `-f` letter for throughput), `min_mean`,
/// `max_mean` and `n_change_points` as keyword arguments.
pub fn history_rows(points: Value, options: Kwargs) -> Result<Value, Error> {
    let order: String = options.get("order")?;
    let unit: String = options.get("unit")?;
    let units: String = options.get("units")?;
    let min_mean: Option<f64> = options.get("min_mean")?;
    let max_mean: Option<f64> = options.get("max_mean")?;
    let n_change_points: usize = options.get("n_change_points")?;
    options.assert_all_used()?;

    let time_order = order != "git";
    if points.kind() != ValueKind::Seq {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "history_rows takes the list of points, not {}",
                points.kind()
            ),
        ));
    }
    let points: Vec<Point> = points
        .try_iter()?
        .map(|point| point_of(&point, time_order))
        .collect::<Result<_, _>>()?;
    let options = RowsOptions {
        time_order,
        throughput_divisor: if unit == "bits/s" {
            netperf_divisor(&units)?
        } else {
            1.0
        },
        unit,
        min_mean,
        max_mean,
        n_change_points,
    };
    Ok(Value::from(Serde(rows_of(&points, &options))))
}

/// The rows of `points` laid out with `options`.
pub fn rows_of(points: &[Point], options: &RowsOptions) -> HistoryRows {
    let RowsOptions {
        time_order,
        min_mean,
        max_mean,
        n_change_points,
        ..
    } = *options;
    let label_header = if time_order { "time" } else { "commit" };
    let label_width = points
        .iter()
        .map(|point| point.label.len())
        .chain([label_header.len()])
        .max()
        .unwrap_or_default()
        .min(MAX_LABEL_WIDTH);
    let fixed_width = label_width + 2 + 3 + 2 + 10 + 2 + 5 + 2;
    let room = LINE_WIDTH.saturating_sub(fixed_width);
    let inline = n_change_points == 0 || room.saturating_sub(MARKER_WIDTH) >= MIN_BAR_BESIDE_MARKER;
    let beside = if n_change_points > 0 && inline {
        MARKER_WIDTH
    } else {
        0
    };
    let bar_width = room.saturating_sub(beside).min(MAX_BAR_WIDTH);
    let scale = if options.unit == "bits/s" {
        options.throughput_divisor
    } else {
        1.0
    };
    let decimals = if matches!(options.unit.as_str(), "us/KB" | "us/Tran") {
        3
    } else {
        2
    };

    let mut lines = Vec::with_capacity(points.len() + n_change_points);
    for point in points {
        // Labels are ASCII ([`plain`]), so a byte index is a column.
        let cut;
        let label = if point.label.len() <= label_width {
            point.label.as_str()
        } else {
            cut = format!("{}...", &point.label[..label_width.saturating_sub(3)]);
            cut.as_str()
        };
        let mean = point.mean.map_or_else(
            || "-".to_string(),
            |mean| figure_text(mean / scale, decimals),
        );
        let spread = point
            .spread_pct
            .map_or_else(|| "-".to_string(), |spread| fixed_text(spread, 1));
        let row = format!(
            "{label:<label_width$}  {:>3}  {mean:>10}  {spread:>5}",
            point.n_samples
        );
        let bar = bar(point.mean, [min_mean, max_mean], bar_width);
        let Some((change_pct, p_value)) = point.change else {
            lines.push(if bar.is_empty() {
                row
            } else {
                format!("{row}  {bar}")
            });
            continue;
        };
        let change = change_pct.map_or_else(|| "-".to_string(), |pct| signed_pct_text(pct, 1));
        let p = if p_value < 0.0001 {
            "<0.0001".to_string()
        } else {
            format!("={}", fixed_text(p_value, 4))
        };
        if inline {
            lines.push(format!(
                "{row}  {bar:<bar_width$} <-- change {change} (p{p})"
            ));
        } else {
            lines.push(format!("{row}  {bar}"));
            // Under the bar, or further left where a long label leaves
            // no room for the marker there.
            let marker = format!("^-- change {change} (p{p})");
            let indent = fixed_width.min(LINE_WIDTH.saturating_sub(marker.len()));
            lines.push(format!("{:indent$}{marker}", ""));
        }
    }
    HistoryRows {
        label_header,
        label_width,
        fixed_width,
        bar_width,
        lines,
    }
}

/// The bar of a point of `mean`: from one `#` at the smallest of the
/// means `range` to `width` at the largest; none without a mean.
fn bar(mean: Option<f64>, range: [Option<f64>; 2], width: usize) -> String {
    match (mean, range) {
        (Some(_), [Some(min), Some(max)]) if max == min => "#".repeat(width),
        (Some(mean), [Some(min), Some(max)]) => {
            let steps = ((mean - min) / (max - min) * width.saturating_sub(1) as f64)
                .round()
                .max(0.0);
            "#".repeat(1 + steps as usize)
        }
        _ => String::new(),
    }
}
