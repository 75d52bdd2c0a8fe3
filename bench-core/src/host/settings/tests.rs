//! What needs no privilege: the checks made before anything changes, the
//! errors' wording, and an empty request. Changes are tested as root in
//! network namespaces of their own (`bench-core/tests/settings.rs`).

use super::*;
use run_record::spec::Setting;
use rustix::io::Errno;

fn settings(texts: &[&str]) -> SystemSettings {
    let mut settings = SystemSettings::default();
    for text in texts {
        settings.set(Setting::parse(text).unwrap());
    }
    settings
}

fn loopback_index() -> u32 {
    super::super::interface_index("lo").unwrap()
}

#[test]
fn an_interface_that_does_not_exist_is_refused_first() {
    for name in ["no-such-if0", "", "../lo", "sixteen-chars-xx"] {
        let err = apply(name, &settings(&["gso=off"])).unwrap_err();
        assert!(
            matches!(&err, SettingsError::NoSuchInterface { interface } if interface == name),
            "{err:?}"
        );
    }
    let err = apply("no-such-if0", &settings(&["mtu=1500"])).unwrap_err();
    assert_eq!(err.to_string(), "no interface named no-such-if0");
}

#[test]
fn unknown_and_fixed_features_are_refused_before_any_change() {
    let lo = loopback_index();
    let proc_sys = Path::new(PROC_SYS);
    let err = check("lo", lo, &settings(&["tx-foo=on"]), proc_sys)
        .err()
        .unwrap();
    // The loopback device reports no driver.
    assert_eq!(err.to_string(), "the driver of lo has no feature tx-foo");
    // Loopback's scatter-gather and its loopback bit are its own.
    let err = check("lo", lo, &settings(&["sg=off"]), proc_sys)
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "the driver of lo keeps sg fixed on: it cannot be changed"
    );
    let err = check("lo", lo, &settings(&["lro=on"]), proc_sys)
        .err()
        .unwrap();
    assert!(matches!(err, SettingsError::NoSuchFeature { .. }), "{err}");
    // What loopback lets change passes the checks.
    let checked = check("lo", lo, &settings(&["gso=off", "gro=on"]), proc_sys).unwrap();
    let (plan, _) = checked.features.unwrap();
    assert_eq!(plan.members.len(), 2);
}

#[test]
fn a_sysctl_that_does_not_exist_is_refused() {
    let lo = loopback_index();
    let err = check(
        "lo",
        lo,
        &settings(&["net.core.no_such_sysctl=1"]),
        Path::new(PROC_SYS),
    )
    .err()
    .unwrap();
    assert_eq!(err.to_string(), "no sysctl named net.core.no_such_sysctl");
    // A directory is no sysctl either.
    let err = check("lo", lo, &settings(&["net.core=1"]), Path::new(PROC_SYS))
        .err()
        .unwrap();
    assert!(matches!(err, SettingsError::NoSuchSysctl { .. }), "{err}");
    // One that exists is opened and read for the undo, which a user who
    // may not write it is told at once.
    let checked = check(
        "lo",
        lo,
        &settings(&["net.core.rmem_max=4194304"]),
        Path::new(PROC_SYS),
    );
    if rustix::process::geteuid().is_root() {
        let checked = checked.ok().unwrap();
        assert_eq!(checked.sysctls[0].name, "net.core.rmem_max");
        assert!(checked.sysctls[0].value.parse::<u64>().is_ok());
    } else {
        let err = checked.err().unwrap();
        assert!(matches!(err, SettingsError::NotPermitted { .. }), "{err}");
    }
    // A sysctl nobody may write is refused, root or not.
    let err = check(
        "lo",
        lo,
        &settings(&["net.ipv4.tcp_available_congestion_control=reno"]),
        Path::new(PROC_SYS),
    )
    .err()
    .unwrap();
    assert!(
        matches!(
            err,
            SettingsError::Refused { .. } | SettingsError::NotPermitted { .. }
        ),
        "{err}"
    );
}

#[test]
fn the_link_is_read_before_a_change() {
    let checked = check(
        "lo",
        loopback_index(),
        &settings(&["mtu=9000", "txqueuelen=100"]),
        Path::new(PROC_SYS),
    )
    .unwrap();
    let link = checked.link.unwrap();
    assert!(link.mtu.is_some() && link.tx_queue_len.is_some());
    assert!(checked.features.is_none() && checked.sysctls.is_empty());
}

#[test]
fn nothing_asked_is_nothing_changed() {
    let applied = apply("lo", &SystemSettings::default()).unwrap();
    assert_eq!(
        applied.outcome(),
        &SystemOutcome {
            interface: "lo".to_string(),
            ..SystemOutcome::default()
        }
    );
    applied.restore().unwrap();
}

#[test]
fn errors_say_what_was_refused_and_why() {
    let not_permitted = refusal("gso=off on eth0".to_string(), Errno::PERM);
    assert_eq!(
        not_permitted.to_string(),
        "not permitted to set gso=off on eth0: this needs root (CAP_NET_ADMIN)"
    );
    assert!(matches!(
        refusal("net.core.rmem_max=1".to_string(), Errno::ACCESS),
        SettingsError::NotPermitted { .. }
    ));
    let refused = refusal("mtu=9000 on eth0.5".to_string(), Errno::RANGE);
    assert!(
        refused
            .to_string()
            .starts_with("the kernel refused mtu=9000 on eth0.5: "),
        "{refused}"
    );
    let fixed = SettingsError::FixedFeature {
        interface: "eth0".to_string(),
        driver: Some("virtio_net".to_string()),
        feature: "tx-checksum-ipv4".to_string(),
        on: false,
    };
    assert_eq!(
        fixed.to_string(),
        "the driver of eth0 (virtio_net) keeps tx-checksum-ipv4 fixed off: it cannot be changed"
    );
    let missing = SettingsError::NoSuchFeature {
        interface: "eth0".to_string(),
        driver: Some("virtio_net".to_string()),
        feature: "tx-foo".to_string(),
    };
    assert_eq!(
        missing.to_string(),
        "the driver of eth0 (virtio_net) has no feature tx-foo"
    );
    let not_restored = SettingsError::NotRestored {
        cause: Some(Box::new(SettingsError::NoSuchSysctl {
            name: "net.core.x".to_string(),
        })),
        failures: vec!["mtu=1500 on eth0 (x)".to_string(), "y".to_string()],
    };
    assert_eq!(
        not_restored.to_string(),
        "no sysctl named net.core.x; the previous settings were not all restored: \
         mtu=1500 on eth0 (x); y"
    );
}
