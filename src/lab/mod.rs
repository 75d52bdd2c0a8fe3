//! A lab that runs itself: what `track`, `worker` and `regressions`
//! share. A tracker looks at its branch over and over ([`plan`]: which
//! commits to measure, which suspicion at the head to confirm, which
//! regression to open); its jobs, its regressions and their reports live
//! in the archive's lab (`archive::lab`), where the workers take the
//! jobs.

pub mod notify;
pub mod plan;
