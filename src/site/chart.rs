//! The one chart of the site and of `--svg`: a series of points, each
//! with its 95% interval, across commits or time, with markers where a
//! level changes. plotters (its SVG backend only) draws the axes, the
//! grid, the line, the intervals and the labels; this module then lays a
//! transparent target over each point and marker, with an SVG `<title>`,
//! so that a browser shows the point's details on hover without any
//! script, and a page's DOM names every point (`class="point"`).
//!
//! The output is deterministic: the same chart gives the same bytes.
//! Text goes through plotters' escaping (caption, axis names, labels,
//! marker texts: plotters escapes every text and attribute value it
//! writes) or the auto-escaping of the overlay's template,
//! `templates/site/chart-overlay.svg` (the titles of the targets). What
//! [`series_svg`] returns is therefore markup that code wrote whole, a
//! [`DrawnSvg`], the one value the site's templates print unescaped.

use crate::exit::{Code, ExitCoded};
use crate::render::RenderError;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use serde::{Serialize, Serializer};

/// Width and height of a chart, pixels.
const WIDTH: u32 = 960;
const HEIGHT: u32 = 420;
/// Most x labels drawn (a time label is about 100 pixels wide); the
/// rest are in the points' titles.
const MAX_X_LABELS: usize = 8;
/// Above this many points, marks are drawn smaller so the line shows.
const DENSE: usize = 100;
/// Colours: the series, the intervals, the change markers.
const SERIES: RGBColor = RGBColor(31, 92, 153);
const INTERVAL: RGBColor = RGBColor(120, 150, 190);
const CHANGE: RGBColor = RGBColor(190, 40, 40);

/// One point: a centre (mean or median) and the ends of its interval.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartPoint {
    /// Short label on the x axis (abbreviated commit, or time).
    pub label: String,
    /// The centre, in the chart's unit.
    pub center: f64,
    /// The interval's lower end (equal to `center` without one).
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
    /// What the hover shows: every figure of the point, one per line.
    pub detail: String,
}

/// A change of level that starts at a point.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartMarker {
    /// Index of the point where the new level starts.
    pub index: usize,
    /// Short text drawn by the marker (the change and its p value).
    pub text: String,
}

/// A chart to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesChart {
    /// Caption above the plot.
    pub caption: String,
    /// Name of the x axis ("commit, git order").
    pub x_name: String,
    /// Name of the y axis, with its unit.
    pub y_name: String,
    /// The points, left to right; points without a value are left out
    /// by the caller.
    pub points: Vec<ChartPoint>,
    /// Change markers.
    pub markers: Vec<ChartMarker>,
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// There is nothing to draw.
    #[error("the chart has no point")]
    Empty,
    /// A value is not finite.
    #[error("point {0} has a value that is not a finite number")]
    NotFinite(usize),
    /// plotters failed.
    #[error("failed to draw the chart: {0}")]
    Draw(String),
    /// The hover targets' template failed.
    #[error("failed to lay the hover targets over the chart: {0}")]
    Overlay(#[from] RenderError),
}

impl ExitCoded for ChartError {
    /// A runtime failure: no command line draws a chart that cannot be.
    fn exit_code(&self) -> Code {
        Code::Runtime
    }
}

fn draw_error<E: std::fmt::Debug>(err: E) -> ChartError {
    ChartError::Draw(format!("{err:?}"))
}

/// A chart as [`series_svg`] drew it: one `<svg>` element whose every tag
/// code wrote (plotters, and the overlay's template) and whose every text
/// was escaped where it was put. Only [`series_svg`] makes one, so a
/// template may print it as it is: it serializes as markup marked safe.
#[derive(Clone, Debug, PartialEq)]
pub struct DrawnSvg(String);

impl DrawnSvg {
    /// The SVG text, to write alone as an `.svg` file.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for DrawnSvg {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Safe to print unescaped: see the type's documentation. Outside
        // a template it serializes as its text.
        minijinja::Value::from_safe_string(self.0.clone()).serialize(serializer)
    }
}

/// A hover target over a point, at its pixels.
#[derive(Serialize)]
struct PointTarget<'a> {
    x: i32,
    y: i32,
    detail: &'a str,
}

/// A hover target over a change marker's line, at its pixels.
#[derive(Serialize)]
struct MarkerTarget<'a> {
    x: i32,
    y: i32,
    height: i32,
    text: &'a str,
}

/// The context of `templates/site/chart-overlay.svg`.
#[derive(Serialize)]
struct Overlay<'a> {
    points: Vec<PointTarget<'a>>,
    markers: Vec<MarkerTarget<'a>>,
}

/// The plot plotters draws on: points by index across, values up.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The chart as one `<svg>` element (no XML declaration), ready to be
/// put inline in HTML or written alone as an `.svg` file.
pub fn series_svg(chart: &SeriesChart) -> Result<DrawnSvg, ChartError> {
    if chart.points.is_empty() {
        return Err(ChartError::Empty);
    }
    for (idx, point) in chart.points.iter().enumerate() {
        if ![point.center, point.low, point.high]
            .iter()
            .all(|value| value.is_finite())
        {
            return Err(ChartError::NotFinite(idx));
        }
    }
    let mut svg = String::new();
    let overlay = {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let overlay = draw(&root, chart)?;
        root.present().map_err(draw_error)?;
        overlay
    };
    let overlay = crate::render::html::render("site/chart-overlay.svg", &overlay)?;
    let Some(end) = svg.rfind("</svg>") else {
        return Err(ChartError::Draw(
            "the SVG backend wrote no closing tag".into(),
        ));
    };
    svg.insert_str(end, &overlay);
    Ok(DrawnSvg(svg))
}

/// Draws `chart` on `root`; returns the hover targets at the pixels the
/// plot maps the points and markers to.
fn draw<'a>(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    chart: &'a SeriesChart,
) -> Result<Overlay<'a>, ChartError> {
    let (y_low, y_high) = y_range(&chart.points);
    let n_points = chart.points.len();
    let x_range = -0.5..(n_points as f64 - 0.5);
    let mut plot = ChartBuilder::on(root)
        .caption(&chart.caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(x_range, y_low..y_high)
        .map_err(draw_error)?;
    let points = &chart.points;
    let x_label = |x: &f64| -> String {
        let idx = x.round();
        if (x - idx).abs() > 1e-9 || idx < 0.0 {
            return String::new();
        }
        let idx = idx as usize;
        points
            .get(idx)
            .map(|point| point.label.clone())
            .unwrap_or_default()
    };
    plot.configure_mesh()
        .x_desc(&chart.x_name)
        .y_desc(&chart.y_name)
        // plotters puts its ticks at round numbers; those that fall
        // on a point are labelled with it.
        .x_labels(n_points.clamp(2, MAX_X_LABELS))
        .x_label_formatter(&x_label)
        .y_label_formatter(&|y: &f64| format_value(*y))
        .disable_x_mesh()
        .light_line_style(WHITE)
        .draw()
        .map_err(draw_error)?;
    for marker in &chart.markers {
        draw_marker(&mut plot, marker, (y_low, y_high))?;
    }
    draw_points(&mut plot, points)?;

    // Hover targets over what plotters drew, at the same pixels.
    let point_targets = points
        .iter()
        .enumerate()
        .map(|(idx, point)| {
            let (x, y) = plot.backend_coord(&(idx as f64, point.center));
            PointTarget {
                x,
                y,
                detail: &point.detail,
            }
        })
        .collect();
    let marker_targets = chart
        .markers
        .iter()
        .map(|marker| {
            let x = marker.index as f64 - 0.5;
            let (x_top, y_top) = plot.backend_coord(&(x, y_high));
            let (_, y_bottom) = plot.backend_coord(&(x, y_low));
            MarkerTarget {
                x: x_top - 5,
                y: y_top,
                height: (y_bottom - y_top).max(1),
                text: &marker.text,
            }
        })
        .collect();
    Ok(Overlay {
        points: point_targets,
        markers: marker_targets,
    })
}

/// A change marker: a dashed line before its point, its text a few
/// pixels right of the line and below the top.
fn draw_marker(
    plot: &mut Plot<'_, '_>,
    marker: &ChartMarker,
    (y_low, y_high): (f64, f64),
) -> Result<(), ChartError> {
    let x = marker.index as f64 - 0.5;
    plot.draw_series(DashedLineSeries::new(
        [(x, y_low), (x, y_high)],
        6,
        4,
        CHANGE.stroke_width(2),
    ))
    .map_err(draw_error)?;
    let label = EmptyElement::at((x, y_high))
        + Text::new(
            marker.text.clone(),
            (5, 4),
            ("sans-serif", 13).into_font().color(&CHANGE),
        );
    plot.draw_series(std::iter::once(label))
        .map_err(draw_error)?;
    Ok(())
}

/// The intervals, the line through the centres and a mark on each.
fn draw_points(plot: &mut Plot<'_, '_>, points: &[ChartPoint]) -> Result<(), ChartError> {
    let dense = points.len() > DENSE;
    plot.draw_series(points.iter().enumerate().map(|(idx, point)| {
        ErrorBar::new_vertical(
            idx as f64,
            point.low,
            point.center,
            point.high,
            INTERVAL.stroke_width(if dense { 1 } else { 2 }),
            if dense { 0 } else { 8 },
        )
    }))
    .map_err(draw_error)?;
    plot.draw_series(LineSeries::new(
        points
            .iter()
            .enumerate()
            .map(|(idx, point)| (idx as f64, point.center)),
        SERIES.stroke_width(2),
    ))
    .map_err(draw_error)?;
    plot.draw_series(points.iter().enumerate().map(|(idx, point)| {
        Circle::new(
            (idx as f64, point.center),
            if dense { 2 } else { 4 },
            SERIES.filled(),
        )
    }))
    .map_err(draw_error)?;
    Ok(())
}

/// The y axis: every interval inside, with a tenth of the span spare on
/// each side (a flat series gets a span of its own).
fn y_range(points: &[ChartPoint]) -> (f64, f64) {
    let low = points
        .iter()
        .map(|point| point.low)
        .fold(f64::MAX, f64::min);
    let high = points
        .iter()
        .map(|point| point.high)
        .fold(f64::MIN, f64::max);
    let span = high - low;
    let spare = if span > 0.0 {
        span * 0.1
    } else {
        (high.abs() * 0.05).max(1.0)
    };
    (low - spare, high + spare)
}

/// A value for an axis or a title: up to six significant digits, without
/// an exponent for the magnitudes netbisect's units give.
pub fn format_value(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e5 || magnitude == 0.0 {
        format!("{value:.0}")
    } else if magnitude >= 100.0 {
        format!("{value:.2}")
    } else if magnitude >= 1.0 {
        format!("{value:.3}")
    } else {
        format!("{value:.5}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(label: &str, center: f64) -> ChartPoint {
        ChartPoint {
            label: label.to_string(),
            center,
            low: center - 1.0,
            high: center + 1.0,
            detail: format!("{label} <&> {center}"),
        }
    }

    #[test]
    fn every_point_gets_a_target_with_an_escaped_title() {
        let chart = SeriesChart {
            caption: "a <b> & c".into(),
            x_name: "commit".into(),
            y_name: "10^6bits/s".into(),
            points: vec![point("aaa", 10.0), point("bbb", 11.0), point("ccc", 20.0)],
            markers: vec![ChartMarker {
                index: 2,
                text: "change +80% (p=0.001)".into(),
            }],
        };
        let svg = series_svg(&chart).unwrap().as_str().to_string();
        assert_eq!(svg.matches("class=\"point\"").count(), 3);
        assert_eq!(svg.matches("class=\"change\"").count(), 1);
        assert!(svg.contains("<title>aaa &lt;&amp;&gt; 10</title>"));
        assert!(svg.contains("a &lt;b&gt; &amp; c"));
        assert!(!svg.contains("<b>"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(
            svg,
            series_svg(&chart).unwrap().as_str(),
            "the same chart, the same bytes"
        );
    }

    #[test]
    fn no_point_or_a_non_finite_one_is_an_error() {
        let mut chart = SeriesChart {
            caption: String::new(),
            x_name: String::new(),
            y_name: String::new(),
            points: Vec::new(),
            markers: Vec::new(),
        };
        assert!(matches!(series_svg(&chart), Err(ChartError::Empty)));
        chart.points.push(point("a", f64::NAN));
        assert!(matches!(series_svg(&chart), Err(ChartError::NotFinite(0))));
    }

    #[test]
    fn one_flat_point_still_has_a_range() {
        let (low, high) = y_range(&[ChartPoint {
            label: String::new(),
            center: 5.0,
            low: 5.0,
            high: 5.0,
            detail: String::new(),
        }]);
        assert!(low < 5.0 && high > 5.0);
    }
}
