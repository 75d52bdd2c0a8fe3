//! The canonical run record, schema `netbisect.run/1.4`: one test run as
//! one JSON document, the unit that everything else stores, compares and
//! bisects on.
//!
//! # Format
//!
//! A record is a JSON object with these members (see the types below for
//! every field):
//!
//! - `schema`: `"netbisect.run/1.4"`, or `"netbisect.run/1.3"` for a
//!   record without the member 1.4 added (see below). A reader rejects
//!   any other major version. A record of a revision this crate knows
//!   (`netbisect.run/1` to `netbisect.run/1.4`) has exactly the members
//!   the types below define, absent values left out (never `null`), so
//!   that what is read
//!   writes back to the same bytes and keeps its id; a `netbisect.run/1`
//!   record stays one when read (its `schema` is kept). Only a newer minor
//!   revision (`netbisect.run/1.N`, N > 4) may carry members this crate
//!   does not know; the id still covers them, and its `config_key` is
//!   checked over its `spec` as written.
//!
//!   Revision 1.1 added the spec's `first_burst` (left out when 0, so the
//!   `config_key` of every run without a burst is what 1.0 computed), the
//!   count of failed sends by errno (`send_errors`) of UDP tests and
//!   `source.undated`, and made an iteration's byte and message counts
//!   optional (an import keeps only what its tool printed). A 1.0 reader
//!   reads a 1.1 record that uses none of these; it refuses one with a
//!   burst (its config_key), an undated one (its id) and one without
//!   counts (a missing field), rather than misread them.
//!
//!   Revision 1.2 added the spec's `system` (offloads, MTU, tx queue
//!   length and sysctls asked of the system under test; left out when
//!   none, so older config_keys hold), the record's `system` (what was
//!   granted of them, [`SystemOutcome`]) and `experiment` (the
//!   experiment and round a run of `netbisect ab` belongs to,
//!   [`ExperimentTag`]; not in the config_key), and what an import keeps
//!   as its tool printed it: the spec's `reported_socket_buffers` (the
//!   buffers a text says were granted, never taken for `-s`/`-S`; left
//!   out when absent) and an iteration's `reported_sent_throughput_bps`
//!   (netperf's UDP_STREAM sender) and `reported_operation_rate` (uperf's
//!   operations per second).
//!
//!   Revision 1.3 added the `vm` section's `host_cpus`, the host's CPUs
//!   a VM was pinned to (each slot of `bisect run --jobs` with `--kernel`
//!   its own; not in the config_key).
//!
//!   Revision 1.4 added `command`: the words after `netbisect` of the
//!   command that made a run in a VM (`bench --kernel ...`, `ab ...`),
//!   as given, so that the line that makes it again names the kernel
//!   as its path was given, the VM options as given and an experiment's
//!   axes in the order given (see [`check_command`]; not in the
//!   config_key). A record without it is still written as 1.3, byte for
//!   byte what earlier writers wrote, so that its id and every older
//!   reader stay as they were.
//! - `id`: blake3 of the canonical bytes of the record without `id`, as 64
//!   hex digits. Identical content gives an identical id, which makes
//!   storing, importing and merging idempotent. For an imported run whose
//!   text carried no time (`source.undated`, since 1.1), `started_at` and
//!   `finished_at` are the import time and are left out too, so its id
//!   depends on the text's content only.
//! - `config_key`: blake3 of the canonical bytes of the resolved `spec`,
//!   the `testbed` and the comparable knobs of both ends' environments
//!   ([`HostEnv::comparable_knobs`]); never the commit or a time. Two runs
//!   with the same `config_key` measured the same thing the same way.
//! - `source`, `started_at`, `finished_at` (RFC 3339 UTC), `spec`,
//!   `endpoint`, `subject`, `testbed`, `env`, `iterations`, `summary`.
//!
//! Bytes are RFC 8785 canonical JSON. Units are SI base units unless the
//! key names another (`_bps` bits per second, `_bytes`, `_s` seconds, `_us`
//! microseconds, `_pct` percent).
//!
//! This module holds the top level, [`RunRecord::seal`] and the keys;
//! reading a record back is `read.rs` ([`RunRecord::from_slice`]), the
//! members below the top level are `figures.rs`, the figures a run is
//! judged by [`Metric`], the latency histogram's layout [`histogram`],
//! the limits of the run's names, which every archive must store,
//! `names.rs` ([`RunRecord::check_names`]), and the physical ranges and
//! sizes every record is held to [`limits`](mod@limits).

mod experiment;
mod figures;
pub mod histogram;
pub mod limits;
mod metric;
mod names;
mod read;
mod system;

pub use experiment::{
    COMMANDS_KEPT, EXPERIMENT_ID_DIGITS, ExperimentTag, MAX_COMMAND_WORD_BYTES, MAX_COMMAND_WORDS,
    check_command,
};
pub use figures::{
    BufferTruth, ConfidenceOutcome, CpuConfidence, CpuDetail, CpuFigures, DEFAULT_CONTROL_PORT,
    EndReport, Endpoint, EndsReport, Environments, FlowFigures, HostCpu, Iteration, LatencyFigures,
    LatencyHistogram, LatencyReport, SocketTruth, Source, Spread, Subject, Summary, TcpInfoFigures,
    UdpFigures,
};
pub use metric::{Direction, Metric, UnknownMetric};
pub use names::{MAX_NAME_BYTES, check_name};
pub use system::{Granted, SystemOutcome};

use crate::canonical::{self, CanonicalError};
use crate::env::{HostEnv, VmEnv};
use crate::spec::RunSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The newest schema this crate writes: that of a record with a member
/// revision 1.4 added.
pub const SCHEMA: &str = "netbisect.run/1.4";
/// The schema of a record without the members revision 1.4 added, as
/// every writer before it wrote it.
pub const SCHEMA_WITHOUT_COMMAND: &str = "netbisect.run/1.3";
/// The schema major version this crate reads.
pub const SCHEMA_MAJOR: u32 = 1;
/// The newest minor revision of [`SCHEMA_MAJOR`] whose members this crate
/// knows; a record of a newer one may carry members it does not.
pub const SCHEMA_MINOR: u32 = 4;
const SCHEMA_PREFIX: &str = "netbisect.run/";

/// Why a record could not be read, written or sealed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The bytes are not UTF-8.
    #[error("not UTF-8: invalid byte at offset {offset}")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// The input ended inside the document.
    #[error("truncated JSON: input ends at line {line}, column {column}")]
    Truncated {
        /// Line where the input ends.
        line: usize,
        /// Column where the input ends.
        column: usize,
    },
    /// The JSON text is malformed.
    #[error("malformed JSON at line {line}, column {column}: {message}")]
    Malformed {
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The document has no `schema` member.
    #[error("missing \"schema\" field (expected \"{SCHEMA}\")")]
    MissingSchema,
    /// The schema names another document type or major version.
    #[error("unsupported schema \"{found}\": this netbisect reads netbisect.run/{SCHEMA_MAJOR}.x")]
    UnsupportedSchema {
        /// The schema as found.
        found: String,
    },
    /// A field is missing or has the wrong type.
    #[error("invalid record: {0}")]
    Invalid(String),
    /// A number cannot be represented canonically.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
    /// The stated id is not the hash of the content.
    #[error("id does not match the content: stated {stated}, computed {computed}")]
    IdMismatch {
        /// The id in the document.
        stated: String,
        /// The id of the content.
        computed: String,
    },
    /// A figure or part beyond the limits of a record
    /// ([`limits`](mod@limits)).
    #[error(transparent)]
    Limit(Box<limits::LimitError>),
    /// The stated config_key is not the hash of the spec and environment.
    #[error("config_key does not match the content: stated {stated}, computed {computed}")]
    ConfigKeyMismatch {
        /// The config_key in the document.
        stated: String,
        /// The config_key of the content.
        computed: String,
    },
    /// A name of the run (label, commit, testbed, ...) is longer than
    /// every archive stores ([`MAX_NAME_BYTES`]).
    #[error("{field} is {length} bytes long, over the limit of {limit} bytes")]
    NameTooLong {
        /// The member, or the option that gives it.
        field: &'static str,
        /// Its length, bytes.
        length: usize,
        /// The limit, bytes.
        limit: usize,
    },
    /// A name of the run holds a NUL character, which PostgreSQL's text
    /// cannot hold.
    #[error("{field} holds a NUL character (at byte {offset}), which no archive stores")]
    NulInName {
        /// The member, or the option that gives it.
        field: &'static str,
        /// Where the first NUL is, bytes from the start.
        offset: usize,
    },
}

impl From<limits::LimitError> for RecordError {
    fn from(err: limits::LimitError) -> RecordError {
        // Boxed: a limit's path and figures would otherwise make every
        // result of reading a record several times larger.
        RecordError::Limit(Box::new(err))
    }
}

/// One test run: the canonical run record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Always [`SCHEMA`] when written by this crate.
    pub schema: String,
    /// Content hash; see the module documentation.
    pub id: String,
    /// Comparability hash; see the module documentation.
    pub config_key: String,
    /// The tool that produced the run.
    pub source: Source,
    /// Start of the run, RFC 3339 UTC.
    pub started_at: String,
    /// End of the run, RFC 3339 UTC.
    pub finished_at: String,
    /// The resolved test specification.
    pub spec: RunSpec,
    /// Where the remote end was.
    pub endpoint: Endpoint,
    /// The code under test.
    pub subject: Subject,
    /// Name of the testbed (the pair of machines and their wiring).
    pub testbed: String,
    /// Environment of both ends.
    pub env: Environments,
    /// Every iteration's raw figures.
    pub iterations: Vec<Iteration>,
    /// Summary over the iterations.
    pub summary: Summary,
    /// What was granted of the settings `spec.system` asked (since 1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemOutcome>,
    /// The experiment and round of a run of `netbisect ab` (since 1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<ExperimentTag>,
    /// The words after `netbisect` of the command that made the run, as
    /// given (`ab --kernel-a base/bzImage ...`), for a run in a VM
    /// (since 1.4; see [`check_command`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

/// What `config_key` hashes. The spec is a [`RunSpec`], or the `spec`
/// member as written when a newer minor revision may have added to it.
#[derive(Serialize)]
struct ConfigKeyInput<'a, S: Serialize> {
    spec: &'a S,
    testbed: &'a str,
    local_env: BTreeMap<String, String>,
    remote_env: Option<BTreeMap<String, String>>,
    /// Left out when there was no VM, so that such records keep the key
    /// they had before VMs were described.
    #[serde(skip_serializing_if = "Option::is_none")]
    vm: Option<BTreeMap<String, String>>,
}

/// What a spec key hashes.
#[derive(Serialize)]
struct SpecKeyInput<'a> {
    spec: &'a RunSpec,
    testbed: &'a str,
}

impl RunRecord {
    /// The spec key: blake3 of the canonical bytes of the resolved spec
    /// and the testbed, as 64 hex digits. Unlike `config_key` it leaves the
    /// environment out, so runs of the same test on the same testbed share
    /// it even when a sysctl or the governor changed between them; that is
    /// what `compare` groups on, so that it can show such differences
    /// rather than silently separate the runs.
    pub fn compute_spec_key(&self) -> Result<String, RecordError> {
        let input = SpecKeyInput {
            spec: &self.spec,
            testbed: &self.testbed,
        };
        Ok(canonical::hash_hex(&canonical::to_canonical_bytes(&input)?))
    }

    /// The `config_key` of this record's spec, testbed and environment.
    pub fn compute_config_key(&self) -> Result<String, RecordError> {
        self.config_key_over(&self.spec)
    }

    fn config_key_over<S: Serialize>(&self, spec: &S) -> Result<String, RecordError> {
        let input = ConfigKeyInput {
            spec,
            testbed: &self.testbed,
            local_env: self.env.local.comparable_knobs(),
            remote_env: self.env.remote.as_ref().map(HostEnv::comparable_knobs),
            vm: self.env.vm.as_ref().map(VmEnv::comparable_knobs),
        };
        Ok(canonical::hash_hex(&canonical::to_canonical_bytes(&input)?))
    }

    /// The id of this record's content (everything but `id`).
    pub fn compute_id(&self) -> Result<String, RecordError> {
        let bytes = canonical::to_canonical_bytes(self)?;
        let tree: Value =
            serde_json::from_slice(&bytes).map_err(|err| RecordError::Invalid(err.to_string()))?;
        id_of_tree(tree)
    }

    /// Sets `schema`, `config_key` and `id` from the content. Call after
    /// the last change to a record, before storing or printing it.
    pub fn seal(&mut self) -> Result<(), RecordError> {
        self.schema = if self.command.is_some() {
            SCHEMA
        } else {
            SCHEMA_WITHOUT_COMMAND
        }
        .to_string();
        self.config_key = self.compute_config_key()?;
        self.id = self.compute_id()?;
        Ok(())
    }

    /// The canonical bytes of the record, `id` included.
    pub fn to_canonical_bytes(&self) -> Result<Vec<u8>, RecordError> {
        Ok(canonical::to_canonical_bytes(self)?)
    }

    /// Samples of `metric`, one per iteration that has it.
    pub fn samples(&self, metric: Metric) -> Vec<f64> {
        self.iterations
            .iter()
            .filter_map(|iteration| metric.of_iteration(iteration))
            .collect()
    }

    /// The sample one run gives of `metric` to a bisection, `verdict` and
    /// `plan`: the mean over its iterations (a run is one sample, however
    /// many iterations it has); `None` when no iteration has the figure.
    pub fn sample(&self, metric: Metric) -> Option<f64> {
        let samples = self.samples(metric);
        if samples.is_empty() {
            return None;
        }
        let value = samples.iter().sum::<f64>() / samples.len() as f64;
        value.is_finite().then_some(value)
    }

    /// The run-level value of `metric`: the summary's figure where the
    /// summary has one, else the mean over the iterations that measured it.
    pub fn value(&self, metric: Metric) -> Option<f64> {
        metric
            .of_summary(&self.summary)
            .or_else(|| Spread::of(&self.samples(metric)).map(|spread| spread.mean))
    }

    /// The metric a run of this test kind is judged by.
    pub fn primary_metric(&self) -> Metric {
        Metric::primary_for(&self.spec)
    }
}

fn id_of_tree(tree: Value) -> Result<String, RecordError> {
    Ok(id_and_canonical_bytes(&tree)?.0)
}

/// The id of a document's tree (the hash of its canonical bytes without
/// `id`, and without its times when its source is undated) and its own
/// canonical bytes, written once.
fn id_and_canonical_bytes(tree: &Value) -> Result<(String, Vec<u8>), RecordError> {
    let undated = tree
        .get("source")
        .and_then(|source| source.get("undated"))
        .is_some_and(|undated| *undated == Value::Bool(true));
    let left_out: &[&str] = if undated {
        &["id", "started_at", "finished_at"]
    } else {
        &["id"]
    };
    let (bytes, hashed) = canonical::tree_to_canonical_bytes_and_without(tree, left_out)?;
    Ok((canonical::hash_hex(&hashed), bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TestKind;

    fn record() -> RunRecord {
        let mut record = RunRecord {
            schema: String::new(),
            id: String::new(),
            config_key: String::new(),
            source: Source {
                tool: "netbisect".into(),
                version: None,
                undated: false,
            },
            started_at: "2024-01-22T10:00:00Z".into(),
            finished_at: "2024-01-22T10:00:10Z".into(),
            spec: RunSpec::defaults(TestKind::TcpStream),
            endpoint: Endpoint {
                host: "127.0.0.1".into(),
                port: None,
            },
            subject: Subject {
                commit: Some("abc123".into()),
                ..Subject::default()
            },
            testbed: "lab".into(),
            env: Environments::default(),
            iterations: Vec::new(),
            summary: Summary::default(),
            system: None,
            experiment: None,
            command: None,
        };
        record.seal().unwrap();
        record
    }

    #[test]
    fn spec_key_follows_spec_and_testbed_only() {
        let base = record();
        let key = base.compute_spec_key().unwrap();
        assert_eq!(key.len(), 64);

        let mut elsewhere = base.clone();
        elsewhere.subject.commit = Some("def456".into());
        elsewhere.started_at = "2025-02-01T00:00:00Z".into();
        elsewhere.finished_at = "2025-02-01T00:00:10Z".into();
        elsewhere.env.local.governor = Some("powersave".into());
        elsewhere
            .env
            .local
            .sysctls
            .insert("net.ipv4.tcp_rmem".into(), "4096 87380 6291456".into());
        elsewhere.seal().unwrap();
        assert_ne!(elsewhere.config_key, base.config_key);
        assert_eq!(elsewhere.compute_spec_key().unwrap(), key);

        let mut other_size = base.clone();
        other_size.spec.send_size_bytes = 1024;
        other_size.seal().unwrap();
        assert_ne!(other_size.compute_spec_key().unwrap(), key);

        let mut other_testbed = base.clone();
        other_testbed.testbed = "lab-2".into();
        assert_ne!(other_testbed.compute_spec_key().unwrap(), key);
    }
}
