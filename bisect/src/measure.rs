//! One repeat of a commit with the user's commands: check the commit out
//! in the bisect worktree, build it once (a failed build is a skip, as
//! `git bisect run` exit 125), run the measure command, which prints a
//! canonical run record, and take the metric's mean over the record's
//! iterations as the sample. Exit 125, any other failure, a timeout or an
//! unreadable record are skips too; if that happens at an end, the engine
//! stops with the reason.
//!
//! Commands run with `sh -c` in the worktree, with `NETBISECT_COMMIT` (the
//! full commit id) and `NETBISECT_WORKTREE` in their environment.

use crate::graph::CommitInfo;
use crate::journal::BoxError;
use crate::measurement::{Measurement, Measurer, Sample};
use crate::runner::{self, CommandOutcome};
use crate::worktree::BisectWorktree;
use git2::Oid;
use run_record::record::{Metric, RunRecord};
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
    /// The record the measure command printed and the metric's value.
    Record {
        /// The record.
        record: Box<RunRecord>,
        /// Mean of the metric over the record's iterations.
        value: f64,
    },
    /// Why the commit is skipped.
    Skip(String),
}

/// Measures commits with [`CommandStep`] in a [`BisectWorktree`].
#[derive(Debug)]
pub struct CommandMeasurer<'a> {
    worktree: &'a BisectWorktree,
    step: CommandStep,
    prepared: Option<(String, Option<String>)>,
}

impl<'a> CommandMeasurer<'a> {
    /// A measurer running `step` in `worktree`.
    pub fn new(worktree: &'a BisectWorktree, step: CommandStep) -> CommandMeasurer<'a> {
        CommandMeasurer {
            worktree,
            step,
            prepared: None,
        }
    }

    fn env(&self, commit: &CommitInfo) -> Vec<(String, String)> {
        vec![
            ("NETBISECT_COMMIT".to_string(), commit.id.clone()),
            (
                "NETBISECT_WORKTREE".to_string(),
                self.worktree.path().display().to_string(),
            ),
        ]
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
        let outcome = runner::run_command_marked(
            &self.step.measure,
            self.worktree.path(),
            &self.env(commit),
            self.step.timeout,
            Some(&marker),
        )?;
        let (code, stdout, stderr_tail) = match outcome {
            CommandOutcome::TimedOut => {
                let seconds = self.step.timeout.map_or(0.0, |t| t.as_secs_f64());
                return Ok(RecordMeasurement::Skip(format!(
                    "measure timed out after {seconds} s"
                )));
            }
            CommandOutcome::Exited {
                code,
                stdout,
                stderr_tail,
            } => (code, stdout, stderr_tail),
        };
        if code == Some(EXIT_SKIP) {
            return Ok(RecordMeasurement::Skip(
                "measure exited 125 (skip)".to_string(),
            ));
        }
        if code != Some(0) {
            return Ok(RecordMeasurement::Skip(format!(
                "measure failed ({}){}",
                exit_text(code),
                last_line(&stderr_tail)
            )));
        }
        let record = match RunRecord::from_slice(&stdout) {
            Ok(record) => record,
            Err(err) => {
                return Ok(RecordMeasurement::Skip(format!(
                    "measure printed no valid run record: {err}"
                )));
            }
        };
        let samples = record.samples(self.step.metric);
        if samples.is_empty() {
            return Ok(RecordMeasurement::Skip(format!(
                "the run record has no {} figures",
                self.step.metric
            )));
        }
        let value = samples.iter().sum::<f64>() / samples.len() as f64;
        Ok(RecordMeasurement::Record {
            record: Box::new(record),
            value,
        })
    }
}

impl Measurer for CommandMeasurer<'_> {
    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError> {
        Ok(match self.measure_record(commit)? {
            RecordMeasurement::Record { record, value } => Measurement::Sample(Sample {
                value,
                run_id: Some(record.id),
            }),
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
