//! What each built-in template is given: its context, one module per
//! template, named as the template is. A context holds the data the
//! command works on (the record, the comparison, the report, as `--json`
//! prints them) and, beside it, what Rust computes for the page.
//!
//! The contexts are the interface of `--template-dir`, versioned by
//! [`crate::render::CONTEXT_VERSION`]: a user's template of the same name
//! is given the same context (see ARCHITECTURE.md, "Template contexts").
//! Templates keep the words; widths, sums, units and marks are computed
//! here. `samples` (tests only) makes every template's sample contexts
//! from these types.

pub mod archive_list;
pub mod archive_prune;
pub mod bisect_report;
pub mod bisect_status;
pub mod bisection;
pub mod compare;
pub mod compare_stats;
pub mod env;
pub mod history;
pub mod lab;
pub mod plan;
pub mod run;
#[cfg(test)]
pub mod samples;
pub mod sweep;
pub mod units;
