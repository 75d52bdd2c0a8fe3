//! What the accept loop and the sessions share: the configuration, the
//! event sink, the session and memory counts, the handshake table.

use super::config::{EventSink, ServerConfig};
use std::net::{IpAddr, TcpStream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::Instant;

/// The server's state, shared by its threads.
pub(super) struct Shared {
    pub(super) config: ServerConfig,
    pub(super) events: EventSink,
    /// Authenticated sessions.
    pub(super) active: AtomicUsize,
    /// Connections still in their handshake, oldest first.
    pub(super) pre_auth: Mutex<Vec<PreAuth>>,
    /// Id of the next connection.
    pub(super) next_id: AtomicU64,
    /// Bytes of message buffers reserved by tests running now.
    pub(super) memory_in_use: AtomicU64,
}

/// A connection in its handshake; the stream is a handle to close it by.
pub(super) struct PreAuth {
    pub(super) id: u64,
    pub(super) ip: IpAddr,
    pub(super) stream: TcpStream,
    pub(super) since: Instant,
}

/// A message that names the thread limit, for a thread that could not be
/// started.
pub(super) fn thread_error(what: &str, err: &std::io::Error) -> String {
    format!(
        "cannot start a thread for {what}: {err} (the process or cgroup thread limit, \
         ulimit -u or pids.max, is reached)"
    )
}
