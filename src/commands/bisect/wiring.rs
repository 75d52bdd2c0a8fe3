//! How the command line implements bisect's traits: a [`Measurer`] that
//! builds in the bisect worktree, measures with a bench test or the
//! user's command, stores every run in the archive before handing its
//! sample to the engine, and finds archived runs of a commit under the
//! session's config_key; and a [`Journal`] kept in the archive. What
//! they fail with reaches the engine boxed as an [`exit::Failure`], so
//! that the bisection ends with the code the error declared.

use crate::exit;
use crate::vm::{self, GuestSettings, GuestSubject, KernelUnderTest, VmOptions};
use archive::{Archive, CanonicalRun, RunQuery};
use bench_core::run::BenchRequest;
use bisect::graph::CommitInfo;
use bisect::journal::BoxError;
use bisect::measure::{CommandMeasurer, RecordMeasurement};
use bisect::{Journal, JournalEvent, Measurement, Measurer, Sample};
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

/// The measurer of a bisection session.
pub struct SessionMeasurer<'w> {
    commands: CommandMeasurer<'w>,
    method: Method,
    metric: Metric,
    archive: Archive,
    session_id: i64,
    config_key: Option<String>,
    /// Wall time of the fresh repeats so far, builds included, and their
    /// count: the seconds per repeat of the estimate.
    seconds_measuring: f64,
    n_measured: u32,
}

impl<'w> SessionMeasurer<'w> {
    /// A measurer storing into `archive` for session `session_id`, whose
    /// runs are compared under `config_key` once that is known.
    pub fn new(
        commands: CommandMeasurer<'w>,
        method: Method,
        metric: Metric,
        archive: Archive,
        session_id: i64,
        config_key: Option<String>,
    ) -> SessionMeasurer<'w> {
        SessionMeasurer {
            commands,
            method,
            metric,
            archive,
            session_id,
            config_key,
            seconds_measuring: 0.0,
            n_measured: 0,
        }
    }

    /// The config_key runs are compared under, once known.
    pub fn config_key(&self) -> Option<&str> {
        self.config_key.as_deref()
    }

    fn record_of(&mut self, commit: &CommitInfo) -> exit::Result<RecordMeasurement> {
        match &self.method {
            Method::Command => Ok(self.commands.measure_record(commit)?),
            Method::Kernel(step) => {
                if let Some(reason) = self.commands.prepare(commit)? {
                    return Ok(RecordMeasurement::Skip(reason));
                }
                Ok(step.measure())
            }
            Method::Bench(request) => {
                if let Some(reason) = self.commands.prepare(commit)? {
                    return Ok(RecordMeasurement::Skip(reason));
                }
                let mut request = (**request).clone();
                request.subject.commit = Some(commit.id.clone());
                Ok(match bench_core::run::bench(&request) {
                    Ok(record) => RecordMeasurement::Record(Box::new(record)),
                    Err(err) => RecordMeasurement::Skip(format!("the bench test failed: {err}")),
                })
            }
        }
    }

    /// One fresh repeat of `commit`: measured, checked to be of that
    /// commit, stored in the archive, and only then handed over.
    pub fn take(&mut self, commit: &CommitInfo) -> exit::Result<Measurement> {
        let measured = self.record_of(commit)?;
        self.accept(commit, measured)
    }

    /// How each repeat is measured.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Counts `seconds` of one fresh repeat (build included) in the
    /// seconds per repeat of the estimate.
    pub fn note_seconds(&mut self, seconds: f64) {
        self.seconds_measuring += seconds;
        self.n_measured += 1;
    }

    /// A repeat of `commit` measured elsewhere (on a slot): checked to be
    /// of that commit, stored in the archive, and only then handed over.
    pub fn accept(
        &mut self,
        commit: &CommitInfo,
        measured: RecordMeasurement,
    ) -> exit::Result<Measurement> {
        let mut record = match measured {
            RecordMeasurement::Record(record) => *record,
            RecordMeasurement::Skip(reason) => return Ok(Measurement::Skip(reason)),
        };
        match record.subject.commit.as_deref() {
            Some(named) if named == commit.id => {}
            Some(named) if named.is_empty() || !commit.id.starts_with(named) => {
                return Ok(Measurement::Skip(format!(
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
        let Some(value) = record.sample(self.metric) else {
            return Ok(Measurement::Skip(format!(
                "the run record has no {} figures",
                self.metric
            )));
        };
        let config_key = record.config_key.clone();
        let run_id = record.id.clone();
        let run = CanonicalRun::from_record(record)?;
        self.archive.store(&run)?;
        if self.config_key.is_none() {
            self.archive
                .set_session_config_key(self.session_id, &config_key)?;
            self.config_key = Some(config_key);
        }
        Ok(Measurement::Sample(Sample {
            value,
            run_id: Some(run_id),
        }))
    }
}

impl SessionMeasurer<'_> {
    /// The archived samples of `commit` under the session's config_key.
    fn archived_samples(&self, commit: &CommitInfo) -> exit::Result<Vec<Sample>> {
        let Some(config_key) = &self.config_key else {
            return Ok(Vec::new());
        };
        let query = RunQuery {
            commit_prefix: Some(commit.id.clone()),
            config_key_prefix: Some(config_key.clone()),
            ..RunQuery::default()
        };
        let records = self.archive.records(&query)?;
        Ok(records
            .iter()
            .filter(|record| record.subject.commit.as_deref() == Some(commit.id.as_str()))
            .filter_map(|record| {
                record.sample(self.metric).map(|value| Sample {
                    value,
                    run_id: Some(record.id.clone()),
                })
            })
            .collect())
    }
}

impl Measurer for SessionMeasurer<'_> {
    fn archived(&mut self, commit: &CommitInfo) -> Result<Vec<Sample>, BoxError> {
        Ok(self.archived_samples(commit)?)
    }

    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError> {
        let started = std::time::Instant::now();
        let measurement = self.take(commit)?;
        self.note_seconds(started.elapsed().as_secs_f64());
        Ok(measurement)
    }

    /// The mean wall time of this process's repeats; before any, a bench
    /// test's nominal length (a resumed bisection whose ends were
    /// journaled); a command's, or a boot's, is then unknown.
    fn seconds_per_sample(&self) -> Option<f64> {
        if self.n_measured > 0 {
            return Some(self.seconds_measuring / f64::from(self.n_measured));
        }
        match &self.method {
            Method::Bench(request) => {
                Some(request.spec.duration_s * f64::from(request.spec.iterations_max.max(1)))
            }
            Method::Kernel(_) | Method::Command => None,
        }
    }
}

/// A bisection's journal, kept in the archive as JSON documents.
pub struct ArchiveJournal {
    archive: Archive,
    session_id: i64,
}

impl ArchiveJournal {
    /// The journal of session `session_id` in `archive`.
    pub fn new(archive: Archive, session_id: i64) -> ArchiveJournal {
        ArchiveJournal {
            archive,
            session_id,
        }
    }
}

/// Decodes a session's journal.
pub fn decode_events(texts: &[String]) -> Result<Vec<JournalEvent>, serde_json::Error> {
    texts
        .iter()
        .map(|text| serde_json::from_str(text))
        .collect()
}

impl ArchiveJournal {
    fn events(&self) -> exit::Result<Vec<JournalEvent>> {
        let texts = self.archive.session_events(self.session_id)?;
        Ok(decode_events(&texts)?)
    }

    fn append_event(&mut self, event: &JournalEvent) -> exit::Result<()> {
        let text = serde_json::to_string(event)?;
        self.archive.append_event(self.session_id, &text)?;
        Ok(())
    }
}

impl Journal for ArchiveJournal {
    fn load(&mut self) -> Result<Vec<JournalEvent>, BoxError> {
        Ok(self.events()?)
    }

    fn append(&mut self, event: &JournalEvent) -> Result<(), BoxError> {
        Ok(self.append_event(event)?)
    }
}
