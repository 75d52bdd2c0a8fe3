//! What the client's data phase is given and what it returns.

use crate::datapath::Interim;
use crate::latency::Histogram;
use run_record::record::{EndReport, HostCpu};
use run_record::spec::RunSpec;
use std::net::SocketAddr;
use std::time::Duration;

/// What the client needs to run its side of one iteration.
pub struct ClientPlan<'a> {
    /// The test.
    pub spec: &'a RunSpec,
    /// The server's data socket of each flow.
    pub servers: &'a [SocketAddr],
    /// Longest wait for any one socket operation.
    pub io_timeout: Duration,
    /// How long a UDP_RR request waits for its response before it counts
    /// as lost.
    pub udp_rr_timeout: Duration,
    /// Interim reports, if any.
    pub interim: Option<Interim<'a>>,
    /// The test's secret, the first bytes of every data connection.
    pub data_secret: &'a [u8],
}

/// The client's side of one iteration.
#[derive(Debug, Default)]
pub struct ClientSide {
    /// Every flow's counts, in the order of [`ClientPlan::servers`].
    pub flows: Vec<EndReport>,
    /// Every flow's transaction times (request/response tests).
    pub latency: Vec<Option<Histogram>>,
    /// The local host's CPU over the counted window (`-c`).
    pub cpu: Option<HostCpu>,
}
