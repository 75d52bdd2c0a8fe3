//! The paste never lies about a column: every text layout (a run as
//! `archive show` prints it, `compare` in netperf's layout with its size
//! sweeps, `--layout matrix`, `--layout stats`, `--email` of both, and
//! `history`) rendered by the binary over a matrix of archived runs:
//! every test kind, with and without the CPU figures of both ends,
//! 8- and 9-digit sizes, side names of 7, 11-12 and 30 characters, names
//! that differ only after their tenth character, and names with control
//! characters and non-ASCII letters.
//!
//! What every line must keep:
//! - width: at most 80 columns (72 with `--email`), ASCII, no control
//!   character but the line's end;
//! - columns: in the right-aligned tables of `compare`, `history` and
//!   the bisect report, every figure of a row ends in a column where a
//!   word of the table's header ends (a change's mark, `~ ! + ?`, counts
//!   with its figure); in `show`, netperf's own layout, every figure
//!   stands under one word of the header's last line (`bytes`, `secs.`)
//!   and reaches into no other;
//! - names: two sides never print under the same name;
//! - figures: a figure that is not zero keeps two significant digits
//!   (no `0.00` or `0.01` for a small rate).

use run_record::record::{CpuFigures, Iteration, RunRecord, UdpFigures};
use run_record::spec::{ReportedSocketBuffers, TestKind};
use std::path::Path;
use test_fixtures::record::RecordBuilder;

use crate::compare::{around, import};

/// A 9-digit socket buffer (256 MiB, the largest a spec takes) and an
/// 8-digit one.
const SOCKET_9: u32 = 268_435_456;
const SOCKET_8: u32 = 12_582_912;

/// Message or request sizes of a sweep of `test`: the largest are
/// 8 digits where the test takes them.
fn sizes(test: TestKind) -> [u32; 3] {
    match test {
        TestKind::UdpStream => [1, 1472, 65_507],
        TestKind::TcpRr | TestKind::TcpCrr | TestKind::UdpRr => [1, 64, 65_507],
        _ => [1, 16_384, 16_777_216],
    }
}

/// The pairs of side names (labels) every layout is rendered with.
fn name_pairs() -> Vec<(String, String)> {
    vec![
        ("current".to_string(), "patched".to_string()),
        ("nosg-gso-on".to_string(), "nosg-gso-off".to_string()),
        (
            "baseline-gro-on-tso-on-mtu9000".to_string(),
            "baseline-gro-on-tso-on-mtu1500".to_string(),
        ),
        (
            "org\u{1b}[31mred\nx".to_string(),
            "new-caf\u{e9}".to_string(),
        ),
    ]
}

/// The CPU figures a run measured: netperf's `-c`, `-C`, both, with
/// the figures of a loopback run or the widest a guest gives (every CPU
/// busy, a service demand of five digits).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cpu {
    None,
    Local,
    Remote,
    Both,
    BothWide,
}

impl Cpu {
    const ALL: [Cpu; 5] = [Cpu::None, Cpu::Local, Cpu::Remote, Cpu::Both, Cpu::BothWide];

    /// The figures of a run of `rr` (a request/response test or not).
    fn figures(self, rr: bool) -> Option<CpuFigures> {
        let (util, demand) = match self {
            Cpu::None => return None,
            Cpu::BothWide => (
                [100.0, 100.0],
                if rr {
                    [98765.432, 87654.321]
                } else {
                    [4321.125, 3210.875]
                },
            ),
            _ => (
                [12.5, 37.25],
                if rr { [25.125, 41.5] } else { [0.875, 1.125] },
            ),
        };
        let local = self != Cpu::Remote;
        let remote = self != Cpu::Local;
        Some(CpuFigures {
            local_util_pct: local.then_some(util[0]),
            remote_util_pct: remote.then_some(util[1]),
            local_service_demand: local.then_some(demand[0]),
            remote_service_demand: remote.then_some(demand[1]),
        })
    }

    /// The testbed of its runs: the wide figures on one of their own, so
    /// that their configurations are not those of the narrow ones.
    fn testbed(self) -> &'static str {
        if self == Cpu::BothWide {
            "guest"
        } else {
            "default"
        }
    }
}

/// One run of `test` on one side: three iterations around `level`
/// (throughput, or the rate of an RR test), the CPU figures of `cpu`,
/// sizes as a netperf text would report them granted.
fn run(
    test: TestKind,
    cpu: Cpu,
    size: u32,
    duration_s: f64,
    label: &str,
    level: f64,
    seed: u64,
) -> RunRecord {
    let rr = test.is_request_response();
    let cpu_figures = cpu.figures(rr);
    let samples = around(level, 0.02, 3, seed);
    let iterations: Vec<Iteration> = samples
        .iter()
        .map(|&sample| {
            let throughput_bps = if rr {
                sample * f64::from(size) * 2.0 * 8.0
            } else {
                sample
            };
            let messages = (throughput_bps * duration_s / 8.0 / f64::from(size)).max(1.0) as u64;
            Iteration {
                elapsed_s: duration_s,
                throughput_bps,
                transaction_rate: rr.then_some(sample),
                transactions: rr.then_some((sample * duration_s) as u64),
                messages_sent: (test == TestKind::UdpStream).then_some(messages),
                messages_received: (test == TestKind::UdpStream).then_some(messages),
                send_errors: (test == TestKind::UdpStream).then_some(0),
                cpu: cpu_figures.clone(),
                ..Iteration::default()
            }
        })
        .collect();
    let udp_totals = (test == TestKind::UdpStream).then(|| {
        let sent: u64 = iterations.iter().filter_map(|i| i.messages_sent).sum();
        UdpFigures {
            messages_sent: sent,
            messages_received: sent,
            loss_pct: 0.0,
            send_errors: Some(0),
        }
    });
    RecordBuilder::new(test)
        .label(label)
        .testbed(cpu.testbed())
        .commit("1a2b3c4d5e6f708192a3b4c5d6e7f80912345678")
        .started_at(&format!(
            "2026-11-30T{:02}:{:02}:00.000000Z",
            seed / 60,
            seed % 60
        ))
        .finished_at(&format!(
            "2026-11-30T{:02}:{:02}:30.000000Z",
            seed / 60,
            seed % 60
        ))
        .spec_with(|spec| {
            spec.duration_s = duration_s;
            spec.local_cpu = !matches!(cpu, Cpu::None | Cpu::Remote);
            spec.remote_cpu = !matches!(cpu, Cpu::None | Cpu::Local);
            if rr {
                spec.request_size_bytes = size;
                spec.response_size_bytes = size;
            } else {
                spec.send_size_bytes = size;
            }
            spec.reported_socket_buffers = Some(ReportedSocketBuffers {
                local_send_bytes: Some(SOCKET_8),
                local_recv_bytes: Some(SOCKET_9),
                remote_send_bytes: Some(SOCKET_8),
                remote_recv_bytes: Some(SOCKET_9),
            });
        })
        .iterations(iterations)
        .summary_with(move |summary| {
            summary.cpu = cpu_figures;
            summary.udp = udp_totals;
        })
        .build()
}

/// Every configuration of the matrix for both sides, the patched side
/// 5% slower: three sizes of 10 s (a sweep in netperf's layout) and the
/// largest again of 20 s (a table of its own). RR tests run at a rate of
/// a few hundred transactions a second, so that 1-byte transactions move
/// a few kbit/s.
fn runs(first: &str, second: &str) -> Vec<RunRecord> {
    let mut records = Vec::new();
    let mut seed = 1;
    for test in TestKind::ALL {
        for cpu in Cpu::ALL {
            let [small, middle, large] = sizes(test);
            for (size, duration_s) in [(small, 10.0), (middle, 10.0), (large, 10.0), (large, 20.0)]
            {
                let level = if test.is_request_response() {
                    450.0
                } else {
                    9.4e9 * f64::from(size.min(1472)) / 1472.0
                };
                for (label, factor) in [(first, 1.0), (second, 0.95)] {
                    records.push(run(
                        test,
                        cpu,
                        size,
                        duration_s,
                        label,
                        level * factor,
                        seed,
                    ));
                    seed += 1;
                }
            }
        }
    }
    records
}

/// A word of a line and the columns it spans, `start..end`.
#[derive(Clone, Debug)]
struct Word {
    text: String,
    start: usize,
    end: usize,
}

/// The words of `line` split at runs of at least `gap` spaces.
fn words(line: &str, gap: usize) -> Vec<Word> {
    let mut words = Vec::new();
    let bytes = line.as_bytes();
    let mut idx = 0;
    while idx < bytes.len() {
        if bytes[idx] == b' ' {
            idx += 1;
            continue;
        }
        let start = idx;
        loop {
            while idx < bytes.len() && bytes[idx] != b' ' {
                idx += 1;
            }
            let spaces = bytes[idx..].iter().take_while(|&&b| b == b' ').count();
            if spaces == 0 || spaces >= gap || idx + spaces >= bytes.len() {
                break;
            }
            idx += spaces;
        }
        words.push(Word {
            text: line[start..idx].to_string(),
            start,
            end: idx,
        });
    }
    words
}

/// A figure: a number, a percentage or `-` (not a time zone, `+0000`).
fn is_figure(text: &str) -> bool {
    let body = text.trim_start_matches(['+', '-']).trim_end_matches('%');
    let signed = text.starts_with(['+', '-']);
    text == "-"
        || (!body.is_empty()
            && (!signed || text.contains(['.', '%']))
            && body.chars().all(|c| c.is_ascii_digit() || c == '.')
            && body.chars().any(|c| c.is_ascii_digit()))
}

fn is_mark(text: &str) -> bool {
    matches!(text, "~" | "!" | "+" | "?" | "!!!")
}

/// A row of a table: two figures or more, at least as many figures as
/// other words (a title or a command has fewer), no word of prose (a word
/// ending with a colon) and no option of a command (`--end-repeats 3`).
fn is_row(line: &str) -> bool {
    let words = words(line, 1);
    let n_figures = words.iter().filter(|word| is_figure(&word.text)).count();
    n_figures >= 2
        && n_figures * 2 >= words.len()
        && !words
            .iter()
            .any(|word| word.text.ends_with(':') || word.text.starts_with("--"))
}

/// The figures of a row, each with the column it ends in with the mark
/// after it (if any); words after a history's `<--` marker are not
/// figures of the table.
fn figures_of(line: &str) -> Vec<(Word, Option<usize>)> {
    let words = words(line, 1);
    let mut figures = Vec::new();
    for (idx, word) in words.iter().enumerate() {
        if word.text.starts_with("<--") || word.text.starts_with("^--") {
            break;
        }
        if is_figure(&word.text) {
            let with_mark = words
                .get(idx + 1)
                .filter(|next| is_mark(&next.text))
                .map(|next| next.end);
            figures.push((word.clone(), with_mark));
        }
    }
    figures
}

/// How the figures of a layout's tables line up.
#[derive(Clone, Copy, PartialEq)]
enum Alignment {
    /// Each figure ends where a header word ends.
    Right,
    /// Each figure stands under one word of the header's last line.
    Netperf,
    /// Only the width and the characters are checked (a list whose run
    /// ids may be all digits).
    Free,
}

/// The problems of `text`, a layout's output at most `width` columns
/// wide, each naming its line.
fn problems(text: &str, width: usize, alignment: Alignment) -> Vec<String> {
    let mut found = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (idx, line) in lines.iter().enumerate() {
        let number = idx + 1;
        if line.chars().count() > width {
            found.push(format!(
                "line {number}: {} columns, over {width}: {line:?}",
                line.chars().count()
            ));
        }
        if !line.is_ascii() || line.chars().any(|c| c.is_control()) {
            found.push(format!("line {number}: not plain ASCII: {line:?}"));
        }
    }
    let mut idx = 0;
    while idx < lines.len() {
        if !is_row(lines[idx]) {
            idx += 1;
            continue;
        }
        let first_row = idx;
        while idx < lines.len() && is_row(lines[idx]) {
            idx += 1;
        }
        // The header: the lines right above the rows (past one blank
        // line), up to a blank line, without prose.
        let mut top = first_row;
        if top > 0 && lines[top - 1].trim().is_empty() {
            top -= 1;
        }
        let mut header: Vec<&str> = Vec::new();
        while top > 0 && !lines[top - 1].trim().is_empty() {
            top -= 1;
            header.insert(0, lines[top]);
        }
        header.retain(|line| {
            let line = line.trim_end();
            !line.ends_with(':') && !line.ends_with('.') && !is_row(line)
        });
        if header.is_empty() || alignment == Alignment::Free {
            continue;
        }
        for (row_idx, row) in lines.iter().enumerate().take(idx).skip(first_row) {
            let aligned = match alignment {
                Alignment::Right => {
                    let ends: Vec<usize> = header
                        .iter()
                        .flat_map(|line| words(line, 1))
                        .map(|word| word.end)
                        .collect();
                    figures_of(row)
                        .iter()
                        .filter(|(figure, mark)| {
                            !ends.contains(&figure.end)
                                && !mark.is_some_and(|end| ends.contains(&end))
                        })
                        .map(|(figure, _)| figure.text.clone())
                        .collect::<Vec<_>>()
                }
                Alignment::Free => Vec::new(),
                Alignment::Netperf => {
                    let units = words(header.last().unwrap(), 2);
                    figures_of(row)
                        .iter()
                        .filter(|(figure, _)| {
                            units
                                .iter()
                                .filter(|unit| figure.start < unit.end && unit.start < figure.end)
                                .count()
                                != 1
                        })
                        .map(|(figure, _)| figure.text.clone())
                        .collect::<Vec<_>>()
                }
            };
            if !aligned.is_empty() {
                found.push(format!(
                    "line {}: {aligned:?} out of line with the header {:?}: {row:?}",
                    row_idx + 1,
                    header.last().unwrap()
                ));
            }
            for (figure, _) in figures_of(row) {
                if let Some(problem) = too_few_digits(&figure.text) {
                    found.push(format!("line {}: {problem}: {row:?}", row_idx + 1));
                }
            }
        }
    }
    found
}

/// A figure of two decimals or more (a rate, a throughput, a service
/// demand) printed as zero or with fewer than two significant digits. The
/// inputs hold no zero figure.
fn too_few_digits(text: &str) -> Option<String> {
    let decimals = text.split_once('.').map_or(0, |(_, after)| after.len());
    if text.ends_with('%') || decimals < 2 {
        return None;
    }
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0').len();
    (significant < 2).then(|| format!("{text} keeps {significant} significant digit(s)"))
}

/// Two sides printed under one name: two rows in a row that begin with
/// the same name, or a head row naming both sides alike
/// (`nosg-gso-o nosg-gso-o`).
fn names_apart(text: &str, first: &str, second: &str, context: &str) -> Vec<String> {
    let mut found = Vec::new();
    let is_side = |name: &str| {
        let name = name.trim_end_matches('~');
        !name.is_empty() && first.starts_with(name) && second.starts_with(name)
    };
    let lines: Vec<&str> = text.lines().filter(|line| is_row(line)).collect();
    for pair in lines.windows(2) {
        let name_of = |line: &str| line.split_whitespace().next().unwrap_or("").to_string();
        let (above, below) = (name_of(pair[0]), name_of(pair[1]));
        if above == below && !is_figure(&above) && is_side(&above) {
            found.push(format!(
                "{context}: both sides print as {above:?}: {:?}",
                pair[1]
            ));
        }
    }
    for line in text.lines() {
        let words = words(line, 1);
        let heads: Vec<&str> = words.iter().map(|word| word.text.as_str()).collect();
        // Two different names printed identically side by side in a head
        // row: `nosg-gso-o nosg-gso-o`.
        for pair in heads.windows(2) {
            if pair[0] == pair[1] && !is_figure(pair[0]) && is_side(pair[0]) {
                found.push(format!(
                    "{context}: both sides print as {:?}: {line:?}",
                    pair[0]
                ));
            }
        }
    }
    found
}

struct Archive {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

fn archive_of(records: &[RunRecord]) -> Archive {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("archive.db");
    import(&path, records);
    Archive { _dir: dir, path }
}

fn output(archive: &Path, args: &[&str]) -> String {
    let output = crate::netbisect_with(archive).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Checks `text` and adds what is wrong to `found`, with the command.
fn check(found: &mut Vec<String>, args: &[&str], text: &str, width: usize, alignment: Alignment) {
    for problem in problems(text, width, alignment) {
        found.push(format!("{}: {problem}", args.join(" ")));
    }
}

#[test]
fn every_layout_keeps_its_width_and_its_columns() {
    let mut found = Vec::new();
    for (first, second) in name_pairs() {
        let records = runs(&first, &second);
        let archive = archive_of(&records);
        let label = |name: &str| format!("label:{name}");
        let (a, b) = (label(&first), label(&second));
        for (layout, email) in [
            ("netperf", false),
            ("netperf", true),
            ("matrix", false),
            ("matrix", true),
            ("stats", false),
        ] {
            let mut args = vec!["compare", a.as_str(), b.as_str(), "--layout", layout];
            if email {
                args.push("--email");
            }
            let text = output(&archive.path, &args);
            check(
                &mut found,
                &args,
                &text,
                if email { 72 } else { 80 },
                Alignment::Right,
            );
            found.extend(names_apart(&text, &first, &second, &args.join(" ")));
        }
        let args = ["archive", "list"];
        let text = output(&archive.path, &args);
        check(&mut found, &args, &text, 80, Alignment::Free);
        // One run of each configuration, as `archive show` prints it.
        for record in records
            .iter()
            .filter(|record| record.subject.label.as_deref() == Some(&first))
        {
            let args = ["archive", "show", record.id.as_str()];
            let text = output(&archive.path, &args);
            check(&mut found, &args, &text, 80, Alignment::Netperf);
        }
        // A history of each configuration, across its runs in time order.
        for record in records
            .iter()
            .filter(|record| record.subject.label.as_deref() == Some(&first))
        {
            let metric = if record.spec.test.is_request_response() {
                "transaction_rate"
            } else {
                "throughput_bps"
            };
            let args = [
                "history",
                "--metric",
                metric,
                "--config-key",
                &record.config_key[..16],
            ];
            let text = output(&archive.path, &args);
            check(&mut found, &args, &text, 80, Alignment::Right);
        }
    }
    assert!(
        found.is_empty(),
        "{} problems:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// `bench --sweep`'s table with a 30-character label and the options
/// off netperf's defaults that its title must name: -c -C, a burst and
/// nodelay.
#[test]
fn a_bench_sweep_keeps_its_width_and_names_its_options() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let args = [
        "bench",
        "-t",
        "TCP_RR",
        "-l",
        "0.05",
        "--sweep",
        "r=1,64,65507",
        "--label",
        "baseline-gro-on-tso-on-mtu9000",
        "--no-archive",
        "-c",
        "-C",
        "--",
        "-b",
        "4",
        "-D",
    ];
    let text = output(&archive, &args);
    let mut found = Vec::new();
    check(&mut found, &args, &text, 80, Alignment::Right);
    assert!(found.is_empty(), "{}", found.join("\n"));
    let title: String = text
        .split("\n\n")
        .next()
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(title.contains(" -c -C -b 4 nodelay"), "{text}");
    assert!(!title.contains("-m "), "{text}");
}

/// A bisection's report: its lines within 80 columns, its steps' figures
/// in their columns, its date as git prints dates, and its reproduce
/// command continued with a backslash between words only, a double-quoted
/// word of the build command (`CC="ccache gcc"`) whole.
#[test]
fn a_bisect_report_keeps_its_width_and_its_commands_whole() {
    use test_fixtures::git::GitRepo;
    let fixture = crate::bisect::fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = crate::bisect::linear(&repo, 4, 2, &|_| Vec::new());
    let (good, bad) = (ids[0].to_string(), ids[3].to_string());
    let build = "CC=\"ccache gcc\" KCFLAGS=\"-O2 -g -fno-omit-frame-pointer\" sh build.sh \
                 && test -f out/socket_size";
    let measure = crate::bisect::measure_command("");
    let (code, _, stderr) = fixture.run(&[
        "bisect",
        "start",
        "--good",
        &good,
        "--bad",
        &bad,
        "--build",
        build,
        "--measure",
        &measure,
        "--end-repeats",
        "3",
        "--confirm-repeats",
        "2",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = fixture.run(&["bisect", "run"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, text, stderr) = fixture.run(&["bisect", "report"]);
    assert_eq!(code, 0, "{stderr}");
    let mut found = Vec::new();
    check(
        &mut found,
        &["bisect", "report"],
        &text,
        80,
        Alignment::Right,
    );
    assert!(found.is_empty(), "{}\n{text}", found.join("\n"));
    let date = text
        .lines()
        .find_map(|line| line.strip_prefix("  Date:   "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(date.ends_with(" +0000") && !date.contains('T'), "{date}");
    // The reproduce lines, as sh reads them.
    let reproduce: Vec<&str> = text
        .split("Reproduce:\n\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|line| !line.is_empty())
        .collect();
    for line in &reproduce {
        assert!(!line.contains("\"ccache'"), "{reproduce:#?}");
    }
    let joined = reproduce.join("\n").replace("\\\n", "");
    let words = shlex::split(joined.lines().next().unwrap()).unwrap();
    let at = words.iter().position(|word| word == "--build").unwrap();
    assert_eq!(words[at + 1], build, "{reproduce:#?}");
}

/// Labels of 150 characters (from an import or a merged archive of
/// another lab), one with an escape sequence, on sides whose
/// environments differ and that each have a configuration the other
/// lacks: every line of --email stays within 72 columns and ASCII, every
/// line of the terminal's layouts and of `archive list` within 80.
#[test]
fn a_150_character_label_keeps_the_email_within_72_columns() {
    let first = format!("{}-gro-on", "x".repeat(142));
    let second = format!("\u{1b}]0;title\u{7}{}-gro-off", "x".repeat(133));
    let mut records: Vec<RunRecord> = runs(&first, &second)
        .into_iter()
        .filter(|record| matches!(record.spec.test, TestKind::TcpStream | TestKind::TcpRr))
        .map(|mut record| {
            if record.subject.label.as_deref() == Some(second.as_str()) {
                record
                    .env
                    .local
                    .sysctls
                    .insert("net.core.rmem_max".to_string(), "4194304".to_string());
                record.seal().unwrap();
            }
            record
        })
        .collect();
    for (label, duration_s, seed) in [(&first, 30.0, 900), (&second, 40.0, 901)] {
        records.push(run(
            TestKind::TcpStream,
            Cpu::None,
            16_384,
            duration_s,
            label,
            9.4e9,
            seed,
        ));
    }
    let archive = archive_of(&records);
    let (a, b) = (format!("label:{first}"), format!("label:{second}"));
    let mut found = Vec::new();
    for (layout, email) in [
        ("netperf", true),
        ("matrix", true),
        ("netperf", false),
        ("matrix", false),
        ("stats", false),
    ] {
        let mut args = vec!["compare", &a, &b, "--layout", layout];
        if email {
            args.push("--email");
        }
        let text = output(&archive.path, &args);
        check(
            &mut found,
            &args,
            &text,
            if email { 72 } else { 80 },
            Alignment::Right,
        );
        found.extend(names_apart(&text, &first, &second, layout));
    }
    let args = ["archive", "list"];
    let text = output(&archive.path, &args);
    check(&mut found, &args, &text, 80, Alignment::Free);
    let record = &records[records.len() - 1];
    let args = ["archive", "show", record.id.as_str()];
    let text = output(&archive.path, &args);
    check(&mut found, &args, &text, 80, Alignment::Netperf);
    let args = [
        "history",
        "--metric",
        "throughput_bps",
        "--label",
        &second,
        "--config-key",
        &record.config_key[..16],
    ];
    let text = output(&archive.path, &args);
    check(&mut found, &args, &text, 80, Alignment::Right);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A matrix of runs with the CPU figures of both ends (-c -C) gives,
/// under each row, both sides' utilisation and service demand, local and
/// remote, within the width, in their columns.
#[test]
fn a_matrix_shows_the_cpu_of_both_ends_of_both_sides() {
    let mut found = Vec::new();
    for (first, second) in name_pairs().into_iter().take(3) {
        let records: Vec<RunRecord> = runs(&first, &second)
            .into_iter()
            .filter(|record| {
                record.spec.local_cpu && record.spec.remote_cpu && record.testbed == "default"
            })
            .collect();
        let archive = archive_of(&records);
        let (a, b) = (format!("label:{first}"), format!("label:{second}"));
        for email in [false, true] {
            let mut args = vec!["compare", a.as_str(), b.as_str(), "--layout", "matrix"];
            if email {
                args.push("--email");
            }
            let text = output(&archive.path, &args);
            check(
                &mut found,
                &args,
                &text,
                if email { 72 } else { 80 },
                Alignment::Right,
            );
            found.extend(names_apart(&text, &first, &second, "matrix"));
            // Every row is followed by its CPU line: 37.25 is the remote
            // utilisation of every run, 41.500 or 1.125 the remote S.dem.
            let cpu_lines = text
                .lines()
                .filter(|line| line.contains("41.500") || line.contains("1.125"))
                .count();
            assert_eq!(cpu_lines, records.len() / 2, "{text}");
            if !email {
                assert!(text.contains("37.25"), "{text}");
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Pairs of sides (`compare A1,A2 B1,B2`) whose labels differ in a long
/// setting: the matrix's setting column is shortened apart with a
/// legend, every line within the width.
#[test]
fn a_matrix_of_pairs_of_sides_keeps_its_width() {
    let long = |setting: &str, fill: &str| format!("{setting}-{}", fill.repeat(80));
    let (on, off) = (long("gso-on", "a"), long("gso-off", "b"));
    let labels = [
        format!("org-{on}"),
        format!("org-{off}"),
        format!("new-{on}"),
        format!("new-{off}"),
    ];
    let mut records = runs(&labels[0], &labels[2]);
    records.extend(runs(&labels[1], &labels[3]));
    let records: Vec<RunRecord> = records
        .into_iter()
        .filter(|record| matches!(record.spec.test, TestKind::TcpStream | TestKind::TcpRr))
        .collect();
    let archive = archive_of(&records);
    let label = |idx: usize| format!("label:{}", labels[idx]);
    let (a, b) = (
        format!("{},{}", label(0), label(1)),
        format!("{},{}", label(2), label(3)),
    );
    let mut found = Vec::new();
    for email in [false, true] {
        let mut args = vec!["compare", &a, &b, "--layout", "matrix"];
        if email {
            args.push("--email");
        }
        let text = output(&archive.path, &args);
        check(
            &mut found,
            &args,
            &text,
            if email { 72 } else { 80 },
            Alignment::Free,
        );
        // The rows name the setting shortened, and the legend in full.
        let setting = |fill: &str| {
            text.lines()
                .find(|line| line.contains(&fill.repeat(60)))
                .unwrap_or_else(|| panic!("no legend of {fill}: {text}"))
                .to_string()
        };
        assert!(setting("a").contains("on-"), "{text}");
        assert!(setting("b").contains("off-"), "{text}");
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
