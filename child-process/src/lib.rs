//! child-process: the commands netbisect runs and the signals that stop
//! them, in one small room that every part needing either shares (the
//! bisect engine's build and measure commands, the VM runner's qemu,
//! `bench` and `verdict`, bench-core's UDP_RR loop and the host settings
//! it puts back at a signal).
//!
//! - [`interrupt`]: one watcher of SIGINT and SIGTERM per process, which
//!   kills the process group of every child being run and remembers the
//!   signal for the code that journals and stops; or ends the process at
//!   once with exit code 130.
//! - [`group`]: a child leading a process group of its own, killed whole.
//! - [`runner`]: `sh -c` commands with a timeout that kills their whole
//!   group, their output read while they run.
//! - [`wake`]: a signal that interrupts one thread's blocked system call
//!   (bench-core's UDP_RR loss timer).
//!
//! Architecture invariant: no other crate of the workspace installs a
//! signal handler or depends on signal-hook; the binary installs the
//! watcher once, with the mode its command needs.
//!
//! # Example
//!
//! ```
//! use child_process::runner::{CommandOutcome, run_command};
//! use std::time::Duration;
//!
//! let dir = std::env::temp_dir();
//! let outcome = run_command("echo ready", &dir, &[], Some(Duration::from_secs(10)))?;
//! let CommandOutcome::Exited { code, stdout, .. } = outcome else {
//!     panic!("timed out");
//! };
//! assert_eq!((code, stdout.as_slice()), (Some(0), &b"ready\n"[..]));
//! # Ok::<(), child_process::runner::RunnerError>(())
//! ```

#![deny(missing_docs)]

pub mod group;
pub mod interrupt;
pub mod runner;
pub mod wake;
