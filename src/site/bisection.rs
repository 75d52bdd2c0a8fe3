//! Bisection pages, from the archive's session store: every commit the
//! bisection measured with its samples, the decision on each step (the
//! verdict and its log-likelihood ratio, as journaled), the skips, and
//! how it ended. The journal alone gives all of that; when the session's
//! repository can still be opened, the commits are put in git order with
//! their subjects, and the end is replayed as `bisect report` states it
//! (the culprit's posterior probability or confidence, and the size of
//! the change). [`journal`] reads what the journal says; this module
//! puts it in order and makes the page's view, which the template
//! `templates/site/bisection.html` puts in words.

mod journal;

use super::IntervalView;
use super::chart::{ChartMarker, ChartPoint, DrawnSvg, SeriesChart, format_value, series_svg};
use super::series::{LEVEL, Scale, scale_of};
use crate::exit::{self, Context};

use archive::Archive;
use archive::journal::BisectSession;
use bisect::JournalEvent;
use bisect::decision::Verdict;
use bisect::graph::CommitGraph;
use bisect::report::{BisectResult, Outcome, Refusal};
use journal::{CommitLog, JournalSummary, Start, session_events, summarize};
use run_record::record::Metric;
use run_record::spec::TestKind;
use run_record::stats;
use serde::Serialize;
use std::collections::BTreeMap;

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

/// The context of `templates/site/bisection.html`.
#[derive(Serialize)]
struct BisectionView<'a> {
    title: &'a str,
    /// `None` while the journal holds no start.
    started: Option<StartedView<'a>>,
}

/// A bisection that started: how it stands and what it measured.
#[derive(Serialize)]
struct StartedView<'a> {
    n_commits: usize,
    n_samples: usize,
    metric: &'a str,
    state: &'a str,
    repository_opened: bool,
    first_bad: Option<FirstBadView<'a>>,
    /// The commits that may be the culprit, when skips hide which.
    range: Option<Vec<CommitView<'a>>>,
    refused: Option<RefusedView>,
    chart: Option<DrawnSvg>,
    unit: &'a str,
    rows: Vec<CommitRow<'a>>,
}

/// The culprit found, as `bisect report` states it.
#[derive(Serialize)]
struct FirstBadView<'a> {
    id: &'a str,
    subject: &'a str,
    author: &'a str,
    /// The confidence is the culprit's posterior probability.
    by_posterior: bool,
    confidence_pct: String,
    /// Its change against its parent, percent, signed.
    change_pct: Option<String>,
    confirmed: bool,
}

/// A commit and its subject.
#[derive(Serialize)]
struct CommitView<'a> {
    id: &'a str,
    subject: &'a str,
}

/// Why the bisection was refused: its ends, in the unit shown.
#[derive(Serialize)]
struct RefusedView {
    min_effect_pct: String,
    good_mean: String,
    bad_mean: String,
}

/// A measured commit's row.
#[derive(Serialize)]
struct CommitRow<'a> {
    short: &'a str,
    subject: &'a str,
    /// Every sample, in the unit shown, in the order taken.
    samples: Vec<String>,
    mean: Option<String>,
    interval: Option<IntervalView>,
    decision: String,
    culprit: bool,
}

/// The name a page gives a bisection's repository: the last part of its
/// path (`linux` of a clone anywhere), since a page is published and the
/// path is of the machine that ran it.
fn repository_name(repo: &str) -> String {
    let path = std::path::Path::new(repo.trim_end_matches('/'));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name == ".git" {
        path.parent().map_or(name.clone(), |parent| {
            repository_name(&parent.to_string_lossy())
        })
    } else if name.is_empty() {
        "a repository".to_string()
    } else {
        name
    }
}

/// The page of a session whose journal holds no start.
fn not_started_page(session: &BisectSession) -> exit::Result<BisectionPage> {
    let title = format!(
        "Bisection {} of {}",
        session.id,
        repository_name(&session.repo)
    );
    let html = super::render_page(
        "site/bisection.html",
        &BisectionView {
            title: &title,
            started: None,
        },
    )?;
    Ok(BisectionPage {
        file: format!("bisect-{}.html", session.id),
        html,
        title,
        state: "not started".to_string(),
        svg: None,
    })
}

/// What is known of a started bisection beside its journal: its commits
/// in order with their subjects, and, when the repository could be
/// opened, the replay's count of candidates after each step and its
/// outcome.
struct Known<'a> {
    /// Commits in git order (the good end first) when the graph is
    /// known, else in the order the bisection first came to them.
    order: Vec<String>,
    subjects: BTreeMap<&'a str, &'a str>,
    candidates_after: BTreeMap<String, u32>,
    outcome: Option<Outcome>,
}

/// What `graph`, when there is one, and the replay of `events` add to
/// the journal's `summary`.
fn known<'a>(
    graph: Option<&'a CommitGraph>,
    start: &Start,
    summary: &JournalSummary,
    events: &[JournalEvent],
) -> Known<'a> {
    let commits = &summary.commits;
    let mut subjects: BTreeMap<&str, &str> = BTreeMap::new();
    let order: Vec<String> = match graph {
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
    let status = graph.and_then(|graph| bisect::engine::status(graph, &start.config, events).ok());
    // What was left to search after each step, as the replay tells.
    let candidates_after = status
        .iter()
        .flat_map(|status| &status.steps)
        .map(|step| (step.commit.id.clone(), step.candidates_after))
        .collect();
    Known {
        order,
        subjects,
        candidates_after,
        outcome: status.and_then(|status| status.outcome),
    }
}

/// How the bisection stands or ended, a few words: the replay's outcome
/// when there is one, else the journal's `finished` event.
fn state_of(finished: Option<&(String, Option<String>)>, outcome: Option<&Outcome>) -> String {
    match (finished, outcome) {
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
    }
}

/// The first bad commit, as the replay or the journal names it.
fn culprit_of(
    finished: Option<&(String, Option<String>)>,
    outcome: Option<&Outcome>,
) -> Option<String> {
    match (outcome, finished) {
        (Some(Outcome::Finished(report)), _) => match &report.result {
            BisectResult::FirstBad { commit, .. } => Some(commit.id.clone()),
            BisectResult::Range { .. } => None,
        },
        (None, Some((_, commit))) => commit.clone(),
        _ => None,
    }
}

/// The page of `session`, with `graph` when the caller has loaded it
/// (else this tries the session's repository).
pub fn bisection_page(
    archive: &Archive,
    session: &BisectSession,
    graph: Option<CommitGraph>,
) -> exit::Result<BisectionPage> {
    let events = session_events(archive, session)?;
    let summary = summarize(&events);
    let Some(start) = &summary.start else {
        // A session whose start was never journaled has nothing to show.
        return not_started_page(session);
    };
    let graph =
        graph.or_else(|| graph_of(&session.repo, &start.good, &start.bad, start.first_parent));
    let known = known(graph.as_ref(), start, &summary, &events);
    let scale = scale_of_metric(&start.config.metric);
    let title = format!(
        "Bisection {} of {}: {} (good {}, bad {})",
        session.id,
        start.config.metric,
        repository_name(&session.repo),
        short(&start.good),
        short(&start.bad)
    );
    let state = state_of(summary.finished.as_ref(), known.outcome.as_ref());
    let culprit = culprit_of(summary.finished.as_ref(), known.outcome.as_ref());
    let measured = measured(&summary, start, &known, &scale, culprit.as_deref())?;
    let svg = if measured.points.is_empty() {
        None
    } else {
        let chart = SeriesChart {
            caption: format!("Bisection {}: {}", session.id, start.config.metric),
            x_name: if graph.is_some() {
                "commit, in git order".to_string()
            } else {
                "commit, in the order measured".to_string()
            },
            y_name: format!("{}, {} (95% interval)", start.config.metric, scale.unit),
            points: measured.points,
            markers: measured.markers,
        };
        Some(series_svg(&chart).context("failed to draw the bisection")?)
    };
    let mut started = StartedView {
        n_commits: summary.commits.len(),
        n_samples: summary.commits.values().map(|log| log.samples.len()).sum(),
        metric: &start.config.metric,
        state: &state,
        repository_opened: graph.is_some(),
        first_bad: None,
        range: None,
        refused: None,
        chart: svg.clone(),
        unit: &scale.unit,
        rows: measured.rows,
    };
    outcome_view(known.outcome.as_ref(), &scale, &mut started);
    let html = super::render_page(
        "site/bisection.html",
        &BisectionView {
            title: &title,
            started: Some(started),
        },
    )?;
    Ok(BisectionPage {
        file: format!("bisect-{}.html", session.id),
        html,
        title,
        state,
        svg,
    })
}

/// The measured commits, as the table's rows and the chart's points.
struct Measured<'a> {
    rows: Vec<CommitRow<'a>>,
    points: Vec<ChartPoint>,
    markers: Vec<ChartMarker>,
}

/// The decision on `commit`, in words: its step's verdict, or why it was
/// skipped, or which end it is, and how many candidates the step left.
fn decision_of(commit: &str, log: &CommitLog, start: &Start, known: &Known<'_>) -> String {
    let role = if commit == start.good {
        "good end"
    } else if commit == start.bad {
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
    match known.candidates_after.get(commit) {
        Some(n_left) if log.verdict.is_some() => format!(
            "{decision}; {n_left} candidate{} left",
            if *n_left == 1 { "" } else { "s" }
        ),
        _ => decision,
    }
}

fn measured<'a>(
    summary: &'a JournalSummary,
    start: &Start,
    known: &'a Known<'_>,
    scale: &Scale,
    culprit: Option<&str>,
) -> exit::Result<Measured<'a>> {
    let mut measured = Measured {
        rows: Vec::new(),
        points: Vec::new(),
        markers: Vec::new(),
    };
    for commit in &known.order {
        let Some(log) = summary.commits.get(commit) else {
            continue;
        };
        let decision = decision_of(commit, log, start, known);
        let subject = known.subjects.get(commit.as_str()).copied().unwrap_or("");
        let scaled: Vec<f64> = log
            .samples
            .iter()
            .map(|value| value / scale.divisor)
            .collect();
        let mean_interval = figures(&scaled)?;
        let is_culprit = culprit == Some(commit.as_str());
        if let Some((mean, low, high)) = mean_interval {
            if is_culprit {
                measured.markers.push(ChartMarker {
                    index: measured.points.len(),
                    text: format!("first bad {}", short(commit)),
                });
            }
            measured.points.push(ChartPoint {
                label: commit.chars().take(8).collect(),
                center: mean,
                low,
                high,
                detail: format!(
                    "{} {subject}\nmean {} {}, {}\n{} samples\n{decision}",
                    short(commit),
                    format_value(mean),
                    scale.unit,
                    if scaled.len() > 1 {
                        format!(
                            "95% interval {} to {}",
                            format_value(low),
                            format_value(high)
                        )
                    } else {
                        "one sample: no interval".to_string()
                    },
                    log.samples.len()
                ),
                link: None,
            });
        }
        measured.rows.push(CommitRow {
            short: short(commit),
            subject,
            samples: scaled.iter().map(|value| format_value(*value)).collect(),
            mean: mean_interval.map(|(mean, _, _)| format_value(mean)),
            // One sample has no interval; the row says `-`, not `x to x`.
            interval: mean_interval
                .filter(|_| scaled.len() > 1)
                .map(|(_, low, high)| IntervalView::new(low, high)),
            decision,
            culprit: is_culprit,
        });
    }
    Ok(measured)
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

/// Mean and 95% interval of `samples` (the mean twice with one sample).
fn figures(samples: &[f64]) -> exit::Result<Option<(f64, f64, f64)>> {
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

/// The outcome of the replay, into `view`: the culprit, the range
/// hiding it, or the refusal.
fn outcome_view<'a>(outcome: Option<&'a Outcome>, scale: &Scale, view: &mut StartedView<'a>) {
    match outcome {
        Some(Outcome::Finished(report)) => match &report.result {
            BisectResult::FirstBad {
                commit,
                regression,
                confidence_pct,
                confirmed,
                ..
            } => {
                view.first_bad = Some(FirstBadView {
                    id: &commit.id,
                    subject: &commit.subject,
                    author: &commit.author,
                    by_posterior: report.method == bisect::decision::Method::Posterior,
                    confidence_pct: format!("{confidence_pct:.1}"),
                    change_pct: regression
                        .as_ref()
                        .map(|change| format!("{:+.2}", change.diff_pct)),
                    confirmed: *confirmed,
                });
            }
            BisectResult::Range { commits } => {
                view.range = Some(
                    commits
                        .iter()
                        .map(|commit| CommitView {
                            id: &commit.id,
                            subject: &commit.subject,
                        })
                        .collect(),
                );
            }
        },
        Some(Outcome::Refused(refusal)) => view.refused = Some(refused_view(refusal, scale)),
        None => {}
    }
}

fn refused_view(refusal: &Refusal, scale: &Scale) -> RefusedView {
    RefusedView {
        min_effect_pct: refusal.min_effect_pct.to_string(),
        good_mean: format_value(refusal.good.mean / scale.divisor),
        bad_mean: format_value(refusal.bad.mean / scale.divisor),
    }
}
