//! A lab that runs itself: what `track`, `worker` and `regressions`
//! share. No scheduler and no broker of netbisect's own: the queue, the
//! regressions and the outbox are tables of the archive the lab already
//! shares (`archive::lab`), and the processes meet there.
//!
//! - [`job`]: the documents beside the queue: what a tracker watches, a
//!   job's payload and its result.
//! - [`plan`]: one look of a tracker at its branch, a pure function of
//!   what the archive holds: which commits to measure, which suspicion
//!   at the head to confirm, which regression to open or mark fixed.
//! - [`tracker`]: the looks, done (jobs put in, regressions opened), the
//!   bisections driven, the reports sent.
//! - [`drive`] and [`slots`]: a regression's bisection, bisect's engine
//!   with the queue's jobs as its slots.
//! - [`notify`]: the outbox's sender, the report on a command's stdin.
//! - [`worker`]: a testbed's worker: a job taken, done, stored under its
//!   lease.
//! - [`status`]: the lab as `track status` and `regressions` show it.

pub mod drive;
pub mod job;
pub mod notify;
pub mod plan;
pub mod slots;
pub mod status;
pub mod tracker;
pub mod worker;
