//! bench-core: everything that touches a socket or a clock, and the one
//! document every other part of netbisect works on.
//!
//! - [`record`]: the canonical run record (`netbisect.run/1.1`), its id and
//!   its `config_key`.
//! - [`canonical`]: RFC 8785 (JCS) bytes with the checks JSON numbers need.
//! - [`spec`]: the resolved test specification.
//! - [`env`]: the state of a host that moves network numbers.
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
//! - [`datapath`]: what the data phases of both ends share.
//! - [`server`]: `netbisect serve`, the remote end, and its data phase.
//! - [`client`]: the client's control session, iterations and data phase.
//! - [`run`]: a whole run, from spec to sealed record.
//!
//! Architecture invariant: bench-core depends on no other crate of this
//! workspace and knows nothing of SQLite, git or templates.
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
