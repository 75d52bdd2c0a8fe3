//! One repeat of a commit with the user's commands: check the commit out
//! in the bisect worktree, build it once (a failed build is a skip, as
//! `git bisect run` exit 125), run the measure command, which prints a
//! canonical run record, and take the metric's mean over the record's
//! iterations as the sample ([`RunRecord::sample`]). Exit 125, any other
//! failure, a timeout or an unreadable record are skips too; if that
//! happens at an end, the engine stops with the reason.
//!
//! Commands run with `sh -c` in the worktree, with `NETBISECT_COMMIT` (the
//! full commit id) and `NETBISECT_WORKTREE` in their environment.
//! [`run_measure`] is one run of a measure command wherever it runs:
//! here, and in the tree `netbisect verdict` is run in.

use crate::graph::CommitInfo;
use crate::journal::BoxError;
use crate::measurement::{Measurement, Measurer, Sample};
use crate::worktree::BisectWorktree;
use child_process::runner::{self, CommandOutcome};
use git2::Oid;
use run_record::record::{Metric, RunRecord};
use std::path::Path;
use std::time::Duration;

/// The exit code that means "cannot test this commit" (as `git bisect
/// run`).
pub const EXIT_SKIP: i32 = 125;

/// The user's commands.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandStep {
    /// Build command, run once per commit; `None`: nothing to build.
    pub build: Option<String>,
    /// Measure command, run once per repeat; prints a run record.
    pub measure: String,
    /// Longest a measure command may run.
    pub timeout: Option<Duration>,
    /// The metric taken from the record.
    pub metric: Metric,
}

/// One repeat with its record, or why there is none.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordMeasurement {
    /// The record the measure command printed.
    Record(Box<RunRecord>),
    /// Why the commit is skipped.
    Skip(String),
}

/// How one run of a measure command ended.
#[derive(Clone, Debug, PartialEq)]
pub enum CommandMeasurement {
    /// It exited 0, having printed this.
    Printed(Vec<u8>),
    /// Why it gave nothing to read: a timeout, exit 125, another failure.
    Skip(String),
}

/// Runs the measure `command` once in `dir`, with `env` added; a timeout,
/// exit 125 or another failure is a [`CommandMeasurement::Skip`] with its
/// reason. `marker` records the command's process group while it runs.
pub fn run_measure(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    timeout: Option<Duration>,
    marker: Option<&Path>,
) -> Result<CommandMeasurement, runner::RunnerError> {
    let outcome = runner::run_command_marked(command, dir, env, timeout, marker)?;
    let (code, stdout, stderr_tail) = match outcome {
        CommandOutcome::TimedOut => {
            let seconds = timeout.map_or(0.0, |t| t.as_secs_f64());
            return Ok(CommandMeasurement::Skip(format!(
                "measure timed out after {seconds} s"
            )));
        }
        CommandOutcome::Exited {
            stdout_cut: true, ..
        } => {
            return Ok(CommandMeasurement::Skip(format!(
                "measure printed over {} MiB on stdout, where one run record is expected; \
                 the rest was not kept",
                runner::MAX_STDOUT_BYTES >> 20
            )));
        }
        CommandOutcome::Exited {
            code,
            stdout,
            stderr_tail,
            ..
        } => (code, stdout, stderr_tail),
    };
    Ok(match code {
        Some(0) => CommandMeasurement::Printed(stdout),
        Some(EXIT_SKIP) => CommandMeasurement::Skip("measure exited 125 (skip)".to_string()),
        _ => CommandMeasurement::Skip(format!(
            "measure failed ({}){}",
            exit_text(code),
            last_line(&stderr_tail)
        )),
    })
}

/// [`run_measure`], and the run record the command printed: an unreadable
/// record is a skip too.
pub fn measure_once(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    timeout: Option<Duration>,
    marker: Option<&Path>,
) -> Result<RecordMeasurement, runner::RunnerError> {
    Ok(match run_measure(command, dir, env, timeout, marker)? {
        CommandMeasurement::Skip(reason) => RecordMeasurement::Skip(reason),
        CommandMeasurement::Printed(stdout) => match RunRecord::from_slice(&stdout) {
            Ok(record) => RecordMeasurement::Record(Box::new(record)),
            Err(err) => {
                RecordMeasurement::Skip(format!("measure printed no valid run record: {err}"))
            }
        },
    })
}

/// The commit built last in a worktree, and why it cannot be measured
/// when its build failed.
pub type Prepared = Option<(String, Option<String>)>;

/// Measures commits with [`CommandStep`] in a [`BisectWorktree`].
#[derive(Debug)]
pub struct CommandMeasurer<'a> {
    worktree: &'a BisectWorktree,
    step: CommandStep,
    prepared: Prepared,
    extra_env: Vec<(String, String)>,
}

impl<'a> CommandMeasurer<'a> {
    /// A measurer running `step` in `worktree`.
    pub fn new(worktree: &'a BisectWorktree, step: CommandStep) -> CommandMeasurer<'a> {
        CommandMeasurer {
            worktree,
            step,
            prepared: None,
            extra_env: Vec::new(),
        }
    }

    /// The same, with `env` added to the commands' environment (the slot
    /// of a bisection that measures several commits at once).
    pub fn with_env(mut self, env: Vec<(String, String)>) -> CommandMeasurer<'a> {
        self.extra_env = env;
        self
    }

    /// The same, knowing that the worktree holds the build of
    /// `prepared` (a measurer made again for the same worktree).
    pub fn with_prepared(mut self, prepared: Prepared) -> CommandMeasurer<'a> {
        self.prepared = prepared;
        self
    }

    /// What the worktree holds the build of.
    pub fn prepared(&self) -> Prepared {
        self.prepared.clone()
    }

    fn env(&self, commit: &CommitInfo) -> Vec<(String, String)> {
        let mut env = vec![
            ("NETBISECT_COMMIT".to_string(), commit.id.clone()),
            (
                "NETBISECT_WORKTREE".to_string(),
                self.worktree.path().display().to_string(),
            ),
        ];
        env.extend(self.extra_env.iter().cloned());
        env
    }

    /// The file that records the running command's process group, beside
    /// the worktree.
    fn marker(&self) -> std::path::PathBuf {
        self.worktree.path().with_extension("running")
    }

    /// Checks `commit` out and builds it, unless that is already done;
    /// `Some(reason)` when it cannot be measured.
    pub fn prepare(&mut self, commit: &CommitInfo) -> Result<Option<String>, BoxError> {
        if let Some((prepared_id, skip)) = &self.prepared
            && prepared_id == &commit.id
        {
            return Ok(skip.clone());
        }
        let oid = Oid::from_str(&commit.id)?;
        self.worktree.checkout(oid)?;
        let skip = match &self.step.build {
            None => None,
            Some(build) => {
                let marker = self.marker();
                match runner::run_command_marked(
                    build,
                    self.worktree.path(),
                    &self.env(commit),
                    None,
                    Some(&marker),
                )? {
                    CommandOutcome::Exited { code: Some(0), .. } => None,
                    CommandOutcome::Exited {
                        code, stderr_tail, ..
                    } => Some(format!(
                        "build failed ({}){}",
                        exit_text(code),
                        last_line(&stderr_tail)
                    )),
                    CommandOutcome::TimedOut => Some("build timed out".to_string()),
                }
            }
        };
        self.prepared = Some((commit.id.clone(), skip.clone()));
        Ok(skip)
    }

    /// One repeat of `commit`, with the record.
    pub fn measure_record(&mut self, commit: &CommitInfo) -> Result<RecordMeasurement, BoxError> {
        if let Some(reason) = self.prepare(commit)? {
            return Ok(RecordMeasurement::Skip(reason));
        }
        let marker = self.marker();
        Ok(measure_once(
            &self.step.measure,
            self.worktree.path(),
            &self.env(commit),
            self.step.timeout,
            Some(&marker),
        )?)
    }
}

impl Measurer for CommandMeasurer<'_> {
    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError> {
        Ok(match self.measure_record(commit)? {
            RecordMeasurement::Record(record) => match record.sample(self.step.metric) {
                Some(value) => Measurement::Sample(Sample {
                    value,
                    run_id: Some(record.id),
                }),
                None => Measurement::Skip(format!(
                    "the run record has no {} figures",
                    self.step.metric
                )),
            },
            RecordMeasurement::Skip(reason) => Measurement::Skip(reason),
        })
    }
}

fn exit_text(code: Option<i32>) -> String {
    match code {
        Some(code) => format!("exit {code}"),
        None => "killed by a signal".to_string(),
    }
}

fn last_line(stderr_tail: &str) -> String {
    match stderr_tail
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
    {
        Some(line) => format!(": {}", line.trim()),
        None => String::new(),
    }
}
