//! A PostgreSQL server of the tests' own: a cluster made with the
//! installed binaries (`/usr/lib/postgresql/VERSION/bin`) in a temporary
//! directory, listening on 127.0.0.1 on a free port, with password
//! logins (SCRAM) only.
//!
//! PostgreSQL refuses to run as root: as root the cluster belongs to the
//! `postgres` user, in a directory under the system's temporary
//! directory that user can reach. One cluster serves a whole test binary
//! ([`Cluster::shared`]); every test takes a database of its own
//! ([`Cluster::database`]). A test that needs a server set up otherwise
//! (TLS, its own `pg_hba.conf`) starts a cluster of its own
//! ([`Cluster::start_with`]). A watcher started beside the server stops it
//! by its process id, and removes the directory, once the test process
//! is gone. The tests' own administration goes through the server's
//! Unix socket, which every `pg_hba.conf` here lets the superuser use.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The cluster's superuser.
pub const USER: &str = "netbisect";

/// Its password.
pub const PASSWORD: &str = "lab-password";

/// What a cluster of a test's own is started with, beyond what every
/// cluster here has.
#[derive(Clone, Debug, Default)]
pub struct ServerSetup {
    /// Files written into the data directory before the server starts,
    /// each readable by the server's user alone (as a TLS key must be):
    /// a name and its contents. Settings name them relative to the data
    /// directory (`ssl_cert_file=server.crt`).
    pub files: Vec<(String, Vec<u8>)>,
    /// Settings given to the server (`-c name=value`).
    pub settings: Vec<(String, String)>,
    /// The whole `pg_hba.conf`, instead of the one initdb writes.
    pub hba: Option<String>,
}

/// A running server.
pub struct Cluster {
    port: u16,
    dir: PathBuf,
    bin_dir: PathBuf,
    next_database: AtomicU32,
}

impl Cluster {
    /// The cluster of this test process, started on first use; `Err`
    /// says why there is none (no PostgreSQL binaries installed, or they
    /// failed), for the test to say it skips or to fail.
    pub fn shared() -> Result<&'static Cluster, String> {
        static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
        CLUSTER
            .get_or_init(Cluster::start)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A cluster of the caller's own, not shared with other tests, for a
    /// test that stops and starts its server ([`Cluster::stop`]); `Err`
    /// as [`Cluster::shared`].
    pub fn own() -> Result<Cluster, String> {
        Cluster::start()
    }

    /// Stops the server (a fast shutdown: every connection is cut, as
    /// when a database server restarts) and waits until it is gone; it
    /// stays down until [`Cluster::start_again`].
    pub fn stop(&self) {
        std::fs::write(self.dir.join("down"), "").expect("cannot mark the server down");
        std::fs::write(self.dir.join("restart"), "").expect("cannot mark the restart");
        let pid_file = self.dir.join("data").join("postmaster.pid");
        let pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse::<i32>().ok())
            .expect("the server writes its process id");
        let killed = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .is_ok_and(|status| status.success());
        assert!(killed, "cannot stop postgres ({pid})");
        let deadline = Instant::now() + Duration::from_secs(60);
        while Path::new(&format!("/proc/{pid}")).exists() {
            assert!(Instant::now() < deadline, "postgres ({pid}) does not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the server [`Cluster::stop`] stopped, and waits until it
    /// takes connections.
    pub fn start_again(&self) {
        std::fs::remove_file(self.dir.join("down")).expect("the server was not stopped");
        self.wait_until_ready()
            .expect("postgres does not start again");
    }

    /// The cluster of this test process, or `None` after the test says
    /// it skips ([`crate::skip::skip`]) where PostgreSQL's server
    /// binaries are not installed. A cluster that fails to start where
    /// they are is a failure.
    pub fn shared_or_skip() -> Option<&'static Cluster> {
        match Cluster::shared() {
            Ok(cluster) => Some(cluster),
            Err(why) if bin_dir().is_none() => {
                crate::skip::skip(why);
                None
            }
            Err(why) => panic!("PostgreSQL is installed but its cluster failed: {why}"),
        }
    }

    fn start() -> Result<Cluster, String> {
        Cluster::start_with(&ServerSetup::default())
    }

    /// Starts a cluster of the test's own, set up as `setup` says; `Err`
    /// says why there is none, as [`Cluster::shared`] does. It stops when
    /// the test process ends.
    pub fn start_with(setup: &ServerSetup) -> Result<Cluster, String> {
        let bin_dir = bin_dir().ok_or_else(|| {
            "no PostgreSQL server installed (/usr/lib/postgresql/*/bin/postgres); \
             install the postgresql package"
                .to_string()
        })?;
        let owner = server_owner()?;
        let dir = tempfile::Builder::new()
            .prefix("netbisect-pg-")
            .tempdir()
            .map_err(|err| format!("cannot make a temporary directory: {err}"))?
            .keep();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                .map_err(|err| err.to_string())?;
            std::fs::write(dir.join("password"), PASSWORD).map_err(|err| err.to_string())?;
            if let Some((uid, gid)) = owner {
                std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                    .map_err(|err| format!("cannot give {} to postgres: {err}", dir.display()))?;
            }
        }
        let port = free_port()?;
        let initdb = as_owner(Command::new(bin_dir.join("initdb")), owner, &dir)
            .arg("-D")
            .arg(dir.join("data"))
            .args([
                "-U",
                USER,
                "--auth=scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
            ])
            .args(["--locale=C", "--pwfile"])
            .arg(dir.join("password"))
            .output()
            .map_err(|err| format!("cannot run initdb: {err}"))?;
        if !initdb.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&initdb.stderr)
            ));
        }
        write_setup_files(&dir.join("data"), setup, owner)?;
        // The server, and a watcher that stops it by its id and removes
        // the directory once this process is gone. A server that ends
        // while `down` is in the directory ([`Cluster::stop`]) stays down
        // until the file is gone, and then starts again
        // ([`Cluster::start_again`]).
        let script = r#"
            bin=$1 dir=$2 port=$3 parent=$4
            shift 4
            start() {
                "$bin/postgres" -D "$dir/data" -p "$port" -k "$dir" -c listen_addresses=127.0.0.1 \
                    -c fsync=off -c max_connections=60 "$@" >>"$dir/server.log" 2>&1 &
                server=$!
            }
            start "$@"
            while [ -d "/proc/$parent" ]; do
                if ! kill -0 "$server" 2>/dev/null; then
                    if [ -e "$dir/down" ]; then sleep 0.1; continue; fi
                    if [ -e "$dir/restart" ]; then rm -f "$dir/restart"; start "$@"; else break; fi
                fi
                sleep 0.2
            done
            kill -INT "$server" 2>/dev/null
            wait "$server"
            rm -rf "$dir"
        "#;
        as_owner(Command::new("sh"), owner, &dir)
            .args(["-c", script, "postgres-for-tests"])
            .arg(&bin_dir)
            .arg(&dir)
            .arg(port.to_string())
            .arg(std::process::id().to_string())
            .args(
                setup
                    .settings
                    .iter()
                    .flat_map(|(name, value)| ["-c".to_string(), format!("{name}={value}")]),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("cannot start postgres: {err}"))?;
        let cluster = Cluster {
            port,
            dir,
            bin_dir,
            next_database: AtomicU32::new(0),
        };
        cluster.wait_until_ready()?;
        Ok(cluster)
    }

    fn wait_until_ready(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.socket_config("postgres").connect(postgres::NoTls) {
                Ok(_) => return Ok(()),
                Err(err) if Instant::now() > deadline => {
                    let log =
                        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                    return Err(format!("postgres did not start: {err}\n{log}"));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// The address of database `name` with the password in it.
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{name}",
            self.port
        )
    }

    /// The address of database `name` without a password.
    pub fn url_without_password(&self, name: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's data directory, where the files of its
    /// [`ServerSetup`] are; it goes with the cluster.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The directory of the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The client's settings for database `name` as the superuser,
    /// through the Unix socket.
    fn socket_config(&self, name: &str) -> postgres::Config {
        let mut config = postgres::Config::new();
        config
            .host_path(&self.dir)
            .port(self.port)
            .user(USER)
            .password(PASSWORD)
            .dbname(name);
        config
    }

    /// The server's binaries (`psql` is among them).
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// A new, empty database; returns its name.
    pub fn database(&self) -> String {
        let name = format!(
            "test_{}_{}",
            std::process::id(),
            self.next_database.fetch_add(1, Ordering::Relaxed)
        );
        self.admin(&format!("CREATE DATABASE {name}"));
        name
    }

    /// Runs `sql` in database `postgres` as the superuser; panics on a
    /// failure, which is the test's.
    pub fn admin(&self, sql: &str) {
        self.run_in("postgres", sql);
    }

    /// Runs `sql` in database `name` as the superuser; panics on a
    /// failure, which is the test's.
    pub fn run_in(&self, name: &str, sql: &str) {
        let mut client = self
            .socket_config(name)
            .connect(postgres::NoTls)
            .unwrap_or_else(|err| panic!("cannot connect to {name}: {err}"));
        client
            .batch_execute(sql)
            .unwrap_or_else(|err| panic!("{sql}: {err}"));
    }
}

/// Writes the files and the `pg_hba.conf` of `setup` into the data
/// directory `data`, each for the server's user alone.
fn write_setup_files(
    data: &Path,
    setup: &ServerSetup,
    owner: Option<(u32, u32)>,
) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let hba = setup
        .hba
        .as_ref()
        .map(|hba| ("pg_hba.conf".to_string(), hba.as_bytes().to_vec()));
    for (name, contents) in setup.files.iter().cloned().chain(hba) {
        let path = data.join(&name);
        std::fs::write(&path, contents)
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(|err| err.to_string())?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&path, Some(uid), Some(gid))
                .map_err(|err| format!("cannot give {} to postgres: {err}", path.display()))?;
        }
    }
    Ok(())
}

/// The newest installed PostgreSQL's server binaries.
fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("postgres").is_file() && bin.join("initdb").is_file())
                .then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// As root, the `postgres` user's uid and gid (the server will not run
/// as root); otherwise none, and the server runs as this user.
fn server_owner() -> Result<Option<(u32, u32)>, String> {
    use std::os::unix::fs::MetadataExt;
    // The owner of /proc/self is this process's user.
    let uid = std::fs::metadata("/proc/self")
        .map_err(|err| err.to_string())?
        .uid();
    if uid != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|err| err.to_string())?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&"postgres") && fields.len() > 3)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
        .map(Some)
        .ok_or_else(|| "running as root and there is no postgres user".to_string())
}

fn as_owner(mut command: Command, owner: Option<(u32, u32)>, dir: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
    command.current_dir(dir);
    command
}

fn free_port() -> Result<u16, String> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|err| format!("no free port: {err}"))?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|err| err.to_string())
}
