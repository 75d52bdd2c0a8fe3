//! The session's client, and the watch that tells a caller when a
//! statement of it waits for a lock another session holds.
//!
//! The server bounds such a wait (`lock_timeout`) but says nothing while
//! it lasts, and the client is blocked in it. So, once a caller asks to
//! hear of waits ([`Session::report_lock_waits`]), every borrow of the
//! client marks the session busy, and a watcher thread looks, from a
//! second connection it opens only when a statement has run for
//! [`FIRST_LOOK`], whether the server shows the session waiting for a
//! lock (`pg_stat_activity`, by the session's process id); if so it
//! reports how long the statement has waited, at once and then every
//! [`REPORT_EVERY`], until the statement ends. A statement that is only
//! slow is looked at once a second and reported never; a watcher that
//! cannot connect or read says nothing, and the server's `lock_timeout`
//! still ends the wait. Without a reporter nothing of this runs.

use crate::location::ServerAddress;
use crate::store::{LockWait, LockWaitReport};
use std::cell::{RefCell, RefMut};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long a statement runs before the watcher looks whether it waits
/// for a lock.
const FIRST_LOOK: Duration = Duration::from_secs(1);

/// How often a running statement is looked at after the first look.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// How often a wait is reported after its first report.
const REPORT_EVERY: Duration = Duration::from_secs(5);

/// The client of a session, borrowed for one statement or transaction at
/// a time, and the watch of its waits when a caller asked for one.
pub(super) struct Session {
    client: RefCell<postgres::Client>,
    /// The server's process id of the session.
    backend_pid: i32,
    watch: Option<Watch>,
}

/// A borrow of the session's client, which marks the session busy for
/// the watch while it lasts.
pub(super) struct Busy<'session> {
    client: RefMut<'session, postgres::Client>,
    watch: Option<&'session Watch>,
}

impl Deref for Busy<'_> {
    type Target = postgres::Client;

    fn deref(&self) -> &postgres::Client {
        &self.client
    }
}

impl DerefMut for Busy<'_> {
    fn deref_mut(&mut self) -> &mut postgres::Client {
        &mut self.client
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if let Some(watch) = self.watch {
            watch.set_busy(false);
        }
    }
}

impl Session {
    /// The session of `client`, whose server process is `backend_pid`.
    pub(super) fn new(client: postgres::Client, backend_pid: i32) -> Session {
        Session {
            client: RefCell::new(client),
            backend_pid,
            watch: None,
        }
    }

    /// The client, for one statement or transaction; the borrow must end
    /// before the archive's caller runs again.
    pub(super) fn borrow_mut(&self) -> Busy<'_> {
        let client = self.client.borrow_mut();
        if let Some(watch) = &self.watch {
            watch.set_busy(true);
        }
        Busy {
            client,
            watch: self.watch.as_ref(),
        }
    }

    /// From now on, calls `report` while a statement waits for a lock
    /// (see the module's documentation); a watch already running is
    /// replaced.
    pub(super) fn report_lock_waits(&mut self, address: &ServerAddress, report: LockWaitReport) {
        self.watch = Watch::start(address.clone(), self.backend_pid, report);
    }
}

/// The watcher thread's side of a session: whether a statement runs, and
/// since when.
struct Watch {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// When the running statement (or transaction) began; `None` while
    /// the session is idle.
    busy_since: Option<Instant>,
    /// Counts the busy periods, so that the watcher tells a new
    /// statement from the one it was looking at.
    period: u64,
    /// The session is gone: the watcher ends.
    closed: bool,
}

impl Watch {
    /// Starts the watcher thread; `None` when no thread can be started,
    /// and then nothing is reported.
    fn start(address: ServerAddress, backend_pid: i32, report: LockWaitReport) -> Option<Watch> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let watched = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("netbisect-pg-watch".to_string())
            .spawn(move || watch(&watched, &address, backend_pid, &*report))
            .ok()?;
        Some(Watch { shared })
    }

    fn set_busy(&self, busy: bool) {
        let mut state = self.shared.lock();
        if busy {
            state.busy_since = Some(Instant::now());
            state.period += 1;
            self.shared.changed.notify_all();
        } else {
            state.busy_since = None;
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The watcher: waits for a busy period, looks at it after
/// [`FIRST_LOOK`] and then every [`LOOK_EVERY`] while it lasts, and
/// reports the waits it sees, until the session is gone.
fn watch(shared: &Shared, address: &ServerAddress, backend_pid: i32, report: &dyn Fn(LockWait)) {
    let mut state = shared.lock();
    loop {
        let (period, since) = loop {
            if state.closed {
                return;
            }
            if let Some(since) = state.busy_since {
                break (state.period, since);
            }
            state = shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        };
        let lasts =
            |state: &State| !state.closed && state.period == period && state.busy_since.is_some();
        let mut looker = Looker::new(address, backend_pid);
        let mut next_look = since + FIRST_LOOK;
        let mut next_report = since;
        loop {
            let wait = next_look.saturating_duration_since(Instant::now());
            state = shared
                .changed
                .wait_timeout_while(state, wait, |state| lasts(state))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            if !lasts(&state) {
                break;
            }
            drop(state);
            if let Some(waited) = looker.lock_wait()
                && Instant::now() >= next_report
            {
                report(LockWait { waited });
                next_report = Instant::now() + REPORT_EVERY;
            }
            next_look = Instant::now() + LOOK_EVERY;
            state = shared.lock();
        }
        // The second connection is closed between statements, so that an
        // idle archive holds one session of the server, not two.
        drop(state);
        drop(looker);
        state = shared.lock();
    }
}

/// The watcher's connection, opened at its first look of a busy period.
struct Looker<'watch> {
    address: &'watch ServerAddress,
    backend_pid: i32,
    client: Option<postgres::Client>,
    /// Connecting or reading failed: nothing more is looked at in this
    /// busy period.
    failed: bool,
}

impl<'watch> Looker<'watch> {
    fn new(address: &'watch ServerAddress, backend_pid: i32) -> Looker<'watch> {
        Looker {
            address,
            backend_pid,
            client: None,
            failed: false,
        }
    }

    /// How long the watched session's statement has waited, when the
    /// server shows it waiting for a lock.
    fn lock_wait(&mut self) -> Option<Duration> {
        if self.failed {
            return None;
        }
        if self.client.is_none() {
            self.client = super::connect::connect(self.address)
                .ok()
                .map(|connected| connected.client);
        }
        let waited = self.client.as_mut().and_then(|client| {
            client
                .query_typed_opt(
                    "SELECT extract(epoch FROM now() - query_start)::float8 \
                     FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
                    &[(&self.backend_pid, postgres::types::Type::INT4)],
                )
                .map(|row| row.and_then(|row| row.try_get::<_, Option<f64>>(0).ok().flatten()))
                .ok()
        });
        match waited {
            None => {
                self.failed = true;
                None
            }
            Some(seconds) => {
                seconds.and_then(|seconds| Duration::try_from_secs_f64(seconds.max(0.0)).ok())
            }
        }
    }
}
