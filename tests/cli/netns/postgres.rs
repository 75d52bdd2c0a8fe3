//! A PostgreSQL archive from a network namespace, as GUIDE describes it:
//! the server's TCP address is out of reach there (the namespace's
//! loopback is its own), its Unix socket directory is not (`ip netns
//! exec` keeps the file system), named with `host=DIR`.

use super::Namespace;
use std::path::Path;
use test_fixtures::postgres::{Cluster, PASSWORD, USER};
use test_fixtures::record::{RecordBuilder, json_lines};

#[test]
fn a_namespace_reaches_the_archive_through_the_socket_directory() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let namespace = match Namespace::new("pgsock") {
        Ok(namespace) => namespace,
        Err(reason) => {
            test_fixtures::skip::skip(format!("no network namespace: {reason}"));
            return;
        }
    };
    let name = cluster.database();
    let run = json_lines(&[RecordBuilder::new(run_record::spec::TestKind::TcpStream)
        .commit("aaaa0000")
        .label("in-netns")
        .samples(&[9.1e9, 9.2e9])
        .build()]);

    // The TCP address names the namespace's own loopback, where no server
    // listens.
    let output = namespace
        .netbisect(Path::new(&cluster.url(&name)))
        .args(["archive", "import", "-"])
        .write_stdin(run.clone())
        .assert()
        .code(3);
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).to_string();
    assert!(stderr.contains("connection refused"), "{stderr}");

    // The socket directory, with the environment's strictest TLS, which a
    // socket does not use.
    let through_socket = format!(
        "postgres://{USER}:{PASSWORD}@/{name}?host={}&port={}",
        cluster.socket_dir().display(),
        cluster.port()
    );
    namespace
        .netbisect(Path::new(&through_socket))
        .env("PGSSLMODE", "verify-full")
        .env("PGSSLROOTCERT", "/nonexistent/ca.crt")
        .args(["archive", "import", "-"])
        .write_stdin(run)
        .assert()
        .success();
    let output = assert_cmd::Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .env("NETBISECT_ARCHIVE", cluster.url(&name))
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .args(["archive", "list"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).to_string();
    assert!(stdout.contains("in-netns"), "{stdout}");
}
