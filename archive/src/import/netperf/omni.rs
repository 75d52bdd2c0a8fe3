//! netperf omni output: `-k` keyval lines and `-o` CSV, read into
//! omni keys and then into figures and the spec's sizes.

use super::values::{number, size, throughput_unit};
use crate::import::{ImportError, PeerFigures};
use run_record::spec::{ReportedSocketBuffers, RunSpec, TestKind};
use std::collections::BTreeMap;

pub(super) fn is_keyval_line(line: &str) -> bool {
    match line.trim().split_once('=') {
        Some((key, _)) => {
            !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        }
        None => false,
    }
}

/// `KEY=VALUE` lines up to the end; blank lines are skipped.
pub(super) fn parse_keyval(
    lines: &[&str],
    first_idx: usize,
) -> Result<BTreeMap<String, (String, usize)>, ImportError> {
    let mut values = BTreeMap::new();
    for (line_idx, line) in lines.iter().enumerate().skip(first_idx) {
        if line.trim().is_empty() {
            continue;
        }
        if !is_keyval_line(line) {
            return Err(ImportError::parse(
                line_idx + 1,
                "expected KEY=VALUE (netperf omni -k output)",
            ));
        }
        if let Some((key, value)) = line.trim().split_once('=') {
            values.insert(key.to_string(), (value.trim().to_string(), line_idx + 1));
        }
    }
    Ok(values)
}

/// netperf's CSV header names for the omni output selectors this importer
/// reads.
const CSV_NAMES: &[(&str, &str)] = &[
    ("Throughput", "THROUGHPUT"),
    ("Throughput Units", "THROUGHPUT_UNITS"),
    ("Elapsed Time (sec)", "ELAPSED_TIME"),
    ("Local Send Size", "LOCAL_SEND_SIZE"),
    ("Remote Recv Size", "REMOTE_RECV_SIZE"),
    ("Request Size Bytes", "REQUEST_SIZE"),
    ("Response Size Bytes", "RESPONSE_SIZE"),
    ("Local CPU Util %", "LOCAL_CPU_UTIL"),
    ("Remote CPU Util %", "REMOTE_CPU_UTIL"),
    ("Local Service Demand", "LOCAL_SD"),
    ("Remote Service Demand", "REMOTE_SD"),
    ("Minimum Latency Microseconds", "MIN_LATENCY"),
    ("Maximum Latency Microseconds", "MAX_LATENCY"),
    ("Mean Latency Microseconds", "MEAN_LATENCY"),
    ("Stddev Latency Microseconds", "STDDEV_LATENCY"),
    ("50th Percentile Latency Microseconds", "P50_LATENCY"),
    ("90th Percentile Latency Microseconds", "P90_LATENCY"),
    ("99th Percentile Latency Microseconds", "P99_LATENCY"),
    ("Transaction Rate Tran/s", "TRANSACTION_RATE"),
    ("Local Send Socket Size Requested", "LSS_SIZE_REQ"),
    ("Local Recv Socket Size Requested", "LSR_SIZE_REQ"),
    ("Remote Send Socket Size Requested", "RSS_SIZE_REQ"),
    ("Remote Recv Socket Size Requested", "RSR_SIZE_REQ"),
    ("Local Send Socket Size Initial", "LSS_SIZE"),
    ("Local Recv Socket Size Initial", "LSR_SIZE"),
    ("Remote Send Socket Size Initial", "RSS_SIZE"),
    ("Remote Recv Socket Size Initial", "RSR_SIZE"),
];

/// A header line of names and one line of values; names are translated
/// to omni keys, unknown names kept as written.
pub(super) fn parse_csv(
    lines: &[&str],
    header_idx: usize,
) -> Result<BTreeMap<String, (String, usize)>, ImportError> {
    let names: Vec<&str> = lines[header_idx].split(',').map(str::trim).collect();
    let Some((value_idx, value_line)) = lines
        .iter()
        .enumerate()
        .skip(header_idx + 1)
        .find(|(_, line)| !line.trim().is_empty())
    else {
        return Err(ImportError::parse(
            header_idx + 1,
            "CSV header without a line of values",
        ));
    };
    let cells: Vec<&str> = value_line.split(',').map(str::trim).collect();
    if cells.len() != names.len() {
        return Err(ImportError::parse(
            value_idx + 1,
            format!(
                "{} values for {} column names in the header",
                cells.len(),
                names.len()
            ),
        ));
    }
    if let Some((extra_idx, _)) = lines
        .iter()
        .enumerate()
        .skip(value_idx + 1)
        .find(|(_, line)| !line.trim().is_empty())
    {
        return Err(ImportError::parse(
            extra_idx + 1,
            "unexpected text after the CSV values",
        ));
    }
    let mut values = BTreeMap::new();
    for (name, cell) in names.iter().zip(cells) {
        let key = CSV_NAMES
            .iter()
            .find(|(csv_name, _)| csv_name.eq_ignore_ascii_case(name))
            .map_or_else(|| name.to_ascii_uppercase(), |(_, key)| (*key).to_string());
        values.insert(key, (cell.to_string(), value_idx + 1));
    }
    Ok(values)
}

pub(super) fn omni_figures(
    values: &BTreeMap<String, (String, usize)>,
    spec: &mut RunSpec,
    first_line_no: usize,
) -> Result<PeerFigures, ImportError> {
    let get = |key: &str| -> Result<Option<f64>, ImportError> {
        values
            .get(key)
            .map(|(text, line_no)| number(text, key, *line_no))
            .transpose()
    };
    let mut figures = PeerFigures {
        elapsed_s: get("ELAPSED_TIME")?,
        ..PeerFigures::default()
    };
    let test = spec.test;
    if let Some(request) = get("REQUEST_SIZE")?.and_then(size) {
        spec.request_size_bytes = request;
    }
    if let Some(response) = get("RESPONSE_SIZE")?.and_then(size) {
        spec.response_size_bytes = response;
    }
    if !test.is_request_response() {
        if let Some(send) = get("LOCAL_SEND_SIZE")?.and_then(size) {
            spec.send_size_bytes = send;
        }
        if let Some(recv) = get("REMOTE_RECV_SIZE")?.and_then(size) {
            spec.recv_size_bytes = recv;
        }
    }
    let (local_key, remote_key) = if test == TestKind::TcpMaerts {
        ("LSR_SIZE_REQ", "RSS_SIZE_REQ")
    } else if test.is_request_response() {
        ("LSR_SIZE_REQ", "RSR_SIZE_REQ")
    } else {
        ("LSS_SIZE_REQ", "RSR_SIZE_REQ")
    };
    spec.local_socket_buffer_bytes = get(local_key)?.and_then(size);
    spec.remote_socket_buffer_bytes = get(remote_key)?.and_then(size);
    // The sizes right after setup are what the kernel granted; those at
    // the end (`*_SIZE_END`) are not the spec's and are not read.
    let granted = ReportedSocketBuffers {
        local_send_bytes: get("LSS_SIZE")?.and_then(size),
        local_recv_bytes: get("LSR_SIZE")?.and_then(size),
        remote_send_bytes: get("RSS_SIZE")?.and_then(size),
        remote_recv_bytes: get("RSR_SIZE")?.and_then(size),
    };
    if granted != ReportedSocketBuffers::default() {
        spec.reported_socket_buffers = Some(granted);
    }

    let unit_text = values.get("THROUGHPUT_UNITS");
    let unit = match unit_text {
        Some((text, line_no)) => throughput_unit(text, *line_no)?,
        None if test.is_request_response() => None,
        None => Some(1e6),
    };
    if let Some(throughput) = get("THROUGHPUT")? {
        match unit {
            Some(factor) => figures.throughput_bps = Some(throughput * factor),
            None => figures.transaction_rate = Some(throughput),
        }
    }
    if let Some(rate) = get("TRANSACTION_RATE")? {
        figures.transaction_rate = Some(rate);
    }
    figures.cpu.local_util_pct = get("LOCAL_CPU_UTIL")?;
    figures.cpu.remote_util_pct = get("REMOTE_CPU_UTIL")?;
    figures.cpu.local_service_demand = get("LOCAL_SD")?;
    figures.cpu.remote_service_demand = get("REMOTE_SD")?;
    figures.latency.min_us = get("MIN_LATENCY")?;
    figures.latency.mean_us = get("MEAN_LATENCY")?;
    figures.latency.stddev_us = get("STDDEV_LATENCY")?;
    figures.latency.p50_us = get("P50_LATENCY")?;
    figures.latency.p90_us = get("P90_LATENCY")?;
    figures.latency.p99_us = get("P99_LATENCY")?;
    figures.latency.max_us = get("MAX_LATENCY")?;
    let has_main_figure = if test.is_request_response() {
        figures.transaction_rate.is_some()
    } else {
        figures.throughput_bps.is_some()
    };
    if !has_main_figure {
        return Err(ImportError::parse(
            first_line_no,
            "netperf omni output without THROUGHPUT (add it to the -k/-o selectors)",
        ));
    }
    Ok(figures)
}
