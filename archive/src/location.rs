//! Where an archive lives: a SQLite file, or a PostgreSQL database named
//! by a `postgres://` or `postgresql://` address.
//!
//! An address is parsed whole before anything connects, so a malformed
//! one is an error of its own ([`ArchiveError::BadAddress`]). Its
//! password comes from the address, else `PGPASSWORD`, else the password
//! file (`PGPASSFILE` or `~/.pgpass`, ignored when others may read it, as
//! libpq does); it is kept in the connection's settings only and never
//! shown: an address is displayed as user, host, port and database.
//!
//! What bounds a session's waits is read from the address too
//! ([`ServerTimeouts`]): `connect_timeout` (libpq's name, which bounds
//! the whole start-up of a connection here as there), and
//! `statement_timeout` and `lock_timeout`, which the server enforces and
//! which are sent as start-up options (`-c name=value`), before any the
//! address's own `options` gives, so that those win.
//!
//! Whether the connection is encrypted, and what it checks of the
//! server's certificate, is read as libpq reads it ([`TlsSettings`]):
//! `sslmode` (`disable`, `prefer`, `require`, `verify-ca`,
//! `verify-full`) and `sslrootcert` in the query, else `PGSSLMODE` and
//! `PGSSLROOTCERT`. As with libpq, a connection through a Unix socket
//! directory is never encrypted, whatever the mode.

use crate::ArchiveError;
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

mod timeouts;
mod tls;

pub use timeouts::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_LOCK_TIMEOUT, DEFAULT_STATEMENT_TIMEOUT, ServerTimeouts,
};
pub use tls::{SslMode, TlsSettings};

/// The Unix socket directory of Debian's PostgreSQL, used when an
/// address names no host, as libpq does there.
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// Where an archive lives.
#[derive(Clone, Debug)]
pub enum Location {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database.
    Server(Box<ServerAddress>),
}

impl Location {
    /// A `postgres://` or `postgresql://` address is a server; anything
    /// else is the path of a SQLite file.
    pub fn parse(text: &OsStr) -> Result<Location, ArchiveError> {
        match text.to_str() {
            Some(address) if is_server_address(address) => {
                Ok(Location::Server(Box::new(ServerAddress::parse(address)?)))
            }
            _ => Ok(Location::File(PathBuf::from(text))),
        }
    }

    /// The file, for a SQLite archive.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Location::File(path) => Some(path),
            Location::Server(_) => None,
        }
    }

    /// Fails with [`ArchiveError::NoArchive`] when this is a file that is
    /// not there, as a read says it; an address is never missing here
    /// (the server says what it has).
    pub fn check_exists(&self) -> Result<(), ArchiveError> {
        match self.file() {
            Some(path) if std::fs::symlink_metadata(path).is_err() => {
                Err(ArchiveError::NoArchive {
                    path: path.to_path_buf(),
                })
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(formatter, "{}", path.display()),
            Location::Server(address) => write!(formatter, "{address}"),
        }
    }
}

/// True when `text` names a PostgreSQL server.
pub fn is_server_address(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// A PostgreSQL database: the client's settings (with the password, if
/// any), the address as it may be shown (without), what bounds a
/// session's waits and what TLS it asks for.
#[derive(Clone)]
pub struct ServerAddress {
    config: postgres::Config,
    shown: String,
    timeouts: ServerTimeouts,
    tls: TlsSettings,
}

impl fmt::Debug for ServerAddress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_tuple("ServerAddress")
            .field(&self.shown)
            .finish()
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.shown)
    }
}

impl ServerAddress {
    /// Parses a `postgres://` address and completes it as libpq would:
    /// the user from `PGUSER` or the login name, the host the local Unix
    /// socket, the password from `PGPASSWORD` or the password file.
    pub fn parse(text: &str) -> Result<ServerAddress, ArchiveError> {
        let scheme = if text.starts_with("postgresql://") {
            "postgresql"
        } else {
            "postgres"
        };
        let bad = |detail: String| ArchiveError::BadAddress {
            address: redact(text),
            detail,
            source: None,
        };
        if !is_server_address(text) {
            return Err(bad("not a postgres:// address".to_string()));
        }
        let (for_client, mut timeouts) = ServerTimeouts::from_query(text).map_err(bad)?;
        let (for_client, tls_asked) = tls::TlsAsked::from_query(&for_client).map_err(bad)?;
        let mut config: postgres::Config =
            for_client.parse().map_err(|err| ArchiveError::BadAddress {
                address: redact(text),
                detail: "the client cannot read it".to_string(),
                source: Some(err),
            })?;
        if config.get_user().is_none() {
            let user = ["PGUSER", "USER", "LOGNAME"]
                .iter()
                .find_map(|name| std::env::var(name).ok().filter(|user| !user.is_empty()))
                .ok_or_else(|| bad("no user: give one in the address (user@host)".to_string()))?;
            config.user(&user);
        }
        if config.get_hosts().is_empty() {
            config.host_path(DEFAULT_SOCKET_DIR);
        }
        let tls = TlsSettings::new(tls_asked, over_sockets_only(&config)).map_err(bad)?;
        config.ssl_mode(client_ssl_mode(tls.mode, &config));
        // The client's own timeout bounds each TCP connect; the whole
        // start-up is bounded around it (`store::postgres::connect`).
        if let Some(start_up) = timeouts.start_up {
            config.connect_timeout(start_up);
        }
        let options = timeouts.start_up_options(config.get_options());
        config.options(&options);
        let shown = shown_address(scheme, text, &config);
        if config.get_password().is_none() {
            let password = std::env::var("PGPASSWORD")
                .ok()
                .filter(|password| !password.is_empty())
                .or_else(|| password_from_file(&config));
            if let Some(password) = password {
                config.password(password);
            }
        }
        Ok(ServerAddress {
            config,
            shown,
            timeouts,
            tls,
        })
    }

    /// The client's settings, password included.
    pub(crate) fn config(&self) -> &postgres::Config {
        &self.config
    }

    /// What bounds a session's waits.
    pub fn timeouts(&self) -> &ServerTimeouts {
        &self.timeouts
    }

    /// What TLS the address asks for.
    pub fn tls(&self) -> &TlsSettings {
        &self.tls
    }
}

/// The client's reading of `mode`: it knows no `verify-*` (the checks
/// are the connector's, `store::postgres::tls`), so those ask it for
/// `require`. An address of Unix socket directories only asks for no
/// TLS, as libpq never encrypts there and the server refuses it there.
fn client_ssl_mode(mode: SslMode, config: &postgres::Config) -> postgres::config::SslMode {
    match mode {
        _ if over_sockets_only(config) => postgres::config::SslMode::Disable,
        SslMode::Disable => postgres::config::SslMode::Disable,
        SslMode::Prefer => postgres::config::SslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            postgres::config::SslMode::Require
        }
    }
}

/// True when every host of `config` is a Unix socket directory.
fn over_sockets_only(config: &postgres::Config) -> bool {
    config
        .get_hosts()
        .iter()
        .all(|host| matches!(host, postgres::config::Host::Unix(_)))
}

/// `text` without anything that may be a password: the user's part of
/// the authority stops at `:`, and a `password=` parameter is cut.
fn redact(text: &str) -> String {
    let (scheme, rest) = text.split_once("://").unwrap_or(("", text));
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{user}@{hosts}")
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|pair| !pair.starts_with("password="))
                .collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The address as shown: the scheme, user, hosts, ports and database of
/// `config`, which holds nothing of a password in these.
fn shown_address(scheme: &str, text: &str, config: &postgres::Config) -> String {
    let user = config.get_user().unwrap_or_default();
    let mut tcp_hosts = Vec::new();
    let mut socket_dirs = Vec::new();
    for (host_idx, host) in config.get_hosts().iter().enumerate() {
        let port = config
            .get_ports()
            .get(host_idx)
            .or(config.get_ports().first())
            .filter(|_| !config.get_ports().is_empty());
        match host {
            postgres::config::Host::Tcp(name) => {
                let name = if name.contains(':') {
                    format!("[{name}]")
                } else {
                    name.clone()
                };
                tcp_hosts.push(match port {
                    Some(port) => format!("{name}:{port}"),
                    None => name,
                });
            }
            postgres::config::Host::Unix(dir) => {
                socket_dirs.push(dir.display().to_string());
            }
        }
    }
    let mut shown = format!("{scheme}://{user}@{}", tcp_hosts.join(","));
    if let Some(dbname) = config.get_dbname() {
        shown.push('/');
        shown.push_str(dbname);
    }
    let mut parameters: Vec<String> = socket_dirs
        .iter()
        .map(|dir| format!("host={dir}"))
        .collect();
    if tcp_hosts.is_empty()
        && let Some(port) = config.get_ports().first()
        && text.contains("port")
    {
        parameters.push(format!("port={port}"));
    }
    if !parameters.is_empty() {
        shown.push('?');
        shown.push_str(&parameters.join("&"));
    }
    shown
}

/// The password the password file gives for `config`'s first host, port,
/// database and user, if any: `hostname:port:database:username:password`
/// lines, `*` matching anything, `\` escaping `:` and `\`; a socket host
/// is `localhost`. A file others may read is ignored, as libpq does.
fn password_from_file(config: &postgres::Config) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pgpass")))?;
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let host = match config.get_hosts().first()? {
        postgres::config::Host::Tcp(name) => name.clone(),
        postgres::config::Host::Unix(_) => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user()?;
    let database = config.get_dbname().unwrap_or(user);
    let wanted = [host.as_str(), port.as_str(), database, user];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass_line(line);
            let [host, port, database, user, password] = fields.as_slice() else {
                return None;
            };
            [host, port, database, user]
                .iter()
                .zip(wanted)
                .all(|(field, wanted)| field.as_str() == "*" || field.as_str() == wanted)
                .then(|| password.clone())
        })
}

/// The fields of one password file line, unescaped.
fn split_pgpass_line(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut characters = line.chars();
    while let Some(character) = characters.next() {
        match character {
            '\\' => {
                if let (Some(escaped), Some(field)) = (characters.next(), fields.last_mut()) {
                    field.push(escaped);
                }
            }
            ':' => fields.push(String::new()),
            other => {
                if let Some(field) = fields.last_mut() {
                    field.push(other);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn files_and_servers_are_told_by_the_scheme() {
        assert!(matches!(
            Location::parse(OsStr::new("runs.db")).unwrap(),
            Location::File(_)
        ));
        assert!(matches!(
            Location::parse(OsStr::new("postgres:runs.db")).unwrap(),
            Location::File(_)
        ));
        let server = Location::parse(OsStr::new("postgresql://lab@db.example:5433/runs")).unwrap();
        assert_eq!(server.to_string(), "postgresql://lab@db.example:5433/runs");
    }

    #[test]
    fn a_password_is_never_shown() {
        let address = ServerAddress::parse("postgres://lab:s3cret@127.0.0.1/runs").unwrap();
        assert_eq!(address.to_string(), "postgres://lab@127.0.0.1:5432/runs");
        assert!(!format!("{address:?}").contains("s3cret"));
        assert_eq!(address.config().get_password(), Some(&b"s3cret"[..]));
        let err = ServerAddress::parse("postgres://lab:s3cret@127.0.0.1:notaport/runs")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("s3cret"), "{err}");
        assert!(
            err.contains("postgres://lab@127.0.0.1:notaport/runs"),
            "{err}"
        );
        assert_eq!(
            redact("postgres://h/db?password=x&sslmode=disable"),
            "postgres://h/db?sslmode=disable"
        );
    }

    #[test]
    fn tls_is_read_by_libpq_names_and_never_over_a_socket() {
        use postgres::config::SslMode as ClientMode;
        let address =
            ServerAddress::parse("postgres://lab@127.0.0.1/runs?sslmode=require").unwrap();
        assert_eq!(address.tls().mode, SslMode::Require);
        assert_eq!(address.config().get_ssl_mode(), ClientMode::Require);
        let address = ServerAddress::parse(
            "postgres://lab@127.0.0.1/runs?sslmode=disable&application_name=a",
        )
        .unwrap();
        assert_eq!(address.config().get_ssl_mode(), ClientMode::Disable);
        assert_eq!(address.config().get_application_name(), Some("a"));
        let address =
            ServerAddress::parse("postgres://lab@/runs?host=%2Frun%2Fpg&sslmode=require").unwrap();
        assert_eq!(address.tls().mode, SslMode::Require);
        assert_eq!(address.config().get_ssl_mode(), ClientMode::Disable);
        // Nor is a CA file asked for there.
        ServerAddress::parse("postgres://lab@/runs?host=%2Frun%2Fpg&sslmode=verify-full").unwrap();

        let err =
            ServerAddress::parse("postgres://lab:pw@127.0.0.1/runs?sslmode=allow").unwrap_err();
        assert!(matches!(err, ArchiveError::BadAddress { .. }), "{err}");
        assert!(err.to_string().contains("sslmode=allow"), "{err}");
        let err = ServerAddress::parse(
            "postgres://lab:pw@127.0.0.1/runs?sslmode=verify-full&sslrootcert=%2Fnonexistent%2Fca.crt",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no CA file"), "{err}");
        assert!(!err.contains("pw@"), "{err}");
    }

    #[test]
    fn timeouts_come_from_the_query_and_the_options_win() {
        let address = ServerAddress::parse("postgres://lab@127.0.0.1/runs").unwrap();
        assert_eq!(address.timeouts(), &ServerTimeouts::default());
        assert_eq!(
            address.config().get_options(),
            Some("-c statement_timeout=10min -c lock_timeout=5min")
        );
        assert_eq!(
            address.config().get_connect_timeout(),
            Some(&DEFAULT_CONNECT_TIMEOUT)
        );

        let address = ServerAddress::parse(
            "postgres://lab@127.0.0.1/runs?statement_timeout=30s&connect_timeout=3\
             &application_name=nb&lock_timeout=1500",
        )
        .unwrap();
        let timeouts = address.timeouts();
        assert_eq!(timeouts.start_up, Some(Duration::from_secs(3)));
        assert_eq!((&*timeouts.statement, &*timeouts.lock), ("30s", "1500"));
        assert_eq!(address.config().get_application_name(), Some("nb"));
        assert_eq!(
            address.config().get_options(),
            Some("-c statement_timeout=30s -c lock_timeout=1500")
        );

        // The address's own options come last, so that the server takes
        // theirs, and are taken as the timeouts in force.
        let address = ServerAddress::parse(
            "postgres://lab@127.0.0.1/runs?lock_timeout=1min\
             &options=-c%20lock_timeout%3D2s%20--statement-timeout%3D0%20-cwork_mem%3D4MB",
        )
        .unwrap();
        assert_eq!(
            address.config().get_options(),
            Some(
                "-c statement_timeout=10min -c lock_timeout=1min \
                 -c lock_timeout=2s --statement-timeout=0 -cwork_mem=4MB"
            )
        );
        assert_eq!(
            (&*address.timeouts().lock, &*address.timeouts().statement),
            ("2s", "0")
        );

        // libpq's reading of connect_timeout: 0 or less is no bound.
        for no_bound in ["0", "-1"] {
            let address = ServerAddress::parse(&format!(
                "postgres://lab@127.0.0.1/runs?connect_timeout={no_bound}"
            ))
            .unwrap();
            assert_eq!(address.timeouts().start_up, None);
            assert_eq!(address.config().get_connect_timeout(), None);
        }
    }

    #[test]
    fn unreadable_timeouts_are_refused_by_name() {
        for (query, named) in [
            ("statement_timeout=5%20s", "statement_timeout=5%20s"),
            ("lock_timeout=1.5s", "lock_timeout=1.5s"),
            ("lock_timeout=s", "lock_timeout=s"),
            ("statement_timeout=-1", "statement_timeout=-1"),
            ("connect_timeout=2s", "connect_timeout=2s"),
        ] {
            let err = ServerAddress::parse(&format!("postgres://lab:pw@127.0.0.1/runs?{query}"))
                .unwrap_err();
            assert!(matches!(err, ArchiveError::BadAddress { .. }), "{err}");
            let text = err.to_string();
            assert!(text.contains(named), "{text}");
            assert!(!text.contains("pw"), "{text}");
        }
    }

    #[test]
    fn password_file_lines_are_unescaped() {
        assert_eq!(
            split_pgpass_line(r"host:*:db:us\:er:pa\\ss"),
            ["host", "*", "db", "us:er", r"pa\ss"]
        );
    }
}
