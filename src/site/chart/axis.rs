//! What a chart's frame is made of before plotters draws it: the span
//! of its value axis, the one precision of that axis' tick labels, each
//! interval cut where it would leave the plot, and the room its texts
//! need, so that no label runs past the SVG's edge.
//!
//! An interval of a point with two samples is wide (Student's t of one
//! degree of freedom is 12.7): taken whole, it would stretch the axis
//! until every other point is a flat line. The axis therefore reaches
//! beyond the centres by the centres' own span or twice the typical
//! half-width of an interval, whichever is more; an interval that
//! reaches further is drawn to the plot's edge and marked there.

use super::ChartPoint;
use plotters::coord::ranged1d::Ranged;
use plotters::coord::types::RangedCoordf64;

/// Tick labels asked of plotters on the value axis (its own default).
pub const Y_LABELS: usize = 11;

/// Width of a character in a sans-serif font, in ems, for texts whose
/// width is estimated (no font is measured: plotters' SVG backend has
/// none). Generous, since capitals and underscores are wide.
const EM_PER_CHAR: f64 = 0.62;
/// plotters' SVG backend writes a font of size `S` as `S / 1.24` pixels.
const SVG_FONT_SCALE: f64 = 1.24;

/// The value axis of a chart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueAxis {
    /// Lowest value shown.
    pub low: f64,
    /// Highest value shown.
    pub high: f64,
    /// Decimals of every tick label.
    pub decimals: usize,
}

impl ValueAxis {
    /// The axis of `points`: every centre inside, every interval as far as
    /// it does not stretch the axis (see the module's header), a tenth of
    /// the span spare on each side; a flat series gets a span of its own.
    pub fn of(points: &[ChartPoint]) -> ValueAxis {
        let centre_low = points.iter().map(|p| p.center).fold(f64::MAX, f64::min);
        let centre_high = points.iter().map(|p| p.center).fold(f64::MIN, f64::max);
        let mut half_widths: Vec<f64> = points
            .iter()
            .map(|point| (point.high - point.low) / 2.0)
            .filter(|half| *half > 0.0)
            .collect();
        half_widths.sort_by(f64::total_cmp);
        // The lower median: of two intervals, the narrower sets the reach.
        let typical = half_widths
            .get(half_widths.len().saturating_sub(1) / 2)
            .copied()
            .unwrap_or(0.0);
        let reach = (centre_high - centre_low).max(2.0 * typical);
        let low = points
            .iter()
            .map(|point| point.low)
            .fold(f64::MAX, f64::min)
            .max(centre_low - reach);
        let high = points
            .iter()
            .map(|point| point.high)
            .fold(f64::MIN, f64::max)
            .min(centre_high + reach);
        let span = high - low;
        let spare = if span > 0.0 {
            span * 0.1
        } else {
            (high.abs() * 0.05).max(1.0)
        };
        let (low, high) = (low - spare, high + spare);
        ValueAxis {
            low,
            high,
            decimals: tick_decimals(&RangedCoordf64::from(low..high).key_points(Y_LABELS)),
        }
    }

    /// A tick label of this axis.
    pub fn label(&self, value: f64) -> String {
        // "-0.00" reads as a value below zero.
        let value = if value == 0.0 { 0.0 } else { value };
        format!("{value:.*}", self.decimals)
    }

    /// The part of `point`'s interval inside the axis, and which of its
    /// ends were cut: `(low, high, low cut, high cut)`.
    pub fn clip(&self, point: &ChartPoint) -> (f64, f64, bool, bool) {
        (
            point.low.max(self.low),
            point.high.min(self.high),
            point.low < self.low,
            point.high > self.high,
        )
    }
}

/// The fewest decimals that write every one of `ticks` exactly (at most
/// six), so that the labels of one axis share their precision.
pub fn tick_decimals(ticks: &[f64]) -> usize {
    const MOST: usize = 6;
    (0..MOST)
        .find(|&decimals| {
            let scale = 10f64.powi(decimals as i32);
            ticks.iter().all(|tick| {
                let scaled = tick * scale;
                (scaled - scaled.round()).abs() <= 1e-6 * scaled.abs().max(1.0)
            })
        })
        .unwrap_or(MOST)
}

/// The width, in pixels, `text` takes in plotters' font size `font_px`,
/// estimated.
pub fn text_width(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px / SVG_FONT_SCALE * EM_PER_CHAR
}

/// The largest font, at most `font_px`, at which `text` is `room`
/// pixels wide or less; never under 8 pixels.
pub fn font_to_fit(text: &str, font_px: u32, room: f64) -> u32 {
    let mut size = font_px;
    while size > 8 && text_width(text, f64::from(size)) > room {
        size -= 1;
    }
    size
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(center: f64, half: f64) -> ChartPoint {
        ChartPoint {
            label: String::new(),
            center,
            low: center - half,
            high: center + half,
            detail: String::new(),
            link: None,
        }
    }

    #[test]
    fn a_two_run_point_s_wide_interval_does_not_stretch_the_axis() {
        let mut points: Vec<ChartPoint> = (0..8)
            .map(|idx| point(9400.0 - idx as f64 * 10.0, 20.0))
            .collect();
        // Two samples: Student's t of one degree of freedom.
        points.push(point(9390.0, 12.7 * 300.0));
        let axis = ValueAxis::of(&points);
        let centres = 9330.0..=9400.0;
        assert!(axis.low > centres.start() - 200.0, "{axis:?}");
        assert!(axis.high < centres.end() + 200.0, "{axis:?}");
        let (low, high, low_cut, high_cut) = axis.clip(&points[8]);
        assert!(low_cut && high_cut);
        assert_eq!((low, high), (axis.low, axis.high));
        // The narrow ones are whole.
        assert_eq!(
            axis.clip(&points[0]).2..=axis.clip(&points[0]).3,
            false..=false
        );
    }

    #[test]
    fn intervals_alike_are_shown_whole_however_wide() {
        let points = [point(10.0, 50.0), point(11.0, 60.0)];
        let axis = ValueAxis::of(&points);
        assert!(axis.low < -50.0 && axis.high > 71.0, "{axis:?}");
        assert!(points.iter().all(|p| {
            let (_, _, low_cut, high_cut) = axis.clip(p);
            !low_cut && !high_cut
        }));
    }

    #[test]
    fn one_flat_point_still_has_a_range() {
        let axis = ValueAxis::of(&[point(5.0, 0.0)]);
        assert!(axis.low < 5.0 && axis.high > 5.0);
    }

    #[test]
    fn every_tick_of_an_axis_has_the_same_decimals() {
        assert_eq!(tick_decimals(&[0.0, 50.0, 100.0, 150.0]), 0);
        assert_eq!(tick_decimals(&[9.5, 10.0, 10.5]), 1);
        assert_eq!(tick_decimals(&[0.1 + 0.2, 0.4]), 1);
        assert_eq!(tick_decimals(&[0.025, 0.05]), 3);
        for (low, high) in [
            (0.0, 150.0),
            (98.0, 103.0),
            (0.0012, 0.0019),
            (8000.0, 9900.0),
        ] {
            let axis = ValueAxis::of(&[point(low, 0.0), point(high, 0.0)]);
            let ticks = RangedCoordf64::from(axis.low..axis.high).key_points(Y_LABELS);
            let decimals: Vec<usize> = ticks
                .iter()
                .map(|tick| {
                    let label = axis.label(*tick);
                    label.split_once('.').map_or(0, |(_, after)| after.len())
                })
                .collect();
            assert!(
                decimals.windows(2).all(|pair| pair[0] == pair[1]),
                "{decimals:?}"
            );
        }
    }

    #[test]
    fn a_long_text_gets_a_smaller_font() {
        assert_eq!(font_to_fit("short", 18, 900.0), 18);
        let long = "x".repeat(120);
        let size = font_to_fit(&long, 18, 900.0);
        assert!(size < 18 && text_width(&long, f64::from(size)) <= 900.0);
    }
}
