//! How the command line implements bisect's traits: a [`Measurer`] that
//! builds in the bisect worktree, measures with a bench test or the
//! user's command, stores every run in the archive before handing its
//! sample to the engine, and finds archived runs of a commit under the
//! session's config_key (its journal is [`crate::bisection`]'s). What
//! it fails with reaches the engine boxed as an [`exit::Failure`], so
//! that the bisection ends with the code the error declared.

use crate::bisection::measuring::{self, Checked};
pub use crate::bisection::measuring::{KernelStep, Method};
use crate::exit;
use archive::{Archive, RunQuery};
use bisect::graph::CommitInfo;
use bisect::journal::BoxError;
use bisect::measure::{CommandMeasurer, RecordMeasurement};
use bisect::{Measurement, Measurer, Sample};
use run_record::record::Metric;

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
        measuring::measure_record(&self.method, &mut self.commands, commit)
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
        let (run, value) = match measuring::checked(commit, measured, self.metric)? {
            Checked::Run(run, value) => (run, value),
            Checked::Skip(reason) => return Ok(Measurement::Skip(reason)),
        };
        let config_key = run.record().config_key.clone();
        let run_id = run.record().id.clone();
        if let Err(err) = self.archive.store(&run) {
            return Err(self.keep_if_away(&run, err));
        }
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
    /// The failure of storing `run`: where the archive is a shared one
    /// that went away, the run is kept in the spool (see
    /// [`crate::spool`]) and the bisection stops, to carry on from its
    /// journal once the archive answers (the kept run is sent first, and
    /// found there as an archived sample of its commit).
    fn keep_if_away(
        &self,
        run: &archive::CanonicalRun,
        err: archive::ArchiveError,
    ) -> exit::Failure {
        let location = self.archive.location();
        if location.file().is_some() || !err.is_unreachable() {
            return exit::Failure::from(err).context("failed to store the run");
        }
        if let Err(failure) = crate::store::keep_in_spool(&location, run.record(), &err) {
            return failure;
        }
        exit::Failure::from(err).context(format!(
            "the archive at {location} went away: the bisection stops here, its journal kept; \
             `netbisect bisect run` carries on once the archive answers"
        ))
    }

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
