//! bench-core: everything that touches a socket or a clock, and the one
//! document every other part of netbisect works on.
//!
//! - [`record`]: the canonical run record (`netbisect.run/1.1`), its id and
//!   its `config_key`.
//! - [`canonical`]: RFC 8785 (JCS) bytes with the checks JSON numbers need.
//! - [`spec`]: the resolved test specification.
//! - [`env`](mod@env): the state of a host that moves network numbers.
//! - [`kernel`]: what a kernel release string says about its commit.
//! - [`time`]: absolute times as RFC 3339 strings.
//! - [`stats`]: the statistics every part of netbisect shares.
//! - [`protocol`]: the control protocol between client and server.
//! - [`auth`]: the pre-shared token and its challenge-response.
//! - [`sockets`]: socket set-up, buffer truth, `TCP_INFO`, CPU pinning.
//! - [`cpu`]: CPU utilisation from `/proc/stat`, the tool's own CPU time,
//!   service demand.
//! - [`latency`]: the latency histogram of request/response tests.
//! - [`iterate`]: repeating iterations until a confidence interval is
//!   reached.
//! - [`datapath`]: the data phase of every test, both ends.
//! - [`server`]: `netbisect serve`, the remote end.
//! - [`client`]: the client's control session and iterations.
//! - [`run`]: a whole run, from spec to sealed record.
//!
//! Architecture invariant: bench-core depends on no other crate of this
//! workspace and knows nothing of SQLite, git or templates.
//!
//! # Example
//!
//! A quarter-second `TCP_RR` test against a server that the run starts in
//! the process, on loopback; the sealed record reads back whole from its
//! canonical bytes.
//!
//! ```
//! use bench_core::record::RunRecord;
//! use bench_core::run::{BenchRequest, bench};
//! use bench_core::spec::{RunSpec, TestKind};
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

pub mod canonical;
pub mod env;
pub mod kernel;
pub mod record;
pub mod spec;
pub mod stats;
pub mod time;

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
