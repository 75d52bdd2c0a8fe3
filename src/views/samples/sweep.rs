//! Samples of `sweep`: a TCP_STREAM send-size sweep (with and without
//! an interval missed), a TCP_RR sweep with CPU figures, and extremes: a
//! UDP_RR sweep that stopped, with an hour a size and figures from zero
//! to 10^13, and a UDP_STREAM sweep over IPv6 without a commit.

use super::Sample;
use crate::views::sweep::{Stopped, SweepContext, SweepRow, SweepTable};
use crate::views::units::Units;
use run_record::spec::{AddressFamily, TestKind};

/// What a row is of: a send size, or a request and a response size.
enum Size {
    Send(u32),
    RequestResponse(u32, u32),
}

/// A row of `size` at `rate` (transactions per second; stream rows
/// count the messages the throughput delivers) and `throughput_bps`,
/// with CPU utilisation and service demand, local and remote.
fn row(
    size: Size,
    rate: f64,
    throughput_bps: f64,
    cpu: [Option<f64>; 4],
    run_id: &str,
) -> SweepRow {
    let (size_bytes, request_bytes, response_bytes, ops_per_s) = match size {
        Size::Send(bytes) => (
            Some(bytes),
            None,
            None,
            throughput_bps / (8.0 * f64::from(bytes)),
        ),
        Size::RequestResponse(request, response) => (None, Some(request), Some(response), rate),
    };
    SweepRow {
        size_bytes,
        request_bytes,
        response_bytes,
        ops_per_s,
        throughput_bps,
        local_cpu_pct: cpu[0],
        remote_cpu_pct: cpu[1],
        local_service_demand: cpu[2],
        remote_service_demand: cpu[3],
        confidence_half_width_pct: None,
        confidence_target_half_width_pct: None,
        confidence_missed: false,
        run_id: run_id.into(),
    }
}

/// A sweep of `test` on loopback at commit 0123456789ab.
fn loopback(test: TestKind, duration_s: f64, rows: Vec<SweepRow>) -> SweepTable {
    SweepTable {
        not_granted_legend: None,
        test,
        parameter: if test.is_request_response() {
            "request_response"
        } else {
            "send_size"
        },
        host: "127.0.0.1".into(),
        family: AddressFamily::Ipv4,
        duration_s,
        local_socket_buffer_bytes: None,
        remote_socket_buffer_bytes: None,
        recv_size_bytes: 131_072,
        options: Vec::new(),
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        label: None,
        testbed: "loopback".into(),
        n_sizes: rows.len(),
        multiple_iterations: false,
        stopped: None,
        rows,
    }
}

/// The six sizes of the TCP_STREAM sweep, without CPU figures.
fn stream_rows() -> Vec<SweepRow> {
    let none = [None; 4];
    vec![
        row(
            Size::Send(1),
            0.0,
            29100000.0,
            none,
            "5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9",
        ),
        row(
            Size::Send(90),
            0.0,
            2412000000.0,
            none,
            "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b",
        ),
        row(
            Size::Send(900),
            0.0,
            17930000000.0,
            none,
            "d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35",
        ),
        row(
            Size::Send(4000),
            0.0,
            38610000000.0,
            none,
            "4e07408562bedb8b60ce05c1decfe3ad16b72230967de01f640b7e4729b49fce",
        ),
        row(
            Size::Send(9000),
            0.0,
            45020000000.0,
            none,
            "4b227777d4dd1fc61c6f884f48641d02b4d121d3fd328cb08b5531fcacdabf8a",
        ),
        row(
            Size::Send(60000),
            0.0,
            52870000000.0,
            none,
            "ef2d127de37b942baad06145e54b0c619a1f22327b2ebbcfbec78f5564afe39d",
        ),
    ]
}

fn rr_cpu() -> SweepTable {
    let rr = Size::RequestResponse;
    let mut table = loopback(
        TestKind::TcpRr,
        30.0,
        vec![
            row(
                rr(1, 1),
                48211.37,
                771381.92,
                [
                    Some(41.27),
                    Some(38.9),
                    Some(17.120442750330472),
                    Some(16.137272182889635),
                ],
                "4a44dc15364204a80fe80e9039455cc1608281820fe2b24f1e5233ade6af1dd5",
            ),
            row(
                rr(64, 64),
                47890.02,
                49039380.48,
                [
                    Some(41.5),
                    Some(39.02),
                    Some(17.331377184640978),
                    Some(16.295670789028698),
                ],
                "4fc82b26aecb47d2868c4efbe3581732a3e7cbcc6c2efb32062c08170a05eeb8",
            ),
            row(
                rr(1024, 1),
                46001.9,
                377215580.0,
                [
                    Some(40.88),
                    Some(38.11),
                    Some(17.773178933913602),
                    Some(16.568880850573564),
                ],
                "6b51d431df5d7f141cbececcf79edf3dd861c3b4069f0b11661a3eefacbba918",
            ),
            row(
                rr(1024, 1024),
                39880.5,
                653402112.0,
                [
                    Some(39.75),
                    Some(37.01),
                    Some(19.934554481513523),
                    Some(18.56044934241045),
                ],
                "3fdba35f04dc8c462986c992bcf875546257113072a909c162f7e470e581e278",
            ),
            row(
                rr(65536, 65536),
                6012.33,
                6304384942.08,
                [
                    Some(55.3),
                    Some(53.91),
                    Some(183.95530518118596),
                    Some(179.3314738212972),
                ],
                "8527a891e224136950ff32ca212b45bc93f69fbb801c3b1ebedac52775f99e61",
            ),
        ],
    );
    table.local_socket_buffer_bytes = Some(262_144);
    table.remote_socket_buffer_bytes = Some(262_144);
    table.label = Some("patched".into());
    table.multiple_iterations = true;
    table
}

fn rr_extreme() -> SweepTable {
    let rr = Size::RequestResponse;
    SweepTable {
        not_granted_legend: None,
        host: "perf-receiver-0042.rack-17.lab.netdev-regression.example.org".into(),
        family: AddressFamily::Ipv6,
        local_socket_buffer_bytes: Some(268_435_456),
        remote_socket_buffer_bytes: Some(1),
        label: Some("a-rather-long-label-for-the-patched-kernel-v6.10-rc3".into()),
        testbed: "testbed-with-a-long-name-0042".into(),
        n_sizes: 64,
        multiple_iterations: true,
        stopped: Some(Stopped {
            at: 4,
            size: "-r 65507,65507".into(),
        }),
        ..loopback(
            TestKind::UdpRr,
            3600.0,
            vec![
                row(
                    rr(1, 65507),
                    99999999.99,
                    52000000000000.0,
                    [Some(100.0), Some(0.0), Some(123456.789), Some(1e-06)],
                    "f5ca38f748a1d6eaf726b8a42fb575c3c71f1864a8143301782de13da2d9202b",
                ),
                row(
                    rr(65507, 1),
                    0.01,
                    0.5,
                    [Some(0.004), Some(99.999), None, Some(9999999.999)],
                    "6f4b6612125fb3a0daecd2799dfd6c9c299424fd920f9b308110a2c1fbd8f443",
                ),
                row(
                    rr(16777216, 16777216),
                    0.0,
                    0.0,
                    [None; 4],
                    "785f3ec7eb32f30b90cd0fcf3657d388b5ff4297f2f9716ff66e9b69c05ddd09",
                ),
            ],
        )
    }
}

fn udp_extreme() -> SweepTable {
    let rows = vec![
        row(
            Size::Send(1),
            0.0,
            1600000000000.0,
            [Some(100.0), Some(100.0), Some(99999.999), Some(0.001)],
            "624b60c58c9d8bfb6ff1886c2fd605d2adeb6ea4da576068201b6c6958ce93f4",
        ),
        row(
            Size::Send(16777216),
            0.0,
            0.0,
            [None, Some(3.5), None, Some(12.5)],
            "eb1e33e8a81b697b75855af6bfcdbcbf7cbbde9f94962ceaec1ed8af21f5a50f",
        ),
    ];
    SweepTable {
        not_granted_legend: None,
        host: "fd00:1234:5678:9abc:def0:1234:5678:9abc".into(),
        family: AddressFamily::Ipv6,
        commit: None,
        testbed: "namespace-pair".into(),
        n_sizes: 3,
        ..loopback(TestKind::UdpStream, 10.0, rows)
    }
}

pub fn samples() -> Vec<Sample> {
    let stream = loopback(TestKind::TcpStream, 10.0, stream_rows());
    // The same sweep with -I: the interval missed at 90 bytes.
    let mut missed = loopback(TestKind::TcpStream, 10.0, stream_rows());
    for (row, half_width_pct) in missed.rows.iter_mut().zip([0.4, 3.7, 0.4, 0.4, 0.4, 0.4]) {
        row.confidence_half_width_pct = Some(half_width_pct);
        row.confidence_target_half_width_pct = Some(2.5);
        row.confidence_missed = half_width_pct > 2.5;
    }
    let mut samples = Vec::new();
    for (case, table) in [
        ("tcp-stream", stream),
        ("tcp-stream-confidence-missed", missed),
        ("tcp-rr-cpu", rr_cpu()),
        ("extreme", rr_extreme()),
        ("udp-stream-extreme", udp_extreme()),
    ] {
        let context = SweepContext::new(&table, Units::parse("m").expect("netperf's m"));
        samples.push(Sample::new("sweep", case, &context));
    }
    samples
}
