//! bench-core: everything that touches a socket, a clock or the host,
//! producing the run records of [`run_record`].
//!
//! - [`host`]: this host's state (/proc, /sys, rtnetlink, ethtool) read
//!   into the record's environment, and the interface a test uses;
//!   [`host::settings`] makes the settings a spec asks of it and puts
//!   them back.
//! - [`protocol`]: the control protocol between client and server.
//! - [`auth`]: the pre-shared token and its challenge-response.
//! - [`sockets`]: socket set-up, buffer truth, `TCP_INFO`, CPU pinning.
//! - [`cpu`]: CPU utilisation from `/proc/stat`, the tool's own CPU time,
//!   service demand.
//! - [`latency`]: the latency histogram of request/response tests.
//! - [`iterate`]: repeating iterations until a confidence interval is
//!   reached.
//! - [`datapath`]: what the data phases of both ends share.
//! - [`server`]: `netbisect serve`, the remote end, and its data phase.
//! - [`client`]: the client's control session, iterations and data phase.
//! - [`run`]: a whole run, from spec to sealed record.
//!
//! The record and what describes a run (`record`, `canonical`, `spec`,
//! `env`, `kernel`, `time`, `stats`) live in the run-record crate.
//!
//! Architecture invariant: bench-core depends on no crate of this workspace
//! but run-record and child-process (for the UDP_RR loop's wake-up and for
//! putting the host's settings back at a signal), and knows nothing of
//! SQLite, PostgreSQL, git or templates.
//!
//! # Example
//!
//! A quarter-second `TCP_RR` test against a server that the run starts in
//! the process, on loopback; the sealed record reads back whole from its
//! canonical bytes.
//!
//! ```
//! use run_record::record::RunRecord;
//! use bench_core::run::{BenchRequest, bench};
//! use run_record::spec::{RunSpec, TestKind};
//!
//! let mut spec = RunSpec::defaults(TestKind::TcpRr);
//! spec.duration_s = 0.25;
//! let request = BenchRequest {
//!     spec,
//!     // No server given: one runs in-process on loopback.
//!     server: None,
//!     subject: Default::default(),
//!     testbed: "loopback".to_string(),
//!     interim: None,
//! };
//! let record = bench(&request)?;
//! assert!(record.iterations[0].transaction_rate.unwrap() > 0.0);
//! let bytes = record.to_canonical_bytes()?;
//! assert_eq!(RunRecord::from_slice(&bytes)?, record);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod host;

pub mod auth;
pub mod client;
pub mod cpu;
pub mod datapath;
pub mod iterate;
pub mod latency;
pub mod protocol;
pub mod run;
pub mod server;
pub mod sockets;
mod watchdog;
