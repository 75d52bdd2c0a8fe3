//! `netbisect compare` in netperf's layouts: tables pinned over real
//! loopback runs committed in `tests/data/compare-loopback.jsonl` (made
//! with `bench -l 0.05 -i 4,4`, labelled current and patched; UDP_STREAM
//! sweeps in `compare-udp-sweep.jsonl`), and the
//! tables of fresh loopback runs checked for their shape.

use crate::compare::{stderr_of_failure, stdout_of};
use crate::netbisect_with as netbisect;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn committed_runs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/compare-loopback.jsonl")
}

/// Lines wider than `width`, with tabs, trailing spaces or non-ASCII.
fn check_rules(text: &str, width: usize) {
    for line in text.lines() {
        assert!(line.is_ascii() && !line.contains('\t'), "{line:?}");
        assert!(line.len() <= width, "wider than {width}: {line:?}");
        assert_eq!(line, line.trim_end(), "trailing space: {line:?}");
    }
}

fn archive_of_committed_runs(dir: &Path) -> PathBuf {
    let db = dir.join("archive.db");
    stdout_of(
        netbisect(&db)
            .args(["archive", "import"])
            .arg(committed_runs()),
    );
    db
}

#[test]
fn every_layout_of_committed_loopback_runs_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive_of_committed_runs(dir.path());
    let cases: [(&str, &[&str], usize); 6] = [
        ("netperf", &[], 80),
        ("matrix", &["--layout", "matrix"], 80),
        ("stats", &["--layout", "stats"], 80),
        ("email", &["--email"], 72),
        ("email_matrix", &["--email", "--layout", "matrix"], 72),
        ("netperf_gbits", &["-f", "g"], 80),
    ];
    for (name, extra, width) in cases {
        let text = stdout_of(
            netbisect(&db)
                .args(["compare", "current", "patched"])
                .args(extra),
        );
        check_rules(&text, width);
        insta::assert_snapshot!(format!("compare_loopback_{name}"), text);
    }
    // The -I run missed its interval on both sides: flagged, with a
    // footnote.
    let text = stdout_of(netbisect(&db).args(["compare", "current", "patched"]));
    assert!(text.contains("% @ 99% !!!"), "{text}");
    assert!(text.contains("!!!  the confidence asked with -I"), "{text}");
}

/// One short loopback run.
fn bench(db: &Path, label: &str, args: &[&str]) {
    stdout_of(
        netbisect(db)
            .args(["bench", "-l", "0.05", "--json", "--label", label])
            .args(args),
    );
}

/// The lines of the table under `title`, up to the next blank line after
/// the rows.
fn table_after<'t>(text: &'t str, title: &str) -> Vec<&'t str> {
    let mut lines = text.lines().skip_while(|line| *line != title);
    assert!(lines.next().is_some(), "no table titled {title:?}:\n{text}");
    let mut table: Vec<&str> = lines.by_ref().take_while(|line| !line.is_empty()).collect();
    table.extend(lines.take_while(|line| !line.is_empty()));
    table
}

#[test]
fn loopback_runs_give_the_threads_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let socket_sizes = ["87380", "2280", "18000", "28000"];
    let send_sizes = ["16384", "1432"];
    let rr_sizes = ["1", "90", "900", "4000", "9000", "60000"];
    for label in ["current", "patched"] {
        for socket in socket_sizes {
            for send in send_sizes {
                bench(&db, label, &["-t", "TCP_STREAM", "-S", socket, "-m", send]);
            }
        }
        for send in ["65507", "1432"] {
            bench(&db, label, &["-t", "UDP_STREAM", "-m", send]);
        }
        for size in rr_sizes {
            let sizes = format!("{size},{size}");
            bench(&db, label, &["-t", "TCP_RR", "-r", &sizes]);
        }
    }
    let text = stdout_of(netbisect(&db).args(["compare", "current", "patched"]));
    check_rules(&text, 80);
    let titles: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("TCP_") || line.starts_with("UDP_"))
        .collect();
    let unique: BTreeSet<&&str> = titles.iter().collect();
    assert_eq!(unique.len(), titles.len(), "{text}");

    // One netperf table per socket and send size, a row per side.
    for socket in socket_sizes {
        for send in send_sizes {
            // The default send size is no option of the title.
            let send_option = if send == "16384" {
                String::new()
            } else {
                format!(" -m {send}")
            };
            let title = format!("TCP_STREAM -l 0.05 -S {socket}{send_option} (testbed loopback)");
            let rows: Vec<&str> = table_after(&text, &title)
                .into_iter()
                .filter(|line| line.starts_with("current") || line.starts_with("patched"))
                .collect();
            assert_eq!(rows.len(), 2, "{title}:\n{text}");
            let doubled = (socket.parse::<u64>().unwrap() * 2).to_string();
            assert!(
                rows.iter()
                    .all(|row| row.split_whitespace().nth(1) == Some(doubled.as_str())),
                "the receive socket is the size granted: {rows:?}"
            );
            assert!(rows[1].contains('%'), "{rows:?}");
        }
    }
    // UDP_STREAM: a send and a receive line per side.
    for send in ["65507", "1432"] {
        let title = format!("UDP_STREAM -l 0.05 -m {send} (testbed loopback)");
        let table = table_after(&text, &title);
        let rows: Vec<&str> = table
            .iter()
            .copied()
            .skip_while(|line| !line.starts_with("current"))
            .collect();
        assert_eq!(rows.len(), 4, "{title}:\n{text}");
        assert!(rows[2].starts_with("patched") && rows[3].starts_with("    "));
    }
    // The request/response sweep: one table, a row per size.
    let table = table_after(&text, "TCP_RR -l 0.05 over -r sizes (testbed loopback)");
    let rows: Vec<&str> = table
        .iter()
        .copied()
        .filter(|line| {
            line.split_whitespace()
                .next()
                .is_some_and(|word| word.parse::<u32>().is_ok())
        })
        .collect();
    let sizes: Vec<&str> = rows
        .iter()
        .map(|row| row.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(sizes, rr_sizes, "{text}");

    // The matrix: the stream grid in one table, ordered by -S then -m.
    let text =
        stdout_of(netbisect(&db).args(["compare", "current", "patched", "--layout", "matrix"]));
    check_rules(&text, 80);
    let table = table_after(&text, "TCP_STREAM -l 0.05 (testbed loopback)");
    let grid: Vec<(u32, u32)> = table
        .iter()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
        })
        .collect();
    let mut expected: Vec<(u32, u32)> = Vec::new();
    for socket in [2280, 18000, 28000, 87380] {
        for send in [1432, 16384] {
            expected.push((socket, send));
        }
    }
    assert_eq!(grid, expected, "{text}");
}

#[test]
fn bad_units_and_layouts_name_the_valid_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let stderr = stderr_of_failure(netbisect(&db).args(["compare", "a", "b", "-f", "x"]), 2);
    assert!(
        stderr.contains("[possible values: k, m, g, K, M, G]"),
        "{stderr}"
    );
    let stderr = stderr_of_failure(
        netbisect(&db).args(["compare", "a", "b", "--layout", "wide"]),
        2,
    );
    assert!(
        stderr.contains("[possible values: netperf, matrix, stats]"),
        "{stderr}"
    );
    let stderr = stderr_of_failure(
        netbisect(&db).args(["compare", "a", "b", "--email", "--layout", "stats"]),
        2,
    );
    assert!(stderr.contains("--layout netperf or matrix"), "{stderr}");
    let stderr = stderr_of_failure(netbisect(&db).args(["compare", "a,b", "c"]), 2);
    assert!(stderr.contains("A names 2 sides and B 1"), "{stderr}");
}

#[test]
fn sides_with_nothing_in_common_say_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    bench(&db, "current", &["-t", "TCP_STREAM", "-S", "87380"]);
    bench(&db, "patched", &["-t", "TCP_STREAM", "-S", "2280"]);
    let text = stdout_of(netbisect(&db).args(["compare", "current", "patched"]));
    check_rules(&text, 80);
    assert!(
        text.contains("No test configuration was run on both sides."),
        "{text}"
    );
    assert!(text.contains("only in current: -S 87380"), "{text}");
    assert!(text.contains("only in patched: -S 2280"), "{text}");
    assert!(
        text.contains("Only in current:\n  TCP_STREAM -l 0.05 -S 87380"),
        "{text}"
    );
    // The default send size is no option of either side.
    assert!(!text.contains("-m 16384"), "{text}");
}

/// Brings `lo` up in the calling thread's network namespace, and sets its
/// generic segmentation offload when `gso` is given (ETHTOOL_SGSO), as
/// `ip link set lo up` and `ethtool -K lo gso off` do.
fn set_loopback(gso: Option<bool>) -> std::io::Result<()> {
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    const ETHTOOL_SGSO: u32 = 0x24;
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    // SAFETY: a plain datagram socket, closed below.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if socket < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: ifreq is plain data; zero is a valid value of every member.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    let mut result = 0;
    if gso.is_none() {
        request.ifr_ifru.ifru_flags = libc::IFF_UP as libc::c_short;
        // SAFETY: SIOCSIFFLAGS reads the name and flags of `request`.
        result = unsafe { libc::ioctl(socket, libc::SIOCSIFFLAGS, &request) };
    }
    let mut value = EthtoolValue {
        cmd: ETHTOOL_SGSO,
        data: u32::from(gso.unwrap_or(true)),
    };
    if gso.is_some() {
        request.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
        // SAFETY: SIOCETHTOOL reads `value` through `request` while both
        // live.
        result = unsafe { libc::ioctl(socket, SIOCETHTOOL, &request) };
    }
    let error = std::io::Error::last_os_error();
    // SAFETY: closing the socket opened above.
    unsafe { libc::close(socket) };
    if result < 0 { Err(error) } else { Ok(()) }
}

#[test]
fn offload_on_and_off_pair_by_label_into_one_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let runner = {
        let db = db.clone();
        std::thread::spawn(move || -> Result<(), String> {
            // The namespace is this thread's alone, and every process it
            // starts inherits it; it goes away with them.
            // SAFETY: unshare affects the calling thread only.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(format!(
                    "cannot create a network namespace: {}",
                    std::io::Error::last_os_error()
                ));
            }
            set_loopback(None).map_err(|err| format!("cannot bring lo up: {err}"))?;
            for (gso, setting) in [(true, "gso-on"), (false, "gso-off")] {
                set_loopback(Some(gso)).map_err(|err| format!("cannot set gso on lo: {err}"))?;
                for side in ["org", "new"] {
                    bench(
                        &db,
                        &format!("{side}-{setting}"),
                        &["-t", "TCP_STREAM", "-m", "65536"],
                    );
                }
            }
            Ok(())
        })
    };
    if let Err(reason) = runner.join().unwrap() {
        test_fixtures::skip::skip(format!("the offload matrix: {reason} (needs root)"));
        return;
    }
    let text = stdout_of(netbisect(&db).args([
        "compare",
        "org-gso-on,org-gso-off",
        "new-gso-on,new-gso-off",
        "--layout",
        "matrix",
    ]));
    check_rules(&text, 80);
    let table = table_after(&text, "TCP_STREAM -l 0.05 -m 65536 (testbed loopback)");
    let settings: Vec<&str> = table
        .iter()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|word| ["on", "off"].contains(word))
        .collect();
    // The sides are named by what their labels share, the rows by the
    // rest: the setting.
    assert_eq!(settings, ["off", "on"], "{text}");
    assert!(
        text.starts_with(
            "org-gso: org-gso-on, org-gso-off
"
        ),
        "{text}"
    );
    assert!(table[2].starts_with("setting"), "{text}");
    // The records say which runs had the offload off.
    let list = stdout_of(netbisect(&db).args(["--json", "archive", "export"]));
    let mut seen = BTreeSet::new();
    for line in list.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let label = record["subject"]["label"].as_str().unwrap().to_string();
        let gso =
            record["env"]["local"]["interface"]["features"]["tx-generic-segmentation"].as_bool();
        seen.insert((label, gso));
    }
    assert!(
        seen.contains(&("org-gso-off".to_string(), Some(false))),
        "{seen:?}"
    );
    assert!(
        seen.contains(&("new-gso-on".to_string(), Some(true))),
        "{seen:?}"
    );
}

#[test]
fn service_demand_is_one_figure_in_bench_sweep_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let text = stdout_of(netbisect(&db).args([
        "bench", "-t", "TCP_RR", "-l", "0.05", "-i", "3,3", "-c", "-C", "--sweep", "r=1,64",
        "--label", "sd",
    ]));
    // Sweep rows: request, response, rate, throughput, CPU local and
    // remote, service demand local and remote.
    let from_sweep: Vec<f64> = text
        .lines()
        .filter(|line| {
            line.split_whitespace()
                .next()
                .is_some_and(|word| word.parse::<u32>().is_ok())
        })
        .map(|line| line.split_whitespace().nth(6).unwrap().parse().unwrap())
        .collect();
    assert_eq!(from_sweep.len(), 2, "{text}");
    let exported = stdout_of(netbisect(&db).args(["archive", "export"]));
    let mut from_records: Vec<(u64, f64)> = exported
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                record["spec"]["request_size_bytes"].as_u64().unwrap(),
                record["summary"]["cpu"]["local_service_demand"]
                    .as_f64()
                    .unwrap(),
            )
        })
        .collect();
    from_records.sort_by_key(|(size, _)| *size);
    let comparison: serde_json::Value = serde_json::from_str(&stdout_of(
        netbisect(&db).args(["--json", "compare", "label:sd", "label:sd"]),
    ))
    .unwrap();
    let from_compare: Vec<f64> = comparison["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| {
            group["first_figures"]["local_service_demand"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(from_compare.len(), 2);
    for idx in 0..2 {
        let record = from_records[idx].1;
        assert!(
            (from_sweep[idx] - record).abs() < 0.0005 + record * 1e-6,
            "sweep {from_sweep:?}, records {from_records:?}"
        );
        assert!(
            (from_compare[idx] - record).abs() <= record * 1e-12,
            "compare {from_compare:?}, records {from_records:?}"
        );
    }
}

#[test]
fn f_takes_netperf_units_everywhere_and_names_them_when_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let db = archive_of_committed_runs(dir.path());
    // bench: bytes per second in 2^30, the header says so.
    let text = stdout_of(netbisect(&db).args([
        "bench",
        "-t",
        "TCP_STREAM",
        "-l",
        "0.05",
        "-f",
        "G",
        "--no-archive",
    ]));
    assert!(text.contains("GBytes/sec"), "{text}");
    let text = stdout_of(netbisect(&db).args([
        "bench",
        "-t",
        "TCP_RR",
        "-l",
        "0.05",
        "--sweep",
        "r=1,64",
        "-f",
        "k",
        "--no-archive",
    ]));
    assert!(text.contains("10^3bits/s"), "{text}");
    // history and compare over the committed runs: the same figure in
    // 10^6 and 10^9 bits/s.
    let own = dir.path().join("history.db");
    for _ in 0..2 {
        bench(&own, "h", &["-t", "TCP_STREAM"]);
    }
    let history = |unit: &str| {
        stdout_of(netbisect(&own).args(["history", "--metric", "throughput_bps", "-f", unit]))
    };
    let (mega, giga) = (history("m"), history("g"));
    assert!(
        mega.contains("10^6bits/s") && giga.contains("10^9bits/s"),
        "{giga}"
    );
    let compare =
        |unit: &str| stdout_of(netbisect(&db).args(["compare", "current", "patched", "-f", unit]));
    let (mega, giga) = (compare("m"), compare("g"));
    assert!(mega.contains("15545.81"), "{mega}");
    assert!(
        giga.contains("15.55") && giga.contains("10^9bits/s"),
        "{giga}"
    );
    for args in [
        &["bench", "-t", "TCP_RR", "-f", "x"][..],
        &["history", "--metric", "throughput_bps", "-f", "T"][..],
    ] {
        let stderr = stderr_of_failure(netbisect(&db).args(args), 2);
        assert!(
            stderr.contains("[possible values: k, m, g, K, M, G]"),
            "{stderr}"
        );
    }
}

/// `archive show` prints what `bench -v` printed: netperf's table, its
/// socket sizes right after setup, and the sizes the test ended with
/// where the kernel had changed one (`bench` alone leaves that line out);
/// then who stored the run.
#[test]
fn archive_show_prints_the_table_bench_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    for args in [
        &["-t", "TCP_STREAM", "-c", "-C"][..],
        &["-t", "UDP_STREAM", "-m", "1432"][..],
        &["-t", "TCP_RR", "-f", "k"][..],
    ] {
        let printed = stdout_of(
            netbisect(&db)
                .args(["-v", "bench", "-l", "0.05"])
                .args(args),
        );
        let id = printed
            .lines()
            .last()
            .and_then(|line| line.rsplit_once("run "))
            .map(|(_, id)| id.to_string())
            .unwrap();
        let mut show = netbisect(&db);
        show.args(["archive", "show", &id]);
        if args.contains(&"-f") {
            show.args(["-f", "k"]);
        }
        let stored_by = format!("stored by {}\n", crate::stored_by_this_user());
        assert_eq!(stdout_of(&mut show), printed + &stored_by);
        let record = stdout_of(netbisect(&db).args(["--json", "archive", "show", &id]));
        assert!(record.starts_with('{') && record.contains(&id), "{record}");
    }
}

#[test]
fn a_sweep_flags_the_sizes_that_missed_their_interval() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let text = stdout_of(netbisect(&db).args([
        "bench",
        "-t",
        "TCP_STREAM",
        "-l",
        "0.05",
        "-I",
        "99,1",
        "-i",
        "3,3",
        "--sweep",
        "m=1432,16384",
    ]));
    check_rules(&text, 80);
    let exported = stdout_of(netbisect(&db).args(["archive", "export"]));
    let mut n_missed = 0;
    for line in exported.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let size = record["spec"]["send_size_bytes"].as_u64().unwrap();
        let met = record["summary"]["confidence"]["met"].as_bool().unwrap();
        let row = text
            .lines()
            .find(|line| line.split_whitespace().next() == Some(size.to_string().as_str()))
            .unwrap();
        assert_eq!(row.ends_with(" !!!"), !met, "{text}");
        let note = format!("Desired confidence was not achieved at size {size}:");
        assert_eq!(text.contains(&note), !met, "{text}");
        n_missed += usize::from(!met);
    }
    eprintln!("sweep: {n_missed} of 2 sizes missed +/-0.5% @ 99%");
}

/// Real loopback runs of UDP_STREAM at three sizes a side, with and
/// without `-c -C` (`bench -l 0.05 -i 4,4`), labelled current and patched.
fn committed_udp_sweep() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/compare-udp-sweep.jsonl")
}

/// The rows of a UDP_STREAM sweep table: the size of each send line, and
/// the words of its send and receive lines.
fn udp_sweep_rows<'t>(table: &[&'t str]) -> Vec<(u32, Vec<&'t str>, Vec<&'t str>)> {
    let mut rows = Vec::new();
    let mut lines = table.iter();
    while let Some(line) = lines.next() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.get(1) == Some(&"send") {
            let size = words[0].parse().unwrap();
            let recv: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
            assert_eq!(recv[0], "recv", "{table:?}");
            rows.push((size, words[2..].to_vec(), recv[1..].to_vec()));
        }
    }
    rows
}

#[test]
fn a_udp_sweep_is_one_table_with_a_send_and_receive_line_per_size() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    stdout_of(
        netbisect(&db)
            .args(["archive", "import"])
            .arg(committed_udp_sweep()),
    );
    for (name, extra, width) in [("netperf", &[][..], 80), ("email", &["--email"][..], 72)] {
        let text = stdout_of(
            netbisect(&db)
                .args(["compare", "current", "patched"])
                .args(extra),
        );
        check_rules(&text, width);
        insta::assert_snapshot!(format!("compare_udp_sweep_{name}"), text);
        // Two sweeps (with and without CPU), no table per size.
        let titles: Vec<&str> = text
            .lines()
            .filter(|line| line.starts_with("UDP_STREAM"))
            .collect();
        assert_eq!(
            titles,
            [
                "UDP_STREAM -l 0.05 -c -C -i 4,4 over -m sizes (testbed loopback)",
                "UDP_STREAM -l 0.05 -i 4,4 over -m sizes (testbed loopback)"
            ],
            "{text}"
        );
        // Per side, words on the send and on the receive line (datagrams,
        // errors and throughput on both sweeps; the CPU figures of the
        // first on a line of their own).
        for (title, (n_send, n_recv)) in titles.iter().zip([(3, 2), (3, 2)]) {
            let table = table_after(&text, title);
            let rows = udp_sweep_rows(&table);
            let sizes: Vec<u32> = rows.iter().map(|(size, _, _)| *size).collect();
            assert_eq!(sizes, [1024, 1472, 8192], "{text}");
            for (_, send, recv) in &rows {
                // Okay, errors, throughput of each side on the send line;
                // the receive line ends with change and mark.
                assert_eq!(send.len(), 2 * n_send, "{send:?}");
                assert_eq!(recv.len(), 2 * n_recv + 2, "{recv:?}");
                assert!(recv[2 * n_recv].ends_with('%'), "{recv:?}");
                assert!(["+", "!", "~", "?"].contains(&recv[2 * n_recv + 1]));
            }
        }
    }
}

/// netperf's UDP_STREAM output at `size` bytes a message, 10 seconds,
/// `sent` datagrams of which `errors` failed and `received` arrived; with
/// `cpu`, its `-c -C` columns.
fn netperf_udp(size: u32, sent: u64, errors: u64, received: u64, cpu: bool) -> String {
    let mbits = |count: u64| count as f64 * f64::from(size) * 8.0 / 10.0 / 1e6;
    let banner = "MIGRATED UDP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET \
                  to 127.0.0.1 () port 0 AF_INET : demo";
    if cpu {
        format!(
            "{banner}
Socket  Message  Elapsed      Messages                   CPU      Service
Size    Size     Time         Okay Errors   Throughput   Util     Demand
bytes   bytes    secs            #      #   10^6bits/sec % SS     us/KB

212992  {size:6}   10.00  {sent:10} {errors:6} {:10.1}     72.21    6.129
212992           10.00  {received:10}        {:10.1}     72.21    6.129

",
            mbits(sent),
            mbits(received)
        )
    } else {
        format!(
            "{banner}
Socket  Message  Elapsed      Messages
Size    Size     Time         Okay Errors   Throughput
bytes   bytes    secs            #      #   10^6bits/sec

212992  {size:6}   10.00  {sent:10} {errors:6} {:10.1}
212992           10.00  {received:10}        {:10.1}

",
            mbits(sent),
            mbits(received)
        )
    }
}

#[test]
fn a_udp_sweep_shows_the_failed_sends_of_each_side() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let sizes = [1024u32, 1472, 8192];
    for cpu in [false, true] {
        for (label, errors) in [("current", 0), ("patched", 37)] {
            let text: String = sizes
                .iter()
                .map(|size| netperf_udp(*size, 1_000_000, errors, 900_000, cpu))
                .collect();
            let mut import = netbisect(&db);
            import
                .args(["archive", "import", "-", "--label", label])
                .write_stdin(text);
            stdout_of(&mut import);
        }
    }
    let text = stdout_of(netbisect(&db).args(["compare", "current", "patched"]));
    check_rules(&text, 80);
    insta::assert_snapshot!("compare_udp_sweep_failed_sends", text);
    // Without CPU: an Errors column per side, the counts netperf printed.
    let title = "UDP_STREAM -l 10 granted send 212992 recv 212992 over -m sizes";
    let rows = udp_sweep_rows(&table_after(&text, title));
    assert_eq!(rows.len(), 3, "{text}");
    for (size, send, recv) in rows {
        let sent = format!("{:.2}", 1e6 * f64::from(size) * 8.0 / 10.0 / 1e6);
        assert_eq!(send, ["1000000", "0", &sent, "1000000", "37", &sent]);
        assert_eq!(recv[0], "900000", "{text}");
    }
    // With CPU the same columns, and under each size a line of each
    // side's CPU utilisation and service demand, local and remote.
    let title = "UDP_STREAM -l 10 -c -C granted send 212992 recv 212992 over -m sizes";
    let table = table_after(&text, title);
    let rows = udp_sweep_rows(&table);
    assert_eq!(rows.len(), 3, "{text}");
    for (size, send, _) in rows {
        let sent = format!("{:.2}", 1e6 * f64::from(size) * 8.0 / 10.0 / 1e6);
        assert_eq!(send, ["1000000", "0", &sent, "1000000", "37", &sent]);
        let at = table
            .iter()
            .position(|line| line.trim_start().starts_with(&format!("{size} send")))
            .unwrap();
        let cpu: Vec<&str> = table[at + 2].split_whitespace().collect();
        assert_eq!(cpu.len(), 8, "{text}");
        assert!(cpu.iter().all(|cell| cell.parse::<f64>().is_ok()), "{text}");
    }
    assert!(
        table
            .iter()
            .any(|line| line.contains("CPU %  CPU %   S.dem")),
        "{text}"
    );
}

#[test]
fn udp_datagrams_are_per_iteration_as_bench_prints_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let printed = stdout_of(netbisect(&db).args([
        "bench",
        "-t",
        "UDP_STREAM",
        "-l",
        "0.05",
        "-i",
        "3,3",
        "-m",
        "1472",
        "--label",
        "u",
    ]));
    // The run table's send and receive lines: okay and errors per
    // iteration.
    let lines: Vec<Vec<&str>> = printed
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|words| words.first() == Some(&"212992") || words.first() == Some(&"425984"))
        .collect();
    assert!(lines.len() >= 2, "{printed}");
    let (sent, errors, received) = (lines[0][3], lines[0][4], lines[1][2]);
    let text = stdout_of(netbisect(&db).args(["compare", "label:u", "label:u"]));
    let rows: Vec<Vec<&str>> = table_after(&text, "UDP_STREAM -l 0.05 -i 3,3 (testbed loopback)")
        .iter()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .collect();
    let side = rows
        .iter()
        .position(|words| words.first() == Some(&"u"))
        .unwrap();
    assert_eq!(
        (rows[side][4], rows[side][5]),
        (sent, errors),
        "{printed}\n{text}"
    );
    assert_eq!(rows[side + 1][2], received, "{printed}\n{text}");
}

#[test]
fn a_sweep_names_the_side_and_size_that_missed_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let sizes = ["1", "64", "512"];
    for label in ["current", "patched"] {
        for size in sizes {
            let sizes = format!("{size},{size}");
            bench(
                &db,
                label,
                &["-t", "TCP_RR", "-I", "99,1", "-i", "2,2", "-r", &sizes],
            );
        }
    }
    let text = stdout_of(netbisect(&db).args(["compare", "current", "patched"]));
    check_rules(&text, 80);
    // Which side missed at which size, as the records say.
    let exported = stdout_of(netbisect(&db).args(["archive", "export"]));
    let mut missed: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for size in sizes {
        for line in exported.lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let side = usize::from(record["subject"]["label"] == "patched");
            let this_size = record["spec"]["request_size_bytes"]
                .as_u64()
                .unwrap()
                .to_string();
            if this_size == size && record["summary"]["confidence"]["met"] == false {
                missed[side].push(format!("-r {size},{size}"));
            }
        }
    }
    let mut sides = Vec::new();
    for (name, sizes) in ["current", "patched"].iter().zip(&missed) {
        if !sizes.is_empty() {
            sides.push(format!("{name} at {}", sizes.join(", ")));
        }
    }
    let flowing = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if sides.is_empty() {
        assert!(!flowing.contains("interval missed by"), "{text}");
    } else {
        let note = format!("!!! -I interval missed by {}.", sides.join("; "));
        assert!(flowing.contains(&note), "{note}\n{text}");
    }
    eprintln!("sweep: missed {missed:?}");
}
