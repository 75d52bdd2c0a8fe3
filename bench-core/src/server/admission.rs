//! Admission to the handshake: places per source address and in all,
//! connections that wait for a place, and the refusal of the rest.

use super::config::ServerEvent;
use super::shared::{PreAuth, Shared};
use crate::protocol::{Frame, write_frame};
use std::collections::HashMap;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A connection not yet in its handshake.
pub(super) struct Waiting {
    pub(super) stream: TcpStream,
    pub(super) peer: SocketAddr,
    pub(super) since: Instant,
}

/// Whether a connection may start its handshake.
pub(super) enum Admission {
    Admitted,
    /// Its address has no free handshake place: wait for one.
    Wait,
    Refused(String),
}

/// Sends a `busy` error frame (bounded in time) and logs the refusal.
pub(super) fn refuse(shared: &Shared, mut stream: TcpStream, peer: SocketAddr, reason: String) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let _ = write_frame(
        &mut stream,
        &Frame::Error {
            message: format!("server {reason}"),
        },
    );
    (shared.events)(&ServerEvent::Refused { peer, reason });
}

/// Admits a new connection to the handshake, or says to wait (its
/// address holds all its places, or all places are taken by connections
/// still young). When all places are taken, the oldest connection that
/// has had a quarter of its handshake time, of the address that holds the
/// most, is closed for it.
pub(super) fn admit(shared: &Shared, id: u64, ip: IpAddr, stream: &TcpStream) -> Admission {
    let config = &shared.config;
    let handle = match stream.try_clone() {
        Ok(handle) => handle,
        Err(err) => return Admission::Refused(err.to_string()),
    };
    let Ok(mut pending) = shared.pre_auth.lock() else {
        return Admission::Refused("internal error: handshake table poisoned".to_string());
    };
    let from_ip = pending.iter().filter(|entry| entry.ip == ip).count();
    if from_ip >= config.max_pre_auth_per_ip.max(1) {
        return Admission::Wait;
    }
    if pending.len() >= config.max_pre_auth.max(1) {
        // Only a connection that has had a fair part of its handshake time
        // makes room, so that closing one never just makes room for the
        // next reconnection; among those, the oldest of the address that
        // holds the most.
        let stale_after = config.pre_auth_timeout / 4;
        let mut counts: HashMap<IpAddr, usize> = HashMap::new();
        for entry in pending.iter() {
            *counts.entry(entry.ip).or_default() += 1;
        }
        let victim = pending
            .iter()
            .enumerate()
            .filter(|(_, entry)| entry.since.elapsed() >= stale_after)
            .max_by_key(|(position, entry)| (counts[&entry.ip], usize::MAX - position))
            .map(|(position, _)| position);
        let Some(position) = victim else {
            return Admission::Wait;
        };
        let evicted = pending.remove(position);
        let _ = evicted.stream.shutdown(Shutdown::Both);
    }
    pending.push(PreAuth {
        id,
        ip,
        stream: handle,
        since: Instant::now(),
    });
    Admission::Admitted
}

/// Takes connection `id` out of the handshake table; false when it was no
/// longer there (it was closed to make room).
pub(super) fn forget_pre_auth(shared: &Shared, id: u64) -> bool {
    let Ok(mut pending) = shared.pre_auth.lock() else {
        return false;
    };
    match pending.iter().position(|entry| entry.id == id) {
        Some(position) => {
            pending.remove(position);
            true
        }
        None => false,
    }
}
