//! run-record: the canonical run record and everything that describes a
//! run, with no socket, no network crate and no system call but reading
//! the clock, so that the archive and bisect can read, check and compare
//! records without the code that measures them.
//!
//! - [`record`]: the canonical run record (`netbisect.run/1.3`), its id and
//!   its `config_key`.
//! - [`canonical`]: RFC 8785 (JCS) bytes with the checks JSON numbers need.
//! - [`spec`]: the resolved test specification.
//! - [`shell`]: command lines quoted for POSIX shells, the one way every
//!   printed command is rendered.
//! - [`env`](mod@env): the state of a host that moves network numbers, as recorded.
//! - [`guest`]: what a guest of the VM runner hands back for a run,
//!   checked to be of the run asked.
//! - [`kernel`]: what a kernel release string says about its commit.
//! - [`time`]: absolute times as RFC 3339 strings, and the current one
//!   ([`time::now_rfc3339`], the crate's one reading of the clock).
//! - [`stats`]: the statistics every part of netbisect shares.
//!
//! Records are made by bench-core (which measures, and reads the host's
//! state into [`env::HostEnv`]) or by the archive's importers; either way
//! a record is sealed once and read back verified:
//!
//! ```
//! use run_record::record::{Endpoint, Environments, RunRecord, Source, Subject, Summary};
//! use run_record::spec::{RunSpec, TestKind};
//!
//! let mut record = RunRecord {
//!     schema: String::new(),
//!     id: String::new(),
//!     config_key: String::new(),
//!     source: Source { tool: "netbisect".into(), version: None, undated: false },
//!     started_at: "2026-01-22T10:00:00Z".into(),
//!     finished_at: "2026-01-22T10:00:10Z".into(),
//!     spec: RunSpec::defaults(TestKind::TcpStream),
//!     endpoint: Endpoint { host: "127.0.0.1".into(), port: None },
//!     subject: Subject::default(),
//!     testbed: "lab".into(),
//!     env: Environments::default(),
//!     iterations: Vec::new(),
//!     summary: Summary::default(),
//!     system: None,
//!     experiment: None,
//!     command: None,
//! };
//! // Sealing sets the schema, then the config_key, then the id.
//! record.seal()?;
//! let bytes = record.to_canonical_bytes()?;
//!
//! // Reading checks the schema, the numbers, the id and the config_key.
//! let read = RunRecord::from_slice(&bytes)?;
//! assert_eq!(read, record);
//!
//! // Any change to the content breaks the id.
//! let tampered = String::from_utf8(bytes).unwrap().replace("\"lab\"", "\"lab-2\"");
//! assert!(RunRecord::from_slice(tampered.as_bytes()).is_err());
//! # Ok::<(), run_record::record::RecordError>(())
//! ```
//!
//! Architecture invariant: run-record depends on no other crate of this
//! workspace and makes no system call of its own but reading the clock
//! (through std, for [`time::now_rfc3339`]): it does not depend on
//! socket2, libc, rustix or hmac.
#![deny(missing_docs)]

pub mod canonical;
pub mod env;
pub mod guest;
pub mod kernel;
pub mod record;
pub mod shell;
pub mod spec;
pub mod stats;
pub mod time;
