//! A configuration's trend as a sparkline: the means of its chart's
//! points as a small line, with the newest point marked, drawn inline in
//! the index and the testbed pages. Here the arithmetic (where each
//! point falls in the line's box); the markup is the macro of
//! `templates/site/sparkline.html`, whose values the environment
//! escapes like any other.

use serde::Serialize;

/// Width and height of a sparkline's box, pixels.
const WIDTH: f64 = 120.0;
const HEIGHT: f64 = 24.0;
/// Room kept free around the line, so that the newest point's mark is
/// not cut at the edge of the box.
const MARGIN: f64 = 3.0;

/// A point of the line, in the box's pixels, one decimal.
#[derive(Debug, PartialEq, Serialize)]
pub struct SparkPoint {
    /// From the left.
    pub x: String,
    /// From the top.
    pub y: String,
}

/// What the template draws: the line's points, the newest last, and the
/// box they are in.
#[derive(Debug, PartialEq, Serialize)]
pub struct Sparkline {
    /// Width of the box.
    pub width: u32,
    /// Height of the box.
    pub height: u32,
    /// The points, oldest first.
    pub points: Vec<SparkPoint>,
    /// The newest point, marked.
    pub last: SparkPoint,
    /// The line's words for a reader that does not see it, plain text.
    pub description: String,
}

fn pixel(value: f64) -> String {
    format!("{value:.1}")
}

/// The sparkline of `values` (finite, oldest first), described with
/// `latest` (the newest value and its unit); `None` without a finite
/// value. A flat trend is a line across the middle of the box.
pub fn sparkline(values: &[f64], latest: &str) -> Option<Sparkline> {
    let values: Vec<f64> = values
        .iter()
        .copied()
        .filter(|value| value.is_finite())
        .collect();
    let (&first, &newest) = (values.first()?, values.last()?);
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let inner_width = WIDTH - 2.0 * MARGIN;
    let inner_height = HEIGHT - 2.0 * MARGIN;
    let step = if values.len() > 1 {
        inner_width / (values.len() - 1) as f64
    } else {
        0.0
    };
    let place = |idx: usize, value: f64| {
        // Higher values higher up; a flat trend in the middle.
        let share = if high > low {
            (value - low) / (high - low)
        } else {
            0.5
        };
        SparkPoint {
            x: pixel(MARGIN + step * idx as f64),
            y: pixel(MARGIN + inner_height * (1.0 - share)),
        }
    };
    let points: Vec<SparkPoint> = values
        .iter()
        .enumerate()
        .map(|(idx, &value)| place(idx, value))
        .collect();
    let change = if first != 0.0 && values.len() > 1 {
        format!(
            ", {:+.1}% since the first",
            (newest - first) / first * 100.0
        )
    } else {
        String::new()
    };
    Some(Sparkline {
        width: WIDTH as u32,
        height: HEIGHT as u32,
        last: place(values.len() - 1, newest),
        description: format!(
            "trend of {} point{}, latest {latest}{change}",
            values.len(),
            if values.len() == 1 { "" } else { "s" }
        ),
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_spans_the_box_with_higher_values_higher_up() {
        let line = sparkline(&[10.0, 20.0, 15.0], "15 x").unwrap();
        let xs: Vec<&str> = line.points.iter().map(|point| point.x.as_str()).collect();
        let ys: Vec<&str> = line.points.iter().map(|point| point.y.as_str()).collect();
        assert_eq!(xs, ["3.0", "60.0", "117.0"]);
        assert_eq!(ys, ["21.0", "3.0", "12.0"]);
        assert_eq!(line.last, line.points[2]);
        assert_eq!(
            line.description,
            "trend of 3 points, latest 15 x, +50.0% since the first"
        );
    }

    #[test]
    fn a_flat_or_single_trend_is_drawn_in_the_middle_and_no_value_is_none() {
        let line = sparkline(&[5.0], "5 x").unwrap();
        assert_eq!(line.points.len(), 1);
        assert_eq!(
            (line.last.x.as_str(), line.last.y.as_str()),
            ("3.0", "12.0")
        );
        assert_eq!(line.description, "trend of 1 point, latest 5 x");
        let flat = sparkline(&[5.0, 5.0, f64::NAN], "5 x").unwrap();
        assert!(flat.points.iter().all(|point| point.y == "12.0"));
        assert_eq!(sparkline(&[f64::NAN], "-"), None);
        assert_eq!(sparkline(&[], "-"), None);
    }
}
