//! What the accept loop and the sessions share: the configuration, the
//! event log, the session and memory counts.

use super::config::ServerConfig;
use super::log::EventLog;
use std::sync::atomic::{AtomicU64, AtomicUsize};

/// The server's state, shared by its threads.
pub(super) struct Shared {
    pub(super) config: ServerConfig,
    pub(super) log: EventLog,
    /// Authenticated sessions.
    pub(super) active: AtomicUsize,
    /// Bytes of message buffers reserved by tests running now.
    pub(super) memory_in_use: AtomicU64,
}

/// A message that names the thread limit, for a thread that could not be
/// started.
pub(super) fn thread_error(what: &str, err: &std::io::Error) -> String {
    format!(
        "cannot start a thread for {what}: {err} (the process or cgroup thread limit, \
         ulimit -u or pids.max, is reached)"
    )
}
