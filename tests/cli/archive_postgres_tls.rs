//! `netbisect` on a PostgreSQL archive over TLS: a cluster of the test
//! binary's own (`test_fixtures::postgres::Cluster::start_with`) with
//! `ssl=on`, a server certificate signed by a CA the test makes with
//! `openssl`, and a `pg_hba.conf` that takes TCP logins over TLS only
//! (`hostssl`, and `hostnossl ... reject`), so that every login over TCP
//! that succeeds here was encrypted. The CA verifies under
//! `verify-full`, another CA and another host name are refused by their
//! causes, `require` encrypts without a CA, `disable` is turned away by
//! the server. Where PostgreSQL or openssl is not installed these say so
//! and pass (and fail under `NETBISECT_SLOW_TESTS=1`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use test_fixtures::postgres::{Cluster, PASSWORD, ServerSetup, USER};
use test_fixtures::record::{RecordBuilder, json_lines};

/// The cluster over TLS. The CA files a client is given lie in its data
/// directory, which goes with it: `ca.crt` (the server's) and
/// `other-ca.crt` (another's).
struct TlsLab {
    cluster: Cluster,
}

impl TlsLab {
    /// The server's CA file.
    fn ca(&self) -> PathBuf {
        self.cluster.data_dir().join("ca.crt")
    }

    /// A CA that did not sign the server's certificate.
    fn other_ca(&self) -> PathBuf {
        self.cluster.data_dir().join("other-ca.crt")
    }

    /// A `HOME` that is not there, so without `~/.postgresql/root.crt`.
    fn empty_home(&self) -> PathBuf {
        self.cluster.data_dir().join("no-home")
    }

    /// The address of database `name` on host `host` (the certificate
    /// names `localhost` and `127.0.0.1`; any other host is reached
    /// through `hostaddr=127.0.0.1`), with the password and `query`.
    fn address(&self, host: &str, name: &str, query: &str) -> String {
        let port = self.cluster.port();
        let hostaddr = if host == "127.0.0.1" || host == "localhost" {
            String::new()
        } else {
            "hostaddr=127.0.0.1&".to_string()
        };
        format!("postgres://{USER}:{PASSWORD}@{host}:{port}/{name}?{hostaddr}{query}")
    }
}

/// The lab of this test process, started on first use, or `None` after
/// the test says it skips (no PostgreSQL or no openssl here).
fn tls_lab() -> Option<&'static TlsLab> {
    static LAB: OnceLock<Result<TlsLab, String>> = OnceLock::new();
    // A cluster without TLS tells whether PostgreSQL is here at all.
    Cluster::shared_or_skip()?;
    if Command::new("openssl").arg("version").output().is_err() {
        test_fixtures::skip::skip("no openssl installed (the openssl package)");
        return None;
    }
    match LAB.get_or_init(start_lab) {
        Ok(lab) => Some(lab),
        Err(why) => panic!("the TLS cluster failed: {why}"),
    }
}

/// The server's `pg_hba.conf`: the superuser through the socket, TCP
/// logins over TLS only.
const HBA: &str = "\
local all all scram-sha-256
hostssl all all 127.0.0.1/32 scram-sha-256
hostnossl all all 127.0.0.1/32 reject
";

fn start_lab() -> Result<TlsLab, String> {
    let certificates = tempfile::tempdir().map_err(|err| err.to_string())?;
    make_certificates(certificates.path())?;
    let files = ["server.crt", "server.key", "ca.crt", "other-ca.crt"]
        .iter()
        .map(|name| {
            std::fs::read(certificates.path().join(name))
                .map(|contents| (name.to_string(), contents))
                .map_err(|err| format!("{name}: {err}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let setup = ServerSetup {
        files,
        settings: [
            ("ssl", "on"),
            ("ssl_cert_file", "server.crt"),
            ("ssl_key_file", "server.key"),
        ]
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect(),
        hba: Some(HBA.to_string()),
    };
    let cluster = Cluster::start_with(&setup)?;
    Ok(TlsLab { cluster })
}

/// Makes, in `dir`, a CA (`ca.crt`), a server key and certificate it
/// signed for `localhost` and `127.0.0.1` (`server.key`, `server.crt`),
/// and another CA (`other-ca.crt`), as GUIDE's recipe does.
fn make_certificates(dir: &Path) -> Result<(), String> {
    let openssl = |command_line: &str| -> Result<(), String> {
        let output = Command::new("openssl")
            .args(command_line.split_whitespace())
            .current_dir(dir)
            .output()
            .map_err(|err| format!("openssl: {err}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "openssl {command_line}: {}",
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    };
    let new_key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    for name in ["ca", "other-ca"] {
        openssl(&format!(
            "req -x509 {new_key} -keyout {name}.key -out {name}.crt -days 30 \
             -subj /CN={name} -addext basicConstraints=critical,CA:TRUE \
             -addext keyUsage=critical,keyCertSign,cRLSign"
        ))?;
    }
    openssl(&format!(
        "req -new {new_key} -keyout server.key -out server.csr -subj /CN=localhost"
    ))?;
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .map_err(|err| err.to_string())?;
    openssl(
        "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
         -extfile server.ext -out server.crt",
    )
}

/// The binary pointed at `address`, with nothing of TLS or passwords
/// from this environment and a `HOME` without `~/.postgresql/root.crt`.
fn netbisect_at(lab: &TlsLab, address: &str) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::new(env!("CARGO_BIN_EXE_netbisect"));
    command
        .env("NETBISECT_ARCHIVE", address)
        .env("HOME", lab.empty_home())
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .env_remove("PGSSLMODE")
        .env_remove("PGSSLROOTCERT");
    command
}

fn one_run() -> String {
    json_lines(&[RecordBuilder::new(run_record::spec::TestKind::TcpStream)
        .commit("aaaa0000")
        .label("over-tls")
        .testbed("bed-tls")
        .samples(&[9.1e9, 9.2e9])
        .build()])
}

/// Runs `netbisect archive list` at `address` and returns its exit code
/// and stderr.
fn list(lab: &TlsLab, address: &str) -> (Option<i32>, String) {
    let output = netbisect_at(lab, address)
        .args(["archive", "list"])
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

#[test]
fn verify_full_with_the_ca_stores_and_reads_a_run() {
    let Some(lab) = tls_lab() else {
        return;
    };
    let name = lab.cluster.database();
    let ca = lab.ca();
    let address = lab.address(
        "localhost",
        &name,
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    );
    let output = netbisect_at(lab, &address)
        .args(["archive", "import", "-"])
        .write_stdin(one_run())
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).to_string();
    assert!(stdout.contains("1 added"), "{stdout}");

    // The same through PGSSLMODE and PGSSLROOTCERT, by the address
    // 127.0.0.1, which the certificate names too.
    let output = netbisect_at(lab, &lab.address("127.0.0.1", &name, ""))
        .env("PGSSLMODE", "verify-full")
        .env("PGSSLROOTCERT", &ca)
        .args(["archive", "list"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).to_string();
    assert!(stdout.contains("over-tls"), "{stdout}");
}

#[test]
fn a_certificate_that_does_not_verify_is_refused_by_its_cause() {
    let Some(lab) = tls_lab() else {
        return;
    };
    let name = lab.cluster.database();

    // No CA file at all: the address cannot be used as it is (exit 2),
    // before anything connects.
    let (code, stderr) = list(lab, &lab.address("localhost", &name, "sslmode=verify-full"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no CA file"), "{stderr}");

    // Another CA: the issuer is unknown.
    let other = lab.other_ca();
    let (code, stderr) = list(
        lab,
        &lab.address(
            "localhost",
            &name,
            &format!("sslmode=verify-full&sslrootcert={}", other.display()),
        ),
    );
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot use the archive at postgres://{USER}@localhost:{}/{name}: \
             the server's certificate did not verify",
            lab.cluster.port()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "is not signed by an authority of {} (unknown issuer)",
            other.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(PASSWORD), "{stderr}");

    // The right CA, another name: the name does not match under
    // verify-full, and is not checked under verify-ca.
    let ca = lab.ca();
    let (code, stderr) = list(
        lab,
        &lab.address(
            "db.invalid",
            &name,
            &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
        ),
    );
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("the server's certificate is not for db.invalid (name mismatch)"),
        "{stderr}"
    );
    assert!(stderr.contains("localhost"), "{stderr}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    netbisect_at(
        lab,
        &lab.address(
            "db.invalid",
            &name,
            &format!("sslmode=verify-ca&sslrootcert={}", ca.display()),
        ),
    )
    .args(["archive", "import", "-"])
    .write_stdin(one_run())
    .assert()
    .success();

    // prefer with a CA file checks the chain too, and when the
    // handshake fails tries again without TLS, as libpq does: here the
    // server's rule turns that away.
    let (code, stderr) = list(
        lab,
        &lab.address(
            "localhost",
            &name,
            &format!("sslmode=prefer&sslrootcert={}", other.display()),
        ),
    );
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("the server's pg_hba.conf turned the connection away"),
        "{stderr}"
    );
    assert!(stderr.contains("no encryption"), "{stderr}");

    // require with a CA file checks the chain, as libpq does.
    let (code, stderr) = list(
        lab,
        &lab.address(
            "localhost",
            &name,
            &format!("sslmode=require&sslrootcert={}", other.display()),
        ),
    );
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("(unknown issuer)"), "{stderr}");
}

#[test]
fn require_encrypts_without_a_ca_and_disable_is_turned_away_by_the_server() {
    let Some(lab) = tls_lab() else {
        return;
    };
    let name = lab.cluster.database();
    for query in ["sslmode=require", "sslmode=prefer", ""] {
        let address = lab.address("localhost", &name, query);
        netbisect_at(lab, &address)
            .args(["archive", "import", "-"])
            .write_stdin(one_run())
            .assert()
            .success();
    }

    // Without TLS the server's rule refuses the login, in its words.
    let (code, stderr) = list(lab, &lab.address("localhost", &name, "sslmode=disable"));
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot use the archive at postgres://{USER}@localhost:{}/{name}: \
             the server's pg_hba.conf turned the connection away",
            lab.cluster.port()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("pg_hba.conf rejects connection"),
        "{stderr}"
    );
    assert!(stderr.contains("no encryption"), "{stderr}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");

    // A Unix socket directory is never encrypted, whatever the mode, as
    // with libpq: the way in from a network namespace or a container.
    let socket_address = format!(
        "postgres://{USER}:{PASSWORD}@/{name}?host={}&port={}&sslmode=verify-full&sslrootcert={}",
        lab.cluster.socket_dir().display(),
        lab.cluster.port(),
        lab.ca().display()
    );
    let output = netbisect_at(lab, &socket_address)
        .args(["archive", "list"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).to_string();
    assert!(stdout.contains("over-tls"), "{stdout}");
}
