//! `bisect run --jobs K`: K slots, each with a worktree of its own under
//! the state directory (slot 0 the bisect worktree, slot N
//! `netbisect-slotN`), so that K builds and measurements run at once.
//! Each repeat runs on a thread of its own (scoped to the bisection),
//! its commands with `NETBISECT_SLOT` and `NETBISECT_JOBS` in their
//! environment; at most `--build-jobs` builds run at once. A finished
//! repeat's record comes back to the bisection's thread, which checks
//! it, stores it in the archive and only then hands the sample to the
//! engine, as one at a time does ([`SessionMeasurer::accept`]).
//!
//! With `--kernel`, each slot's VM is pinned to CPUs of its own
//! ([`cpu_sets`], `taskset` of the qemu process), which its record's `vm`
//! section names (`host_cpus`).
//!
//! A signal kills every slot's process group (the watcher tracks each),
//! so every thread ends soon after it; the engine journals the repeats
//! in flight as interrupted.

use super::wiring::{KernelStep, Method, SessionMeasurer};
use bisect::graph::CommitInfo;
use bisect::journal::BoxError;
use bisect::measure::{CommandMeasurer, CommandStep, Prepared, RecordMeasurement};
use bisect::worktree::BisectWorktree;
use bisect::{Measurement, Sample};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::Scope;
use std::time::Instant;

/// The name of slot `slot`'s worktree (slot 0 is the bisect worktree).
pub(super) fn slot_worktree_name(base: &str, slot: usize) -> String {
    if slot == 0 {
        base.to_string()
    } else {
        format!("{base}-slot{slot}")
    }
}

/// Disjoint sets of this process's CPUs, `per_slot` each, one per slot
/// of `jobs`, as CPU lists for `taskset -c`: each slot's VM on CPUs of its
/// own. An error says how many CPUs it would take.
pub(super) fn cpu_sets(jobs: usize, per_slot: usize) -> Result<Vec<String>, String> {
    let allowed = rustix::thread::sched_getaffinity(None)
        .map_err(|err| format!("cannot read the CPUs this process may use: {err}"))?;
    let cpus: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&cpu| allowed.is_set(cpu))
        .collect();
    let needed = jobs * per_slot.max(1);
    if cpus.len() < needed {
        return Err(format!(
            "--jobs {jobs} with --kernel gives each slot's VM {} CPU(s) of its own: that takes \
             {needed} CPUs, and this host lets netbisect use {}; give fewer --jobs or \
             --vm-cpus",
            per_slot.max(1),
            cpus.len()
        ));
    }
    Ok(cpus
        .chunks(per_slot.max(1))
        .take(jobs)
        .map(|chunk| {
            chunk
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect())
}

/// Counts the builds running on this host, at most `limit`.
struct BuildGate {
    running: Mutex<usize>,
    freed: Condvar,
    limit: usize,
}

impl BuildGate {
    fn enter(&self) -> BuildPass<'_> {
        let mut running = self
            .running
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        while *running >= self.limit {
            running = self
                .freed
                .wait(running)
                .unwrap_or_else(|poison| poison.into_inner());
        }
        *running += 1;
        BuildPass { gate: self }
    }
}

/// A build's place in the gate, given back when dropped.
struct BuildPass<'g> {
    gate: &'g BuildGate,
}

impl Drop for BuildPass<'_> {
    fn drop(&mut self) {
        let mut running = self
            .gate
            .running
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        *running -= 1;
        self.gate.freed.notify_one();
    }
}

/// What one slot measures with, handed to its thread for a repeat and
/// back with the result.
struct SlotState {
    worktree: BisectWorktree,
    step: CommandStep,
    env: Vec<(String, String)>,
    prepared: Prepared,
    kernel: Option<KernelStep>,
}

/// What a slot's thread sends back.
struct Finished {
    slot: usize,
    state: SlotState,
    commit: CommitInfo,
    measured: Result<RecordMeasurement, BoxError>,
    seconds: f64,
}

/// The slots of a bisection, as bisect's [`bisect::measurement::SlotMeasurer`].
pub(super) struct Slots<'scope, 'env, 'w> {
    scope: &'scope Scope<'scope, 'env>,
    session: &'env mut SessionMeasurer<'w>,
    states: Vec<Option<SlotState>>,
    gate: Arc<BuildGate>,
    sender: mpsc::Sender<Finished>,
    receiver: mpsc::Receiver<Finished>,
    running: usize,
}

impl<'scope, 'env, 'w> Slots<'scope, 'env, 'w>
where
    'w: 'scope,
{
    /// Slots measuring with `step`, one in each of `worktrees`, storing
    /// through `session`, at most `build_jobs` builds at once; with
    /// `--kernel`, each slot's VM pinned to its set of `cpu_sets`.
    pub(super) fn new(
        scope: &'scope Scope<'scope, 'env>,
        session: &'env mut SessionMeasurer<'w>,
        worktrees: Vec<BisectWorktree>,
        step: &CommandStep,
        build_jobs: usize,
        cpu_sets: &[String],
    ) -> Slots<'scope, 'env, 'w> {
        let n_jobs = worktrees.len();
        let kernel = match session.method() {
            Method::Kernel(step) => Some((**step).clone()),
            Method::Bench(_) | Method::Command => None,
        };
        let states = worktrees
            .into_iter()
            .enumerate()
            .map(|(slot, worktree)| {
                let kernel = kernel.clone().map(|mut kernel| {
                    kernel.session.options.host_cpus = cpu_sets.get(slot).cloned();
                    KernelStep {
                        worktree: worktree.path().to_path_buf(),
                        ..kernel
                    }
                });
                Some(SlotState {
                    worktree,
                    step: step.clone(),
                    env: vec![
                        ("NETBISECT_SLOT".to_string(), slot.to_string()),
                        ("NETBISECT_JOBS".to_string(), n_jobs.to_string()),
                    ],
                    prepared: None,
                    kernel,
                })
            })
            .collect();
        let (sender, receiver) = mpsc::channel();
        Slots {
            scope,
            session,
            states,
            gate: Arc::new(BuildGate {
                running: Mutex::new(0),
                freed: Condvar::new(),
                limit: build_jobs.max(1),
            }),
            sender,
            receiver,
            running: 0,
        }
    }
}

/// One repeat on a slot's thread: the build (through the gate), then the
/// test.
fn measure_on_slot(
    state: &mut SlotState,
    bench: Option<&bench_core::run::BenchRequest>,
    commit: &CommitInfo,
    gate: &BuildGate,
) -> Result<RecordMeasurement, BoxError> {
    let mut commands = CommandMeasurer::new(&state.worktree, state.step.clone())
        .with_env(state.env.clone())
        .with_prepared(state.prepared.take());
    let skip = {
        let _pass = gate.enter();
        commands.prepare(commit)
    };
    state.prepared = commands.prepared();
    if let Some(reason) = skip? {
        return Ok(RecordMeasurement::Skip(reason));
    }
    if let Some(step) = &state.kernel {
        return Ok(step.measure());
    }
    if let Some(request) = bench {
        let mut request = request.clone();
        request.subject.commit = Some(commit.id.clone());
        return Ok(match bench_core::run::bench(&request) {
            Ok(record) => RecordMeasurement::Record(Box::new(record)),
            Err(err) => RecordMeasurement::Skip(format!("the bench test failed: {err}")),
        });
    }
    commands.measure_record(commit)
}

impl<'scope, 'env, 'w> bisect::measurement::SlotMeasurer for Slots<'scope, 'env, 'w>
where
    'w: 'scope,
{
    fn archived(&mut self, commit: &CommitInfo) -> Result<Vec<Sample>, BoxError> {
        bisect::Measurer::archived(self.session, commit)
    }

    fn start(&mut self, slot: usize, commit: &CommitInfo) -> Result<(), BoxError> {
        let mut state = self
            .states
            .get_mut(slot)
            .and_then(Option::take)
            .ok_or_else(|| format!("slot {slot} is busy or not there"))?;
        let bench = match self.session.method() {
            Method::Bench(request) => Some((**request).clone()),
            Method::Kernel(_) | Method::Command => None,
        };
        let gate = Arc::clone(&self.gate);
        let sender = self.sender.clone();
        let commit = commit.clone();
        self.running += 1;
        self.scope.spawn(move || {
            let started = Instant::now();
            let measured = measure_on_slot(&mut state, bench.as_ref(), &commit, &gate);
            // The receiver outlives every thread of the scope.
            let _ = sender.send(Finished {
                slot,
                state,
                commit,
                measured,
                seconds: started.elapsed().as_secs_f64(),
            });
        });
        Ok(())
    }

    fn finished(&mut self) -> Result<(usize, Result<Measurement, BoxError>), BoxError> {
        if self.running == 0 {
            return Err("no slot is measuring".into());
        }
        let finished = self.receiver.recv()?;
        self.running -= 1;
        self.states[finished.slot] = Some(finished.state);
        let result = match finished.measured {
            Ok(measured) => {
                self.session.note_seconds(finished.seconds);
                self.session
                    .accept(&finished.commit, measured)
                    .map_err(BoxError::from)
            }
            Err(err) => Err(err),
        };
        Ok((finished.slot, result))
    }

    fn seconds_per_sample(&self) -> Option<f64> {
        bisect::Measurer::seconds_per_sample(&*self.session)
    }
}
