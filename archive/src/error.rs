//! The archive's error type.

use run_record::record::RecordError;
use std::path::PathBuf;

/// Why an archive operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The file could not be opened or created.
    #[error("cannot open archive {path}: {source}")]
    Open {
        /// The archive file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// A read found no file at the path: reading never creates an
    /// archive.
    #[error("no archive at {path}")]
    NoArchive {
        /// The path given.
        path: PathBuf,
    },
    /// The path names something that is not a regular file: a
    /// directory, a device, a FIFO, a socket, or a file the kernel makes
    /// up (under /proc or /sys).
    #[error("{path} is {kind}, not an archive: an archive is a regular file (made when absent)")]
    NotAFile {
        /// The path given.
        path: PathBuf,
        /// What it is, as a person says it ("a directory").
        kind: &'static str,
    },
    /// The file is damaged: writing to it could spread the damage.
    #[error(
        "{path} is damaged ({detail}); nothing was written. \
         Run `netbisect archive check` for details"
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The first problem found.
        detail: String,
    },
    /// The file system holding the archive is full.
    #[error("the file system holding {path} is full (database or disk is full)")]
    Full {
        /// The file.
        path: PathBuf,
    },
    /// The archive can only be read here, and its schema is older than
    /// this netbisect reads.
    #[error(
        "{path} has archive schema version {found}; this netbisect reads version \
         {supported} and cannot upgrade a file it may not write"
    )]
    ReadOnlyOldSchema {
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// A file beside the archive (its `-wal` or `-shm`) belongs to a user
    /// this one cannot write as, so SQLite would open it read-only and
    /// refuse every write.
    #[error(
        "{path} belongs to uid {uid} and this user cannot write it, so the archive \
         cannot be written; it holds nothing while no one has the archive open, and \
         its owner or root may remove it"
    )]
    ForeignSideFile {
        /// The file beside the archive.
        path: PathBuf,
        /// Its owner.
        uid: u32,
    },
    /// The file is not a netbisect archive, or is damaged.
    #[error("{path} is not a usable netbisect archive: {detail}")]
    NotAnArchive {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The file was written by a newer netbisect.
    #[error(
        "{path} has archive schema version {found}, newer than version {supported} \
         that this netbisect reads; use a newer netbisect"
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// A record handed to the store is not sealed.
    #[error("run record is not sealed: its id {stated} is not the hash {computed} of its content")]
    NotSealed {
        /// The id in the record.
        stated: String,
        /// The id of its content.
        computed: String,
    },
    /// A record could not be encoded or decoded.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A stored run does not decode.
    #[error("stored run {id} is damaged: {detail}")]
    DamagedRun {
        /// The run's id column.
        id: String,
        /// What is wrong.
        detail: String,
    },
    /// No run has an id starting with the prefix.
    #[error("no run with an id starting with '{0}'")]
    NoSuchRun(String),
    /// Several runs have ids starting with the prefix.
    #[error("run id prefix '{prefix}' is ambiguous: {n_matches} runs match; give more digits")]
    AmbiguousId {
        /// The prefix given.
        prefix: String,
        /// How many runs it matches.
        n_matches: usize,
    },
    /// A query argument is not acceptable.
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    /// What may cite a run (a journal event, a lab job) does not read as
    /// JSON, so a prune cannot tell which runs it cites.
    #[error("the {what} does not read ({detail}), so the runs it cites are not known")]
    UnreadableCitation {
        /// Which event or row.
        what: String,
        /// What the JSON reader said.
        detail: String,
    },
    /// Any other SQLite failure.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A PostgreSQL address that cannot be used as written.
    #[error("invalid archive address {address}: {detail}")]
    BadAddress {
        /// The address, without its password.
        address: String,
        /// What is wrong with it.
        detail: String,
        /// The client's reading of the address, when it is the client
        /// that could not read it (its words name the option). It holds
        /// no part of the address's text.
        #[source]
        source: Option<postgres::Error>,
    },
    /// A PostgreSQL archive that cannot be used: the server cannot be
    /// reached or refuses the login, or the database is not a netbisect
    /// archive or has a newer schema. Nothing was written.
    #[error("cannot use the archive at {address}: {detail}")]
    Server {
        /// The address, without its password.
        address: String,
        /// What went wrong, in a few words: for a failed connection
        /// `connection refused`, `connection timed out`, `unknown host`,
        /// `no server at the socket`, `authentication failed`, `the server's
        /// pg_hba.conf turned the connection away`, `the server refused the
        /// connection`, `the server's certificate did not
        /// verify`, `the TLS handshake failed`, `the server does not offer
        /// TLS, which sslmode requires` or `cannot connect`.
        detail: String,
        /// The client's error when connecting failed, with the system's
        /// or the server's words beneath it; `None` when the server was
        /// reached and the database is what netbisect refuses. No error
        /// of the client holds the password: it never echoes the
        /// connection's settings.
        #[source]
        source: Option<postgres::Error>,
    },
    /// A PostgreSQL server that did not finish the start-up exchange
    /// (connecting, TLS, authentication, the first query) within the
    /// address's `connect_timeout`: a host that drops packets, or a
    /// server too busy to answer. Nothing was written.
    #[error("cannot use the archive at {address}: {detail}")]
    StartUpTimedOut {
        /// The address, without its password.
        address: String,
        /// What did not come, and the bound: `no connection within 10 s
        /// (connect_timeout)`.
        detail: String,
    },
    /// Any other PostgreSQL failure (a dropped connection, a statement
    /// the server refused, or ended at the session's `lock_timeout` or
    /// `statement_timeout`, which are named); the transaction it was in
    /// stored nothing.
    #[error("postgresql: {}", timeout_words(.0).map_or_else(|| .0.to_string(), str::to_string))]
    Postgres(#[from] postgres::Error),
    /// Storing in a PostgreSQL archive failed before its transaction
    /// committed (the connection dropped, the server refused a
    /// statement): nothing of that transaction was stored.
    #[error("storing in the archive at {address} failed: {}", postgres_text(error))]
    StoreFailed {
        /// The address, without its password.
        address: String,
        /// What the client said.
        error: postgres::Error,
    },
    /// The server refused a write for want of privilege (SQLSTATE
    /// 42501): a row-level security policy that keeps this role to its
    /// own testbeds, or a role not granted the table at all. Nothing of
    /// the write was stored; it is not an unreachable server, so the run
    /// is not kept for later either.
    #[error(
        "the archive at {address} refused to store runs of {} as role \"{role}\": {}; {}",
        testbeds_words(testbeds),
        postgres_text(error),
        write_denied_hint(error)
    )]
    WriteDenied {
        /// The archive's address, without its password.
        address: String,
        /// The role the server refused (`current_user`).
        role: String,
        /// The testbeds of the runs refused.
        testbeds: Vec<String>,
        /// The server's refusal.
        error: postgres::Error,
    },
    /// The connection to a PostgreSQL archive was lost while its
    /// transaction committed: the server stored either all of it or
    /// none, and which cannot be told from here.
    #[error(
        "the connection to the archive at {address} was lost while committing, \
         so the runs were stored either all or none: {}",
        postgres_text(error)
    )]
    CommitUnknown {
        /// The address, without its password.
        address: String,
        /// What the client said.
        error: postgres::Error,
    },
    /// A repository already has an active bisection session.
    #[error("a bisection of {repo} is already in progress (session {session_id})")]
    SessionActive {
        /// The repository.
        repo: String,
        /// The active session.
        session_id: i64,
    },
    /// No bisection session has this id.
    #[error("no bisection session {0}")]
    NoSuchSession(i64),
    /// The session has ended; its journal takes no more events.
    #[error("bisection session {0} has ended")]
    SessionEnded(i64),
}

impl ArchiveError {
    /// True for what the user can fix: a wrong file, address, run id or
    /// query, a session that is not there or not in the state asked.
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            ArchiveError::NotAnArchive { .. }
                | ArchiveError::NoArchive { .. }
                | ArchiveError::NotAFile { .. }
                | ArchiveError::NewerSchema { .. }
                | ArchiveError::NoSuchRun(_)
                | ArchiveError::AmbiguousId { .. }
                | ArchiveError::InvalidQuery(_)
                | ArchiveError::SessionActive { .. }
                | ArchiveError::NoSuchSession(_)
                | ArchiveError::SessionEnded(_)
                | ArchiveError::BadAddress { .. }
        )
    }

    /// True when a PostgreSQL server could not be reached, or went away
    /// during a command: no server listened (the connection was refused,
    /// its socket is missing), the connection timed out or the network
    /// had no way to the host, or the connection dropped or the server
    /// shut down mid-command. The archive's address and credentials may
    /// be right: the same command may succeed later. A login the server
    /// refused, an address that does not read or names no host, and a
    /// database that is not an archive are never unreachable.
    pub fn is_unreachable(&self) -> bool {
        match self {
            ArchiveError::Server {
                source: Some(error),
                ..
            }
            | ArchiveError::Postgres(error)
            | ArchiveError::StoreFailed { error, .. }
            | ArchiveError::CommitUnknown { error, .. } => is_unreachable_error(error),
            ArchiveError::StartUpTimedOut { .. } => true,
            _ => false,
        }
    }

    /// True when the same operation may succeed if tried again: the
    /// server could not be reached ([`ArchiveError::is_unreachable`]), or
    /// it rolled the transaction back for a conflict with another one
    /// (SQLSTATE class 40: a deadlock, a serialization failure). What a
    /// long-running process (a lab's worker or tracker) waits out.
    pub fn is_transient(&self) -> bool {
        if self.is_unreachable() {
            return true;
        }
        match self {
            ArchiveError::Server {
                source: Some(error),
                ..
            }
            | ArchiveError::Postgres(error)
            | ArchiveError::StoreFailed { error, .. }
            | ArchiveError::CommitUnknown { error, .. } => error
                .code()
                .is_some_and(|code| code.code().starts_with("40")),
            _ => false,
        }
    }

    /// True when a PostgreSQL server refused to store a value of a run:
    /// a data exception (SQLSTATE class 22: text it cannot hold, a value
    /// too long for its column) or a limit of the server (class 54: an
    /// index entry too large). The run is at fault, not the connection.
    pub(crate) fn refuses_a_value(&self) -> bool {
        let (ArchiveError::StoreFailed { error, .. } | ArchiveError::Postgres(error)) = self else {
            return false;
        };
        error
            .code()
            .is_some_and(|code| code.code().starts_with("22") || code.code().starts_with("54"))
    }
}

/// True when a client error says the server was not there: a system
/// error of the socket (refused, timed out, no route, reset, a missing
/// Unix socket), a connection the client found closed, or the server's
/// own word that it is shutting down or not yet accepting connections
/// (SQLSTATE class 57P, and class 08, connection exceptions).
fn is_unreachable_error(err: &postgres::Error) -> bool {
    use std::io::ErrorKind;
    if err.is_closed() {
        return true;
    }
    if let Some(db_error) = err.as_db_error() {
        let code = db_error.code().code();
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03");
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = cause {
        if let Some(io_error) = current.downcast_ref::<std::io::Error>() {
            return matches!(
                io_error.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::NotConnected
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
                    | ErrorKind::TimedOut
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
                    | ErrorKind::NetworkDown
                    | ErrorKind::NotFound
            );
        }
        cause = current.source();
    }
    false
}

/// A client error as a person reads it: the server's own severity and
/// words when it answered (the client's `Display` says only "db
/// error"), else the client's; a statement ended at one of the
/// session's bounds says which.
/// What to do about a refused write: a row-level security policy keeps a
/// role to its testbeds; otherwise the role may not write at all.
fn write_denied_hint(err: &postgres::Error) -> &'static str {
    let by_policy = err
        .as_db_error()
        .is_some_and(|db_error| db_error.message().contains("row-level security"));
    if by_policy {
        "the archive's policy lets each role store the testbeds granted to it (store the \
         run as that testbed's writer, or have the archive's owner grant this role the \
         testbed)"
    } else {
        "this role may not store runs there (store them as a writer of the archive)"
    }
}

/// `testbed "a"`, or `testbeds "a", "b"`.
fn testbeds_words(testbeds: &[String]) -> String {
    let quoted: Vec<String> = testbeds
        .iter()
        .map(|testbed| format!("\"{testbed}\""))
        .collect();
    match quoted.len() {
        1 => format!("testbed {}", quoted[0]),
        _ => format!("testbeds {}", quoted.join(", ")),
    }
}

fn postgres_text(err: &postgres::Error) -> String {
    match err.as_db_error() {
        Some(db_error) => {
            let text = format!("{}: {}", db_error.severity(), db_error.message());
            match timeout_words(err) {
                Some(words) => format!("{text}: {words}"),
                None => text,
            }
        }
        None => err.to_string(),
    }
}

/// What a statement the server ended at one of the session's bounds
/// (`lock_timeout`, `statement_timeout`) means, naming the bound and
/// where it is set; `None` for any other error.
fn timeout_words(err: &postgres::Error) -> Option<&'static str> {
    use postgres::error::SqlState;
    let db_error = err.as_db_error()?;
    if *db_error.code() == SqlState::LOCK_NOT_AVAILABLE {
        return Some(
            "a lock held by another session was not released within lock_timeout \
             (the archive's address may give a longer one: ?lock_timeout=10min)",
        );
    }
    if *db_error.code() == SqlState::QUERY_CANCELED
        && db_error.message().contains("statement timeout")
    {
        return Some(
            "a statement ran longer than statement_timeout \
             (the archive's address may give a longer one: ?statement_timeout=30min)",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Archive, Location};

    fn opened(address: &str) -> ArchiveError {
        let location = Location::parse(std::ffi::OsStr::new(address)).expect("an address");
        match Archive::open_location(&location) {
            Ok(_) => panic!("{address} opened"),
            Err(err) => err,
        }
    }

    #[test]
    fn a_port_nobody_listens_on_is_unreachable() {
        // Nothing listens on port 1 of loopback.
        assert!(opened("postgres://u:pw@127.0.0.1:1/x").is_unreachable());
        let Err(refused) = postgres::Config::new()
            .host("127.0.0.1")
            .port(1)
            .user("u")
            .connect(postgres::NoTls)
        else {
            panic!("something listens on port 1");
        };
        assert!(ArchiveError::Postgres(refused).is_unreachable());
    }

    #[test]
    fn a_missing_socket_is_unreachable_and_a_bad_address_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let address = format!("postgres://u@/x?host={}", dir.path().display());
        assert!(opened(&address).is_unreachable());
        let Err(bad_address) = Location::parse(std::ffi::OsStr::new(
            "postgres://u@127.0.0.1:1/x?sslmode=nonsense",
        )) else {
            panic!("sslmode=nonsense is read");
        };
        assert!(!bad_address.is_unreachable());
    }

    #[test]
    fn refused_testbeds_are_named_each_in_quotes() {
        assert_eq!(testbeds_words(&["lab-b".to_string()]), "testbed \"lab-b\"");
        assert_eq!(
            testbeds_words(&["lab-a".to_string(), "lab-b".to_string()]),
            "testbeds \"lab-a\", \"lab-b\""
        );
    }

    #[test]
    fn what_the_user_fixes_is_never_unreachable() {
        let not_an_archive = ArchiveError::Server {
            address: "postgres://u@db/x".to_string(),
            detail: "not a netbisect archive".to_string(),
            source: None,
        };
        assert!(!not_an_archive.is_unreachable());
        assert!(!ArchiveError::InvalidQuery("x".to_string()).is_unreachable());
    }
}
