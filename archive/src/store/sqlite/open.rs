//! Opening an archive file: creating it, refusing what is not an
//! archive, migrating an older schema, the `quick_check` before the first
//! write, read-only access for a user who may not write, and the names a
//! failed open or write is given (a full file system, a damaged file).
//!
//! An archive shared in a directory other users may write (mode 1777 or
//! a group's directory) is read by users who may not write it, and a file
//! such a reader created beside it (SQLite's `-wal` and `-shm`) would be
//! theirs: the owner's next write would fail. So a reader never creates
//! one: it reads through both when both are there, the `-shm` opened
//! read-only (`readonly_shm`), and otherwise reads the database file as
//! immutable (no writer is active without both). And a writer in such a
//! directory keeps both when it closes (`SQLITE_FCNTL_PERSIST_WAL`, the
//! `-wal` truncated to nothing), so that they stay the owner's, with the
//! archive's mode, and a reader finds them whenever a writer may come.

use super::SqliteArchive;
use super::path_kind::refuse_what_is_not_a_file;
use crate::ArchiveError;
use crate::schema::{self, APPLICATION_ID, CURRENT_VERSION, MIGRATIONS};
use crate::store::{Upgrade, UpgradeNotice};
use rusqlite::{Connection, ErrorCode, FileControl, OpenFlags};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a write waits for another writer before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

impl SqliteArchive {
    /// Opens the archive at `path`, creating it (not its directory) when
    /// absent and bringing an older schema up to date. Refuses files that
    /// are not archives, are damaged or have a newer schema, without
    /// writing to them.
    pub(crate) fn open(
        path: &Path,
        notice: UpgradeNotice<'_>,
    ) -> Result<SqliteArchive, ArchiveError> {
        refuse_what_is_not_a_file(path)?;
        refuse_foreign_side_files(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        SqliteArchive::open_with_flags(path, flags, notice).map_err(|err| full_or(path, err))
    }

    /// Opens the archive at `path` for reading: never creates it (a
    /// missing file is [`ArchiveError::NoArchive`]) and never leaves files
    /// beside it that the owner could not use. An archive this user may
    /// write is opened as by [`SqliteArchive::open`].
    pub(crate) fn open_read_only(
        path: &Path,
        notice: UpgradeNotice<'_>,
    ) -> Result<SqliteArchive, ArchiveError> {
        if !path.exists() {
            return Err(ArchiveError::NoArchive {
                path: path.to_path_buf(),
            });
        }
        refuse_what_is_not_a_file(path)?;
        if may_write(path) {
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            return SqliteArchive::open_with_flags(path, flags, notice)
                .map_err(|err| full_or(path, err));
        }
        let connection = reading_connection(path)?;
        let archive = SqliteArchive {
            connection,
            path: path.to_path_buf(),
            check_before_write: Cell::new(false),
        };
        let version = archive.read_version()?;
        if version == 0 {
            return Err(ArchiveError::NotAnArchive {
                path: path.to_path_buf(),
                detail: "no archive schema".to_string(),
            });
        }
        // An older schema that has every table and column the reads use
        // is read as it is; what it lacks ([`Archive::series_runs`]) is
        // read the long way.
        if version < schema::OLDEST_READABLE_VERSION {
            return Err(ArchiveError::ReadOnlyOldSchema {
                path: path.to_path_buf(),
                found: version,
                supported: CURRENT_VERSION,
            });
        }
        Ok(archive)
    }

    /// A connection to check the file at `path` as it is: never created,
    /// migrated or configured, so that a damaged file is opened as far
    /// as SQLite can; read-write when this user may write it (SQLite
    /// then replays a `-wal` a killed writer left), else as a reader who
    /// leaves nothing beside it.
    pub(super) fn checking_connection(path: &Path) -> Result<Connection, ArchiveError> {
        if !path.exists() {
            return Err(ArchiveError::NoArchive {
                path: path.to_path_buf(),
            });
        }
        refuse_what_is_not_a_file(path)?;
        if !may_write(path) {
            return reading_connection(path);
        }
        refuse_foreign_side_files(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open_error = |source| ArchiveError::Open {
            path: path.to_path_buf(),
            source,
        };
        let connection = Connection::open_with_flags(path, flags).map_err(open_error)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        Ok(connection)
    }

    fn open_with_flags(
        path: &Path,
        flags: OpenFlags,
        notice: UpgradeNotice<'_>,
    ) -> Result<SqliteArchive, ArchiveError> {
        let open_error = |source| ArchiveError::Open {
            path: path.to_path_buf(),
            source,
        };
        let connection = Connection::open_with_flags(path, flags).map_err(open_error)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        let archive = SqliteArchive {
            connection,
            path: path.to_path_buf(),
            // Whatever its size: SQLite's own checks see only the pages a
            // write touches, and damage elsewhere would be written over.
            check_before_write: Cell::new(true),
        };
        let version = archive.read_version()?;
        // A foreign database is refused before WAL mode touches it. Tables
        // seen with version 0 may be another process creating this archive
        // right now, so the version is read again before deciding.
        if version == 0 && archive.has_objects()? && archive.read_version()? == 0 {
            return Err(archive.foreign_database());
        }
        archive.configure()?;
        if version < CURRENT_VERSION {
            // A new file is made in an instant; an older one may hold
            // a million runs to convert.
            if version > 0 {
                notice(Upgrade {
                    from: version,
                    to: CURRENT_VERSION,
                });
            }
            archive.migrate()?;
        }
        Ok(archive)
    }

    /// Runs `PRAGMA quick_check` once, before the first write, when it is
    /// due; a damaged file refuses the write.
    pub(super) fn check_before_write(&self) -> Result<(), ArchiveError> {
        if !self.check_before_write.get() {
            return Ok(());
        }
        let damaged = |detail: String| ArchiveError::Damaged {
            path: self.path.clone(),
            detail,
        };
        let mut statement = self
            .connection
            .prepare("PRAGMA quick_check(1)")
            .map_err(|err| damaged(err.to_string()))?;
        let first: String = statement
            .query_row([], |row| row.get(0))
            .map_err(|err| damaged(err.to_string()))?;
        if first != "ok" {
            return Err(damaged(first));
        }
        self.check_before_write.set(false);
        Ok(())
    }

    /// Names a failed write's cause plainly: a full file system, or a
    /// damaged file (with the command that tells more).
    pub(super) fn write_error(&self, err: ArchiveError) -> ArchiveError {
        let code = match &err {
            ArchiveError::Sqlite(sqlite) | ArchiveError::Open { source: sqlite, .. } => {
                sqlite.sqlite_error_code()
            }
            _ => None,
        };
        match code {
            Some(ErrorCode::DiskFull) => ArchiveError::Full {
                path: self.path.clone(),
            },
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => ArchiveError::Damaged {
                path: self.path.clone(),
                detail: err.to_string(),
            },
            _ => full_or(&self.path, err),
        }
    }

    /// Reads and checks the schema version and the application id.
    fn read_version(&self) -> Result<u32, ArchiveError> {
        read_header(&self.connection, &self.path)
    }

    fn has_objects(&self) -> Result<bool, ArchiveError> {
        let n_objects: i64 = self
            .connection
            .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
            .map_err(|err| self.classify(err))?;
        Ok(n_objects > 0)
    }

    fn foreign_database(&self) -> ArchiveError {
        ArchiveError::NotAnArchive {
            path: self.path.clone(),
            detail: "an SQLite database with other tables and no archive schema".to_string(),
        }
    }

    fn configure(&self) -> Result<(), ArchiveError> {
        let connection = &self.connection;
        // Switching to WAL takes an exclusive lock for a moment, which
        // the busy handler does not wait for: several processes creating
        // one archive at once retry here, within the busy timeout.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mode: String = loop {
            match connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
                Ok(mode) => break mode,
                Err(err)
                    if matches!(
                        err.sqlite_error_code(),
                        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                    ) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(err) => return Err(self.classify(err)),
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(ArchiveError::NotAnArchive {
                path: self.path.clone(),
                detail: format!("cannot switch to WAL mode (journal mode is {mode})"),
            });
        }
        if others_may_create_beside(&self.path) {
            keep_side_files(connection, &self.path)?;
        }
        connection.pragma_update(None, "foreign_keys", true)?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(())
    }

    /// Applies every pending migration in one transaction. The version is
    /// read again inside it, since another process may have migrated the
    /// file meanwhile.
    fn migrate(&self) -> Result<(), ArchiveError> {
        let transaction = ImmediateTransaction::begin(&self.connection)?;
        let version = read_header(transaction.connection, &self.path)?;
        if version > CURRENT_VERSION {
            return Err(ArchiveError::NewerSchema {
                path: self.path.clone(),
                found: version,
                supported: CURRENT_VERSION,
            });
        }
        if version == 0 && self.has_objects()? {
            return Err(self.foreign_database());
        }
        migrate_from(transaction.connection, version, CURRENT_VERSION)?;
        transaction.commit()
    }

    /// Maps "file is not a database" and similar to [`ArchiveError::NotAnArchive`].
    fn classify(&self, err: rusqlite::Error) -> ArchiveError {
        classify_open_error(&self.path, err)
    }
}

/// A `BEGIN IMMEDIATE` transaction on a shared connection reference, used
/// while the archive is borrowed immutably (opening); rolled back unless
/// committed.
struct ImmediateTransaction<'conn> {
    connection: &'conn Connection,
    done: bool,
}

impl<'conn> ImmediateTransaction<'conn> {
    fn begin(connection: &'conn Connection) -> Result<Self, ArchiveError> {
        connection.execute_batch("BEGIN IMMEDIATE")?;
        Ok(ImmediateTransaction {
            connection,
            done: false,
        })
    }

    fn commit(mut self) -> Result<(), ArchiveError> {
        self.connection.execute_batch("COMMIT")?;
        self.done = true;
        Ok(())
    }
}

impl Drop for ImmediateTransaction<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.connection.execute_batch("ROLLBACK");
        }
    }
}

/// Applies migrations `from + 1 ..= to` on `connection`, inside the
/// caller's transaction, and records the new version.
pub(super) fn migrate_from(
    connection: &Connection,
    from: u32,
    to: u32,
) -> Result<(), ArchiveError> {
    for (migration_idx, migration) in MIGRATIONS.iter().enumerate() {
        let target = migration_idx as u32 + 1;
        if target <= from || target > to {
            continue;
        }
        connection.execute_batch(migration.sql)?;
        if let Some(backfill) = migration.backfill {
            backfill(connection)?;
        }
        connection.pragma_update(None, "user_version", target)?;
    }
    connection.pragma_update(None, "application_id", APPLICATION_ID)?;
    Ok(())
}

/// Reads `user_version` and checks `application_id`.
pub(super) fn read_header(connection: &Connection, path: &Path) -> Result<u32, ArchiveError> {
    let version: i64 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|err| classify_open_error(path, err))?;
    let application_id: i32 = connection
        .query_row("PRAGMA application_id", [], |row| row.get(0))
        .map_err(|err| classify_open_error(path, err))?;
    let version = u32::try_from(version).map_err(|_| ArchiveError::NotAnArchive {
        path: path.to_path_buf(),
        detail: format!("schema version {version} is not valid"),
    })?;
    if version > 0 && application_id != APPLICATION_ID {
        return Err(ArchiveError::NotAnArchive {
            path: path.to_path_buf(),
            detail: format!("an SQLite database of another application (id {application_id:#x})"),
        });
    }
    if version > CURRENT_VERSION {
        return Err(ArchiveError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: CURRENT_VERSION,
        });
    }
    Ok(version)
}

/// The `-wal` file beside `path`.
fn wal_path(path: &Path) -> PathBuf {
    side_path(path, "-wal")
}

/// The `-shm` file beside `path`.
fn shm_path(path: &Path) -> PathBuf {
    side_path(path, "-shm")
}

fn side_path(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// A connection that reads the archive at `path` and creates nothing
/// beside it. With both side files there a writer may be active: read
/// through them, the `-shm` opened read-only, so that SQLite never
/// creates one. Without both, no writer is active (one in WAL mode has
/// both open, and removes the `-shm` first when it closes, after its
/// checkpoint), so the database file holds everything committed: read it
/// as immutable (no locks, no side files).
fn reading_connection(path: &Path) -> Result<Connection, ArchiveError> {
    let immutable = !(wal_path(path).exists() && shm_path(path).exists());
    let uri = format!(
        "file:{}?mode=ro&{}",
        uri_path(path),
        if immutable {
            "immutable=1"
        } else {
            "readonly_shm=1"
        }
    );
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let open_error = |source| ArchiveError::Open {
        path: path.to_path_buf(),
        source,
    };
    let connection = Connection::open_with_flags(&uri, flags).map_err(open_error)?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
    Ok(connection)
}

/// True when users other than the owner may create files in the
/// directory of `path` (its group or others may write it): a reader there
/// could otherwise create the side files.
fn others_may_create_beside(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::metadata(dir).is_ok_and(|meta| meta.permissions().mode() & 0o022 != 0)
}

/// Keeps this connection's `-wal` and `-shm` when it closes, the `-wal`
/// truncated to nothing, and gives them the archive's mode (which its
/// owner may have changed since they were made, to share it).
fn keep_side_files(connection: &Connection, path: &Path) -> Result<(), ArchiveError> {
    use std::os::unix::fs::PermissionsExt;
    let mut persist: std::ffi::c_int = 1;
    connection.file_control(Some("main"), FileControl::PersistWal(&mut persist))?;
    connection.query_row("PRAGMA journal_size_limit = 0", [], |_| Ok(()))?;
    let Ok(database) = std::fs::metadata(path) else {
        return Ok(());
    };
    let mode = database.permissions().mode() & 0o777;
    for side in [wal_path(path), shm_path(path)] {
        if std::fs::symlink_metadata(&side)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o777 != mode)
        {
            // Best effort: a file of another user stays as it is.
            let _ = std::fs::set_permissions(&side, std::fs::Permissions::from_mode(mode));
        }
    }
    Ok(())
}

/// Refuses to write through a side file this user may not write (left by
/// a reader of an older netbisect, or another user's program): SQLite
/// would open it read-only and fail every write with "attempt to write a
/// readonly database".
fn refuse_foreign_side_files(path: &Path) -> Result<(), ArchiveError> {
    use std::os::unix::fs::MetadataExt;
    for side in [wal_path(path), shm_path(path)] {
        let Ok(meta) = std::fs::symlink_metadata(&side) else {
            continue;
        };
        if rustix::fs::access(&side, rustix::fs::Access::WRITE_OK).is_err() {
            return Err(ArchiveError::ForeignSideFile {
                path: side,
                uid: meta.uid(),
            });
        }
    }
    Ok(())
}

/// True when this user may write both `path` and its directory (where
/// SQLite keeps the `-wal` and `-shm` files): false for another user's
/// file, a read-only directory or a read-only mount.
fn may_write(path: &Path) -> bool {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    [path, dir]
        .iter()
        .all(|entry| rustix::fs::access(*entry, rustix::fs::Access::WRITE_OK).is_ok())
}

/// `path` for an SQLite `file:` URI: `%`, `?` and `#` escaped.
fn uri_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut escaped = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '%' => escaped.push_str("%25"),
            '?' => escaped.push_str("%3f"),
            '#' => escaped.push_str("%23"),
            _ => escaped.push(ch),
        }
    }
    escaped
}

/// True when the file system holding `path` has no block left for us.
fn file_system_full(path: &Path) -> bool {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    rustix::fs::statvfs(dir).is_ok_and(|stats| stats.f_bavail == 0)
}

/// `err`, or [`ArchiveError::Full`] when it is SQLite's "disk full" or an
/// I/O failure on a file system with no space left (SQLite reports a
/// file it cannot create on a full file system as "unable to open").
fn full_or(path: &Path, err: ArchiveError) -> ArchiveError {
    let code = match &err {
        ArchiveError::Sqlite(sqlite) | ArchiveError::Open { source: sqlite, .. } => {
            sqlite.sqlite_error_code()
        }
        _ => None,
    };
    let full = match code {
        Some(ErrorCode::DiskFull) => true,
        Some(ErrorCode::CannotOpen | ErrorCode::SystemIoFailure) => file_system_full(path),
        _ => false,
    };
    if full {
        ArchiveError::Full {
            path: path.to_path_buf(),
        }
    } else {
        err
    }
}

pub(super) fn classify_open_error(path: &Path, err: rusqlite::Error) -> ArchiveError {
    match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => ArchiveError::NotAnArchive {
            path: path.to_path_buf(),
            detail: err.to_string(),
        },
        _ => ArchiveError::Open {
            path: path.to_path_buf(),
            source: err,
        },
    }
}

/// Opens an existing archive for reading (merge source); never creates it,
/// nor anything beside it when this user may not write it.
pub(super) fn open_existing(path: &Path) -> Result<Connection, ArchiveError> {
    if !may_write(path) {
        return reading_connection(path);
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let open_error = |source| ArchiveError::Open {
        path: path.to_path_buf(),
        source,
    };
    let connection = Connection::open_with_flags(path, flags).map_err(open_error)?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
    if others_may_create_beside(path) {
        keep_side_files(&connection, path)?;
    }
    Ok(connection)
}
