//! Counting over the window at the server: what comes before the counted
//! part is forgotten when it starts, and the thread's CPU time is taken
//! over the counted part only.

use super::counters::Counters;
use super::gate::Window;
use crate::cpu::Rusage;
use std::time::{Duration, Instant};

/// Counting on the server: everything before the window's counted part
/// is forgotten when it starts.
pub(crate) struct Meter {
    measure_start: Instant,
    counting_since: Option<Instant>,
    usage_start: Rusage,
    pub(crate) counters: Counters,
    /// Messages since the clock was last read (counting only).
    unclocked: u32,
}

/// Once counting, the server reads the clock every this many
/// transactions: only the hard deadline needs it, and a clock read per
/// transaction costs a measurable part of a loopback round trip.
const CLOCK_EVERY: u32 = 16;

impl Meter {
    /// Without a warm-up, counting starts at once and nothing is
    /// forgotten.
    pub(crate) fn new(window: &Window) -> Meter {
        let counting_since =
            (window.measure_start <= window.start).then(|| window.start.min(Instant::now()));
        Meter {
            measure_start: window.measure_start,
            counting_since,
            usage_start: Rusage::thread().unwrap_or_default(),
            counters: Counters::default(),
            unclocked: 0,
        }
    }

    /// Whether to read the clock after this message: always in the
    /// warm-up, whose end must be seen at once; then every
    /// `CLOCK_EVERY` messages.
    #[inline]
    pub(crate) fn clock_due(&mut self) -> bool {
        if self.counting_since.is_none() {
            return true;
        }
        self.unclocked += 1;
        if self.unclocked < CLOCK_EVERY {
            return false;
        }
        self.unclocked = 0;
        true
    }

    /// Called after every message with the time read after it.
    #[inline]
    pub(crate) fn tick(&mut self, now: Instant) {
        if self.counting_since.is_none() && now >= self.measure_start {
            self.counters = Counters::default();
            self.counting_since = Some(now);
            self.usage_start = Rusage::thread().unwrap_or_default();
        }
    }

    /// The counts, the counted time up to `end`, and the thread's CPU time
    /// since counting started.
    pub(crate) fn finish(self, end: Instant) -> (Counters, Duration, Rusage) {
        match self.counting_since {
            Some(since) => {
                let usage = Rusage::thread()
                    .map(|now| now.since(&self.usage_start))
                    .unwrap_or_default();
                (self.counters, end.saturating_duration_since(since), usage)
            }
            None => (Counters::default(), Duration::ZERO, Rusage::default()),
        }
    }
}
