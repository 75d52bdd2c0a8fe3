//! The context of `history`: the archive's history of one metric, as
//! `history --json` prints it, and the unit of throughput.

use archive::history::History;
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
    pub units: &'a str,
}
