//! What a bisection is, beside the commands that start and run one:
//! `bisect` and `track` (which bisects the regressions it confirms) both
//! make sessions of this description ([`SessionSpec`], made of a
//! [`Recipe`] and a range), keep their journal in the archive
//! ([`ArchiveJournal`]), measure commits the same way ([`measuring`])
//! and print the same report ([`report`]).

pub mod measuring;
pub mod report;

use crate::exit;
use archive::Archive;
use bisect::config::BisectConfig;
use bisect::journal::BoxError;
use bisect::measure::CommandStep;
use bisect::{Journal, JournalEvent};
use measuring::KernelSession;
use run_record::record::Metric;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Schema of [`SessionSpec`].
pub const SESSION_SCHEMA: &str = "netbisect.bisect-session/1";

/// How each commit is built and measured, and how a change is decided:
/// what a bisection's session and a tracked branch both record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recipe {
    /// Only first parents are followed.
    pub first_parent: bool,
    /// Build command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// Bench spec (`--bench`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench: Option<String>,
    /// Measure command (`--measure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<String>,
    /// Timeout of the measure command, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// `--kernel`: each step boots the built image and tests inside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelSession>,
    /// The engine's options.
    pub config: BisectConfig,
}

impl Recipe {
    /// The metric the recipe decides on.
    pub fn metric(&self) -> exit::Result<Metric> {
        Ok(self.config.metric.parse()?)
    }

    /// The user's commands, as bisect's command measurer runs them.
    pub fn step(&self) -> exit::Result<CommandStep> {
        Ok(CommandStep {
            build: self.build.clone(),
            measure: self.measure.clone().unwrap_or_default(),
            timeout: self.timeout_s.map(Duration::from_secs_f64),
            metric: self.metric()?,
        })
    }
}

/// What `start` recorded: everything `run` needs, as given and resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSpec {
    /// Always [`SESSION_SCHEMA`].
    pub schema: String,
    /// The repository's working tree, canonical.
    pub repo: String,
    /// The good revision as given.
    pub good_rev: String,
    /// Its commit id.
    pub good: String,
    /// The bad revision as given.
    pub bad_rev: String,
    /// Its commit id.
    pub bad: String,
    /// Only first parents are followed.
    pub first_parent: bool,
    /// Build command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// Bench spec (`--bench`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench: Option<String>,
    /// Measure command (`--measure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<String>,
    /// Timeout of the measure command, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// `--kernel`: each step boots the built image and tests inside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelSession>,
    /// Commits in the range.
    pub n_commits: u32,
    /// The engine's options.
    pub config: BisectConfig,
    /// The regression a tracker bisects with this session (`track`): its
    /// id in the archive's lab, so that a tracker that restarts finds the
    /// session it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regression: Option<i64>,
}

/// A bisection's range: the repository, the ends as given and resolved,
/// the commits between them.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    /// The repository's working tree, canonical.
    pub repo: String,
    /// The good revision as given, and its commit id.
    pub good: (String, String),
    /// The bad revision as given, and its commit id.
    pub bad: (String, String),
    /// Commits in the range.
    pub n_commits: u32,
}

impl SessionSpec {
    /// The session bisecting `range` with `recipe`.
    pub fn new(recipe: Recipe, range: Range) -> SessionSpec {
        SessionSpec {
            schema: SESSION_SCHEMA.to_string(),
            repo: range.repo,
            good_rev: range.good.0,
            good: range.good.1,
            bad_rev: range.bad.0,
            bad: range.bad.1,
            first_parent: recipe.first_parent,
            build: recipe.build,
            bench: recipe.bench,
            measure: recipe.measure,
            timeout_s: recipe.timeout_s,
            kernel: recipe.kernel,
            n_commits: range.n_commits,
            config: recipe.config,
            regression: None,
        }
    }

    /// How the session builds, measures and decides.
    pub fn recipe(&self) -> Recipe {
        Recipe {
            first_parent: self.first_parent,
            build: self.build.clone(),
            bench: self.bench.clone(),
            measure: self.measure.clone(),
            timeout_s: self.timeout_s,
            kernel: self.kernel.clone(),
            config: self.config.clone(),
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

/// Decodes a session's journal.
pub fn decode_events(texts: &[String]) -> Result<Vec<JournalEvent>, serde_json::Error> {
    texts
        .iter()
        .map(|text| serde_json::from_str(text))
        .collect()
}

impl Journal for ArchiveJournal {
    fn load(&mut self) -> Result<Vec<JournalEvent>, BoxError> {
        Ok(self.events()?)
    }

    fn append(&mut self, event: &JournalEvent) -> Result<(), BoxError> {
        Ok(self.append_event(event)?)
    }
}
