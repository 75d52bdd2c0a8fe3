//! netperf's table of one run: the heads netperf prints (unless `-P 0`)
//! and the figures under them. Where a socket size or a message size is
//! wider than netperf's 6 columns, the same columns are laid out
//! right-aligned, each as wide as its widest cell, so no figure leaves
//! its column; otherwise the lines are netperf's own.

use crate::render::filters::{figure_text, fixed_text};
use crate::render::table::{TableRow, lay_out};
use crate::views::units::Units;
use run_record::record::{Iteration, RunRecord};
use run_record::spec::TestKind;

/// The figures every layout of a run's table needs, as printed.
struct Figures {
    /// The heads are printed.
    heads: bool,
    /// The run measured CPU (`-c` or `-C`).
    with_cpu: bool,
    /// Socket buffers right after setup, as netperf prints them: local
    /// send, local receive, remote send, remote receive (`-` where an
    /// imported run's text gave none).
    sockets: [String; 4],
    /// Seconds an iteration took, on average.
    elapsed: String,
    /// Utilisation local and remote, service demand local and remote.
    cpu: [String; 4],
    /// The unit of throughput.
    units: Units,
}

/// The widest line a run's table may have.
const WIDTH: usize = 80;

/// The table of `record`, throughput in `units`, with netperf's heads
/// unless `heads` is false. Where the CPU columns would take a line past
/// the width, they move to a table of their own under the figures.
pub(super) fn table(record: &RunRecord, units: Units, heads: bool) -> Vec<String> {
    let figures = Figures::of(record, units, heads);
    let lines = of_test(record, &figures);
    if !figures.with_cpu || lines.iter().all(|line| line.len() <= WIDTH) {
        return lines;
    }
    let without_cpu = Figures {
        with_cpu: false,
        ..figures
    };
    let mut lines = of_test(record, &without_cpu);
    lines.push(String::new());
    lines.extend(cpu_table(record, &without_cpu));
    lines
}

/// netperf's table for the test of `record`.
fn of_test(record: &RunRecord, figures: &Figures) -> Vec<String> {
    match record.spec.test {
        TestKind::TcpStream | TestKind::TcpMaerts => stream(record, figures),
        TestKind::UdpStream => datagrams(record, figures),
        _ => request_response(record, figures),
    }
}

/// The CPU figures of a run as a table of their own, with heads as
/// netperf's CPU columns have them (unless `-P 0`).
fn cpu_table(record: &RunRecord, figures: &Figures) -> Vec<String> {
    let unit = if record.spec.test.is_request_response() {
        "us/Tr"
    } else {
        "us/KB"
    };
    let mut rows = figures.head_rows(
        [
            ["CPU", "CPU", "S.dem", "S.dem"],
            ["local", "remote", "local", "remote"],
            ["% S", "% S", unit, unit],
        ]
        .map(|heads| heads.map(String::from).to_vec()),
    );
    rows.push(TableRow::of(figures.cpu.clone()));
    laid_out(&rows, vec![6, 6, 7, 7])
}

impl Figures {
    fn of(record: &RunRecord, units: Units, heads: bool) -> Figures {
        let spec = &record.spec;
        let n_iterations = record.iterations.len().max(1) as f64;
        let elapsed_s: f64 = record.iterations.iter().map(|it| it.elapsed_s).sum();
        let cpu = record.summary.cpu.as_ref();
        let figure = |value: Option<f64>, decimals| {
            value.map_or_else(|| "-".to_string(), |value| figure_text(value, decimals))
        };
        Figures {
            heads,
            with_cpu: spec.local_cpu || spec.remote_cpu,
            sockets: sockets(record),
            elapsed: fixed_text(elapsed_s / n_iterations, 2),
            cpu: [
                figure(cpu.and_then(|cpu| cpu.local_util_pct), 2),
                figure(cpu.and_then(|cpu| cpu.remote_util_pct), 2),
                figure(cpu.and_then(|cpu| cpu.local_service_demand), 3),
                figure(cpu.and_then(|cpu| cpu.remote_service_demand), 3),
            ],
            units,
        }
    }

    /// The heads' rows of a table laid out by [`lay_out`], and the blank
    /// line under them; none with `-P 0`.
    fn head_rows<const N: usize>(&self, rows: [Vec<String>; N]) -> Vec<TableRow> {
        if !self.heads {
            return Vec::new();
        }
        rows.into_iter()
            .map(TableRow::of)
            .chain([TableRow::blank()])
            .collect()
    }

    /// netperf's literal heads and the blank line under them; none with
    /// `-P 0`.
    fn head_lines(&self, lines: &[String]) -> Vec<String> {
        if !self.heads {
            return Vec::new();
        }
        lines.iter().cloned().chain([String::new()]).collect()
    }

    /// The heads `cells` and, where the run measured CPU, `cpu_cells`.
    fn heads_with_cpu(&self, cells: &[&str], cpu_cells: &[&str]) -> Vec<String> {
        let cpu_cells = if self.with_cpu { cpu_cells } else { &[] };
        cells
            .iter()
            .chain(cpu_cells)
            .map(|cell| cell.to_string())
            .collect()
    }

    /// The four CPU figures, where the run measured CPU.
    fn cpu_cells(&self) -> Vec<String> {
        if self.with_cpu {
            self.cpu.to_vec()
        } else {
            Vec::new()
        }
    }
}

/// The socket buffers as netperf prints them, read back right after
/// setup (the last iteration's: an autotuned buffer grows as the test
/// runs, and its size at the end is no size the test began with), or for
/// an imported run those its text reported as granted.
fn sockets(record: &RunRecord) -> [String; 4] {
    if let Some(ends) = record.iterations.last().and_then(|last| last.ends.as_ref()) {
        return [
            ends.local.socket.send_buffer.after_setup_bytes,
            ends.local.socket.recv_buffer.after_setup_bytes,
            ends.remote.socket.send_buffer.after_setup_bytes,
            ends.remote.socket.recv_buffer.after_setup_bytes,
        ]
        .map(|bytes| bytes.to_string());
    }
    let granted = record
        .spec
        .reported_socket_buffers
        .clone()
        .unwrap_or_default();
    [
        granted.local_send_bytes,
        granted.local_recv_bytes,
        granted.remote_send_bytes,
        granted.remote_recv_bytes,
    ]
    .map(|bytes| bytes.map_or_else(|| "-".to_string(), |bytes| bytes.to_string()))
}

/// True when a cell is wider than netperf's six columns.
fn too_wide(cells: &[&str]) -> bool {
    cells.iter().any(|cell| cell.len() > 6)
}

/// `cells` laid out right-aligned with `widths`, within 80 columns.
fn laid_out(rows: &[TableRow], widths: Vec<i64>) -> Vec<String> {
    lay_out(rows, &[widths], 80).expect("a run's table has one set of widths")
}

/// `text` right-aligned in `width` columns (never cut).
fn right(text: &str, width: usize) -> String {
    format!("{text:>width$}")
}

/// `text` left-aligned in `width` columns (never cut).
fn left(text: &str, width: usize) -> String {
    format!("{text:<width$}")
}

/// TCP_STREAM and TCP_MAERTS: the receiving socket, the sending socket,
/// the message size, the time and the throughput, and the CPU figures.
fn stream(record: &RunRecord, figures: &Figures) -> Vec<String> {
    let spec = &record.spec;
    let [local_send, local_recv, remote_send, remote_recv] = &figures.sockets;
    let (recv_socket, send_socket, who) = if spec.test == TestKind::TcpStream {
        (remote_recv, local_send, ["Send", "Recv"])
    } else {
        (local_recv, remote_send, ["Recv", "Send"])
    };
    let send_size = spec.send_size_bytes.to_string();
    let throughput = figures
        .units
        .figure(Some(record.summary.throughput_bps.mean));
    let unit = figures.units.name;
    let cpu = figures.with_cpu;
    if too_wide(&[recv_socket, send_socket, &send_size]) {
        let last_head = if cpu {
            unit.to_string()
        } else {
            format!("{unit}ec")
        };
        let mut rows = figures.head_rows([
            figures.heads_with_cpu(
                &["Recv", "Send", "Send", "", ""],
                &["Util", "Util", "S.dem", "S.dem"],
            ),
            figures.heads_with_cpu(
                &["Socket", "Socket", "Message", "Elapsed", ""],
                &["local", "remote", "local", "remote"],
            ),
            figures.heads_with_cpu(
                &["Size", "Size", "Size", "Time", "Throughput"],
                &[who[0], who[1], who[0], who[1]],
            ),
            figures.heads_with_cpu(
                &["bytes", "bytes", "bytes", "secs.", &last_head],
                &["% S", "% S", "us/KB", "us/KB"],
            ),
        ]);
        rows.push(TableRow::of(
            [
                recv_socket.clone(),
                send_socket.clone(),
                send_size,
                figures.elapsed.clone(),
                throughput,
            ]
            .into_iter()
            .chain(figures.cpu_cells()),
        ));
        let widths = [6, 6, 7, 7, 10]
            .into_iter()
            .chain(if cpu { vec![6; 4] } else { vec![] });
        return laid_out(&rows, widths.collect());
    }
    let [local_util, remote_util, local_demand, remote_demand] = &figures.cpu;
    let sizes = format!(
        "{} {} {}    {}",
        right(recv_socket, 6),
        right(send_socket, 6),
        right(&send_size, 6),
        left(&figures.elapsed, 6)
    );
    if cpu {
        let sides = if spec.test == TestKind::TcpStream {
            "Send     Recv     Send    Recv"
        } else {
            "Recv     Send     Recv    Send"
        };
        let mut lines = figures.head_lines(&[
            "Recv   Send    Send                          Utilization       Service Demand".into(),
            format!("Socket Socket  Message  Elapsed              {sides}"),
            "Size   Size    Size     Time     Throughput  local    remote   local   remote".into(),
            format!(
                "bytes  bytes   bytes    secs.    {}  % S      % S      us/KB   us/KB",
                left(unit, 10)
            ),
        ]);
        lines.push(format!(
            "{sizes}  {}   {}   {}   {}  {remote_demand}",
            right(&throughput, 9),
            left(local_util, 6),
            left(remote_util, 6),
            left(local_demand, 6)
        ));
        return lines;
    }
    let mut lines = figures.head_lines(&[
        "Recv   Send    Send".into(),
        "Socket Socket  Message  Elapsed".into(),
        "Size   Size    Size     Time     Throughput".into(),
        format!("bytes  bytes   bytes    secs.    {unit}ec"),
    ]);
    lines.push(format!("{sizes}   {}", right(&throughput, 8)));
    lines
}

/// What UDP_STREAM sent and received per iteration: messages sent and
/// received, sends failed (`-` unless every iteration counted them),
/// and the throughput sent.
struct Datagrams {
    sent: String,
    received: String,
    failed: String,
    sent_bps: f64,
}

impl Datagrams {
    /// The per-iteration means of `record`'s iterations: every figure of
    /// the table is one, like the time and the throughput beside it.
    fn of(record: &RunRecord) -> Datagrams {
        let iterations = &record.iterations;
        let n = iterations.len().max(1) as f64;
        let send_size = u64::from(record.spec.send_size_bytes);
        let sent_bps_of =
            |iteration: &Iteration| match (&iteration.ends, iteration.reported_sent_throughput_bps)
            {
                (Some(ends), _) => (ends.local.bytes_sent * 8) as f64 / ends.local.elapsed_s,
                (None, Some(reported)) => reported,
                (None, None) => {
                    (iteration.messages_sent.unwrap_or(0) * send_size * 8) as f64
                        / iteration.elapsed_s
                }
            };
        let sum = |count: fn(&Iteration) -> Option<u64>| -> u64 {
            iterations.iter().filter_map(count).sum()
        };
        let counted = iterations
            .iter()
            .filter(|it| it.send_errors.is_some())
            .count();
        Datagrams {
            sent: fixed_text(sum(|it| it.messages_sent) as f64 / n, 0),
            received: fixed_text(sum(|it| it.messages_received) as f64 / n, 0),
            failed: if counted == iterations.len() {
                fixed_text(sum(|it| it.send_errors) as f64 / n, 0)
            } else {
                "-".to_string()
            },
            sent_bps: iterations.iter().map(sent_bps_of).sum::<f64>() / n,
        }
    }
}

/// UDP_STREAM: a line of what was sent (the local socket, the message
/// size) and one of what was received (the remote socket), each with the
/// CPU figures of its end.
fn datagrams(record: &RunRecord, figures: &Figures) -> Vec<String> {
    let [local_send, _, _, remote_recv] = &figures.sockets;
    let send_size = record.spec.send_size_bytes.to_string();
    let counts = Datagrams::of(record);
    let units = figures.units;
    let too_wide = too_wide(&[local_send, remote_recv, &send_size]);
    let elapsed = &figures.elapsed;
    let sent = [
        local_send.clone(),
        send_size,
        elapsed.clone(),
        counts.sent,
        counts.failed,
        units.figure(Some(counts.sent_bps)),
    ];
    let received = [
        remote_recv.clone(),
        String::new(),
        elapsed.clone(),
        counts.received,
        String::new(),
        units.figure(Some(record.summary.throughput_bps.mean)),
    ];
    let [local_util, remote_util, local_demand, remote_demand] = figures.cpu.clone();
    let cpu = [[local_util, local_demand], [remote_util, remote_demand]];
    if too_wide {
        datagrams_wide(figures, [sent, received], cpu)
    } else {
        datagrams_classic(figures, [sent, received], cpu)
    }
}

/// UDP_STREAM's lines (`cells` sent and received, each with the `cpu`
/// utilisation and service demand of its end) in columns widened to
/// their cells.
fn datagrams_wide(
    figures: &Figures,
    cells: [[String; 6]; 2],
    cpu: [[String; 2]; 2],
) -> Vec<String> {
    let last_head = format!("{}ec", figures.units.name);
    let mut rows = figures.head_rows([
        figures.heads_with_cpu(
            &["Socket", "Message", "Elapsed", "Messages", "", ""],
            &["CPU", "Service"],
        ),
        figures.heads_with_cpu(
            &["Size", "Size", "Time", "Okay", "Errors", "Throughput"],
            &["Util", "Demand"],
        ),
        figures.heads_with_cpu(
            &["bytes", "bytes", "secs", "#", "#", &last_head],
            &["% S", "us/KB"],
        ),
    ]);
    for (cells, cpu) in cells.into_iter().zip(cpu) {
        let cpu = if figures.with_cpu {
            cpu.to_vec()
        } else {
            Vec::new()
        };
        rows.push(TableRow::of(cells.into_iter().chain(cpu)));
    }
    let cpu_widths = if figures.with_cpu { vec![6, 7] } else { vec![] };
    laid_out(
        &rows,
        [6, 7, 7, 10, 6, 12].into_iter().chain(cpu_widths).collect(),
    )
}

/// UDP_STREAM's lines (`cells` sent and received, each with the `cpu`
/// figures of its end) in netperf's own columns.
fn datagrams_classic(
    figures: &Figures,
    cells: [[String; 6]; 2],
    cpu: [[String; 2]; 2],
) -> Vec<String> {
    let unit = figures.units.name;
    let [sent, received] = &cells;
    let sent = format!(
        "{}  {}    {} {} {} {}",
        right(&sent[0], 6),
        right(&sent[1], 6),
        left(&sent[2], 6),
        right(&sent[3], 10),
        right(&sent[4], 6),
        right(&sent[5], 10)
    );
    let received = format!(
        "{}            {} {}        {}",
        right(&received[0], 6),
        left(&received[2], 6),
        right(&received[3], 10),
        right(&received[5], 10)
    );
    if figures.with_cpu {
        let mut lines = figures.head_lines(&[
            "Socket  Message  Elapsed      Messages                   CPU      Service".into(),
            "Size    Size     Time         Okay Errors   Throughput   Util     Demand".into(),
            format!(
                "bytes   bytes    secs            #      #   {} % S      us/KB",
                left(&format!("{unit}ec"), 12)
            ),
        ]);
        for (line, [util, demand]) in [sent, received].into_iter().zip(cpu) {
            lines.push(format!("{line}   {}   {demand}", left(&util, 6)));
        }
        return lines;
    }
    let mut lines = figures.head_lines(&[
        "Socket  Message  Elapsed      Messages".into(),
        "Size    Size     Time         Okay Errors   Throughput".into(),
        format!("bytes   bytes    secs            #      #   {unit}ec"),
    ]);
    lines.push(sent);
    lines.push(received);
    lines
}

/// Request/response tests: the sockets of both ends, the sizes, the
/// time and the rate, and the CPU figures.
fn request_response(record: &RunRecord, figures: &Figures) -> Vec<String> {
    let spec = &record.spec;
    let [local_send, local_recv, remote_send, remote_recv] = &figures.sockets;
    let request = spec.request_size_bytes.to_string();
    let response = spec.response_size_bytes.to_string();
    let rate = record
        .summary
        .transaction_rate
        .as_ref()
        .map_or_else(|| "-".to_string(), |rate| figure_text(rate.mean, 2));
    let cpu = figures.with_cpu;
    let elapsed = &figures.elapsed;
    let sizes = [
        local_send,
        local_recv,
        remote_send,
        remote_recv,
        &request,
        &response,
    ];
    if too_wide(&sizes.map(String::as_str)) {
        let mut rows = figures.head_rows([
            vec!["Local".to_string(), "/Remote".to_string()],
            figures.heads_with_cpu(
                &["Socket", "Size", "Request", "Resp.", "Elapsed", "Trans."],
                &["CPU", "CPU", "S.dem", "S.dem"],
            ),
            figures.heads_with_cpu(
                &["Send", "Recv", "Size", "Size", "Time", "Rate"],
                &["local", "remote", "local", "remote"],
            ),
            figures.heads_with_cpu(
                &["bytes", "bytes", "bytes", "bytes", "secs.", "per sec"],
                &["% S", "% S", "us/Tr", "us/Tr"],
            ),
        ]);
        rows.push(TableRow::of(
            [
                local_send.clone(),
                local_recv.clone(),
                request,
                response,
                elapsed.clone(),
                rate,
            ]
            .into_iter()
            .chain(figures.cpu_cells()),
        ));
        rows.push(TableRow::of([remote_send.clone(), remote_recv.clone()]));
        let widths =
            [6, 6, 7, 6, 7, 8]
                .into_iter()
                .chain(if cpu { vec![6, 6, 7, 7] } else { vec![] });
        return laid_out(&rows, widths.collect());
    }
    let remote = format!("{} {remote_recv}", left(remote_send, 6));
    if cpu {
        let [local_util, remote_util, local_demand, remote_demand] = &figures.cpu;
        let mut lines = figures.head_lines(&[
            "Local /Remote".into(),
            "Socket Size   Request Resp.  Elapsed Trans.    CPU    CPU    S.dem   S.dem".into(),
            "Send   Recv   Size    Size   Time    Rate      local  remote local   remote".into(),
            "bytes  bytes  bytes   bytes  secs.   per sec   % S    % S    us/Tr   us/Tr".into(),
        ]);
        lines.push(format!(
            "{} {} {} {} {} {} {} {} {} {remote_demand}",
            left(local_send, 6),
            left(local_recv, 6),
            left(&request, 7),
            left(&response, 6),
            left(elapsed, 7),
            left(&rate, 9),
            left(local_util, 6),
            left(remote_util, 6),
            left(local_demand, 7)
        ));
        lines.push(remote);
        return lines;
    }
    let mut lines = figures.head_lines(&[
        "Local /Remote".into(),
        "Socket Size   Request  Resp.   Elapsed  Trans.".into(),
        "Send   Recv   Size     Size    Time     Rate".into(),
        "bytes  Bytes  bytes    bytes   secs.    per sec".into(),
    ]);
    lines.push(format!(
        "{} {} {} {} {} {rate}",
        left(local_send, 6),
        left(local_recv, 6),
        left(&request, 8),
        left(&response, 7),
        left(elapsed, 8)
    ));
    lines.push(remote);
    lines
}
