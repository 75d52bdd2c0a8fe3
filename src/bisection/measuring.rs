//! How a commit is measured once, wherever it is: in `bisect run`'s
//! worktree or slots, or by a lab's worker. A [`Method`] (a bench test
//! after the build, a kernel booted in a VM, or the user's command)
//! gives a record ([`measure_record`]); [`checked`] then makes sure the
//! record is of that commit (naming it, and sealing it again, when the
//! command left the commit out) and has the metric's figures, so that
//! only such a run reaches the archive and the engine.

use crate::exit;
use crate::vm::{self, GuestSettings, GuestSubject, KernelUnderTest, VmOptions};
use archive::CanonicalRun;
use bench_core::run::BenchRequest;
use bisect::graph::CommitInfo;
use bisect::measure::{CommandMeasurer, RecordMeasurement};
use run_record::record::Metric;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How one repeat is measured.
pub enum Method {
    /// A bench test run in-process after the build.
    Bench(Box<BenchRequest>),
    /// A bench test run in a VM booting the image the build left.
    Kernel(Box<KernelStep>),
    /// The user's command, run by bisect's command measurer.
    Command,
}

/// What `--kernel` steps need: the test, the image's place in the
/// worktree, how the VM is made, and where failed boots' consoles go.
#[derive(Clone)]
pub struct KernelStep {
    /// The test, resolved.
    pub request: BenchRequest,
    /// The worktree.
    pub worktree: PathBuf,
    /// The image, relative to the worktree.
    pub image: PathBuf,
    /// The VM options of the session.
    pub session: KernelSession,
    /// Where console tails of failed boots are kept.
    pub console_dir: PathBuf,
    /// What the runner tells on stderr.
    pub notes: vm::Notes,
}

/// The kernel part of a bisection session, as `start` recorded it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelSession {
    /// The image the build leaves, relative to the worktree.
    pub image: String,
    /// The VM options from the command line.
    pub options: VmOptions,
    /// A settings file the build may leave in the worktree, read at each
    /// step (its sysctls and command line join the options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<String>,
}

impl KernelStep {
    /// Boots the image the build left and tests it; a missing image, a
    /// failed boot or a failed test is a skip with its reason.
    pub fn measure(&self) -> RecordMeasurement {
        let image = self.worktree.join(&self.image);
        let mut options = self.session.options.clone();
        if let Some(settings) = &self.session.settings {
            let path = self.worktree.join(settings);
            if path.exists() {
                match GuestSettings::read(&path) {
                    Ok(settings) => {
                        let mut append = settings.append;
                        append.append(&mut options.append);
                        options.append = append;
                        for (key, value) in settings.sysctls {
                            options.sysctls.entry(key).or_insert(value);
                        }
                    }
                    Err(err) => {
                        return RecordMeasurement::Skip(format!("bad guest settings: {err:#}"));
                    }
                }
            }
        }
        let kernel = match KernelUnderTest::prepare(&image, options) {
            Ok(kernel) => kernel,
            Err(err) => return RecordMeasurement::Skip(format!("cannot boot the build: {err:#}")),
        };
        let subject = GuestSubject {
            // "loopback" is bench's default without -H: a VM run names
            // its testbed after its network mode instead.
            testbed: (self.request.testbed != "loopback").then(|| self.request.testbed.clone()),
            ..GuestSubject::default()
        };
        match vm::run_test(
            &kernel,
            &self.request,
            &subject,
            &self.console_dir,
            self.notes,
        ) {
            Ok(record) => RecordMeasurement::Record(Box::new(record)),
            Err(err) => RecordMeasurement::Skip(format!("{err:#}")),
        }
    }
}

/// How each repeat of `recipe` is measured, in `worktree`: a bench
/// test, a kernel booted in a VM (failed boots' consoles kept in
/// `console_dir`), or the user's command.
pub fn method_of(
    recipe: &super::Recipe,
    worktree: &std::path::Path,
    console_dir: PathBuf,
    notes: vm::Notes,
) -> exit::Result<Method> {
    Ok(match (&recipe.bench, &recipe.kernel) {
        (Some(text), Some(kernel)) => Method::Kernel(Box::new(KernelStep {
            request: crate::request::parse_guest_bench_spec(text)?,
            worktree: worktree.to_path_buf(),
            image: PathBuf::from(&kernel.image),
            session: kernel.clone(),
            console_dir,
            notes,
        })),
        (Some(text), None) => Method::Bench(Box::new(crate::request::parse_bench_spec(text)?)),
        (None, _) => Method::Command,
    })
}

/// One repeat of `commit` by `method`, built (and measured, for a
/// command) by `commands`.
pub fn measure_record(
    method: &Method,
    commands: &mut CommandMeasurer<'_>,
    commit: &CommitInfo,
) -> exit::Result<RecordMeasurement> {
    match method {
        Method::Command => Ok(commands.measure_record(commit)?),
        Method::Kernel(step) => {
            if let Some(reason) = commands.prepare(commit)? {
                return Ok(RecordMeasurement::Skip(reason));
            }
            Ok(step.measure())
        }
        Method::Bench(request) => {
            if let Some(reason) = commands.prepare(commit)? {
                return Ok(RecordMeasurement::Skip(reason));
            }
            Ok(bench_commit(request, commit))
        }
    }
}

/// A bench test of `commit` (already built) with `request`.
pub fn bench_commit(request: &BenchRequest, commit: &CommitInfo) -> RecordMeasurement {
    let mut request = request.clone();
    request.subject.commit = Some(commit.id.clone());
    match bench_core::run::bench(&request) {
        Ok(record) => RecordMeasurement::Record(Box::new(record)),
        Err(err) => RecordMeasurement::Skip(format!("the bench test failed: {err}")),
    }
}

/// A repeat's record, checked: a run of the commit to store, and its
/// sample of the metric, or why the commit is skipped.
#[derive(Clone, Debug)]
pub enum Checked {
    /// The run, to store, and its sample.
    Run(Box<CanonicalRun>, f64),
    /// Why this repeat gave no sample.
    Skip(String),
}

/// `measured` checked to be a run of `commit` with figures of `metric`:
/// a record that names no commit is given this one (and sealed again),
/// one that names another is a skip.
pub fn checked(
    commit: &CommitInfo,
    measured: RecordMeasurement,
    metric: Metric,
) -> exit::Result<Checked> {
    let mut record = match measured {
        RecordMeasurement::Record(record) => *record,
        RecordMeasurement::Skip(reason) => return Ok(Checked::Skip(reason)),
    };
    match record.subject.commit.as_deref() {
        Some(named) if named == commit.id => {}
        Some(named) if named.is_empty() || !commit.id.starts_with(named) => {
            return Ok(Checked::Skip(format!(
                "the run record names commit {named}, not {}: pass --commit \
                 \"$NETBISECT_COMMIT\" to netbisect bench, or check that the \
                 right build was measured",
                &commit.id[..commit.id.len().min(12)]
            )));
        }
        _ => {
            record.subject.commit = Some(commit.id.clone());
            record.seal()?;
        }
    }
    let Some(value) = record.sample(metric) else {
        return Ok(Checked::Skip(format!(
            "the run record has no {metric} figures"
        )));
    };
    Ok(Checked::Run(
        Box::new(CanonicalRun::from_record(record)?),
        value,
    ))
}
