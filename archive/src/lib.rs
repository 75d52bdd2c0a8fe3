//! archive: the SQLite store of run records.
//!
//! - [`compare`]: current versus patched, group by group, with a
//!   significance verdict per metric.
//! - [`history`]: a metric across commits (or time) with change points.
//!
//! Comparison and history work on plain slices of run records; the order
//! of commits comes from the caller, so this crate stays free of git.
#![deny(missing_docs)]

pub mod compare;
pub mod history;
