//! The settings of `spec.system` made for real, as root, in network
//! namespaces each test makes and removes (`ip netns`, veth pairs), with
//! the library working on a thread moved into the namespace: offloads,
//! MTU, tx queue length and sysctls set, read back and put back; the
//! errors before anything changes; and whole runs over a veth pair, which
//! change the client's end only and put it back, also when the test
//! fails. What the kernel did is checked with ethtool, ip and sysctl.
//! Where no namespace can be made (not root), a test says so and passes
//! without running (a failure under `NETBISECT_SLOW_TESTS=1`, since CI
//! runs as root).

use bench_core::client::ClientOptions;
use bench_core::host::settings::{self, SettingsError};
use bench_core::run::{BenchError, BenchRequest, InterimReports, bench};
use bench_core::server::{self, Server, ServerConfig, ServerHandle};
use run_record::spec::{RunSpec, Setting, SystemSettings, TestKind};
use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use test_fixtures::skip::skip;

/// A network namespace, deleted (with its devices) when dropped.
struct Namespace {
    name: String,
}

impl Namespace {
    /// A namespace with its loopback device up, or `None` after saying
    /// why none can be made.
    fn new(tag: &str) -> Option<Namespace> {
        if !rustix::process::geteuid().is_root() {
            skip("not root, so no network namespace");
            return None;
        }
        let name = format!("nbset-{tag}-{}", std::process::id());
        match Command::new("ip").args(["netns", "add", &name]).output() {
            Ok(made) if made.status.success() => {}
            Ok(made) => {
                let why = String::from_utf8_lossy(&made.stderr);
                skip(format!("ip netns add failed: {}", why.trim()));
                return None;
            }
            Err(err) => {
                skip(format!("cannot run ip: {err}"));
                return None;
            }
        }
        let namespace = Namespace { name };
        namespace.ip(&["link", "set", "lo", "up"]);
        Some(namespace)
    }

    /// A namespace with a veth pair `va`-`vb` in it, both up.
    fn with_veth(tag: &str) -> Option<Namespace> {
        let namespace = Namespace::new(tag)?;
        namespace.ip(&["link", "add", "va", "type", "veth", "peer", "name", "vb"]);
        namespace.ip(&["link", "set", "va", "up"]);
        namespace.ip(&["link", "set", "vb", "up"]);
        Some(namespace)
    }

    /// `ip -n NAME ARGS`, which must succeed; its stdout.
    fn ip(&self, args: &[&str]) -> String {
        let mut argv = vec!["-n", &self.name];
        argv.extend_from_slice(args);
        run("ip", &argv)
    }

    /// `ARGV` inside the namespace, which must succeed; its stdout.
    fn exec(&self, argv: &[&str]) -> String {
        let mut full = vec!["netns", "exec", &self.name];
        full.extend_from_slice(argv);
        run("ip", &full)
    }

    /// Runs `work` on a thread of its own moved into the namespace.
    fn inside<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{}", self.name);
        std::thread::scope(|scope| {
            let thread = scope.spawn(|| {
                let handle = std::fs::File::open(&path).unwrap();
                rustix::thread::move_into_link_name_space(
                    handle.as_fd(),
                    Some(rustix::thread::LinkNameSpaceType::Network),
                )
                .unwrap();
                work()
            });
            thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    fn offloads(&self, device: &str) -> BTreeMap<String, bool> {
        offloads(&self.name, device)
    }

    fn link(&self, device: &str) -> (u64, u64) {
        link(&self.name, device)
    }

    fn sysctl(&self, name: &str) -> String {
        let value = self.exec(&["sysctl", "-n", name]);
        value.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .output();
    }
}

/// What `ethtool -k DEVICE` says in `namespace`, each feature (by
/// ethtool's long name for the groups) on or off.
fn offloads(namespace: &str, device: &str) -> BTreeMap<String, bool> {
    run("ip", &["netns", "exec", namespace, "ethtool", "-k", device])
        .lines()
        .filter_map(|line| {
            let (name, state) = line.trim().split_once(": ")?;
            Some((name.to_string(), state.starts_with("on")))
        })
        .collect()
}

/// The MTU and the tx queue length of `device` in `namespace`, as `ip -j`
/// reads them.
fn link(namespace: &str, device: &str) -> (u64, u64) {
    let text = run(
        "ip",
        &["-n", namespace, "-j", "link", "show", "dev", device],
    );
    let links: serde_json::Value = serde_json::from_str(&text).unwrap();
    let link = &links[0];
    (
        link["mtu"].as_u64().unwrap(),
        link["txqlen"].as_u64().unwrap(),
    )
}

fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("cannot run {program} (install it): {err}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn settings(texts: &[&str]) -> SystemSettings {
    let mut settings = SystemSettings::default();
    for text in texts {
        settings.set(Setting::parse(text).unwrap());
    }
    settings
}

/// ethtool's long names of the groups the short names cover.
const GROUPS: [(&str, &str); 4] = [
    ("sg", "scatter-gather"),
    ("tso", "tcp-segmentation-offload"),
    ("gso", "generic-segmentation-offload"),
    ("gro", "generic-receive-offload"),
];

#[test]
fn veth_offloads_are_set_read_back_and_put_back() {
    let Some(namespace) = Namespace::with_veth("offloads") else {
        return;
    };
    let before = namespace.offloads("va");
    for on in [false, true] {
        let state = if on { "on" } else { "off" };
        let asked: Vec<String> = GROUPS
            .iter()
            .map(|(short, _)| format!("{short}={state}"))
            .collect();
        let asked: Vec<&str> = asked.iter().map(String::as_str).collect();
        let applied = namespace
            .inside(|| settings::apply("va", &settings(&asked)))
            .unwrap();
        let outcome = applied.outcome();
        assert_eq!(outcome.interface, "va");
        assert_eq!(outcome.features.len(), 4);
        for (short, long) in GROUPS {
            let feature = &outcome.features[short];
            assert_eq!((feature.requested, feature.granted), (on, on), "{short}");
            assert_eq!(namespace.offloads("va")[long], on, "{long}");
        }
        assert!(outcome.refused().is_empty(), "{:?}", outcome.refused());
        // Put back from this thread, in the host's namespace: the guard
        // keeps the namespace's socket.
        applied.restore().unwrap();
        assert_eq!(namespace.offloads("va"), before);
    }
}

#[test]
fn a_feature_the_kernel_leaves_off_is_recorded_not_refused() {
    let Some(namespace) = Namespace::with_veth("tsosg") else {
        return;
    };
    let before = namespace.offloads("va");
    // Without scatter-gather the kernel keeps TCP segmentation off,
    // however asked; some kernels keep GSO off too.
    let applied = namespace
        .inside(|| settings::apply("va", &settings(&["sg=off", "tso=on", "gso=on"])))
        .unwrap();
    let outcome = applied.outcome();
    let now = namespace.offloads("va");
    assert!(!outcome.features["sg"].granted);
    assert!(outcome.features["tso"].requested);
    assert!(!outcome.features["tso"].granted);
    assert!(!now["tx-tcp-segmentation"]);
    assert_eq!(
        outcome.features["gso"].granted,
        now["generic-segmentation-offload"]
    );
    let refused = outcome.refused();
    assert!(
        refused.contains(&"tso=on (got off)".to_string()),
        "{refused:?}"
    );
    drop(applied);
    assert_eq!(namespace.offloads("va"), before);
}

#[test]
fn mtu_and_tx_queue_length_are_set_and_put_back() {
    let Some(namespace) = Namespace::with_veth("link") else {
        return;
    };
    let before = namespace.link("va");
    assert_eq!(before, (1500, 1000));
    let applied = namespace
        .inside(|| settings::apply("va", &settings(&["mtu=9000", "txqueuelen=321"])))
        .unwrap();
    let outcome = applied.outcome();
    let mtu = outcome.mtu.as_ref().unwrap();
    assert_eq!((mtu.requested, mtu.granted), (9000, 9000));
    let queue = outcome.tx_queue_len.as_ref().unwrap();
    assert_eq!((queue.requested, queue.granted), (321, 321));
    assert_eq!(namespace.link("va"), (9000, 321));
    // The peer is another device and keeps its own.
    assert_eq!(namespace.link("vb"), (1500, 1000));
    applied.restore().unwrap();
    assert_eq!(namespace.link("va"), before);
}

#[test]
fn sysctls_are_set_in_the_namespace_only_and_put_back() {
    let Some(namespace) = Namespace::new("sysctl") else {
        return;
    };
    let host_backlog = std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap();
    let before = (
        namespace.sysctl("net.core.somaxconn"),
        namespace.sysctl("net.ipv4.tcp_rmem"),
    );
    let asked = settings(&[
        "net.core.somaxconn=1234",
        "net.ipv4.tcp_rmem=4096 87380 3145728",
    ]);
    let applied = namespace.inside(|| settings::apply("lo", &asked)).unwrap();
    let outcome = applied.outcome();
    let backlog = &outcome.sysctls["net.core.somaxconn"];
    assert_eq!(
        (backlog.requested.as_str(), backlog.granted.as_str()),
        ("1234", "1234")
    );
    // A vector reads back with tabs, and is granted as asked.
    let rmem = &outcome.sysctls["net.ipv4.tcp_rmem"];
    assert!(rmem.is_granted(), "{rmem:?}");
    assert_eq!(namespace.sysctl("net.core.somaxconn"), "1234");
    assert_eq!(namespace.sysctl("net.ipv4.tcp_rmem"), "4096 87380 3145728");
    // The host's own is another namespace's.
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap(),
        host_backlog
    );
    applied.restore().unwrap();
    assert_eq!(
        (
            namespace.sysctl("net.core.somaxconn"),
            namespace.sysctl("net.ipv4.tcp_rmem"),
        ),
        before
    );
}

#[test]
fn unknown_features_interfaces_and_sysctls_are_refused_before_any_change() {
    let Some(namespace) = Namespace::with_veth("unknown") else {
        return;
    };
    let before = (namespace.offloads("va"), namespace.link("va"));
    let refused = |interface: &str, texts: &[&str]| {
        let asked = settings(texts);
        namespace
            .inside(|| settings::apply(interface, &asked))
            .err()
            .unwrap()
    };
    // The changes that would come first are asked too: none is made.
    let err = refused("va", &["gso=off", "mtu=9000", "tx-foo=on"]);
    assert_eq!(
        err.to_string(),
        "the driver of va (veth) has no feature tx-foo"
    );
    let err = refused("va", &["lro=on"]);
    assert_eq!(
        err.to_string(),
        "the driver of va (veth) has no feature lro"
    );
    // The kernel knows this one; veth has it neither on nor changeable.
    let err = refused("va", &["tx-checksum-fcoe-crc=on"]);
    assert_eq!(
        err.to_string(),
        "the driver of va (veth) has no feature tx-checksum-fcoe-crc"
    );
    let err = refused("vz", &["gso=off"]);
    assert_eq!(err.to_string(), "no interface named vz");
    let err = refused("va", &["gso=off", "net.core.no_such_thing=1"]);
    assert_eq!(err.to_string(), "no sysctl named net.core.no_such_thing");
    let err = refused("va", &["sg=off", "tx-scatter-gather=on"]);
    assert!(matches!(err, SettingsError::FeatureClash { .. }), "{err}");
    assert_eq!((namespace.offloads("va"), namespace.link("va")), before);
}

#[test]
fn without_cap_net_admin_a_change_is_not_permitted() {
    let Some(namespace) = Namespace::with_veth("perm") else {
        return;
    };
    let before = (namespace.offloads("va"), namespace.link("va"));
    for asked in [&["gso=off"][..], &["mtu=9000"], &["txqueuelen=10"]] {
        let asked = settings(asked);
        let err = namespace
            .inside(|| {
                // Capabilities are a thread's own: this one keeps root's
                // identity without CAP_NET_ADMIN.
                let mut sets = rustix::thread::capabilities(None).unwrap();
                sets.effective
                    .remove(rustix::thread::CapabilitySet::NET_ADMIN);
                rustix::thread::set_capabilities(None, sets).unwrap();
                settings::apply("va", &asked)
            })
            .err()
            .unwrap();
        assert!(matches!(err, SettingsError::NotPermitted { .. }), "{err}");
        assert!(
            err.to_string().ends_with("this needs root (CAP_NET_ADMIN)"),
            "{err}"
        );
        assert!(err.is_input());
    }
    assert_eq!((namespace.offloads("va"), namespace.link("va")), before);
}

#[test]
fn a_refused_mtu_is_named_and_what_came_before_it_is_put_back() {
    let Some(namespace) = Namespace::with_veth("upper") else {
        return;
    };
    // A device on top of va may not outgrow it: a VXLAN device (or a
    // VLAN's, where the kernel has no VXLAN).
    let kinds: [&[&str]; 2] = [
        &[
            "link", "add", "upper", "type", "vxlan", "id", "5", "dstport", "4789", "dev", "va",
        ],
        &[
            "link", "add", "link", "va", "name", "upper", "type", "vlan", "id", "5",
        ],
    ];
    let made = kinds.iter().any(|args| {
        Command::new("ip")
            .args(["-n", &namespace.name])
            .args(*args)
            .output()
            .is_ok_and(|made| made.status.success())
    });
    if !made {
        skip("the kernel has neither VXLAN nor VLAN devices");
        return;
    }
    let before = (namespace.offloads("upper"), namespace.link("upper"));
    let asked = settings(&["gso=off", "mtu=9000"]);
    let err = namespace
        .inside(|| settings::apply("upper", &asked))
        .err()
        .unwrap();
    assert!(matches!(err, SettingsError::Refused { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("the kernel refused mtu=9000 on upper: "),
        "{err}"
    );
    // GSO was turned off first; it is on again.
    assert_eq!(
        (namespace.offloads("upper"), namespace.link("upper")),
        before
    );
}

/// Two namespaces joined by a veth pair: `va` 10.199.7.1 in the first
/// (the client's), `vb` 10.199.7.2 in the second (the server's).
fn client_and_server(tag: &str) -> Option<(Namespace, Namespace)> {
    let client = Namespace::new(&format!("{tag}-c"))?;
    let server = Namespace::new(&format!("{tag}-s"))?;
    client.ip(&[
        "link",
        "add",
        "va",
        "type",
        "veth",
        "peer",
        "name",
        "vb",
        "netns",
        &server.name,
    ]);
    client.ip(&["addr", "add", "10.199.7.1/24", "dev", "va"]);
    server.ip(&["addr", "add", "10.199.7.2/24", "dev", "vb"]);
    client.ip(&["link", "set", "va", "up"]);
    server.ip(&["link", "set", "vb", "up"]);
    Some((client, server))
}

/// A server in `namespace` on 10.199.7.2 with `max_test_memory`.
fn serve(namespace: &Namespace, max_test_memory: u64) -> ServerHandle {
    namespace.inside(|| {
        let mut config = ServerConfig::new("10.199.7.2:0".parse().unwrap());
        config.no_auth = true;
        config.max_test_memory = max_test_memory;
        Server::bind(config, server::quiet())
            .unwrap()
            .spawn()
            .unwrap()
    })
}

fn request_to(server: &ServerHandle, texts: &[&str]) -> BenchRequest {
    let mut spec = RunSpec::defaults(TestKind::TcpStream);
    spec.duration_s = 0.5;
    spec.system = Some(settings(texts));
    BenchRequest {
        spec,
        server: Some(ClientOptions::new("10.199.7.2", server.address().port())),
        subject: Default::default(),
        testbed: "veth".to_string(),
        interim: None,
    }
}

/// The MTU and GSO of the client's device, then of the server's.
type EndsSeen = (u64, bool, u64, bool);

#[test]
fn a_run_changes_the_clients_end_only_and_puts_it_back() {
    let Some((client, server_side)) = client_and_server("run") else {
        return;
    };
    let before = (client.offloads("va"), client.link("va"));
    let server_before = (server_side.offloads("vb"), server_side.link("vb"));
    let server = serve(&server_side, server::DEFAULT_MAX_TEST_MEMORY);
    // What both ends' devices look like while the test runs.
    let seen: Arc<Mutex<Vec<EndsSeen>>> = Arc::default();
    let mut request = request_to(&server, &["gso=off", "mtu=9000"]);
    request.interim = Some(InterimReports {
        every: Duration::from_millis(150),
        report: {
            let seen = Arc::clone(&seen);
            let (client, server_side) = (client.name.clone(), server_side.name.clone());
            Arc::new(move |_| {
                let look = |namespace: &str, device: &str| {
                    (
                        link(namespace, device).0,
                        offloads(namespace, device)["generic-segmentation-offload"],
                    )
                };
                let (client_mtu, client_gso) = look(&client, "va");
                let (server_mtu, server_gso) = look(&server_side, "vb");
                seen.lock()
                    .unwrap()
                    .push((client_mtu, client_gso, server_mtu, server_gso));
            })
        },
    });
    let record = client.inside(|| bench(&request)).unwrap();
    server.stop();
    let system = record.system.as_ref().unwrap();
    assert_eq!(system.interface, "va");
    assert_eq!(
        (
            system.features["gso"].requested,
            system.features["gso"].granted
        ),
        (false, false)
    );
    let mtu = system.mtu.as_ref().unwrap();
    assert_eq!((mtu.requested, mtu.granted), (9000, 9000));
    // The environment was captured while the settings held.
    let interface = record.env.local.interface.as_ref().unwrap();
    assert_eq!(interface.name, "va");
    assert_eq!(interface.mtu, Some(9000));
    assert_eq!(
        interface.features.get("tx-generic-segmentation"),
        Some(&false)
    );
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    for state in seen.iter() {
        assert_eq!(*state, (9000, false, 1500, true));
    }
    assert_eq!((client.offloads("va"), client.link("va")), before);
    assert_eq!(
        (server_side.offloads("vb"), server_side.link("vb")),
        server_before
    );
}

#[test]
fn a_run_that_fails_puts_the_settings_back() {
    let Some((client, server_side)) = client_and_server("fail") else {
        return;
    };
    let before = (client.offloads("va"), client.link("va"));
    // A server that refuses every test for the memory it would take:
    // the test fails after the settings are made.
    let server = serve(&server_side, 1);
    let request = request_to(&server, &["gso=off", "mtu=9000", "txqueuelen=50"]);
    let err = client.inside(|| bench(&request)).unwrap_err();
    server.stop();
    assert!(matches!(err, BenchError::Client(_)), "{err}");
    assert_eq!((client.offloads("va"), client.link("va")), before);
    // Settings refused before the test: no test, nothing changed.
    let server = serve(&server_side, server::DEFAULT_MAX_TEST_MEMORY);
    let request = request_to(&server, &["gso=off", "tx-foo=on"]);
    let err = client.inside(|| bench(&request)).unwrap_err();
    server.stop();
    assert!(matches!(err, BenchError::Settings(_)), "{err}");
    assert_eq!((client.offloads("va"), client.link("va")), before);
}
