//! The context of `history`: the archive's history of one metric, as
//! `history --json` prints it, the unit of throughput, and its rows laid
//! out ([`crate::render::filters::history::rows_of`]).

use crate::render::filters::history::{HistoryRows, Point, RowsOptions, rows_of};
use crate::render::text::plain;
use crate::views::units::Units;
use archive::history::{History, SeriesOrder};
use serde::Serialize;

/// What the `history` template is given. The history is handed over as
/// it is: a detour through a JSON tree would build and drop a map per
/// point.
#[derive(Debug, Serialize)]
pub struct HistoryContext<'a> {
    /// The history.
    #[serde(flatten)]
    pub history: &'a History,
    /// netperf's `-f` letter of throughput.
    pub units: &'static str,
    /// The unit of throughput as a column head names it (`10^6bits/s`).
    pub unit_name: &'static str,
    /// The rows of the table, laid out, with the widths of its heads.
    pub table: HistoryRows,
}

impl<'a> HistoryContext<'a> {
    /// The context of `history`, throughput in `units`.
    pub fn new(history: &'a History, units: Units) -> HistoryContext<'a> {
        let time_order = history.order == SeriesOrder::Time;
        let points: Vec<Point> = history
            .points
            .iter()
            .map(|point| {
                let label = if time_order {
                    run_record::time::for_people(&point.label)
                } else {
                    point.label.clone()
                };
                Point {
                    label: plain(&label).into_owned(),
                    n_samples: point.n_samples.to_string(),
                    mean: point.mean,
                    spread_pct: point.spread_pct,
                    change: point
                        .change
                        .as_ref()
                        .map(|change| (change.change_pct, change.p_value)),
                }
            })
            .collect();
        let options = RowsOptions {
            time_order,
            unit: history.unit.clone(),
            throughput_divisor: units.bits_per_s(),
            min_mean: history.min_mean,
            max_mean: history.max_mean,
            n_change_points: history.n_change_points,
        };
        HistoryContext {
            history,
            units: units.letter,
            unit_name: units.name,
            table: rows_of(&points, &options),
        }
    }
}
