//! Tests of the titles, commands and figures of specs.

use super::*;
use run_record::spec::{ConfidenceSpec, TestKind};

#[test]
fn titles_name_every_parameter_off_its_default() {
    let mut spec = RunSpec::defaults(TestKind::TcpStream);
    spec.duration_s = 0.1;
    assert_eq!(spec_title(&spec, "lab"), "TCP_STREAM -l 0.1 (testbed lab)");
    assert_eq!(spec_value(&spec, "-m").as_deref(), Some("16384"));
    assert_eq!(spec_value(&spec, "-r").as_deref(), Some("1,1"));
    assert_eq!(spec_value(&spec, "-S"), None);
    spec.remote_socket_buffer_bytes = Some(2280);
    spec.send_size_bytes = 1432;
    spec.nodelay = true;
    spec.cpu_pinning = CpuPinning {
        local: Some(0),
        remote: Some(1),
    };
    spec.confidence = Some(ConfidenceSpec {
        level_pct: 95,
        width_pct: 5.0,
    });
    spec.iterations_max = 10;
    spec.iterations_min = 3;
    spec.flows = 4;
    spec.warmup_s = 1.5;
    spec.local_cpu = true;
    spec.remote_cpu = true;
    assert_eq!(
        spec_title(&spec, "lab"),
        "TCP_STREAM -l 0.1 -c -C -T 0,1 -I 95,5 -i 10,3 -S 2280 -m 1432 nodelay \
         flows 4 warm-up 1.5s (testbed lab)"
    );
    assert_eq!(
        spec_command(&spec).render(),
        "netbisect bench -t TCP_STREAM -l 0.1 -c -C -T 0,1 -I 95,5 -i 10,3 -S 2280 \
         -m 1432 --nodelay --flows 4 --warmup 1.5"
    );
    let rr = RunSpec::defaults(TestKind::TcpRr);
    assert_eq!(spec_title(&rr, "lab"), "TCP_RR -l 10 (testbed lab)");
}

#[test]
fn granted_buffers_are_titled_but_never_an_option() {
    let mut spec = RunSpec::defaults(TestKind::TcpStream);
    spec.duration_s = 60.0;
    spec.local_cpu = true;
    spec.remote_cpu = true;
    spec.reported_socket_buffers = Some(ReportedSocketBuffers {
        local_send_bytes: Some(16384),
        remote_recv_bytes: Some(87380),
        ..ReportedSocketBuffers::default()
    });
    assert_eq!(
        spec_title(&spec, "lab"),
        "TCP_STREAM -l 60 -c -C granted send 16384 recv 87380 (testbed lab)"
    );
    assert_eq!(
        spec_command(&spec).render(),
        "netbisect bench -t TCP_STREAM -l 60 -c -C"
    );
    let mut rr = RunSpec::defaults(TestKind::TcpRr);
    rr.reported_socket_buffers = Some(ReportedSocketBuffers {
        local_send_bytes: Some(16384),
        local_recv_bytes: Some(131072),
        remote_send_bytes: None,
        remote_recv_bytes: Some(131072),
    });
    assert_eq!(
        spec_title(&rr, "lab"),
        "TCP_RR -l 10 granted local 16384/131072 remote -/131072 (testbed lab)"
    );
}

#[test]
fn specs_that_differ_have_different_titles() {
    let base = RunSpec::defaults(TestKind::TcpRr);
    let mut variants = vec![base.clone()];
    let mut pinned = base.clone();
    pinned.cpu_pinning.local = Some(0);
    variants.push(pinned);
    let mut confident = base.clone();
    confident.confidence = Some(ConfidenceSpec {
        level_pct: 99,
        width_pct: 2.0,
    });
    variants.push(confident);
    let mut iterated = base.clone();
    iterated.iterations_max = 3;
    variants.push(iterated);
    let mut warm = base.clone();
    warm.warmup_s = 0.5;
    variants.push(warm);
    let mut nodelay = base;
    nodelay.nodelay = true;
    variants.push(nodelay);
    let titles: std::collections::BTreeSet<String> = variants
        .iter()
        .map(|spec| spec_title(spec, "lab"))
        .collect();
    assert_eq!(titles.len(), variants.len());
}

#[test]
fn a_setting_not_granted_is_titled_as_kept_and_given_again_as_asked() {
    use run_record::record::{Granted, SystemOutcome};
    use run_record::spec::{Setting, SystemSettings};
    let mut spec = RunSpec::defaults(TestKind::TcpStream);
    let mut system = SystemSettings::default();
    system.set(Setting::Sysctl {
        name: "net.ipv4.tcp_rmem".to_string(),
        value: "4096 131072 6291456".to_string(),
    });
    spec.system = Some(system);
    let mut outcome = SystemOutcome::default();
    outcome.sysctls.insert(
        "net.ipv4.tcp_rmem".to_string(),
        Granted {
            requested: "4096 131072 6291456".to_string(),
            granted: "4096 131072 4194304".to_string(),
        },
    );
    assert_eq!(
        spec_title_as_granted(&spec, "lab", Some(&outcome)),
        "TCP_STREAM -l 10 net.ipv4.tcp_rmem=4096 131072 6291456(4096 131072 4194304) \
         (testbed lab)"
    );
    // The line a user pastes asks what was asked, as one shell word.
    assert_eq!(
        spec_command(&spec).render(),
        "netbisect bench -t TCP_STREAM -l 10 --set 'net.ipv4.tcp_rmem=4096 131072 6291456'"
    );
}
