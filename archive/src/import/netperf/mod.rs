//! netperf output: classic tables, omni `-k` keyval and omni `-o` CSV.
//!
//! Every form starts with netperf's banner line (`MIGRATED TCP STREAM TEST
//! from ... to HOST () port 0 AF_INET : demo`), which names the test, the
//! remote host, the address family and, with `-I`, the requested
//! confidence interval (`: +/-2.500% @ 99% conf.`). A `!!!` warning block
//! (confidence not reached) may follow; its throughput interval becomes
//! the record's confidence outcome. Older netperfs' banners (`UDP
//! UNIDIRECTIONAL SEND TEST`, `TCP STREAM TEST ... : +/-2.500% @ 95%
//! conf.  : demo`) read the same; the notes `: first burst N` and `:
//! nodelay` enter the spec.
//!
//! An input may hold several outputs (a log appended to, an email): each
//! runs from its banner to the next. Text before the first banner, and
//! after a table's block of results, is not read, except that a line of
//! numbers there is refused rather than dropped. A table whose rows begin
//! with a word (`current`, `patched`, `Org:`) gives one run per such row,
//! labelled by the word; an unlabelled line under one is its second line,
//! and so is a line with the same word and the figures of a second line
//! (mails write the side name on both lines of a UDP_STREAM run). Lines
//! a mail client broke are first joined back where netperf's layout
//! leaves one reading (`unwrap`).
//!
//! Nothing is guessed: the first line of a run needs a figure for every
//! column, a run needs all its lines (request/response rows given by side
//! name may leave out the second, which holds only socket sizes), and an
//! input whose last line lacks its end was cut and is refused.
//!
//! netperf's tables print the socket buffer sizes the kernel granted
//! right after setup, not those requested (`-s 87380` prints 174760 on
//! Linux): they are kept as the spec's reported buffers, never as its
//! `-s`/`-S`, which the text does not give (omni's `*_SIZE_REQ` are the
//! requests and are read as such). Every figure is kept as printed: the
//! UDP_STREAM sender's throughput too, beside the receiver's. The elapsed
//! time rounded to whole seconds is taken as the test length (`-l` takes
//! whole seconds). A CPU figure of -1 means "not measured" and is
//! dropped.
//!
//! The parts: `unwrap` joins what a mail client broke, `banner` reads the
//! banner and its warning block, `omni` the keyval and CSV forms,
//! `classic` the tables, and `values` the numbers, sizes and throughput
//! units all of them share.

use super::{
    Format, ImportError, ImportOptions, MAX_RUNS_PER_INPUT, PeerRun, RecordSink, build_record,
};
use banner::{parse_banner, parse_warning_width};
use classic::{ClassicRun, classic_runs};
use omni::{is_keyval_line, omni_figures, parse_csv, parse_keyval};
use run_record::record::{ConfidenceOutcome, Endpoint, Environments, RunRecord, Source};
use run_record::spec::RunSpec;
use unwrap::unwrap_section;

mod banner;
mod classic;
mod omni;
mod unwrap;
mod values;

pub use banner::is_banner;

/// Parses every netperf output in `text`: each starts at a banner line
/// and runs to the next one. Lines before the first banner (the prose of
/// an email) are not read.
pub fn parse(text: &str, options: &ImportOptions) -> Result<(Format, Vec<RunRecord>), ImportError> {
    let mut records = Vec::new();
    let format = parse_each(text, options, &mut |record, _| {
        records.push(record);
        Ok(())
    })?;
    Ok((format, records))
}

/// Parses every netperf output in `text` as [`parse`] does, handing each
/// run to `sink` as it is built instead of keeping them.
pub(crate) fn parse_each(
    text: &str,
    options: &ImportOptions,
    sink: RecordSink<'_>,
) -> Result<Format, ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&idx| is_banner(lines[idx]))
        .collect();
    let mut format = None;
    let mut n_runs = 0_usize;
    let per_output = options.for_outputs(starts.len())?;
    for (start_idx, &start) in starts.iter().enumerate() {
        // Runs are counted as they are read: the line that starts one
        // past the ceiling is refused before any line after it is read.
        let room = MAX_RUNS_PER_INPUT.saturating_sub(n_runs);
        if room == 0 {
            return Err(runs_past_limit(start + 1));
        }
        let end = starts.get(start_idx + 1).copied().unwrap_or(lines.len());
        let section = unwrap_section(&lines[start..end], start + 1)?;
        let section_lines: Vec<&str> = section.lines.iter().map(String::as_str).collect();
        // What `sink` refuses names its line in the input already.
        let mut refused = None;
        let mut section_sink = |record: RunRecord, line_no: usize| {
            n_runs += 1;
            sink(record, section.input_line(line_no)).inspect_err(|err| refused = Some(err.clone()))
        };
        let parsed = parse_section(
            &section_lines,
            0,
            &per_output[start_idx],
            room,
            &mut section_sink,
        );
        if let Some(err) = refused {
            return Err(err);
        }
        let section_format = parsed.map_err(|err| section.renumber(err))?;
        format.get_or_insert(section_format);
    }
    // A cut in the middle of the last line would leave a figure shorter
    // than printed; netperf ends every line, so a last line without its
    // end is refused rather than read.
    if let Some(last) = lines.last().filter(|line| !line.trim().is_empty())
        && !text.ends_with('\n')
        && !starts.is_empty()
    {
        return Err(ImportError::parse(
            lines.len(),
            format!(
                "the input ends inside this line (cut short?): \"{}\"",
                last.trim()
            ),
        ));
    }
    format.ok_or(ImportError::Empty)
}

/// The input refused at `line`, which starts the first run past
/// [`MAX_RUNS_PER_INPUT`].
pub(super) fn runs_past_limit(line: usize) -> ImportError {
    ImportError::TooManyRuns {
        count: MAX_RUNS_PER_INPUT + 1,
        line: Some(line),
    }
}

/// Parses the netperf output whose banner is `lines[start]` and which
/// runs to the end of `lines`. Line numbers are those of the whole input.
fn parse_section(
    lines: &[&str],
    start: usize,
    options: &ImportOptions,
    room: usize,
    sink: RecordSink<'_>,
) -> Result<Format, ImportError> {
    let banner = parse_banner(lines[start], start + 1)?;
    let mut line_idx = start + 1;
    let mut achieved_width = None;
    while let Some(line) = lines.get(line_idx) {
        let trimmed = line.trim();
        if trimmed.starts_with("!!!") {
            if achieved_width.is_none() {
                achieved_width = parse_warning_width(trimmed);
            }
        } else if !trimmed.is_empty() {
            break;
        }
        line_idx += 1;
    }
    let Some(first_body) = lines.get(line_idx) else {
        return Err(ImportError::parse(
            lines.len().max(start + 1),
            "netperf banner without results",
        ));
    };
    let mut spec = RunSpec::defaults(banner.test);
    spec.family = banner.family;
    spec.confidence = banner.confidence.clone();
    spec.first_burst = banner.first_burst;
    spec.nodelay = banner.nodelay;
    let (format, runs) = if is_keyval_line(first_body) {
        let values = parse_keyval(lines, line_idx)?;
        let figures = omni_figures(&values, &mut spec, line_idx + 1)?;
        (
            Format::NetperfKeyval,
            vec![ClassicRun::unlabelled(line_idx + 1, spec, figures)],
        )
    } else if first_body.contains(',') {
        let values = parse_csv(lines, line_idx)?;
        let figures = omni_figures(&values, &mut spec, line_idx + 1)?;
        (
            Format::NetperfCsv,
            vec![ClassicRun::unlabelled(line_idx + 1, spec, figures)],
        )
    } else {
        (
            Format::NetperfClassic,
            classic_runs(lines, line_idx, &spec, room)?,
        )
    };
    for run in runs {
        let ClassicRun {
            label,
            line_no,
            mut spec,
            figures,
        } = run;
        if let Some(elapsed) = figures.elapsed_s {
            spec.duration_s = elapsed.round().max(1.0);
        }
        let confidence = match (&spec.confidence, achieved_width) {
            (Some(requested), Some(width_pct)) => {
                let mean = if banner.test.is_request_response() {
                    figures.transaction_rate
                } else {
                    figures.throughput_bps
                }
                .unwrap_or(0.0);
                Some(ConfidenceOutcome {
                    level_pct: requested.level_pct,
                    low: mean * (1.0 - width_pct / 200.0),
                    high: mean * (1.0 + width_pct / 200.0),
                    width_pct,
                    target_width_pct: requested.width_pct,
                    met: width_pct <= requested.width_pct,
                })
            }
            _ => None,
        };
        let run = PeerRun {
            source: Source {
                tool: String::from("netperf"),
                version: None,
                undated: false,
            },
            spec,
            endpoint: Endpoint {
                host: banner.host.clone(),
                port: None,
            },
            env: Environments::default(),
            started_at: None,
            figures,
            confidence,
        };
        let run_options = match &label {
            Some(side) if options.labels_outputs() => {
                return Err(ImportError::parse(
                    line_no,
                    format!(
                        "this output names its sides (\"{side}\"); output labels are \
                         for outputs without side names"
                    ),
                ));
            }
            Some(label) => options.with_side_label(label),
            None => options.clone(),
        };
        let record = build_record(run, &run_options)
            .map_err(|err| ImportError::parse(line_no, err.to_string()))?;
        sink(record, line_no)?;
    }
    Ok(format)
}
