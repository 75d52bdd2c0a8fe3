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

mod axis;

use crate::exit::{Code, ExitCoded};
use crate::render::RenderError;
use axis::{ValueAxis, font_to_fit, text_width};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
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
/// Font sizes, pixels: the caption (largest), the tick labels and axis
/// names, a change marker's text.
const CAPTION_PX: u32 = 18;
const LABEL_PX: u32 = 12;
const MARKER_PX: u32 = 13;
/// Space around the plot, pixels.
const MARGIN: u32 = 12;
/// Room of the value axis' name, beside its tick labels, pixels.
const Y_NAME_ROOM: f64 = 34.0;

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
    /// The page of the point's runs, a file name beside the chart's
    /// page: the point is a link to it. `None` for a chart alone.
    pub link: Option<String>,
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

/// A hover target over a point, at its pixels, and where it leads.
#[derive(Serialize)]
struct PointTarget<'a> {
    x: i32,
    y: i32,
    detail: &'a str,
    link: Option<&'a str>,
}

/// The mark of an interval cut at the plot's edge: an arrowhead at the
/// cut end, pointing on, its tip at the edge and its base inside.
#[derive(Serialize)]
struct ClipMark {
    x: i32,
    tip: i32,
    base: i32,
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
    clipped: Vec<ClipMark>,
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
/// plot maps the points and markers to, and the marks of cut intervals.
fn draw<'a>(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    chart: &'a SeriesChart,
) -> Result<Overlay<'a>, ChartError> {
    let axis = ValueAxis::of(&chart.points);
    let n_points = chart.points.len();
    let x_range = -0.5..(n_points as f64 - 0.5);
    let label_px = f64::from(LABEL_PX);
    // Room for the widest tick label left of the plot, and for half the
    // widest point label right of it: no text passes the SVG's edge.
    let widest_y = [axis.low, axis.high]
        .iter()
        .map(|value| text_width(&axis.label(*value), label_px))
        .fold(0.0, f64::max);
    let widest_x = chart
        .points
        .iter()
        .map(|point| text_width(&point.label, label_px))
        .fold(0.0, f64::max);
    let caption_px = font_to_fit(&chart.caption, CAPTION_PX, f64::from(WIDTH - 2 * MARGIN));
    let mut plot = ChartBuilder::on(root)
        .caption(&chart.caption, ("sans-serif", caption_px))
        .margin(MARGIN)
        .margin_right(MARGIN.max((widest_x / 2.0).ceil() as u32 + 4))
        .x_label_area_size(56)
        .y_label_area_size(84.max((widest_y + Y_NAME_ROOM).ceil() as u32))
        .build_cartesian_2d(x_range, axis.low..axis.high)
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
        .label_style(("sans-serif", LABEL_PX))
        // plotters puts its ticks at round numbers; those that fall
        // on a point are labelled with it.
        .x_labels(n_points.clamp(2, MAX_X_LABELS))
        .x_label_formatter(&x_label)
        .y_labels(axis::Y_LABELS)
        .y_label_formatter(&|y: &f64| axis.label(*y))
        .disable_x_mesh()
        .light_line_style(WHITE)
        .draw()
        .map_err(draw_error)?;
    for marker in &chart.markers {
        draw_marker(&mut plot, marker, &axis)?;
    }
    draw_points(&mut plot, points, &axis)?;

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
                link: point.link.as_deref(),
            }
        })
        .collect();
    let marker_targets = chart
        .markers
        .iter()
        .map(|marker| {
            let x = marker.index as f64 - 0.5;
            let (x_top, y_top) = plot.backend_coord(&(x, axis.high));
            let (_, y_bottom) = plot.backend_coord(&(x, axis.low));
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
        clipped: clip_marks(&plot, points, &axis),
    })
}

/// An arrowhead at each end of an interval that the axis cut, pointing
/// out of the plot: the interval goes on beyond it.
fn clip_marks(plot: &Plot<'_, '_>, points: &[ChartPoint], axis: &ValueAxis) -> Vec<ClipMark> {
    const LENGTH: i32 = 9;
    let mut marks = Vec::new();
    for (idx, point) in points.iter().enumerate() {
        let (_, _, low_cut, high_cut) = axis.clip(point);
        for (cut, value, outward) in [(low_cut, axis.low, 1), (high_cut, axis.high, -1)] {
            if !cut {
                continue;
            }
            let (x, y) = plot.backend_coord(&(idx as f64, value));
            marks.push(ClipMark {
                x,
                tip: y,
                base: y - outward * LENGTH,
            });
        }
    }
    marks
}

/// A change marker: a dashed line before its point, its text a few
/// pixels beside the line, below the top: right of the line, or left of
/// it where it would pass the plot's right edge.
fn draw_marker(
    plot: &mut Plot<'_, '_>,
    marker: &ChartMarker,
    axis: &ValueAxis,
) -> Result<(), ChartError> {
    let x = marker.index as f64 - 0.5;
    plot.draw_series(DashedLineSeries::new(
        [(x, axis.low), (x, axis.high)],
        6,
        4,
        CHANGE.stroke_width(2),
    ))
    .map_err(draw_error)?;
    let (line_x, _) = plot.backend_coord(&(x, axis.high));
    let (right_edge, _) = plot.backend_coord(&(plot.x_range().end, axis.high));
    let width = text_width(&marker.text, f64::from(MARKER_PX));
    let fits_right = f64::from(line_x) + 5.0 + width <= f64::from(right_edge);
    let (offset, anchor) = if fits_right {
        ((5, 4), HPos::Left)
    } else {
        ((-5, 4), HPos::Right)
    };
    let style = ("sans-serif", MARKER_PX)
        .into_font()
        .color(&CHANGE)
        .pos(Pos::new(anchor, VPos::Top));
    let label = EmptyElement::at((x, axis.high)) + Text::new(marker.text.clone(), offset, style);
    plot.draw_series(std::iter::once(label))
        .map_err(draw_error)?;
    Ok(())
}

/// The intervals (cut at the axis), the line through the centres and a
/// mark on each.
fn draw_points(
    plot: &mut Plot<'_, '_>,
    points: &[ChartPoint],
    axis: &ValueAxis,
) -> Result<(), ChartError> {
    let dense = points.len() > DENSE;
    plot.draw_series(points.iter().enumerate().map(|(idx, point)| {
        let (low, high, _, _) = axis.clip(point);
        ErrorBar::new_vertical(
            idx as f64,
            low,
            point.center,
            high,
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
mod tests;
