//! Connecting to PostgreSQL within a bound: the whole start-up (the
//! TCP connect, TLS if any, authentication and the first query) ends
//! within the address's `connect_timeout` per host, or is an error
//! naming the server and the phase it was in.
//!
//! The client bounds only its TCP connect; a server that accepts and
//! then says nothing would hold its start-up forever, and the sync
//! client cannot be interrupted. So the start-up runs on a thread of its
//! own, which this side waits for with a deadline; the client's TLS hook
//! (`connect/tls.rs`), which it calls once a socket is connected, marks the
//! phase. Under `sslmode=prefer` a failed TLS handshake is followed by
//! an attempt without TLS, as libpq makes one, within the same bound.
//! A start-up given up is left to end by itself (the client and its
//! socket are dropped when the server answers or closes the connection,
//! or when the process exits: a PostgreSQL server ends a start-up after
//! its `authentication_timeout`, a minute by default).
//!
//! The first query asks for the session's process id, by which the
//! lock watcher (`watch.rs`) finds the session among the server's.

use crate::ArchiveError;
use crate::location::{ServerAddress, SslMode};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use tls::{Connector, TlsError};

mod tls;

/// A session whose start-up is over.
pub(super) struct Connected {
    /// The client.
    pub client: postgres::Client,
    /// The server's process id of the session.
    pub backend_pid: i32,
}

/// Where a start-up is, as its error names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    /// Resolving the host and connecting the socket.
    Connecting = 0,
    /// The start-up exchange: the start-up message and the
    /// authentication, until the server says it is ready.
    StartUp = 1,
    /// The TLS handshake, within the start-up exchange.
    Tls = 2,
    /// The first query of the session.
    FirstQuery = 3,
}

impl Phase {
    fn of(value: u8) -> Phase {
        match value {
            0 => Phase::Connecting,
            1 => Phase::StartUp,
            2 => Phase::Tls,
            _ => Phase::FirstQuery,
        }
    }

    /// What did not happen within the bound, in words.
    fn missing(self) -> &'static str {
        match self {
            Phase::Connecting => "no connection",
            Phase::StartUp => "no answer to the start-up and authentication",
            Phase::Tls => "no end to the TLS handshake",
            Phase::FirstQuery => "no answer to the first query",
        }
    }
}

/// Connects to `address` and makes the session's first query, within
/// its start-up bound: `connect_timeout` for each host it names (as
/// libpq gives each host its own), no bound when that is 0.
pub(super) fn connect(address: &ServerAddress) -> Result<Connected, ArchiveError> {
    let phase = Arc::new(AtomicU8::new(Phase::Connecting as u8));
    let (sender, receiver) = mpsc::sync_channel(1);
    let mut config = address.config().clone();
    let connector = Connector::new(address.tls(), Arc::clone(&phase))
        .map_err(|err| server_error(address, err.to_string()))?;
    let fall_back_to_plain = address.tls().mode == SslMode::Prefer;
    let start_up_phase = Arc::clone(&phase);
    let spawned = std::thread::Builder::new()
        .name("netbisect-pg-connect".to_string())
        .spawn(move || {
            let client = config.connect(connector.clone()).or_else(|err| {
                if !(fall_back_to_plain && tls_error_of(&err).is_some()) {
                    return Err(err);
                }
                config.ssl_mode(postgres::config::SslMode::Disable);
                config.connect(connector)
            });
            let connected = client.and_then(|mut client| {
                start_up_phase.store(Phase::FirstQuery as u8, Ordering::SeqCst);
                let backend_pid: i32 = client
                    .query_typed_one("SELECT pg_backend_pid()", &[])?
                    .try_get(0)?;
                Ok(Connected {
                    client,
                    backend_pid,
                })
            });
            // The receiver is gone when the start-up was given up.
            let _ = sender.send(connected);
        });
    if let Err(err) = spawned {
        return Err(server_error(
            address,
            format!("cannot start connecting: {err}"),
        ));
    }
    let bound = address.timeouts().start_up.map(|per_host| {
        let n_hosts = u32::try_from(address.config().get_hosts().len().max(1)).unwrap_or(1);
        per_host.saturating_mul(n_hosts)
    });
    let received = match bound {
        Some(bound) => receiver.recv_timeout(bound).map_err(|err| match err {
            mpsc::RecvTimeoutError::Timeout => Some(bound),
            mpsc::RecvTimeoutError::Disconnected => None,
        }),
        None => receiver.recv().map_err(|_| None),
    };
    match received {
        Ok(connected) => connected.map_err(|err| ArchiveError::Server {
            address: address.to_string(),
            detail: super::connect_failure(&err).to_string(),
            source: Some(err),
        }),
        Err(Some(bound)) => {
            let phase = Phase::of(phase.load(Ordering::SeqCst));
            Err(ArchiveError::StartUpTimedOut {
                address: address.to_string(),
                detail: format!(
                    "{} within {} (connect_timeout)",
                    phase.missing(),
                    seconds_text(bound)
                ),
            })
        }
        Err(None) => Err(server_error(
            address,
            "the start-up ended without a result".to_string(),
        )),
    }
}

/// The TLS failure beneath a client's error, if it is one.
pub(super) fn tls_error_of(err: &postgres::Error) -> Option<&TlsError> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = cause {
        if let Some(tls_error) = current.downcast_ref::<TlsError>() {
            return Some(tls_error);
        }
        cause = current.source();
    }
    None
}

/// An [`ArchiveError::Server`] of `address` without a client error.
fn server_error(address: &ServerAddress, detail: String) -> ArchiveError {
    ArchiveError::Server {
        address: address.to_string(),
        detail,
        source: None,
    }
}

/// `duration` in seconds, as a person reads a bound: `10 s`, `2.5 s`.
fn seconds_text(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds.fract() == 0.0 {
        format!("{seconds:.0} s")
    } else {
        format!("{seconds:.1} s")
    }
}
