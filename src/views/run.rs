//! The context of `run`: one run in netperf's classic layout, as `bench`
//! prints it when the run ends and `archive show` prints it again.

use run_record::record::RunRecord;
use serde::Serialize;

/// What the `run` template is given.
#[derive(Debug, Serialize)]
pub struct RunContext<'a> {
    /// The canonical run record.
    pub record: &'a RunRecord,
    /// netperf's `-f` letter of throughput.
    pub units: &'a str,
    /// False for netperf's `-P 0`: no banner and no column headers.
    pub banner: bool,
    /// False when the run was kept out of the archive (said next to its
    /// id, which `archive show` would not find).
    pub stored: bool,
}
