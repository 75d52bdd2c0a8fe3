//! `netbisect history --metric M`: one metric of one test configuration
//! across commits in git order (with `--repo`) or across runs in time
//! order, with change points marked; `--json` prints the archive's
//! `History`.
//!
//! The commit order comes from bisect's git layer
//! ([`bisect::range::commits_in_order`]); the archive only sees the list.
//! A history follows one spec key (test spec and testbed): when the
//! selected runs span several, the command lists them and exits with 2
//! rather than mix configurations in one series or print several.
//!
//! The runs are read from the archive's per-run columns
//! ([`archive::Archive::series_runs`]), not from their records, so a
//! history of thousands of runs decodes and hashes nothing; an archive
//! older than those columns (opened read-only, so not upgraded) is read
//! record by record.
//!
//! `--check` makes the history a test for scripts and CI: after printing
//! it, the command exits with 1 ([`Code::New`]) when the newest level
//! began with a change for the worse.

use crate::cli::HistoryArgs;
use crate::commits::commits_of;
use crate::exit::{self, Code, Context, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::render::text::plain;
use crate::site;
use crate::store::{open_archive_read, series_runs};
use crate::views::history::HistoryContext;
use crate::views::units::Units;
use archive::compare::ChangeKind;
use archive::history::{
    History, HistoryOptions, HistoryPoint, LevelChange, PointRuns, SeriesOrder, history,
    points_in_commit_order, points_in_time_order,
};
use archive::store::SeriesRun;
use archive::{Archive, RunQuery};
use run_record::record::RunRecord;
use run_record::stats::ChangePointOptions;
use std::collections::BTreeMap;

pub fn run(global: &GlobalOptions, args: &HistoryArgs) -> exit::Result<Code> {
    let order = if args.repo.is_some() {
        SeriesOrder::Git
    } else {
        SeriesOrder::Time
    };
    let options = HistoryOptions {
        change_points: ChangePointOptions {
            alpha: args.alpha,
            min_change_pct: args.min_change,
            ..ChangePointOptions::default()
        },
        ..HistoryOptions::new(args.metric, order)
    };
    // Options are checked before the archive is read.
    run_record::stats::change_points(&[], &options.change_points)
        .map_err(|err| InputError(format!("invalid history option: {err}")))?;

    let query = RunQuery {
        label: args.label.clone(),
        config_key_prefix: args.config_key.clone(),
        test: args.test,
        testbed: args.testbed.clone(),
        source_tool: args.tool.clone(),
        ..RunQuery::default()
    };
    let archive = open_archive_read(global)?;
    let runs = series_runs(&archive, &query, args.metric)?;
    if runs.is_empty() {
        return Err(InputError("no archived run matches the filters".to_string()).into());
    }
    let runs = with_spec_key(runs, args.spec_key.as_deref())?;

    let points = match &args.repo {
        Some(path) => {
            let range = args.range.as_deref().unwrap_or("HEAD");
            let commits = commits_of(path, range, args.first_parent)?;
            let points = points_in_commit_order(&commits, &runs);
            let n_in_range: usize = points.iter().map(|point| point.runs.len()).sum();
            if n_in_range == 0 {
                return Err(InputError(format!(
                    "none of the {} selected runs is of a commit of {range} ({} commit{})",
                    runs.len(),
                    commits.len(),
                    if commits.len() == 1 { "" } else { "s" }
                ))
                .into());
            }
            if n_in_range < runs.len() && global.verbose() {
                eprintln!(
                    "netbisect: {} of the {} selected runs are of commits outside {range}",
                    runs.len() - n_in_range,
                    runs.len()
                );
            }
            points
        }
        None => points_in_time_order(&runs),
    };
    check_one_configuration(&archive, &points)?;

    let history = history(&points, &options).context("failed to compute the history")?;
    if history.points.iter().all(|point| point.n_samples == 0) {
        let n_runs: usize = history.points.iter().map(|point| point.n_runs).sum();
        return Err(InputError(format!(
            "none of the {n_runs} selected runs has values of {}",
            args.metric
        ))
        .into());
    }
    if let Some(path) = &args.svg {
        write_svg(path, &history, &points, &args.units.units)?;
    }
    output::emit(
        global,
        || output::pretty(&history, "the history"),
        || {
            let units =
                Units::parse(&args.units.units).map_err(|err| InputError(err.to_string()))?;
            let context = HistoryContext::new(&history, units);
            output::template(global, "history", &context, "the history")
        },
    )?;
    if args.check
        && let Some((point, change)) = newest_change_for_the_worse(&history)
    {
        if !global.quiet() {
            eprintln!(
                "netbisect: history --check: {} is worse since {}: {} (p = {:.2e})",
                history.metric,
                point.label,
                change
                    .change_pct
                    .map_or("from zero".to_string(), |pct| format!("{pct:+.1}%")),
                change.p_value
            );
        }
        return Ok(Code::New);
    }
    Ok(Code::Ok)
}

/// The point where the newest level of `history` begins, with its
/// change, when that change was for the worse: what `--check` fails on.
/// A later change for the better, back or beyond, clears it.
fn newest_change_for_the_worse(history: &History) -> Option<(&HistoryPoint, &LevelChange)> {
    let (point, change) = history
        .points
        .iter()
        .rev()
        .find_map(|point| point.change.as_ref().map(|change| (point, change)))?;
    (change.direction == Some(ChangeKind::Regression)).then_some((point, change))
}

/// Writes the history's chart, as `publish` draws it, to `path`.
fn write_svg(
    path: &std::path::Path,
    history: &archive::history::History,
    points: &[PointRuns<'_>],
    units: &str,
) -> exit::Result<()> {
    let scale = site::series::scale_of(&history.unit, units);
    let figures = site::series::point_figures(history, points, &scale)
        .context("failed to compute the intervals of the history")?;
    let caption = format!("{}, {}", history.metric, history.tests.join(", "));
    let chart = site::series::history_chart(&caption, history.order, &scale, &figures);
    let svg = site::chart::series_svg(&chart).context("failed to draw the history")?;
    site::write_file(path, svg.as_str())
}

/// The runs whose spec key starts with `prefix` (all of them without
/// one).
fn with_spec_key(runs: Vec<SeriesRun>, prefix: Option<&str>) -> exit::Result<Vec<SeriesRun>> {
    let n_selected = runs.len();
    let kept: Vec<SeriesRun> = runs
        .into_iter()
        .filter(|run| prefix.is_none_or(|prefix| run.spec_key.starts_with(prefix)))
        .collect();
    if kept.is_empty() {
        return Err(InputError(format!(
            "none of the {n_selected} selected runs has a spec key starting with '{}'",
            prefix.unwrap_or_default()
        ))
        .into());
    }
    Ok(kept)
}

/// Fails, listing them, when the points hold runs of several spec keys;
/// the configurations are named from a record of each.
fn check_one_configuration(archive: &Archive, points: &[PointRuns<'_>]) -> exit::Result<()> {
    let mut configurations: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for run in points.iter().flat_map(|point| &point.runs) {
        configurations
            .entry(&run.spec_key)
            .or_insert((0, &run.id))
            .0 += 1;
    }
    if configurations.len() <= 1 {
        return Ok(());
    }
    let mut message = format!(
        "the selected runs span {} test configurations, and a history\n\
         follows one; choose it with --spec-key PREFIX (or narrow the\n\
         selection with --test, --testbed, --label, --config-key):\n  \
         {:<12}  {:>5}  configuration",
        configurations.len(),
        "spec key",
        "runs"
    );
    for (spec_key, (n_runs, representative)) in &configurations {
        let (_, bytes) = archive
            .find(representative)
            .context("failed to read the archive")?;
        let record = RunRecord::from_slice(&bytes)
            .with_context(|| format!("run {representative} in the archive is damaged"))?;
        message.push_str(&format!(
            "\n  {:<12}  {n_runs:>5}  {}",
            spec_key.get(..12).unwrap_or(spec_key),
            plain(&archive::figures::record_title(&record))
        ));
    }
    Err(InputError(message).into())
}
