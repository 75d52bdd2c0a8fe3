//! netperf's classic tables: one run per table, or one per labelled row
//! of an emailed table.
//!
//! Classic tables are read by their headers, not by counting: the header
//! row with the most words defines the columns, every other header word
//! joins the columns it stands over, and each column is recognised by its
//! words (`Throughput`, `Elapsed Time`, `Utilization ... local`,
//! `us/KB`, ...). Values are matched to columns by order when a data line
//! has one value per column, else by position (the second line of
//! UDP_STREAM and request/response tables). The throughput unit is read
//! from the header (`10^6bits/s`, `10^9bits/sec`, `KBytes/s`, ...), so any
//! `-f` works; results are stored in bits per second.
//!
//! A table is read in steps, each a function of its own: `header` finds
//! the header and reads its column layout, `rows` reads the result lines
//! and gathers them into runs (the place for rules on what makes up one
//! result), and this module builds each run from its lines.

use super::values::{number, size, throughput_unit};
use crate::import::{ImportError, PeerFigures};
use header::{Column, Field, Header, Side, check_columns, owners, read_header};
use rows::{DataRow, read_results};
use run_record::spec::{ReportedSocketBuffers, RunSpec, TestKind};

mod header;
mod rows;

/// One run of a classic table: the table's only run, or the run of one
/// labelled row (and the unlabelled row under it, if any).
pub(super) struct ClassicRun {
    /// The side name the row began with.
    pub(super) label: Option<String>,
    /// The line of the run's first row, for errors.
    pub(super) line_no: usize,
    pub(super) spec: RunSpec,
    pub(super) figures: PeerFigures,
}

impl ClassicRun {
    pub(super) fn unlabelled(line_no: usize, spec: RunSpec, figures: PeerFigures) -> ClassicRun {
        ClassicRun {
            label: None,
            line_no,
            spec,
            figures,
        }
    }
}

/// Rows of one run: one per run of a stream test, two for UDP_STREAM
/// (sender, receiver) and the RR tests (local, remote sockets).
fn rows_per_run(test: TestKind) -> usize {
    match test {
        TestKind::TcpStream | TestKind::TcpMaerts => 1,
        _ => 2,
    }
}

/// The columns the second line of a run fills, in order, as netperf
/// prints it: UDP_STREAM's receiving side has every column but the
/// message size and the errors, a request/response test's remote end its
/// two socket sizes. `None` for tests of one line.
fn second_line_columns(header: &Header<'_>, test: TestKind) -> Option<Vec<usize>> {
    let columns = header.columns.iter().enumerate();
    match test {
        TestKind::TcpStream | TestKind::TcpMaerts => None,
        TestKind::UdpStream => Some(
            columns
                .filter(|(_, column)| {
                    !matches!(column.field, Field::MessageSize | Field::MessageErrors)
                })
                .map(|(idx, _)| idx)
                .collect(),
        ),
        _ => Some(
            columns
                .filter(|(_, column)| matches!(column.field, Field::SendSocket | Field::RecvSocket))
                .map(|(idx, _)| idx)
                .collect(),
        ),
    }
}

/// What a table's result lines must hold, from the header that starts at
/// `header_idx`: the figures of a run's first line, and of its second
/// line if the test prints one. `None` when the header does not read.
pub(super) fn result_shape(
    lines: &[&str],
    header_idx: usize,
    test: TestKind,
) -> Option<(usize, Option<usize>)> {
    let header = read_header(lines, header_idx).ok()?;
    let second = second_line_columns(&header, test).map(|columns| columns.len());
    Some((header.columns.len(), second))
}

/// The runs of a classic table whose header starts at `header_idx`: one,
/// or one per labelled row; the row that would start run `room + 1` is
/// refused ([`ImportError::TooManyRuns`]) before the rows after it are
/// read.
pub(super) fn classic_runs(
    lines: &[&str],
    header_idx: usize,
    spec: &RunSpec,
    room: usize,
) -> Result<Vec<ClassicRun>, ImportError> {
    let header = read_header(lines, header_idx)?;
    check_columns(&header, spec)?;
    let second = second_line_columns(&header, spec.test);
    let results = read_results(
        lines,
        header.end,
        rows_per_run(spec.test),
        second.as_ref().map(Vec::len),
        room,
    )?;
    let mut runs = Vec::with_capacity(results.runs.len());
    for run_rows in &results.runs {
        runs.push(build_run(run_rows, &header, spec, results.labelled)?);
    }
    Ok(runs)
}

/// Builds one run from its result lines, checking they are whole.
fn build_run(
    run_rows: &[DataRow<'_>],
    header: &Header<'_>,
    spec: &RunSpec,
    labelled: bool,
) -> Result<ClassicRun, ImportError> {
    let first = &run_rows[0];
    let per_run = rows_per_run(spec.test);
    // A labelled RR row may stand alone (its second line holds only
    // the remote socket sizes); every other run needs all its lines.
    let optional_second = labelled && spec.test.is_request_response();
    if run_rows.len() < per_run && !optional_second {
        return Err(ImportError::parse(
            first.line_no,
            format!(
                "{} results take {per_run} lines; the line after this one is missing",
                spec.test
            ),
        ));
    }
    // The first line has a figure for every column: one missing (a
    // line cut short, a column dropped) is refused, never read as
    // another column's.
    if first.values.len() != header.columns.len() {
        return Err(ImportError::parse(
            first.line_no,
            format!(
                "{} figures for the {} columns of the header (line {})",
                first.values.len(),
                header.columns.len(),
                header.line_no
            ),
        ));
    }
    let second = second_line_columns(header, spec.test);
    let mut field_rows: Vec<Vec<(Field, f64)>> = Vec::new();
    for (row_idx, row) in run_rows.iter().enumerate() {
        field_rows.push(row_fields(row, row_idx, header, second.as_deref())?);
    }
    let mut run_spec = spec.clone();
    let figures = classic_run_figures(
        &field_rows,
        &header.columns,
        header.units_line_no(),
        first.line_no,
        run_rows.get(1).map(|row| row.line_no),
        &mut run_spec,
    )?;
    Ok(ClassicRun {
        label: first.label.map(str::to_string),
        line_no: first.line_no,
        spec: run_spec,
        figures,
    })
}

/// The (field, value) pairs of the `row_idx`th line of a run: the first
/// line's values by order; a second line's by order onto the columns
/// netperf prints there when it has that many figures (a side name before
/// them moves them off their columns), else by position.
fn row_fields(
    row: &DataRow<'_>,
    row_idx: usize,
    header: &Header<'_>,
    second: Option<&[usize]>,
) -> Result<Vec<(Field, f64)>, ImportError> {
    let mut values = Vec::with_capacity(row.values.len());
    let second = second.filter(|columns| row_idx == 1 && columns.len() == row.values.len());
    for (value_idx, value) in row.values.iter().enumerate() {
        let column_idx = if row_idx == 0 {
            value_idx
        } else if let Some(columns) = second {
            columns[value_idx]
        } else {
            *owners(value, &header.key_row).first().ok_or_else(|| {
                ImportError::parse(row.line_no, "value outside the table's columns")
            })?
        };
        let column = &header.columns[column_idx];
        let number = number(
            value.text,
            &column.key.text.to_ascii_lowercase(),
            row.line_no,
        )?;
        values.push((column.field, number));
    }
    Ok(values)
}

/// The figures of one run from its lines' (field, value) pairs.
fn classic_run_figures(
    rows: &[Vec<(Field, f64)>],
    columns: &[Column<'_>],
    units_line_no: usize,
    first_line_no: usize,
    second_line_no: Option<usize>,
    spec: &mut RunSpec,
) -> Result<PeerFigures, ImportError> {
    let find = |row: &[(Field, f64)], wanted: Field| {
        row.iter()
            .find(|(field, _)| *field == wanted)
            .map(|(_, value)| *value)
    };
    let local = &rows[0];
    let remote = rows.get(1).map_or(&[][..], Vec::as_slice);

    let mut figures = PeerFigures {
        elapsed_s: find(local, Field::Elapsed),
        ..PeerFigures::default()
    };
    figures.cpu.local_util_pct = find(local, Field::CpuUtil(Side::Local))
        .or_else(|| find(local, Field::CpuUtil(Side::Line)));
    figures.cpu.remote_util_pct = find(local, Field::CpuUtil(Side::Remote))
        .or_else(|| find(remote, Field::CpuUtil(Side::Line)));
    figures.cpu.local_service_demand = find(local, Field::ServiceDemand(Side::Local))
        .or_else(|| find(local, Field::ServiceDemand(Side::Line)));
    figures.cpu.remote_service_demand = find(local, Field::ServiceDemand(Side::Remote))
        .or_else(|| find(remote, Field::ServiceDemand(Side::Line)));

    let throughput_factor = match columns.iter().find(|c| c.field == Field::Throughput) {
        Some(column) => {
            let unit = column.unit.as_deref().unwrap_or("10^6bits/s");
            throughput_unit(unit, units_line_no)?.unwrap_or(1e6)
        }
        None => 1e6,
    };
    match spec.test {
        TestKind::TcpStream | TestKind::TcpMaerts => {
            let throughput = find(local, Field::Throughput).ok_or_else(|| {
                ImportError::parse(first_line_no, "no throughput in the netperf results")
            })?;
            figures.throughput_bps = Some(throughput * throughput_factor);
            if let Some(message) = find(local, Field::MessageSize).and_then(size) {
                spec.send_size_bytes = message;
            }
            let recv_socket = find(local, Field::RecvSocket).and_then(size);
            let send_socket = find(local, Field::SendSocket).and_then(size);
            // The receiver is remote for TCP_STREAM, local for TCP_MAERTS.
            spec.reported_socket_buffers = Some(if spec.test == TestKind::TcpStream {
                ReportedSocketBuffers {
                    local_send_bytes: send_socket,
                    remote_recv_bytes: recv_socket,
                    ..ReportedSocketBuffers::default()
                }
            } else {
                ReportedSocketBuffers {
                    local_recv_bytes: recv_socket,
                    remote_send_bytes: send_socket,
                    ..ReportedSocketBuffers::default()
                }
            });
        }
        TestKind::UdpStream => {
            // The sender's rate is what it sent; the record keeps the
            // receiver's.
            let received = find(remote, Field::Throughput).ok_or_else(|| {
                ImportError::parse(
                    second_line_no.unwrap_or(first_line_no),
                    "no throughput on the receiving side's line",
                )
            })?;
            figures.throughput_bps = Some(received * throughput_factor);
            figures.sent_throughput_bps =
                find(local, Field::Throughput).map(|sent| sent * throughput_factor);
            if let Some(message) = find(local, Field::MessageSize).and_then(size) {
                spec.send_size_bytes = message;
            }
            figures.messages_sent =
                find(local, Field::MessagesOkay).and_then(|v| size(v).map(u64::from));
            figures.messages_received =
                find(remote, Field::MessagesOkay).and_then(|v| size(v).map(u64::from));
            figures.send_errors =
                find(local, Field::MessageErrors).and_then(|v| size(v).map(u64::from));
            spec.reported_socket_buffers = Some(ReportedSocketBuffers {
                local_send_bytes: find(local, Field::Socket).and_then(size),
                remote_recv_bytes: find(remote, Field::Socket).and_then(size),
                ..ReportedSocketBuffers::default()
            });
        }
        TestKind::TcpRr | TestKind::TcpCrr | TestKind::UdpRr => {
            figures.transaction_rate =
                Some(find(local, Field::TransactionRate).ok_or_else(|| {
                    ImportError::parse(first_line_no, "no transaction rate in the netperf results")
                })?);
            if let Some(request) = find(local, Field::RequestSize).and_then(size) {
                spec.request_size_bytes = request;
            }
            if let Some(response) = find(local, Field::ResponseSize).and_then(size) {
                spec.response_size_bytes = response;
            }
            spec.reported_socket_buffers = Some(ReportedSocketBuffers {
                local_send_bytes: find(local, Field::SendSocket).and_then(size),
                local_recv_bytes: find(local, Field::RecvSocket).and_then(size),
                remote_send_bytes: find(remote, Field::SendSocket).and_then(size),
                remote_recv_bytes: find(remote, Field::RecvSocket).and_then(size),
            });
        }
    }
    Ok(figures)
}
