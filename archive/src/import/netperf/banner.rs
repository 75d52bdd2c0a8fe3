//! netperf's banner line, which names the test, the remote host, the
//! address family, the requested confidence and the notes that change
//! what was measured, and the `!!!` warning block under it.

use crate::import::ImportError;
use run_record::spec::{AddressFamily, ConfidenceSpec, TestKind};

/// True when `line` is a netperf test banner: a test name that starts as
/// netperf's do (`MIGRATED TCP STREAM`, `UDP UNIDIRECTIONAL SEND`, `TCP
/// Connect/Request/Response`, netbisect's `TCP_RR`), then ` TEST`, and
/// where from or to. The name keeps an email's prose ("we TEST it to
/// see") from starting an output.
pub fn is_banner(line: &str) -> bool {
    let line = line.trim();
    let Some(at) = line.find(" TEST") else {
        return false;
    };
    let first_word = line[..at].split(' ').next().unwrap_or("");
    let named = matches!(first_word, "MIGRATED" | "OMNI")
        || ["TCP", "UDP", "SCTP"]
            .iter()
            .any(|protocol| first_word.starts_with(protocol));
    named && (line[at..].starts_with(" TEST from ") || line.contains(" to "))
}

/// What the banner says.
pub(super) struct Banner {
    pub(super) test: TestKind,
    pub(super) host: String,
    pub(super) family: AddressFamily,
    pub(super) confidence: Option<ConfidenceSpec>,
    /// `: first burst N` (`-b`).
    pub(super) first_burst: u32,
    /// `: nodelay` (`-- -D`).
    pub(super) nodelay: bool,
}

/// The banner's `: ...` notes that change what was measured: the first
/// burst and TCP_NODELAY. Others (`: demo`, `: cpu bind`, the confidence
/// request) change nothing the record keys on.
fn banner_notes(line: &str, line_no: usize) -> Result<(u32, bool), ImportError> {
    let mut first_burst = 0;
    let mut nodelay = false;
    for note in line.split(" : ").skip(1).map(str::trim) {
        if let Some(count) = note.strip_prefix("first burst") {
            first_burst = count.trim().parse().map_err(|_| {
                ImportError::parse(line_no, format!("invalid first burst \"{}\"", count.trim()))
            })?;
        } else if note == "nodelay" {
            nodelay = true;
        }
    }
    Ok((first_burst, nodelay))
}

pub(super) fn parse_banner(line: &str, line_no: usize) -> Result<Banner, ImportError> {
    let line = line.trim();
    let name_end = line
        .find(" TEST")
        .ok_or_else(|| ImportError::parse(line_no, "not a netperf banner"))?;
    let name = line[..name_end].trim_start_matches("MIGRATED").trim();
    let test = match name.to_ascii_uppercase().as_str() {
        "TCP STREAM" => TestKind::TcpStream,
        "TCP MAERTS" => TestKind::TcpMaerts,
        "TCP REQUEST/RESPONSE" => TestKind::TcpRr,
        "TCP CONNECT/REQUEST/RESPONSE" => TestKind::TcpCrr,
        // netperf before 2.5 named UDP_STREAM this way.
        "UDP STREAM" | "UDP UNIDIRECTIONAL SEND" => TestKind::UdpStream,
        "UDP REQUEST/RESPONSE" => TestKind::UdpRr,
        // netbisect's own run table names the test as `-t` does.
        other => other.parse().map_err(|_| {
            ImportError::parse(line_no, format!("unsupported netperf test \"{name}\""))
        })?,
    };
    let host = line
        .find(" to ")
        .map(|at| &line[at + 4..])
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("unknown");
    // netbisect's run table writes `ip:port` or `[ip]:port`.
    let host = match host.parse::<std::net::SocketAddr>() {
        Ok(address) => address.ip().to_string(),
        Err(_) => host.to_string(),
    };
    let family = if line.contains("AF_INET6") {
        AddressFamily::Ipv6
    } else {
        AddressFamily::Ipv4
    };
    let (first_burst, nodelay) = banner_notes(line, line_no)?;
    Ok(Banner {
        test,
        host,
        family,
        confidence: parse_confidence_request(line),
        first_burst,
        nodelay,
    })
}

/// `+/-2.500% @ 99% conf.` -> level 99, full width 5%.
fn parse_confidence_request(line: &str) -> Option<ConfidenceSpec> {
    let rest = &line[line.find("+/-")? + 3..];
    let half_width: f64 = rest[..rest.find('%')?].trim().parse().ok()?;
    let after_at = &rest[rest.find('@')? + 1..];
    let level: u32 = after_at[..after_at.find('%')?].trim().parse().ok()?;
    Some(ConfidenceSpec {
        level_pct: level,
        width_pct: 2.0 * half_width,
    })
}

/// `!!! Confidence intervals: Throughput      : 6.686%` -> 6.686.
pub(super) fn parse_warning_width(line: &str) -> Option<f64> {
    let rest = &line[line.find("Throughput")? + "Throughput".len()..];
    let rest = rest.trim_start().strip_prefix(':')?;
    rest.trim().trim_end_matches('%').trim().parse().ok()
}
