//! What a flow counts at one end, turned into its [`EndReport`], and the
//! clock the client's loops read once per transaction.

use super::{DataError, io_error};
use run_record::record::{EndReport, SocketTruth};
use run_record::spec::TestKind;
use rustix::io::Errno;
use rustix::time::{ClockId, clock_gettime};
use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

/// Counters of one flow at one end, turned into an [`EndReport`] at the
/// end.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) bytes_sent: u64,
    pub(crate) bytes_received: u64,
    pub(crate) messages_sent: u64,
    pub(crate) messages_received: u64,
    pub(crate) transactions: u64,
    pub(crate) timeouts: u64,
    /// Failed sends by errno name; an entry is made on a kind's first
    /// failure only, so the hot loop does not allocate.
    pub(crate) send_errors: BTreeMap<&'static str, u64>,
}

impl Counters {
    /// The report of the flow, counted over `elapsed`.
    pub(crate) fn report(
        self,
        test: TestKind,
        elapsed: Duration,
        socket: SocketTruth,
    ) -> EndReport {
        EndReport {
            elapsed_s: elapsed.as_secs_f64(),
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            messages_sent: self.messages_sent,
            messages_received: self.messages_received,
            transactions: test.is_request_response().then_some(self.transactions),
            timeouts: (test == TestKind::UdpRr).then_some(self.timeouts),
            send_errors: self
                .send_errors
                .into_iter()
                .map(|(name, count)| (name.to_string(), count))
                .collect(),
            socket,
            tcp_info: None,
        }
    }
}

/// Counts a failed UDP send that does not end the test: the kernel
/// dropped the datagram at the sender (`ENOBUFS`: a device queue was
/// full; `EAGAIN`: no send buffer within the timeout). netperf counts the
/// first in its "Errors" column and so do we, by errno. Any other error
/// is returned.
pub(crate) fn count_send_error(counters: &mut Counters, err: io::Error) -> Result<(), DataError> {
    let name = match err.raw_os_error() {
        Some(code) if code == Errno::NOBUFS.raw_os_error() => "ENOBUFS",
        Some(code) if code == Errno::AGAIN.raw_os_error() => "EAGAIN",
        _ if err.kind() == io::ErrorKind::Interrupted => return Ok(()),
        _ => return Err(io_error("send")(err)),
    };
    match counters.send_errors.get_mut(name) {
        Some(count) => *count += 1,
        None => {
            counters.send_errors.insert(name, 1);
        }
    }
    Ok(())
}

/// The monotonic clock (the one `Instant` reads), nanoseconds: read
/// once per transaction, so without `Instant`'s checked arithmetic.
#[inline]
pub(crate) fn clock_ns() -> u64 {
    // A vDSO call, as the C library's is.
    let now = clock_gettime(ClockId::Monotonic);
    (now.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(now.tv_nsec as u64)
}
