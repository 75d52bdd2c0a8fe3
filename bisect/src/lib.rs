//! bisect: statistical, resumable bisection of a git range.
//!
//! What a bisection is made of, from the leaves up:
//!
//! - [`graph`]: the range as a commit graph and git's choice of the next
//!   commit, independent of git itself.
//! - [`config`]: the options of a bisection ([`BisectConfig`]).
//! - [`robust`]: estimates of location and scale (Huber, winsorised
//!   pooled scale; the methods are cited there).
//! - [`decision`]: the sequential good/bad test at each step (the method
//!   is cited there); [`ends`]: whether the two ends differ enough to
//!   bisect.
//! - [`posterior`]: the probabilistic bisection's posterior over the
//!   culprit and its choice of the next commit (the method is cited
//!   there).
//! - [`measurement`]: what measuring a commit gives, and the [`Measurer`]
//!   trait the engine measures through.
//! - [`journal`]: the events that make a bisection resumable, behind the
//!   [`Journal`] trait.
//! - [`estimate`], [`progress`], [`report`], [`error`]: what a bisection
//!   tells: the estimate of its cost, where it stands, how it ended, why
//!   it stopped.
//! - [`engine`]: a bisection from start to end, [`engine::run`] and
//!   [`engine::status`]; inside, a deterministic state machine, the
//!   journal's replay and the loop that feeds the machine, so the same
//!   engine runs against real commits and against simulated histories.
//!   [`engine::run_jobs`] keeps K measurements in flight on the slots of
//!   a [`measurement::SlotMeasurer`]; [`schedule`] says where each goes.
//! - [`sim`]: simulated noisy histories, the engine run over them, and a
//!   naive bisection to compare.
//! - [`head`]: detection at the head of a tracked branch: a change
//!   suspected after each new point, confirmed by measuring the head and
//!   the last point before it again as the ends are measured; [`head::sim`]
//!   follows simulated branches with it.
//! - [`plan`]: how many measurements and how much time a bisection will
//!   take, from the simulator, before it runs.
//! - [`range`]: the git side: open the repository, resolve revisions, load
//!   the range (git2).
//! - [`worktree`]: the linked worktree steps are built and measured in.
//! - [`fetch`]: a tracked branch fetched from a remote into a ref of
//!   netbisect's own.
//! - [`measure`]: a [`Measurer`] from the user's build and measure
//!   commands (run by `child_process::runner`) and run records.
//!
//! Architecture invariant: bisect knows nothing of the archive, SQLite,
//! the command line or templates. It takes measurements and keeps its
//! journal through traits that the command-line tool implements.
//!
//! Architecture invariant: no module uses a module that uses it back. The
//! engine uses the planner (for the estimate of the rest), the planner
//! the simulator, and the simulator only the engine's inner loop, not the
//! engine.
//!
//! # Example
//!
//! The engine over a straight range of 16 commits whose throughput drops
//! by 10% from `c11` on, measured with 2% noise by a [`Measurer`] of our
//! own (the command-line tool's builds and runs each commit instead).
//!
//! ```
//! use bisect::decision::DecisionConfig;
//! use run_record::record::Direction;
//! use bisect::engine;
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

pub mod config;
pub mod decision;
pub mod ends;
pub mod engine;
pub mod error;
pub mod estimate;
pub mod fetch;
pub mod graph;
pub mod head;
pub mod journal;
mod machine;
pub mod measure;
pub mod measurement;
mod parallel;
pub mod plan;
pub mod posterior;
pub mod progress;
pub mod range;
mod replay;
pub mod report;
pub mod robust;
pub mod schedule;
pub mod sim;
pub mod worktree;

pub use config::BisectConfig;
pub use journal::{Journal, JournalEvent};
pub use measurement::{Measurement, Measurer, Sample};
pub use report::Outcome;
