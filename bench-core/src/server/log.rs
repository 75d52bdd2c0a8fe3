//! What of the server's events reaches its sink: every event or the
//! notices only, and at most so many a second, with a count of what was
//! left out. A crowd of connections makes thousands of events a second;
//! the log keeps its first [`EventLimit::burst`] and then
//! [`EventLimit::per_second`], and at most once a second says how many of
//! each kind it left out ([`ServerEvent::NotLogged`]), so that a flood
//! shows as a few lines and its size.

use super::config::{EventLevel, EventLimit, EventSink, ServerEvent};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Least time between two counts of what was not logged.
const COUNT_EVERY: Duration = Duration::from_secs(1);

/// The server's events on their way to the sink.
pub(super) struct EventLog {
    sink: EventSink,
    level: EventLevel,
    limit: Option<EventLimit>,
    state: Mutex<Bucket>,
}

/// The rate limit's state.
struct Bucket {
    /// Events that may pass now.
    tokens: f64,
    refilled_at: Instant,
    /// Events left out since the last count, by kind.
    left_out: BTreeMap<&'static str, u64>,
    /// When the last count was given (or the log began).
    counted_at: Instant,
}

impl EventLog {
    pub(super) fn new(sink: EventSink, level: EventLevel, limit: Option<EventLimit>) -> EventLog {
        EventLog::new_at(sink, level, limit, Instant::now())
    }

    fn new_at(
        sink: EventSink,
        level: EventLevel,
        limit: Option<EventLimit>,
        now: Instant,
    ) -> EventLog {
        EventLog {
            sink,
            level,
            limit,
            state: Mutex::new(Bucket {
                tokens: limit.map_or(0.0, |limit| f64::from(limit.burst)),
                refilled_at: now,
                left_out: BTreeMap::new(),
                counted_at: now,
            }),
        }
    }

    /// Passes `event` to the sink, or counts it as left out.
    pub(super) fn emit(&self, event: &ServerEvent) {
        self.emit_at(event, Instant::now());
    }

    /// Gives the count of what was left out, when one is due.
    pub(super) fn flush(&self) {
        self.flush_at(Instant::now());
    }

    fn emit_at(&self, event: &ServerEvent, now: Instant) {
        if self.level == EventLevel::Notices && !event.is_notice() {
            return;
        }
        let Some(limit) = self.limit else {
            return (self.sink)(event);
        };
        if matches!(event, ServerEvent::Listening(_)) {
            return (self.sink)(event);
        }
        let Ok(mut bucket) = self.state.lock() else {
            return (self.sink)(event);
        };
        let elapsed = now.saturating_duration_since(bucket.refilled_at);
        bucket.tokens = (bucket.tokens + elapsed.as_secs_f64() * f64::from(limit.per_second))
            .min(f64::from(limit.burst));
        bucket.refilled_at = now;
        let count = bucket.count_if_due(now);
        let passes = bucket.tokens >= 1.0;
        if passes {
            bucket.tokens -= 1.0;
        } else {
            *bucket.left_out.entry(event.kind()).or_default() += 1;
        }
        drop(bucket);
        if let Some(count) = count {
            (self.sink)(&count);
        }
        if passes {
            (self.sink)(event);
        }
    }

    fn flush_at(&self, now: Instant) {
        let count = match self.state.lock() {
            Ok(mut bucket) => bucket.count_if_due(now),
            Err(_) => None,
        };
        if let Some(count) = count {
            (self.sink)(&count);
        }
    }
}

impl Bucket {
    /// The count of what was left out, taken, when there is one and the
    /// last is a second old.
    fn count_if_due(&mut self, now: Instant) -> Option<ServerEvent> {
        let over = now.saturating_duration_since(self.counted_at);
        if self.left_out.is_empty() || over < COUNT_EVERY {
            return None;
        }
        self.counted_at = now;
        let counts = std::mem::take(&mut self.left_out).into_iter().collect();
        Some(ServerEvent::NotLogged { counts, over })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::sync::Arc;

    fn logged() -> (EventSink, Arc<Mutex<Vec<ServerEvent>>>) {
        let seen: Arc<Mutex<Vec<ServerEvent>>> = Arc::default();
        let sink: EventSink = {
            let seen = Arc::clone(&seen);
            Arc::new(move |event: &ServerEvent| seen.lock().unwrap().push(event.clone()))
        };
        (sink, seen)
    }

    fn peer() -> SocketAddr {
        "192.0.2.1:4000".parse().unwrap()
    }

    #[test]
    fn a_flood_passes_its_burst_then_its_rate_and_is_counted() {
        let (sink, seen) = logged();
        let limit = EventLimit {
            burst: 5,
            per_second: 2,
        };
        let start = Instant::now();
        let log = EventLog::new_at(sink, EventLevel::All, Some(limit), start);
        // 1,000 connections and their drops over the first half second.
        for event_idx in 0..2_000u32 {
            let at = start + Duration::from_micros(250 * u64::from(event_idx));
            let event = if event_idx % 2 == 0 {
                ServerEvent::Connected(peer())
            } else {
                ServerEvent::Dropped {
                    peer: peer(),
                    reason: "connection closed by the peer".to_string(),
                }
            };
            log.emit_at(&event, at);
        }
        // The burst passed (the rate refills less than one over the half
        // second); the count waits until a second has gone by.
        log.flush_at(start + Duration::from_millis(700));
        assert_eq!(seen.lock().unwrap().len(), 5);
        log.flush_at(start + Duration::from_millis(1_100));
        {
            let events = seen.lock().unwrap();
            assert_eq!(events.len(), 6, "{events:#?}");
            assert_eq!(
                events[5].to_string(),
                "1995 events not logged over the last 1.1 s: 997 connected, 998 dropped"
            );
        }
        // Once the rate has refilled, events get through again.
        log.emit_at(
            &ServerEvent::Connected(peer()),
            start + Duration::from_millis(1_600),
        );
        assert_eq!(seen.lock().unwrap().len(), 7);
    }

    #[test]
    fn notices_only_and_the_listener_always() {
        let (sink, seen) = logged();
        let limit = EventLimit {
            burst: 1,
            per_second: 1,
        };
        let log = EventLog::new(sink, EventLevel::Notices, Some(limit));
        let now = Instant::now();
        log.emit_at(&ServerEvent::Listening(peer()), now);
        log.emit_at(&ServerEvent::Connected(peer()), now);
        log.emit_at(&ServerEvent::Listening(peer()), now);
        let refused = ServerEvent::Refused {
            peer: peer(),
            reason: "busy".to_string(),
        };
        log.emit_at(&refused, now);
        log.emit_at(&refused, now);
        log.flush_at(now + COUNT_EVERY);
        let seen = seen.lock().unwrap();
        let kinds: Vec<&str> = seen.iter().map(ServerEvent::kind).collect();
        assert_eq!(
            kinds,
            ["listening", "listening", "refused", "not logged"],
            "{seen:#?}"
        );
    }
}
