//! How a server runs and what it reports: its configuration with the
//! defaults `netbisect serve` documents, its events, and which of them
//! reach the sink and how many.

use crate::auth::Token;
use crate::protocol::PortRange;
use run_record::spec::AddressFamily;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// How a server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address of the control listener.
    pub listen: SocketAddr,
    /// Pre-shared token clients must prove they hold.
    pub token: Option<Token>,
    /// Serve without a token beyond loopback.
    pub no_auth: bool,
    /// Ports for data sockets when the client names none.
    pub data_ports: Option<PortRange>,
    /// Most clients served at once.
    pub max_clients: usize,
    /// Longest wait for a control frame between tests.
    pub control_timeout: Duration,
    /// Longest wait for any one data operation, and slack past a test's
    /// length before the server gives up on it.
    pub io_timeout: Duration,
    /// Longest time from connect to the end of the handshake (hello and,
    /// with a token, auth).
    pub pre_auth_timeout: Duration,
    /// Most connections in their handshake at once, from any addresses;
    /// beyond, the oldest makes room.
    pub max_pre_auth: usize,
    /// Most bytes of message buffers one test may ask for.
    pub max_test_memory: u64,
    /// Most bytes of message buffers all tests together may hold.
    pub max_total_memory: u64,
    /// Which events reach the event sink.
    pub event_level: EventLevel,
    /// How many events a second reach the event sink (`None`: all).
    pub event_limit: Option<EventLimit>,
}

/// Default for [`ServerConfig::max_clients`].
pub const DEFAULT_MAX_CLIENTS: usize = 64;
/// Default for [`ServerConfig::control_timeout`].
pub const DEFAULT_CONTROL_TIMEOUT: Duration = Duration::from_secs(30);
/// Default for [`ServerConfig::io_timeout`].
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`ServerConfig::pre_auth_timeout`].
pub const DEFAULT_PRE_AUTH_TIMEOUT: Duration = Duration::from_secs(5);
/// Default for [`ServerConfig::max_pre_auth`]: a socket and a few hundred
/// bytes each.
pub const DEFAULT_MAX_PRE_AUTH: usize = 1024;
/// Default for [`ServerConfig::max_test_memory`]: 256 MiB.
pub const DEFAULT_MAX_TEST_MEMORY: u64 = 256 << 20;
/// Default for [`ServerConfig::max_total_memory`]: 1 GiB.
pub const DEFAULT_MAX_TOTAL_MEMORY: u64 = 1 << 30;

impl ServerConfig {
    /// A server on `listen` with default limits and no token.
    pub fn new(listen: SocketAddr) -> ServerConfig {
        ServerConfig {
            listen,
            token: None,
            no_auth: false,
            data_ports: None,
            max_clients: DEFAULT_MAX_CLIENTS,
            control_timeout: DEFAULT_CONTROL_TIMEOUT,
            io_timeout: DEFAULT_IO_TIMEOUT,
            pre_auth_timeout: DEFAULT_PRE_AUTH_TIMEOUT,
            max_pre_auth: DEFAULT_MAX_PRE_AUTH,
            max_test_memory: DEFAULT_MAX_TEST_MEMORY,
            max_total_memory: DEFAULT_MAX_TOTAL_MEMORY,
            event_level: EventLevel::All,
            event_limit: None,
        }
    }

    /// A server on the loopback address of `family`, on any free port.
    pub fn loopback(family: AddressFamily) -> ServerConfig {
        let ip = match family {
            AddressFamily::Ipv4 => IpAddr::V4(Ipv4Addr::LOCALHOST),
            AddressFamily::Ipv6 => IpAddr::V6(Ipv6Addr::LOCALHOST),
        };
        ServerConfig::new(SocketAddr::new(ip, 0))
    }
}

/// Which events reach the sink.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventLevel {
    /// Every event.
    #[default]
    All,
    /// What an operator must see: the listener, refusals and the counts
    /// of what was not logged ([`ServerEvent::is_notice`]).
    Notices,
}

/// How many events reach the sink: a bucket of `burst` events, refilled
/// at `per_second`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventLimit {
    /// Events let through at once, before the rate applies.
    pub burst: u32,
    /// Events let through a second after that.
    pub per_second: u32,
}

/// The limit `netbisect serve` logs with: 20 events at once, then 10 a
/// second.
pub const DEFAULT_EVENT_LIMIT: EventLimit = EventLimit {
    burst: 20,
    per_second: 10,
};

/// Something the server did, for its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// The listener is up.
    Listening(SocketAddr),
    /// A client connected.
    Connected(SocketAddr),
    /// A client was refused: bad or missing token, wrong version, busy.
    Refused {
        /// The client.
        peer: SocketAddr,
        /// Why.
        reason: String,
    },
    /// A request was answered with an error frame; the session went on.
    Rejected {
        /// The client.
        peer: SocketAddr,
        /// The error sent.
        message: String,
    },
    /// A test iteration's data phase is about to start.
    Started {
        /// The client.
        peer: SocketAddr,
        /// The test's name.
        test: &'static str,
    },
    /// A test iteration completed.
    Tested {
        /// The client.
        peer: SocketAddr,
        /// The test's name.
        test: &'static str,
    },
    /// The session ended cleanly.
    Closed(SocketAddr),
    /// The session was dropped.
    Dropped {
        /// The client.
        peer: SocketAddr,
        /// Why.
        reason: String,
    },
    /// Events left out by the rate limit
    /// ([`ServerConfig::event_limit`]) since the last such count.
    NotLogged {
        /// How many of each kind ([`ServerEvent::kind`]), by kind.
        counts: Vec<(&'static str, u64)>,
        /// The time they were left out over.
        over: Duration,
    },
}

impl ServerEvent {
    /// The event's kind in a word, as [`ServerEvent::NotLogged`] counts
    /// them.
    pub fn kind(&self) -> &'static str {
        match self {
            ServerEvent::Listening(_) => "listening",
            ServerEvent::Connected(_) => "connected",
            ServerEvent::Refused { .. } => "refused",
            ServerEvent::Rejected { .. } => "rejected",
            ServerEvent::Started { .. } => "started",
            ServerEvent::Tested { .. } => "done",
            ServerEvent::Closed(_) => "closed",
            ServerEvent::Dropped { .. } => "dropped",
            ServerEvent::NotLogged { .. } => "not logged",
        }
    }

    /// True for what an operator must see even when the rest is not
    /// logged: the listener, refusals, and counts of what was not logged.
    pub fn is_notice(&self) -> bool {
        matches!(
            self,
            ServerEvent::Listening(_) | ServerEvent::Refused { .. } | ServerEvent::NotLogged { .. }
        )
    }
}

impl fmt::Display for ServerEvent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerEvent::Listening(address) => write!(formatter, "listening on {address}"),
            ServerEvent::Connected(peer) => write!(formatter, "{peer}: connected"),
            ServerEvent::Refused { peer, reason } => write!(formatter, "{peer}: refused: {reason}"),
            ServerEvent::Rejected { peer, message } => {
                write!(formatter, "{peer}: request rejected: {message}")
            }
            ServerEvent::Started { peer, test } => write!(formatter, "{peer}: {test} started"),
            ServerEvent::Tested { peer, test } => write!(formatter, "{peer}: {test} done"),
            ServerEvent::Closed(peer) => write!(formatter, "{peer}: closed"),
            ServerEvent::Dropped { peer, reason } => write!(formatter, "{peer}: dropped: {reason}"),
            ServerEvent::NotLogged { counts, over } => {
                let total: u64 = counts.iter().map(|(_, count)| count).sum();
                let each: Vec<String> = counts
                    .iter()
                    .map(|(kind, count)| format!("{count} {kind}"))
                    .collect();
                let events = if total == 1 { "event" } else { "events" };
                write!(
                    formatter,
                    "{total} {events} not logged over the last {:.1} s: {}",
                    over.as_secs_f64(),
                    each.join(", ")
                )
            }
        }
    }
}

/// Where server events go.
pub type EventSink = Arc<dyn Fn(&ServerEvent) + Send + Sync>;

/// An event sink that discards everything.
pub fn quiet() -> EventSink {
    Arc::new(|_: &ServerEvent| {})
}
