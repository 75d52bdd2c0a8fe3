//! The archive on PostgreSQL: the same tables as the SQLite file (runs
//! with their canonical bytes and indexed columns, `run_series`, the
//! bisection journal), reached with the sync `postgres` client. One
//! column more: `run_series` holds each run's label too (schema 3, see
//! `schema.rs`), since its heap is not in key order as the file's
//! table is.
//!
//! Opening connects and reads the schema version from
//! `netbisect_archive` before anything is written: a server that cannot
//! be reached or refuses the login, a database of another program (tables
//! but no `netbisect_archive`) and a newer schema are refused
//! ([`ArchiveError::Server`]). Migrations run in one transaction under an
//! advisory lock, so that any number of netbisect processes may open a
//! new database at once and one of them creates the tables.
//!
//! Every write is one transaction. Runs are inserted in id order with
//! `ON CONFLICT (id) DO NOTHING`: writers storing overlapping runs at
//! once take their row locks in the same order, wait for each other
//! instead of deadlocking, and each run is stored once. A connection
//! that drops mid-transaction stores nothing of it.
//!
//! The parts: opening and its [`Backend`] here; `schema` (the
//! migrations), `write` (storing), `query` (the selections), `check` (`archive check`) and
//! `journal` (the bisection sessions).

use crate::ArchiveError;
use crate::location::{Location, ServerAddress};
use crate::store::LockWaitReport;
use crate::store::backend::{Backend, RecordVisitor};
use crate::store::check::CheckReport;
use crate::store::prune::{PruneSelection, Pruned};
use crate::store::query::{MetricValue, Order, RunQuery, StoredRun};
use crate::store::write::StoreCounts;
use crate::store::{CanonicalRun, SeriesRun, Upgrade, UpgradeNotice};
use postgres::error::SqlState;
use run_record::record::Metric;
use schema::{
    CURRENT_VERSION, LAB_VERSION, MIGRATION_LOCK, MIGRATIONS, SERIES_LABEL_VERSION,
    STORED_BY_VERSION,
};
use watch::Session;

mod check;
mod connect;
mod journal;
mod lab;
mod prune;
mod query;
mod schema;
mod watch;
mod write;

/// An open PostgreSQL archive: one connection.
pub(crate) struct PgArchive {
    /// Reads borrow it mutably too: the client needs `&mut` for any
    /// statement, and the archive's reads take `&self`. It is borrowed
    /// for one statement or transaction at a time and never while the
    /// archive's caller runs, so that no read finds it borrowed.
    client: Session,
    address: ServerAddress,
    /// The schema version when opened (after any migration): what the
    /// reads may rely on. Another process can only raise it meanwhile,
    /// and each version reads the tables of the ones before.
    version: u32,
}

impl PgArchive {
    /// Connects to the database at `address`, creating the archive's
    /// tables in an empty database and bringing an older schema up to
    /// date; refuses another program's database and a newer schema
    /// before writing anything.
    pub(crate) fn open(
        address: &ServerAddress,
        notice: UpgradeNotice<'_>,
    ) -> Result<PgArchive, ArchiveError> {
        let mut archive = PgArchive::connect(address)?;
        let found = archive.read_version()?;
        if let Some(from) = found.filter(|&from| from < CURRENT_VERSION) {
            notice(Upgrade {
                from,
                to: CURRENT_VERSION,
            });
        }
        if found != Some(CURRENT_VERSION) {
            archive.migrate()?;
        }
        archive.version = CURRENT_VERSION;
        Ok(archive)
    }

    /// Connects to the archive at `address` to read it: a database
    /// without the archive's tables is refused, never created.
    pub(crate) fn open_read_only(address: &ServerAddress) -> Result<PgArchive, ArchiveError> {
        let mut archive = PgArchive::connect(address)?;
        match archive.read_version()? {
            Some(version) => {
                archive.version = version;
                Ok(archive)
            }
            None if archive.has_tables()? => Err(archive.foreign_database()),
            None => Err(archive.refused("the database holds no netbisect archive".to_string())),
        }
    }

    /// Connects to `address`, within its start-up bound; the version is
    /// the caller's to read.
    fn connect(address: &ServerAddress) -> Result<PgArchive, ArchiveError> {
        let connected = connect::connect(address)?;
        Ok(PgArchive {
            client: Session::new(connected.client, connected.backend_pid),
            address: address.clone(),
            version: 0,
        })
    }

    /// The version in `netbisect_archive`, `None` when there is no such
    /// table; a version newer than this build's is refused.
    fn read_version(&self) -> Result<Option<u32>, ArchiveError> {
        read_version_with(
            &mut *self.client.borrow_mut(),
            &self.address,
            Lookup::Cached,
        )
    }

    fn has_tables(&self) -> Result<bool, ArchiveError> {
        has_tables_with(&mut *self.client.borrow_mut())
    }

    fn foreign_database(&self) -> ArchiveError {
        self.refused(
            "not a netbisect archive: the database has tables of another program".to_string(),
        )
    }

    /// An [`ArchiveError::Server`] naming this archive.
    fn refused(&self, detail: String) -> ArchiveError {
        ArchiveError::Server {
            address: self.address.to_string(),
            detail,
            source: None,
        }
    }

    /// Applies every pending migration in one transaction, under the
    /// advisory lock; the version is read again inside it, since another
    /// process may have migrated the database meanwhile.
    fn migrate(&self) -> Result<(), ArchiveError> {
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        // An upgrade takes as long as the archive is large (a minute and
        // more for a million runs); it is announced, and bounded by the
        // data, not by the session's statement_timeout. Its wait for
        // another's upgrade is still bounded by lock_timeout.
        transaction.batch_execute("SET LOCAL statement_timeout = 0")?;
        transaction.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        let found = read_version_with(&mut transaction, &self.address, Lookup::Fresh)?;
        if found.is_none() && has_tables_with(&mut transaction)? {
            return Err(self.foreign_database());
        }
        let from = found.unwrap_or(0);
        for (migration_idx, sql) in MIGRATIONS.iter().enumerate() {
            let target = migration_idx as u32 + 1;
            if target > from {
                transaction.batch_execute(sql)?;
            }
        }
        let version = i32::try_from(CURRENT_VERSION).unwrap_or(i32::MAX);
        transaction.execute(
            "INSERT INTO netbisect_archive (application, schema_version) \
             VALUES ('netbisect', $1) \
             ON CONFLICT (application) DO UPDATE SET schema_version = $1",
            &[&version],
        )?;
        transaction.commit()?;
        Ok(())
    }
}

impl Backend for PgArchive {
    fn location(&self) -> Location {
        Location::Server(Box::new(self.address.clone()))
    }

    /// The schema version, checked to be one this build reads.
    fn schema_version(&self) -> Result<u32, ArchiveError> {
        self.read_version()?
            .ok_or_else(|| self.refused("the database holds no netbisect archive".to_string()))
    }

    fn store_all(&mut self, runs: &[CanonicalRun]) -> Result<StoreCounts, ArchiveError> {
        write::store_all(self, runs)
    }

    fn count(&self) -> Result<u64, ArchiveError> {
        query::count(self)
    }

    fn count_matching(&self, query: &RunQuery) -> Result<u64, ArchiveError> {
        query::count_matching(self, query)
    }

    fn runs_in_order(
        &self,
        query: &RunQuery,
        order: Order,
    ) -> Result<Vec<StoredRun>, ArchiveError> {
        query::runs_in_order(self, query, order)
    }

    fn for_each_record(
        &self,
        query: &RunQuery,
        visit: RecordVisitor<'_>,
    ) -> Result<(), ArchiveError> {
        query::for_each_record(self, query, visit)
    }

    fn metric_values(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Vec<MetricValue>, ArchiveError> {
        query::metric_values(self, query, metric)
    }

    fn series_runs(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Option<Vec<SeriesRun>>, ArchiveError> {
        query::series_runs(self, query, metric)
    }

    fn check(&self) -> Result<CheckReport, ArchiveError> {
        check::check(self)
    }

    fn prune(&mut self, selection: &PruneSelection, dry: bool) -> Result<Pruned, ArchiveError> {
        prune::prune(self, selection, dry)
    }

    fn report_lock_waits(&mut self, report: LockWaitReport) {
        self.client.report_lock_waits(&self.address, report);
    }
}

/// `netbisect_archive`'s version through `client` (a connection or a
/// transaction).
/// How [`read_version_with`] looks for the archive's version table.
#[derive(Clone, Copy)]
enum Lookup {
    /// Through the catalog's cache: fast, but it may not yet see a
    /// table another connection has just created (its invalidation is
    /// read at this connection's next relation lock). Enough for a
    /// first look; an archive not found this way is looked for again
    /// before it is created.
    Cached,
    /// By a query of the catalog under a fresh snapshot, as the
    /// migration does under its lock.
    Fresh,
}

fn read_version_with(
    client: &mut impl postgres::GenericClient,
    address: &ServerAddress,
    lookup: Lookup,
) -> Result<Option<u32>, ArchiveError> {
    let refused = |detail: String| ArchiveError::Server {
        address: address.to_string(),
        detail,
        source: None,
    };
    let sql = match lookup {
        // A lookup by name in the catalog's cache: planning a query of
        // the `pg_tables` view in a new connection took a few
        // milliseconds of every command.
        Lookup::Cached => {
            "SELECT to_regclass(quote_ident(current_schema()) || '.netbisect_archive') \
             IS NOT NULL"
        }
        Lookup::Fresh => {
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables \
             WHERE schemaname = current_schema() AND tablename = 'netbisect_archive')"
        }
    };
    let exists: bool = client.query_typed_one(sql, &[])?.try_get(0)?;
    if !exists {
        return Ok(None);
    }
    let row = client.query_typed_opt(
        "SELECT schema_version FROM netbisect_archive WHERE application = 'netbisect'",
        &[],
    )?;
    let Some(row) = row else {
        return Err(refused(
            "not a netbisect archive: netbisect_archive names no version".to_string(),
        ));
    };
    let version: i32 = row.try_get(0)?;
    let version = u32::try_from(version)
        .map_err(|_| refused(format!("schema version {version} is not valid")))?;
    if version > CURRENT_VERSION {
        return Err(refused(format!(
            "archive schema version {version} is newer than version {CURRENT_VERSION} \
             that this netbisect reads; use a newer netbisect"
        )));
    }
    Ok(Some(version))
}

/// True when the current schema of the database has any table.
fn has_tables_with(client: &mut impl postgres::GenericClient) -> Result<bool, ArchiveError> {
    Ok(client
        .query_typed_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables \
             WHERE schemaname = current_schema())",
            &[],
        )?
        .try_get(0)?)
}

/// What a failed connection was, in the words a user looks for; the
/// client's own words, and the system's or the server's beneath them,
/// stay in the error's sources.
///
/// The client tells its failures apart only by its text: a login the
/// server refused is its error (SQLSTATE class 28), a socket that could
/// not connect an I/O error of the system, and a host name that did not
/// resolve an I/O error whose text is the standard library's
/// ([`LOOKUP_FAILED`]). What is none of these is "cannot connect".
fn connect_failure(err: &postgres::Error) -> &'static str {
    if let Some(db_error) = err.as_db_error() {
        return match *db_error.code() {
            // The server's rules turn a login away with the code of a
            // failed one; its words name the rules (`pg_hba.conf rejects
            // connection ...`, `no pg_hba.conf entry ...`), and what
            // their user changes is those rules or the address's
            // `sslmode`, not a password.
            SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                if db_error.message().contains("pg_hba.conf") =>
            {
                "the server's pg_hba.conf turned the connection away"
            }
            SqlState::INVALID_PASSWORD | SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
                "authentication failed"
            }
            _ => "the server refused the connection",
        };
    }
    if let Some(tls_error) = connect::tls_error_of(err) {
        return if tls_error.is_certificate_refused() {
            "the server's certificate did not verify"
        } else {
            "the TLS handshake failed"
        };
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = cause {
        if let Some(io_error) = current.downcast_ref::<std::io::Error>() {
            return match io_error.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused",
                std::io::ErrorKind::TimedOut => "connection timed out",
                // Only a Unix socket's path can be missing.
                std::io::ErrorKind::NotFound => "no server at the socket",
                _ if io_error.to_string().starts_with(LOOKUP_FAILED) => "unknown host",
                _ => "cannot connect",
            };
        }
        // The client's refusal to go on: the server asked for a password
        // that no address, PGPASSWORD or password file gave, or for an
        // authentication method the client does not speak.
        let text = current.to_string();
        if text == "password missing" || text == "authentication error" {
            return "authentication failed";
        }
        // The client's words when the server answers a request for TLS
        // with no, under a mode that requires it.
        if text == "server does not support TLS" {
            return "the server does not offer TLS, which sslmode requires";
        }
        cause = current.source();
    }
    "cannot connect"
}

/// How the standard library's error for a host name that did not resolve
/// begins (the resolver's reason follows it).
const LOOKUP_FAILED: &str = "failed to lookup address information";
