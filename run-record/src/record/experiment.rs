//! The experiment a run belongs to (`netbisect ab`): the record's
//! `experiment` member (since 1.2), so that an experiment's runs are found
//! as its own after import, export and merge, whatever their labels. It
//! stays out of the config_key: the runs of two experiments of the same
//! configuration compare.

use serde::{Deserialize, Serialize};

/// An experiment's id and the round a run was measured in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExperimentTag {
    /// The experiment's id (hex).
    pub id: String,
    /// The round, from 1.
    pub round: u32,
}
