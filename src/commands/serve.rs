//! `netbisect serve`: the remote end of tests, until killed. Each event
//! (listening, clients, refusals, rejected requests) is a line on stderr,
//! at most 20 at once and 10 a second after that; what a flood leaves out
//! is counted, by kind, at most once a second. With `--quiet`, only the
//! listener, refusals and those counts.

use crate::cli::ServeArgs;
use crate::exit::{self, Code, Context, InputError};
use crate::global_options::GlobalOptions;
use bench_core::auth::Token;
use bench_core::server::{DEFAULT_EVENT_LIMIT, EventLevel, Server, ServerConfig, ServerEvent};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Descriptors the server may need at once: a socket per handshake place,
/// and per session its control connection and a few data sockets.
fn descriptors_needed(args: &ServeArgs) -> u64 {
    let sessions = args.max_clients.max(1) as u64;
    args.max_handshakes as u64 + sessions * 8 + 64
}

/// Raises the soft limit on open descriptors towards `wanted`, within
/// the hard limit, as servers do: a soft limit of 1024 would not hold
/// the default handshake places. Where it cannot be raised, the server
/// makes room by closing the oldest handshake when it runs out.
fn raise_descriptor_limit(wanted: u64) {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    if limit.current.is_some_and(|soft| soft < wanted) {
        limit.current = Some(wanted.min(hard));
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

pub fn run(global: &GlobalOptions, args: &ServeArgs) -> exit::Result<Code> {
    let mut config = ServerConfig::new(SocketAddr::new(args.listen, args.port));
    if let Some(path) = &args.token_file {
        config.token = Some(Token::from_file(path).map_err(|err| InputError(err.to_string()))?);
    }
    config.no_auth = args.no_auth;
    config.data_ports = args.data_port;
    config.max_clients = args.max_clients.max(1);
    config.max_pre_auth = args.max_handshakes;
    config.control_timeout = Duration::from_secs_f64(args.timeout);
    config.max_test_memory = args.max_test_memory.saturating_mul(1 << 20);
    config.max_total_memory = args.max_total_memory.saturating_mul(1 << 20);
    config.event_level = if global.quiet() {
        EventLevel::Notices
    } else {
        EventLevel::All
    };
    config.event_limit = Some(DEFAULT_EVENT_LIMIT);
    let events = Arc::new(move |event: &ServerEvent| {
        let _ = writeln!(std::io::stderr().lock(), "netbisect serve: {event}");
    });
    let server = Server::bind(config, events).map_err(|err| match err {
        bench_core::server::ServerError::TokenRequired(_) => {
            exit::Failure::from(InputError(err.to_string()))
        }
        other => exit::Failure::from(other),
    })?;
    raise_descriptor_limit(descriptors_needed(args));
    server.serve(&AtomicBool::new(false));
    std::io::stderr()
        .flush()
        .context("failed to write to stderr")?;
    Ok(Code::Ok)
}
