//! Bisection pages, from the archive's session store: every commit the
//! bisection measured with its samples, the decision on each step (the
//! verdict and its log-likelihood ratio, as journaled), the skips, and
//! how it ended. The journal alone gives all of that; when the session's
//! repository can still be opened, the commits are put in git order with
//! their subjects, and the end is replayed as `bisect report` states it
//! (the culprit's posterior probability or confidence, and the size of
//! the change).

use super::chart::{ChartMarker, ChartPoint, DrawnSvg, SeriesChart, format_value, series_svg};
use super::html::{Cell, escape, page, table};
use super::series::{LEVEL, Scale, scale_of};
use anyhow::Context;
use archive::Archive;
use archive::journal::BisectSession;
use bisect::JournalEvent;
use bisect::config::BisectConfig;
use bisect::decision::Verdict;
use bisect::graph::CommitGraph;
use bisect::report::{BisectResult, Outcome};
use run_record::record::Metric;
use run_record::spec::TestKind;
use run_record::stats;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A bisection's page.
pub struct BisectionPage {
    /// File name.
    pub file: String,
    /// Plain-text title.
    pub title: String,
    /// How it stands or ended, a few words.
    pub state: String,
    /// The page.
    pub html: String,
    /// The chart alone (for `bisect report --svg`).
    pub svg: Option<DrawnSvg>,
}

/// What the journal says of one commit.
#[derive(Default)]
struct CommitLog {
    samples: Vec<f64>,
    /// The verdict, the step it was given at (from 1), its samples and
    /// log-likelihood ratio.
    verdict: Option<(Verdict, u32, u32, f64)>,
    skip: Option<String>,
    first_seen: usize,
}

/// The log of `commit`, made when the journal first names it.
fn log_of<'a>(
    commits: &'a mut BTreeMap<String, CommitLog>,
    commit: &str,
    n_seen: &mut usize,
) -> &'a mut CommitLog {
    let first_seen = *n_seen;
    *n_seen += 1;
    commits
        .entry(commit.to_string())
        .or_insert_with(|| CommitLog {
            first_seen,
            ..CommitLog::default()
        })
}

/// The journal's events of `session`, decoded.
pub fn session_events(
    archive: &Archive,
    session: &BisectSession,
) -> anyhow::Result<Vec<JournalEvent>> {
    let texts = archive
        .session_events(session.id)
        .context("failed to read the archive")?;
    texts
        .iter()
        .map(|text| serde_json::from_str(text))
        .collect::<Result<_, _>>()
        .with_context(|| format!("the journal of bisection session {} is damaged", session.id))
}

/// The commit graph of the session's range, when its repository can
/// still be opened and holds both ends.
fn graph_of(repo: &str, good: &str, bad: &str, first_parent: bool) -> Option<CommitGraph> {
    let repo = bisect::range::discover(std::path::Path::new(repo)).ok()?;
    let good = bisect::range::resolve(&repo, good).ok()?;
    let bad = bisect::range::resolve(&repo, bad).ok()?;
    bisect::range::load(&repo, good, bad, first_parent).ok()
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Old => "old (like good)",
        Verdict::New => "new (like bad)",
        Verdict::Unknown => "undecided",
        Verdict::Skip => "skipped",
    }
}

/// What the journal says: how the bisection started, each commit's log,
/// and how it finished.
struct JournalSummary {
    /// Good end, bad end, first parents only, the options.
    start: Option<(String, String, bool, BisectConfig)>,
    commits: BTreeMap<String, CommitLog>,
    /// The result and the commit of the `finished` event.
    finished: Option<(String, Option<String>)>,
}

fn summarize(events: &[JournalEvent]) -> JournalSummary {
    let mut summary = JournalSummary {
        start: None,
        commits: BTreeMap::new(),
        finished: None,
    };
    let commits = &mut summary.commits;
    let mut n_seen = 0;
    let mut n_steps = 0;
    for event in events {
        match event {
            JournalEvent::Start {
                good,
                bad,
                first_parent,
                config,
                ..
            } => {
                summary.start = Some((good.clone(), bad.clone(), *first_parent, config.clone()));
            }
            JournalEvent::Archived { commit, samples } => {
                log_of(commits, commit, &mut n_seen)
                    .samples
                    .extend(samples.iter().map(|sample| sample.value));
            }
            JournalEvent::Sample { commit, sample, .. } => {
                log_of(commits, commit, &mut n_seen)
                    .samples
                    .push(sample.value);
            }
            JournalEvent::Skip { commit, reason, .. } => {
                log_of(commits, commit, &mut n_seen).skip = Some(reason.clone());
            }
            JournalEvent::Verdict {
                commit,
                verdict,
                n_samples,
                llr,
            } => {
                n_steps += 1;
                log_of(commits, commit, &mut n_seen).verdict =
                    Some((*verdict, n_steps, *n_samples, *llr));
            }
            JournalEvent::Finished { result, commit } => {
                summary.finished = Some((result.clone(), commit.clone()));
            }
            JournalEvent::Estimate { .. }
            | JournalEvent::Interrupted { .. }
            | JournalEvent::Started { .. } => {}
        }
    }
    summary
}

/// The page of `session`, with `graph` when the caller has loaded it
/// (else this tries the session's repository).
pub fn bisection_page(
    archive: &Archive,
    session: &BisectSession,
    graph: Option<CommitGraph>,
) -> anyhow::Result<BisectionPage> {
    let events = session_events(archive, session)?;
    let JournalSummary {
        start,
        commits,
        finished,
    } = summarize(&events);
    let Some((good, bad, first_parent, config)) = start else {
        // A session whose start was never journaled has nothing to show.
        let title = format!("Bisection {} of {}", session.id, session.repo);
        let body = format!(
            "<h1>{}</h1>\n<p>Its journal is empty: the bisection has not started.</p>\n",
            escape(&title)
        );
        return Ok(BisectionPage {
            file: format!("bisect-{}.html", session.id),
            html: page(&title, &body),
            title,
            state: "not started".to_string(),
            svg: None,
        });
    };
    let graph = graph.or_else(|| graph_of(&session.repo, &good, &bad, first_parent));
    let scale = scale_of_metric(&config.metric);

    // Commits in git order (the good end first) when the graph is known,
    // else in the order the bisection first came to them.
    let mut subjects: BTreeMap<&str, &str> = BTreeMap::new();
    let order: Vec<String> = match &graph {
        Some(graph) => {
            subjects.insert(&graph.good.id, &graph.good.subject);
            for node in &graph.nodes {
                subjects.insert(&node.info.id, &node.info.subject);
            }
            std::iter::once(&graph.good)
                .chain(graph.nodes.iter().map(|node| &node.info))
                .filter(|info| commits.contains_key(&info.id))
                .map(|info| info.id.clone())
                .collect()
        }
        None => {
            let mut seen: Vec<(&String, &CommitLog)> = commits.iter().collect();
            seen.sort_by_key(|(_, log)| log.first_seen);
            seen.into_iter().map(|(commit, _)| commit.clone()).collect()
        }
    };
    let status = graph
        .as_ref()
        .and_then(|graph| bisect::engine::status(graph, &config, &events).ok());
    // What was left to search after each step, as the replay tells.
    let candidates_after: BTreeMap<String, u32> = status
        .iter()
        .flat_map(|status| &status.steps)
        .map(|step| (step.commit.id.clone(), step.candidates_after))
        .collect();
    let outcome = status.and_then(|status| status.outcome);

    let title = format!(
        "Bisection {} of {}: {} (good {}, bad {})",
        session.id,
        config.metric,
        session.repo,
        short(&good),
        short(&bad)
    );
    let state = match (&finished, &outcome) {
        (_, Some(Outcome::Finished(report))) => match &report.result {
            BisectResult::FirstBad {
                commit,
                confidence_pct,
                ..
            } => format!("first bad {} ({confidence_pct:.1}%)", short(&commit.id)),
            BisectResult::Range { commits } => {
                format!("culprit among {} commits", commits.len())
            }
        },
        (_, Some(Outcome::Refused(_))) => "refused: the ends do not differ enough".to_string(),
        (Some((result, Some(commit))), None) => format!("{result} {}", short(commit)),
        (Some((result, None)), None) => result.clone(),
        (None, None) => "in progress".to_string(),
    };

    let mut body = format!("<h1>{}</h1>\n", escape(&title));
    let _ = writeln!(
        body,
        "<p>{} commits measured, {} samples in all; the metric is <code>{}</code>. \
         State: <strong>{}</strong>.</p>",
        commits.len(),
        commits.values().map(|log| log.samples.len()).sum::<usize>(),
        escape(&config.metric),
        escape(&state)
    );
    if graph.is_none() {
        body.push_str(
            "<p class=\"note\">The repository could not be opened: commits are shown in \
             the order the bisection measured them, without their subjects.</p>\n",
        );
    }
    body.push_str(&outcome_html(outcome.as_ref(), &scale));

    let culprit = match (&outcome, &finished) {
        (Some(Outcome::Finished(report)), _) => match &report.result {
            BisectResult::FirstBad { commit, .. } => Some(commit.id.clone()),
            BisectResult::Range { .. } => None,
        },
        (None, Some((_, commit))) => commit.clone(),
        _ => None,
    };
    let mut points = Vec::new();
    let mut markers = Vec::new();
    let mut rows = Vec::new();
    for commit in &order {
        let Some(log) = commits.get(commit) else {
            continue;
        };
        let role = if *commit == good {
            "good end"
        } else if *commit == bad {
            "bad end"
        } else {
            ""
        };
        let decision = match (&log.verdict, &log.skip) {
            (Some((verdict, step, n_samples, llr)), _) => format!(
                "step {step}: {} after {n_samples} samples (log-likelihood ratio {llr:.2})",
                verdict_word(*verdict)
            ),
            (None, Some(reason)) => format!("skipped: {reason}"),
            (None, None) => role.to_string(),
        };
        let decision = match candidates_after.get(commit) {
            Some(n_left) if log.verdict.is_some() => format!(
                "{decision}; {n_left} candidate{} left",
                if *n_left == 1 { "" } else { "s" }
            ),
            _ => decision,
        };
        let subject = subjects.get(commit.as_str()).copied().unwrap_or("");
        let scaled: Vec<f64> = log
            .samples
            .iter()
            .map(|value| value / scale.divisor)
            .collect();
        let mean_interval = figures(&scaled)?;
        if let Some((mean, low, high)) = mean_interval {
            if culprit.as_deref() == Some(commit.as_str()) {
                markers.push(ChartMarker {
                    index: points.len(),
                    text: format!("first bad {}", short(commit)),
                });
            }
            points.push(ChartPoint {
                label: commit.chars().take(8).collect(),
                center: mean,
                low,
                high,
                detail: format!(
                    "{} {subject}\nmean {} {}, 95% interval {} to {}\n{} samples\n{decision}",
                    short(commit),
                    format_value(mean),
                    scale.unit,
                    format_value(low),
                    format_value(high),
                    log.samples.len()
                ),
            });
        }
        let is_culprit = culprit.as_deref() == Some(commit.as_str());
        rows.push((
            is_culprit.then_some("change"),
            vec![
                Cell::Text(format!("<code>{}</code>", escape(short(commit)))),
                Cell::Text(escape(subject)),
                Cell::Text(samples_cell(&scaled)),
                Cell::Num(mean_interval.map_or("-".to_string(), |(mean, _, _)| format_value(mean))),
                Cell::Num(mean_interval.map_or("-".to_string(), |(_, low, high)| {
                    format!("{} to {}", format_value(low), format_value(high))
                })),
                Cell::Text(escape(&if is_culprit {
                    format!("{decision}; the culprit")
                } else {
                    decision
                })),
            ],
        ));
    }
    let svg = if points.is_empty() {
        None
    } else {
        let chart = SeriesChart {
            caption: format!("Bisection {}: {}", session.id, config.metric),
            x_name: if graph.is_some() {
                "commit, in git order".to_string()
            } else {
                "commit, in the order measured".to_string()
            },
            y_name: format!("{}, {} (95% interval)", config.metric, scale.unit),
            points,
            markers,
        };
        Some(series_svg(&chart).context("failed to draw the bisection")?)
    };
    if let Some(svg) = &svg {
        let _ = writeln!(body, "<figure class=\"chart\">\n{}</figure>", svg.as_str());
    }
    let mean_header = format!("mean, {}", scale.unit);
    body.push_str(&table(
        &[
            "commit",
            "subject",
            "samples",
            &mean_header,
            "95% interval",
            "decision",
        ],
        &rows,
    ));
    Ok(BisectionPage {
        file: format!("bisect-{}.html", session.id),
        html: page(&title, &body),
        title,
        state,
        svg,
    })
}

/// How the values of the bisected metric are shown: throughput in
/// 10^6bits/s as the rest of netbisect prints it, others in their unit.
fn scale_of_metric(name: &str) -> Scale {
    match name.parse::<Metric>() {
        // Service demand's unit depends on the test, which a journal
        // does not say; the metric's name stands for it.
        Ok(metric @ (Metric::LocalServiceDemand | Metric::RemoteServiceDemand)) => Scale {
            divisor: 1.0,
            unit: metric.name().to_string(),
        },
        Ok(metric) => scale_of(metric.unit(TestKind::TcpStream), "m"),
        Err(_) => Scale {
            divisor: 1.0,
            unit: name.to_string(),
        },
    }
}

/// Every sample of a commit, in the order taken, behind its count: a
/// `<details>` element opens without a script.
fn samples_cell(samples: &[f64]) -> String {
    if samples.is_empty() {
        return "0".to_string();
    }
    let values: Vec<String> = samples.iter().map(|value| format_value(*value)).collect();
    format!(
        "<details><summary>{}</summary>{}</details>",
        samples.len(),
        values.join(" ")
    )
}

/// Mean and 95% interval of `samples` (the mean twice with one sample).
fn figures(samples: &[f64]) -> anyhow::Result<Option<(f64, f64, f64)>> {
    match samples.len() {
        0 => Ok(None),
        1 => Ok(Some((samples[0], samples[0], samples[0]))),
        _ => {
            let interval = stats::mean_interval(samples, LEVEL)
                .context("failed to compute an interval of the bisection")?;
            Ok(Some((interval.mean, interval.low, interval.high)))
        }
    }
}

fn outcome_html(outcome: Option<&Outcome>, scale: &Scale) -> String {
    let mut out = String::new();
    match outcome {
        Some(Outcome::Finished(report)) => match &report.result {
            BisectResult::FirstBad {
                commit,
                regression,
                confidence_pct,
                confirmed,
                ..
            } => {
                let _ = write!(
                    out,
                    "<p>First bad commit: <code>{}</code> {} ({}), {}: {confidence_pct:.1}%",
                    escape(&commit.id),
                    escape(&commit.subject),
                    escape(&commit.author),
                    match report.method {
                        bisect::decision::Method::Posterior => "posterior probability",
                        bisect::decision::Method::Sequential => "confidence",
                    }
                );
                if let Some(change) = regression {
                    let _ = write!(out, "; change {:+.2}% against its parent", change.diff_pct);
                }
                if !confirmed {
                    out.push_str("; the confirmation repeats did not agree");
                }
                out.push_str(".</p>\n");
            }
            BisectResult::Range { commits } => {
                out.push_str(
                    "<p>The culprit is one of these (skipped commits hide it):</p>\n<ul>\n",
                );
                for commit in commits {
                    let _ = writeln!(
                        out,
                        "<li><code>{}</code> {}</li>",
                        escape(&commit.id),
                        escape(&commit.subject)
                    );
                }
                out.push_str("</ul>\n");
            }
        },
        Some(Outcome::Refused(refusal)) => {
            let _ = writeln!(
                out,
                "<p>Refused: the ends do not differ by more than {}% and the noise \
                 (good mean {} {unit}, bad mean {} {unit}).</p>",
                refusal.min_effect_pct,
                format_value(refusal.good.mean / scale.divisor),
                format_value(refusal.bad.mean / scale.divisor),
                unit = scale.unit
            );
        }
        None => {}
    }
    out
}
