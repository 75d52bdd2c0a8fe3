//! Admission to a session: every connection's handshake runs on the
//! accept loop's thread, nonblocking and many at once, each bounded in
//! time; when the places run out, the oldest handshake makes room.
//!
//! How a client that finishes its handshake promptly always gets in,
//! however many connections a crowd opens, from however many addresses
//! and whatever they say:
//!
//! - A handshake costs a socket and a few hundred bytes, never a thread
//!   or a wait: one epoll set holds them all, and each frame is answered
//!   as soon as it is whole. So there can be many places
//!   ([`ServerConfig::max_pre_auth`](super::ServerConfig::max_pre_auth),
//!   1024 by default), and nobody waits for a place behind anyone.
//! - A handshake has [`ServerConfig::pre_auth_timeout`](super::ServerConfig::pre_auth_timeout)
//!   in all from its connection; then it is closed.
//! - When a connection comes and every place is taken, the oldest
//!   handshake (the first accepted) is closed to make room, whichever
//!   address it comes from. It is the one told why (`server busy: ...`)
//!   and named in the log.
//! - The loop takes in at most a fiftieth of the places (at least one,
//!   at most 64) per [`ROOM_WINDOW`] (10 ms); the rest of a crowd waits
//!   in the kernel's queue, not in a place. A handshake is the oldest of
//!   full places only once every other place holds a connection accepted
//!   after it, so it is closed to make room no sooner than half a second
//!   after it was accepted (10 ms a place with fewer than 50 places).
//!   Nothing a crowd's connections say changes their order. Each round
//!   reads every handshake that has something to say before it accepts
//!   anyone. A client that finishes its handshake within that time of
//!   being accepted (a round trip and a little more) is never the one
//!   closed.
//!
//! There is no limit per address: clients behind one address (a NAT, a
//! lab host, loopback) never wait behind each other, nor behind silent
//! connections of their address.

use super::config::ServerEvent;
use super::handshake::{Handshake, Outcome};
use super::shared::Shared;
use rustix::event::Timespec;
use rustix::event::epoll::{self, Event, EventData, EventFlags};
use socket2::Socket;
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// How long the loop waits for readiness before it looks at its stop
/// flag and the handshakes' deadlines again.
pub(super) const ROUND: Duration = Duration::from_millis(100);
/// The epoll data of the listener; handshakes are known by their ids.
const LISTENER: u64 = u64::MAX;
/// Most readiness events one wait returns; the rest come with the next.
const EVENTS_PER_WAIT: usize = 256;
/// The loop accepts at most a fiftieth of the places (at least one, at
/// most 64) per window of this length.
pub(super) const ROOM_WINDOW: Duration = Duration::from_millis(10);

/// A connection whose handshake is over: its session may start.
pub(super) struct Admitted {
    pub(super) stream: TcpStream,
    pub(super) peer: SocketAddr,
}

/// The handshakes in progress and the epoll set that watches them and
/// the listener.
pub(super) struct Admission {
    epoll: OwnedFd,
    handshakes: HashMap<u64, Handshake>,
    next_id: u64,
    /// Set while accepting is paused: out of descriptors or memory, or
    /// as many connections accepted as the window allows.
    paused_until: Option<Instant>,
    /// The current window, and how many connections it has accepted.
    window_start: Instant,
    accepted_in_window: usize,
}

impl Admission {
    /// Watches `listener` (nonblocking) for new connections.
    pub(super) fn new(epoll: OwnedFd, listener: &Socket) -> io::Result<Admission> {
        epoll::add(
            &epoll,
            listener,
            EventData::new_u64(LISTENER),
            EventFlags::IN,
        )?;
        Ok(Admission {
            epoll,
            handshakes: HashMap::new(),
            next_id: 0,
            paused_until: None,
            window_start: Instant::now(),
            accepted_in_window: 0,
        })
    }

    /// One round: waits (at most [`ROUND`]) for something to do, steps
    /// every handshake that has something to read, accepts new
    /// connections, and closes the handshakes whose time is up. Returns
    /// the connections whose handshake is over. `events` is the loop's
    /// buffer for the wait (from [`event_buffer`]).
    pub(super) fn round(
        &mut self,
        listener: &Socket,
        shared: &Shared,
        events: &mut [Event],
    ) -> Vec<Admitted> {
        let wait = self.paused_until.map_or(ROUND, |until| {
            until.saturating_duration_since(Instant::now()).min(ROUND)
        });
        let timeout = Timespec {
            tv_sec: 0,
            tv_nsec: i64::from(wait.subsec_nanos()),
        };
        let n_ready = match epoll::wait(&self.epoll, &mut *events, Some(&timeout)) {
            Ok(n_ready) => n_ready,
            Err(_) => {
                // Interrupted, or the set is broken: either way, do not
                // spin.
                std::thread::sleep(Duration::from_millis(10));
                0
            }
        };
        let mut listener_ready = false;
        let mut ready = Vec::with_capacity(n_ready);
        for event in &events[..n_ready] {
            match event.data.u64() {
                LISTENER => listener_ready = true,
                id => ready.push(id),
            }
        }
        let mut admitted = Vec::new();
        for id in ready {
            self.step(id, shared, &mut admitted);
        }
        if listener_ready && self.paused_until.is_none() {
            self.accept(listener, shared, &mut admitted);
        }
        self.expire(shared);
        shared.log.flush();
        if let Some(until) = self.paused_until
            && Instant::now() >= until
            && epoll::modify(
                &self.epoll,
                listener,
                EventData::new_u64(LISTENER),
                EventFlags::IN,
            )
            .is_ok()
        {
            self.paused_until = None;
        }
        admitted
    }

    /// Reads handshake `id` and acts on the outcome.
    fn step(&mut self, id: u64, shared: &Shared, admitted: &mut Vec<Admitted>) {
        let token = shared.config.token.as_ref();
        let Some(handshake) = self.handshakes.get_mut(&id) else {
            return;
        };
        let outcome = handshake.advance(token);
        self.settle(id, outcome, shared, admitted);
    }

    /// Takes handshake `id` out when `outcome` ends it: into `admitted`,
    /// or closed with its event.
    fn settle(&mut self, id: u64, outcome: Outcome, shared: &Shared, admitted: &mut Vec<Admitted>) {
        if matches!(outcome, Outcome::Pending) {
            return;
        }
        let Some(handshake) = self.handshakes.remove(&id) else {
            return;
        };
        let _ = epoll::delete(&self.epoll, &handshake.stream);
        let peer = handshake.peer;
        match outcome {
            Outcome::Pending => {}
            Outcome::Done => admitted.push(Admitted {
                stream: handshake.stream,
                peer,
            }),
            Outcome::Refused(reason) => shared.log.emit(&ServerEvent::Refused { peer, reason }),
            Outcome::Dropped(reason) => shared.log.emit(&ServerEvent::Dropped { peer, reason }),
        }
    }

    /// Accepts new connections, as many as the window has left of a
    /// fiftieth of the places (at least one, at most 64); then accepting
    /// waits for the next window. When the places are full, each makes
    /// room for itself.
    fn accept(&mut self, listener: &Socket, shared: &Shared, admitted: &mut Vec<Admitted>) {
        let places = shared.config.max_pre_auth.max(1);
        let per_window = (places / 50).clamp(1, 64);
        loop {
            if !self.window_has_room(per_window) {
                self.pause(listener, self.window_start + ROOM_WINDOW);
                return;
            }
            let (socket, address) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(err) if would_block(&err) => return,
                Err(err) if out_of_resources(&err) => {
                    // The oldest handshake gives back its descriptor, and
                    // accepting waits a round rather than spin on a
                    // listener that stays ready.
                    self.make_room(shared, "the server is out of descriptors");
                    self.pause(listener, Instant::now() + ROUND);
                    return;
                }
                // The connection went before it was accepted.
                Err(_) => continue,
            };
            self.accepted_in_window += 1;
            let Some(peer) = address.as_socket() else {
                continue;
            };
            shared.log.emit(&ServerEvent::Connected(peer));
            let stream = TcpStream::from(socket);
            if let Err(err) = stream
                .set_nonblocking(true)
                .and_then(|()| stream.set_nodelay(true))
            {
                let reason = err.to_string();
                shared.log.emit(&ServerEvent::Dropped { peer, reason });
                continue;
            }
            if self.handshakes.len() >= places {
                self.make_room(
                    shared,
                    &format!("{places} handshakes at once, serve --max-handshakes"),
                );
            }
            // Ids count up from 0, never reaching LISTENER.
            let id = self.next_id;
            self.next_id += 1;
            let handshake = Handshake::new(stream, peer, shared.config.pre_auth_timeout);
            if let Err(err) = epoll::add(
                &self.epoll,
                &handshake.stream,
                EventData::new_u64(id),
                EventFlags::IN,
            ) {
                let reason = io::Error::from(err).to_string();
                shared.log.emit(&ServerEvent::Dropped { peer, reason });
                continue;
            }
            self.handshakes.insert(id, handshake);
            // Its hello is often there already.
            self.step(id, shared, admitted);
        }
    }

    /// True while the current window may accept another connection (of
    /// `per_window`); a new window starts when the last is over.
    fn window_has_room(&mut self, per_window: usize) -> bool {
        let now = Instant::now();
        if now >= self.window_start + ROOM_WINDOW {
            self.window_start = now;
            self.accepted_in_window = 0;
        }
        self.accepted_in_window < per_window
    }

    /// Closes the oldest handshake (ids follow the order of accepting),
    /// telling it why.
    fn make_room(&mut self, shared: &Shared, why: &str) {
        let oldest = self.handshakes.keys().min().copied();
        let Some(handshake) = oldest.and_then(|id| self.handshakes.remove(&id)) else {
            return;
        };
        let _ = epoll::delete(&self.epoll, &handshake.stream);
        let reason = format!("busy: closed in its handshake to make room ({why})");
        handshake.tell(format!("server {reason}"));
        shared.log.emit(&ServerEvent::Refused {
            peer: handshake.peer,
            reason,
        });
    }

    /// Closes every handshake whose time is up.
    fn expire(&mut self, shared: &Shared) {
        let now = Instant::now();
        let expired: Vec<u64> = self
            .handshakes
            .iter()
            .filter(|(_, handshake)| handshake.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        let timeout = shared.config.pre_auth_timeout;
        for id in expired {
            if let Some(handshake) = self.handshakes.get(&id) {
                let outcome = handshake.expired(timeout);
                self.settle(id, outcome, shared, &mut Vec::new());
            }
        }
    }

    /// Stops watching the listener until `until`.
    fn pause(&mut self, listener: &Socket, until: Instant) {
        let paused = epoll::modify(
            &self.epoll,
            listener,
            EventData::new_u64(LISTENER),
            EventFlags::empty(),
        );
        if paused.is_ok() {
            self.paused_until = Some(until);
        } else {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
        }
    }
}

/// The buffer of one accept loop's waits.
pub(super) fn event_buffer() -> Vec<Event> {
    let empty = Event {
        flags: EventFlags::empty(),
        data: EventData::new_u64(0),
    };
    vec![empty; EVENTS_PER_WAIT]
}

fn would_block(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// EMFILE, ENFILE, ENOBUFS, ENOMEM: the process or the system is out of
/// descriptors or memory.
fn out_of_resources(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}
