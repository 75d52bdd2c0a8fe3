//! The table of one configuration compared, in netperf's columns for
//! its test: a row per side, named by the side, then the change of the
//! second side and its mark; and what follows the table (the other
//! metrics' changes, the intervals `-I` reached).

use super::cells::{bytes, change, cpu_figures, figure, seconds, whole};
use super::tables::{Frame, Marks};
use crate::render::table::TableRow;
use archive::compare::{ComparisonGroup, ComparisonRow};
use archive::figures::SideFigures;
use run_record::spec::TestKind;
use serde::Serialize;

/// One configuration's table.
#[derive(Debug, Serialize)]
pub struct GroupTable {
    /// The group, an index into `groups` (its title, its environment
    /// differences).
    pub group: usize,
    /// The table, laid out.
    pub lines: Vec<String>,
    /// The changes of the other metrics than the table's.
    pub also: Vec<AlsoChange>,
    /// The interval each side reached, for the sides that asked one.
    pub confidence: Vec<SideConfidence>,
}

/// The change of a metric beside the table's.
#[derive(Debug, Serialize)]
pub struct AlsoChange {
    /// The metric (`latency_p99_us`).
    pub metric: String,
    /// Its change and mark: `+6.5% !`.
    pub change: String,
}

/// The interval a side reached with `-I`.
#[derive(Debug, Serialize)]
pub struct SideConfidence {
    /// The side's name.
    pub name: String,
    /// Half the width of the interval reached, percent of the mean.
    pub half_width_pct: Option<f64>,
    /// Its confidence level, percent.
    pub level_pct: u32,
    /// True when it is wider than asked.
    pub missed: bool,
}

/// A side in the table: its name, its figures, and for the second side
/// the row its change is of.
struct SideRow<'a> {
    name: &'a str,
    figures: &'a SideFigures,
    compared: Option<&'a ComparisonRow>,
}

impl SideRow<'_> {
    /// The last cell of the side's row: the change and its mark (second
    /// side), and `!!!` where the side missed its interval.
    fn tail(&self) -> String {
        let change = self.compared.map(change).unwrap_or_default();
        let flag = if self.figures.confidence_missed {
            " !!!"
        } else {
            ""
        };
        format!("{change}{flag}")
    }

    /// The side's row of `figures` with its CPU figures beside them,
    /// then its tail.
    fn row_with_cpu(&self, figures: [String; 3]) -> TableRow {
        TableRow::of(
            [self.name.to_string()]
                .into_iter()
                .chain(figures)
                .chain(cpu_figures(self.figures))
                .chain([self.tail()]),
        )
    }

    /// The side's CPU line: its name's column blank, then its figures.
    fn cpu_line(&self) -> TableRow {
        TableRow::in_set(
            1,
            [String::new()].into_iter().chain(cpu_figures(self.figures)),
        )
    }
}

/// The table of `groups[idx]`, with the marks of its rows noted in
/// `marks`.
pub(super) fn group_table(
    idx: usize,
    group: &ComparisonGroup,
    frame: &Frame<'_>,
    marks: &mut Marks,
) -> GroupTable {
    for row in &group.rows {
        marks.see(row);
    }
    marks.see_sides(group);
    let sides = [
        SideRow {
            name: frame.names[0],
            figures: &group.first_figures,
            compared: None,
        },
        SideRow {
            name: frame.names[1],
            figures: &group.second_figures,
            compared: group.rows.first(),
        },
    ];
    let (rows, sets) = match group.run_spec.test {
        TestKind::TcpStream | TestKind::TcpMaerts => stream_rows(group, &sides, frame),
        TestKind::UdpStream => datagram_rows(group, &sides, frame),
        _ => request_response_rows(group, &sides, frame),
    };
    GroupTable {
        group: idx,
        lines: frame.lay_out(&rows, &sets),
        also: group
            .rows
            .iter()
            .skip(1)
            .map(|row| AlsoChange {
                metric: row.metric.clone(),
                change: change(row),
            })
            .collect(),
        confidence: sides
            .iter()
            .filter_map(|side| {
                Some(SideConfidence {
                    name: side.name.to_string(),
                    half_width_pct: side.figures.confidence_half_width_pct,
                    level_pct: side.figures.confidence_level_pct?,
                    missed: side.figures.confidence_missed,
                })
            })
            .collect(),
    }
}

/// Whether the group's test measured CPU.
fn with_cpu(group: &ComparisonGroup) -> bool {
    group.run_spec.local_cpu || group.run_spec.remote_cpu
}

/// TCP_STREAM and TCP_MAERTS: the receiving socket, the time, the
/// throughput; with CPU figures, beside them (or, in a mail, on a line
/// under each side).
fn stream_rows(
    group: &ComparisonGroup,
    sides: &[SideRow<'_>; 2],
    frame: &Frame<'_>,
) -> (Vec<TableRow>, Vec<Vec<i64>>) {
    let unit = frame.units.name;
    let who = if group.run_spec.test == TestKind::TcpStream {
        ["Send", "Recv"]
    } else {
        ["Recv", "Send"]
    };
    let throughput = |side: &SideRow<'_>| frame.units.figure(side.figures.throughput_bps);
    if with_cpu(group) && frame.email {
        let mut rows = vec![
            TableRow::of(["", "Recv", "", "", ""]),
            TableRow::of(["", "Socket", "Elapsed", "", ""]),
            TableRow::of(["", "Size", "Time", "Throughput", ""]),
            TableRow::of(["", "bytes", "secs.", unit, "change"]),
            TableRow::in_set(1, ["", "Util %", "", "S.dem", "us/KB"]),
            TableRow::in_set(
                1,
                [
                    String::new(),
                    format!("{} l", who[0]),
                    format!("{} r", who[1]),
                    format!("{} l", who[0]),
                    format!("{} r", who[1]),
                ],
            ),
            TableRow::blank(),
        ];
        for side in sides {
            rows.push(TableRow::of([
                side.name.to_string(),
                bytes(side.figures.recv_socket_bytes),
                seconds(side.figures.elapsed_s),
                throughput(side),
                side.tail(),
            ]));
            rows.push(side.cpu_line());
        }
        return (rows, vec![vec![-10, 7, 6, 10, 9], vec![-10, 7, 6, 7, 7]]);
    }
    if with_cpu(group) {
        let mut rows = vec![
            TableRow::of(["", "Recv", "", "", "Util", "%", "S.dem", "us/KB"]),
            TableRow::of(["", "Socket", "Elapsed", "", who[0], who[1], who[0], who[1]]),
            TableRow::of([
                "",
                "Size",
                "Time",
                "Throughput",
                "local",
                "remote",
                "local",
                "remote",
            ]),
            TableRow::of([
                "", "bytes", "secs.", unit, "% S", "% S", "us/KB", "us/KB", "change",
            ]),
            TableRow::blank(),
        ];
        for side in sides {
            rows.push(side.row_with_cpu([
                bytes(side.figures.recv_socket_bytes),
                seconds(side.figures.elapsed_s),
                throughput(side),
            ]));
        }
        return (rows, vec![vec![-10, 7, 6, 10, 6, 6, 7, 7, 9]]);
    }
    let mut rows = vec![
        TableRow::of(["", "Recv", "Send", "Send"]),
        TableRow::of(["", "Socket", "Socket", "Message", "Elapsed"]),
        TableRow::of(["", "Size", "Size", "Size", "Time", "Throughput"]),
        TableRow::of(["", "bytes", "bytes", "bytes", "secs.", unit, "change"]),
        TableRow::blank(),
    ];
    for side in sides {
        rows.push(TableRow::of([
            side.name.to_string(),
            bytes(side.figures.recv_socket_bytes),
            bytes(side.figures.send_socket_bytes),
            group.run_spec.send_size_bytes.to_string(),
            seconds(side.figures.elapsed_s),
            throughput(side),
            side.tail(),
        ]));
    }
    (rows, vec![vec![-10, 7, 7, 7, 7, 10, 9]])
}

/// UDP_STREAM: a line of what each side sent and one of what it
/// received, with the CPU figures of the sending and the receiving end.
fn datagram_rows(
    group: &ComparisonGroup,
    sides: &[SideRow<'_>; 2],
    frame: &Frame<'_>,
) -> (Vec<TableRow>, Vec<Vec<i64>>) {
    let unit = frame.units.name;
    let mut rows = Vec::new();
    if with_cpu(group) {
        rows.push(TableRow::of([
            "", "Socket", "Messages", "", "", "CPU", "Service",
        ]));
        rows.push(TableRow::of([
            "",
            "Size",
            "Okay",
            "Errors",
            "Throughput",
            "Util",
            "Demand",
        ]));
        rows.push(TableRow::of([
            "", "bytes", "#", "#", unit, "% S", "us/KB", "change",
        ]));
        rows.push(TableRow::blank());
        for side in sides {
            let figures = side.figures;
            let [local_cpu, remote_cpu, local_demand, remote_demand] = cpu_figures(figures);
            rows.push(TableRow::of([
                side.name.to_string(),
                bytes(figures.local_send_socket_bytes),
                whole(figures.messages_sent),
                whole(figures.send_errors),
                frame.units.figure(figures.sent_throughput_bps),
                local_cpu,
                local_demand,
            ]));
            rows.push(TableRow::of([
                String::new(),
                bytes(figures.remote_recv_socket_bytes),
                whole(figures.messages_received),
                String::new(),
                frame.units.figure(figures.throughput_bps),
                remote_cpu,
                remote_demand,
                side.tail(),
            ]));
        }
        return (rows, vec![vec![-10, 7, 9, 6, 10, 6, 7, 9]]);
    }
    rows.push(TableRow::of([
        "", "Socket", "Message", "Elapsed", "Messages",
    ]));
    rows.push(TableRow::of([
        "",
        "Size",
        "Size",
        "Time",
        "Okay",
        "Errors",
        "Throughput",
    ]));
    rows.push(TableRow::of([
        "", "bytes", "bytes", "secs.", "#", "#", unit, "change",
    ]));
    rows.push(TableRow::blank());
    for side in sides {
        let figures = side.figures;
        rows.push(TableRow::of([
            side.name.to_string(),
            bytes(figures.local_send_socket_bytes),
            group.run_spec.send_size_bytes.to_string(),
            seconds(figures.elapsed_s),
            whole(figures.messages_sent),
            whole(figures.send_errors),
            frame.units.figure(figures.sent_throughput_bps),
        ]));
        rows.push(TableRow::of([
            String::new(),
            bytes(figures.remote_recv_socket_bytes),
            String::new(),
            seconds(figures.elapsed_s),
            whole(figures.messages_received),
            String::new(),
            frame.units.figure(figures.throughput_bps),
            side.tail(),
        ]));
    }
    (rows, vec![vec![-10, 7, 7, 7, 9, 6, 10, 9]])
}

/// Request/response tests: the sizes, the rate; with CPU figures beside
/// it (or, in a mail, on a line under each side); without, the sockets
/// of both ends and the throughput (left out of a mail).
fn request_response_rows(
    group: &ComparisonGroup,
    sides: &[SideRow<'_>; 2],
    frame: &Frame<'_>,
) -> (Vec<TableRow>, Vec<Vec<i64>>) {
    let spec = &group.run_spec;
    let sizes = [
        spec.request_size_bytes.to_string(),
        spec.response_size_bytes.to_string(),
    ];
    if with_cpu(group) && frame.email {
        let mut rows = vec![
            TableRow::of(["", "Request", "Resp.", "Elapsed", "Trans."]),
            TableRow::of(["", "Size", "Size", "Time", "Rate"]),
            TableRow::of(["", "bytes", "bytes", "secs.", "per sec", "change"]),
            TableRow::in_set(1, ["", "CPU %", "CPU %", "S.dem", "S.dem"]),
            TableRow::in_set(1, ["", "local", "remote", "local", "remote"]),
            TableRow::blank(),
        ];
        for side in sides {
            rows.push(TableRow::of([
                side.name.to_string(),
                sizes[0].clone(),
                sizes[1].clone(),
                seconds(side.figures.elapsed_s),
                figure(side.figures.transaction_rate, 2),
                side.tail(),
            ]));
            rows.push(side.cpu_line());
        }
        return (rows, vec![vec![-10, 7, 7, 7, 10, 9], vec![-10, 7, 7, 7, 7]]);
    }
    if with_cpu(group) {
        let mut rows = vec![
            TableRow::of([
                "", "Request", "Resp.", "Trans.", "CPU", "CPU", "S.dem", "S.dem",
            ]),
            TableRow::of([
                "", "Size", "Size", "Rate", "local", "remote", "local", "remote",
            ]),
            TableRow::of([
                "", "bytes", "bytes", "per sec", "% S", "% S", "us/Tr", "us/Tr", "change",
            ]),
            TableRow::blank(),
        ];
        for side in sides {
            rows.push(side.row_with_cpu([
                sizes[0].clone(),
                sizes[1].clone(),
                figure(side.figures.transaction_rate, 2),
            ]));
        }
        return (rows, vec![vec![-10, 7, 6, 10, 6, 6, 7, 7, 9]]);
    }
    sockets_rows(sides, sizes, frame)
}

/// Request/response tests without CPU figures: the sockets of both ends
/// (a line each), the sizes, the time, the rate and the throughput (left
/// out of a mail).
fn sockets_rows(
    sides: &[SideRow<'_>; 2],
    sizes: [String; 2],
    frame: &Frame<'_>,
) -> (Vec<TableRow>, Vec<Vec<i64>>) {
    let mut rows = vec![
        TableRow::of(["", "Local", "/Remote"]),
        TableRow::of([
            "",
            "Socket",
            "Size",
            "Request",
            "Resp.",
            "Elapsed",
            "Trans.",
            "Throughput",
        ]),
        TableRow::of(["", "Send", "Recv", "Size", "Size", "Time", "Rate"]),
        TableRow::of([
            "",
            "bytes",
            "bytes",
            "bytes",
            "bytes",
            "secs.",
            "per sec",
            frame.units.name,
            "change",
        ]),
        TableRow::blank(),
    ];
    for side in sides {
        let figures = side.figures;
        rows.push(TableRow::of([
            side.name.to_string(),
            bytes(figures.local_send_socket_bytes),
            bytes(figures.local_recv_socket_bytes),
            sizes[0].clone(),
            sizes[1].clone(),
            seconds(figures.elapsed_s),
            figure(figures.transaction_rate, 2),
            frame.units.figure(figures.throughput_bps),
            side.tail(),
        ]));
        rows.push(TableRow::of([
            String::new(),
            bytes(figures.remote_send_socket_bytes),
            bytes(figures.remote_recv_socket_bytes),
        ]));
    }
    // A mail has no room for the throughput beside the rate.
    let throughput_width = if frame.email { 0 } else { 10 };
    (
        rows,
        vec![vec![-10, 7, 7, 7, 6, 6, 10, throughput_width, 9]],
    )
}
