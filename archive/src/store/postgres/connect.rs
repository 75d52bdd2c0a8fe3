//! Connecting to PostgreSQL within a bound: the whole start-up (the
//! TCP connect, TLS if any, authentication and the first query) ends
//! within the address's `connect_timeout` per host, or is an error
//! naming the server and the phase it was in.
//!
//! The client bounds only its TCP connect; a server that accepts and
//! then says nothing would hold its start-up forever, and the sync
//! client cannot be interrupted. So the start-up runs on a thread of its
//! own, which this side waits for with a deadline; the client's TLS hook,
//! which it calls once a socket is connected, marks the phase. A start-up
//! given up is left to end by itself (the client and its socket are
//! dropped when the server answers or closes the connection, or when the
//! process exits: a PostgreSQL server ends a start-up after its
//! `authentication_timeout`, a minute by default).
//!
//! The first query asks for the session's process id, by which the
//! lock watcher (`watch.rs`) finds the session among the server's.

use crate::ArchiveError;
use crate::location::ServerAddress;
use postgres::Socket;
use postgres::tls::{MakeTlsConnect, NoTls, NoTlsError, NoTlsStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::time::Duration;

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
    /// The start-up exchange: TLS if any, the start-up message and the
    /// authentication, until the server says it is ready.
    StartUp = 1,
    /// The first query of the session.
    FirstQuery = 2,
}

impl Phase {
    fn of(value: u8) -> Phase {
        match value {
            0 => Phase::Connecting,
            1 => Phase::StartUp,
            _ => Phase::FirstQuery,
        }
    }

    /// What did not happen within the bound, in words.
    fn missing(self) -> &'static str {
        match self {
            Phase::Connecting => "no connection",
            Phase::StartUp => "no answer to the start-up and authentication",
            Phase::FirstQuery => "no answer to the first query",
        }
    }
}

/// The client's TLS hook, without TLS: the client calls it once the
/// socket of an attempt is connected, which tells the start-up's phase.
struct PhaseMarker(Arc<AtomicU8>);

impl MakeTlsConnect<Socket> for PhaseMarker {
    type Stream = NoTlsStream;
    type TlsConnect = NoTls;
    type Error = NoTlsError;

    fn make_tls_connect(&mut self, _domain: &str) -> Result<NoTls, NoTlsError> {
        self.0.store(Phase::StartUp as u8, Ordering::SeqCst);
        Ok(NoTls)
    }
}

/// Connects to `address` and makes the session's first query, within
/// its start-up bound: `connect_timeout` for each host it names (as
/// libpq gives each host its own), no bound when that is 0.
pub(super) fn connect(address: &ServerAddress) -> Result<Connected, ArchiveError> {
    let phase = Arc::new(AtomicU8::new(Phase::Connecting as u8));
    let (sender, receiver) = mpsc::sync_channel(1);
    let config = address.config().clone();
    let marker = PhaseMarker(Arc::clone(&phase));
    let start_up_phase = Arc::clone(&phase);
    let spawned = std::thread::Builder::new()
        .name("netbisect-pg-connect".to_string())
        .spawn(move || {
            let connected = config.connect(marker).and_then(|mut client| {
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
            Err(server_error(
                address,
                format!(
                    "{} within {} (connect_timeout)",
                    phase.missing(),
                    seconds_text(bound)
                ),
            ))
        }
        Err(None) => Err(server_error(
            address,
            "the start-up ended without a result".to_string(),
        )),
    }
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
