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
//!
//! # Example
//!
//! The engine over a straight range of 16 commits whose throughput drops
//! by 10% from `c11` on, measured with 2% noise by a [`Measurer`] of our
//! own (the command-line tool's builds and runs each commit instead).
//!
//! ```
//! use bisect::decision::DecisionConfig;
//! use bisect::engine::{self, Direction};
//! use bisect::graph::{CommitGraph, CommitInfo};
//! use bisect::journal::{BoxError, NullJournal};
//! use bisect::report::BisectResult;
//! use bisect::sim::Rng;
//! use bisect::{BisectConfig, Measurement, Measurer, Outcome, Sample};
//!
//! struct Noisy(Rng);
//!
//! impl Measurer for Noisy {
//!     fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError> {
//!         // Commits are named c0 to c15 after the good end, "good".
//!         let index = commit.id.strip_prefix('c').and_then(|n| n.parse::<usize>().ok());
//!         let mean = if index.is_some_and(|index| index >= 11) { 0.9e9 } else { 1e9 };
//!         let value = mean * (1.0 + 0.02 * self.0.normal());
//!         Ok(Measurement::Sample(Sample { value, run_id: None }))
//!     }
//! }
//!
//! let config = BisectConfig {
//!     metric: "throughput_bps".to_string(),
//!     direction: Direction::HigherIsBetter,
//!     decision: DecisionConfig::default(),
//! };
//! let outcome = engine::run(
//!     &CommitGraph::linear(16),
//!     &config,
//!     &mut Noisy(Rng::new(1)),
//!     &mut NullJournal,
//!     &mut |_progress| {},
//! )?;
//! let Outcome::Finished(report) = outcome else {
//!     panic!("the ends were found not to differ");
//! };
//! let BisectResult::FirstBad { commit, .. } = report.result else {
//!     panic!("no single first bad commit");
//! };
//! assert_eq!(commit.id, "c11");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
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
