//! The start gate of one end's flows and the common window it fixes:
//! warm-up, then the counted part.

use super::DataError;
use run_record::spec::RunSpec;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

fn duration_of(spec: &RunSpec) -> Duration {
    Duration::from_secs_f64(spec.duration_s)
}

fn warmup_of(spec: &RunSpec) -> Duration {
    Duration::from_secs_f64(spec.warmup_s)
}

/// The common window of all flows of one end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    /// When every flow was ready; traffic starts.
    pub start: Instant,
    /// End of the warm-up: counting starts.
    pub measure_start: Instant,
    /// Counting (and sending, for the driving side) ends.
    pub deadline: Instant,
}

impl Window {
    fn new(spec: &RunSpec, start: Instant) -> Window {
        let measure_start = start + warmup_of(spec);
        Window {
            start,
            measure_start,
            deadline: measure_start + duration_of(spec),
        }
    }
}

/// The start gate: every party arrives once its flows are open; the last
/// to arrive fixes the window. A party that fails tells the others, who
/// then give up instead of waiting.
pub(crate) struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
    parties: usize,
}

#[derive(Default)]
struct GateState {
    arrived: usize,
    failed: bool,
    window: Option<Window>,
}

impl Gate {
    /// A gate for `parties` parties.
    pub(crate) fn new(parties: usize) -> Gate {
        Gate {
            state: Mutex::new(GateState::default()),
            changed: Condvar::new(),
            parties,
        }
    }

    /// Arrives at the gate and waits for the others, at most `wait`:
    /// the common window, once every party is there.
    pub(crate) fn arrive(&self, spec: &RunSpec, wait: Duration) -> Result<Window, DataError> {
        let give_up = Instant::now() + wait;
        let mut state = self
            .state
            .lock()
            .map_err(|_| DataError::Thread("start gate poisoned".to_string()))?;
        state.arrived += 1;
        if state.arrived == self.parties {
            state.window = Some(Window::new(spec, Instant::now()));
            self.changed.notify_all();
        }
        loop {
            if state.failed {
                return Err(DataError::OtherFlowFailed);
            }
            if let Some(window) = state.window {
                return Ok(window);
            }
            let left = give_up.saturating_duration_since(Instant::now());
            if left.is_zero() {
                state.failed = true;
                self.changed.notify_all();
                return Err(DataError::StartTimeout(wait));
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .map_err(|_| DataError::Thread("start gate poisoned".to_string()))?
                .0;
        }
    }

    /// Tells the others that this party failed.
    pub(crate) fn fail(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.failed = true;
            self.changed.notify_all();
        }
    }
}

/// Runs `body` for a party of `gate`; a failure before the party arrived
/// releases the others.
pub(crate) fn gated<T>(
    gate: &Gate,
    body: impl FnOnce() -> Result<T, DataError>,
) -> Result<T, DataError> {
    let result = body();
    if result.is_err() {
        gate.fail();
    }
    result
}

/// Sleeps until `moment`, if it is still to come.
pub(crate) fn sleep_until(moment: Instant) {
    let left = moment.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        std::thread::sleep(left);
    }
}
