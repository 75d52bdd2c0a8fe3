//! bisect: statistical, resumable bisection of a git range.
//!
//! - [`graph`]: the range as a commit graph and git's choice of the next
//!   commit, independent of git itself.
//! - [`decision`]: the sequential good/bad test at each step (the method
//!   is cited there).
//! - [`posterior`]: the probabilistic bisection's posterior over the
//!   culprit and its choice of the next commit (the method is cited
//!   there).
//! - [`engine`]: the state machine; it measures through [`Measurer`] and
//!   keeps its journal through [`Journal`], so the same engine runs
//!   against real commits and against simulated histories.
//! - [`journal`]: the events that make a bisection resumable.
//! - [`report`]: the end of a bisection as serialisable data.
//! - [`sim`]: simulated noisy histories and a naive bisection to compare.
//! - [`plan`]: how many measurements and how much time a bisection will
//!   take, from the simulator, before it runs.
//! - [`range`]: the git side: open the repository, resolve revisions, load
//!   the range (git2).
//! - [`worktree`]: the linked worktree steps are built and measured in.
//! - [`runner`]: build and measure commands with a timeout that kills the
//!   whole process group.
//! - [`measure`]: a [`Measurer`] from those commands and run records.
//! - [`interrupt`]: SIGINT and SIGTERM kill the running command's group.
//!
//! Architecture invariant: bisect knows nothing of the archive, SQLite,
//! the command line or templates. It takes measurements and keeps its
//! journal through traits that the command-line tool implements.
#![deny(missing_docs)]

pub mod decision;
pub mod engine;
pub mod graph;
pub mod interrupt;
pub mod journal;
pub mod measure;
pub mod plan;
pub mod posterior;
pub mod range;
pub mod report;
pub mod runner;
pub mod sim;
pub mod worktree;

pub use engine::{BisectConfig, Measurement, Measurer, Outcome, Sample};
pub use journal::{Journal, JournalEvent};
