//! `netbisect bisect`: start, run, status, log, report and reset a
//! bisection.
//!
//! A session lives in the archive: `start` checks everything and records
//! the session's description ([`SessionSpec`]); `run` builds the range
//! with bisect's git layer, opens the bisect worktree under the
//! repository's git directory (`.git/netbisect/`), and runs the engine
//! with the archive-backed measurer and journal of [`wiring`], which
//! resumes from the journal after any interruption; `status`, `log` and
//! `report` replay the journal without measuring; `reset` removes the
//! worktree and ends the session, keeping its runs.
//!
//! # JSON
//!
//! `start --json` and `status --json` print a `netbisect.bisect-status/1`
//! document ([`StatusDoc`]); `run --json` and `report --json` print
//! bisect's report (`netbisect.bisect/1`) or refusal
//! (`netbisect.bisect-refusal/1`).

mod progress;
pub mod wiring;

use crate::cli::{
    BisectAction, BisectArgs, BisectRepoArgs, BisectStartArgs, DirectionArg, MethodArg,
};
use crate::cli::{GlobalArgs, MeasureArgs};
use crate::exit::{Code, InputError};
use crate::render::Renderer;
use anyhow::Context;
use archive::journal::BisectSession;
use archive::{Archive, RunQuery};
use bench_core::record::{Metric, RunRecord};
use bisect::decision::{DecisionConfig, Method as WalkMethod};
use bisect::engine::{self, BisectConfig, Direction, Outcome, Phase, Status};
use bisect::graph::{CommitGraph, CommitInfo};
use bisect::measure::{CommandMeasurer, CommandStep};
use bisect::plan::Estimate;
use bisect::range;
use bisect::report::{BisectResult, StepReport};
use bisect::runner;
use bisect::worktree::BisectWorktree;
use git2::Repository;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wiring::{ArchiveJournal, Method, SessionMeasurer};

/// Schema of [`SessionSpec`].
const SESSION_SCHEMA: &str = "netbisect.bisect-session/1";
/// Schema of [`StatusDoc`].
const STATUS_SCHEMA: &str = "netbisect.bisect-status/1";
/// Name of the bisect worktree, and of its directory under the state dir.
const WORKTREE_NAME: &str = "netbisect";

/// What `start` recorded: everything `run` needs, as given and resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSpec {
    /// Always [`SESSION_SCHEMA`].
    pub schema: String,
    /// The repository's working tree, canonical.
    pub repo: String,
    /// The good revision as given.
    pub good_rev: String,
    /// Its commit id.
    pub good: String,
    /// The bad revision as given.
    pub bad_rev: String,
    /// Its commit id.
    pub bad: String,
    /// Only first parents are followed.
    pub first_parent: bool,
    /// Build command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// Bench spec (`--bench`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench: Option<String>,
    /// Measure command (`--measure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<String>,
    /// Timeout of the measure command, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// `--kernel`: each step boots the built image and tests inside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<wiring::KernelSession>,
    /// Commits in the range.
    pub n_commits: u32,
    /// The engine's options.
    pub config: BisectConfig,
}

/// Where a bisection stands, for `status --json`.
#[derive(Debug, Serialize)]
pub struct StatusDoc {
    /// Always [`STATUS_SCHEMA`].
    pub schema: &'static str,
    /// Session id.
    pub session: i64,
    /// The repository.
    pub repo: String,
    /// Good end.
    pub good: CommitInfo,
    /// Bad end.
    pub bad: CommitInfo,
    /// Commits in the range.
    pub n_commits: u32,
    /// Metric bisected on.
    pub metric: String,
    /// Where the bisection is.
    pub phase: Phase,
    /// `running`, `first_bad`, `range` or `refused`.
    pub state: &'static str,
    /// The commit measured next.
    pub next_commit: Option<CommitInfo>,
    /// Its samples so far.
    pub next_n_samples: u32,
    /// Commits that may still be the culprit.
    pub candidates_left: u32,
    /// Estimated steps left.
    pub est_steps_left: u32,
    /// Samples taken so far, archived ones included.
    pub n_measurements: u32,
    /// Events in the journal.
    pub n_events: u64,
    /// Steps classified so far.
    pub steps: Vec<StepReport>,
    /// What the rest was estimated to take once the ends were measured
    /// (`null` before, or when the ends gave no usable step).
    pub estimate: Option<Estimate>,
}

pub fn run(global: &GlobalArgs, args: &BisectArgs) -> anyhow::Result<Code> {
    match &args.action {
        BisectAction::Start(start_args) => start(global, start_args),
        BisectAction::Run(repo_args) => run_session(global, repo_args),
        BisectAction::Status(repo_args) => status(global, repo_args),
        BisectAction::Log(repo_args) => log(global, repo_args),
        BisectAction::Report(repo_args) => report(global, repo_args),
        BisectAction::Reset(repo_args) => reset(global, repo_args),
    }
}

fn input(err: impl std::fmt::Display) -> anyhow::Error {
    InputError(err.to_string()).into()
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    std::io::stdout()
        .write_all(text.as_bytes())
        .map_err(crate::exit::stdout_error)
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// The canonical working tree of the repository at (or containing) `path`.
fn repo_key(repo: &Repository, path: &Path) -> anyhow::Result<String> {
    let workdir = repo.workdir().ok_or_else(|| {
        input(format!(
            "{} is a bare repository: bisect needs one with a working tree",
            path.display()
        ))
    })?;
    let canonical = std::fs::canonicalize(workdir)
        .with_context(|| format!("failed to resolve {}", workdir.display()))?;
    Ok(canonical.display().to_string())
}

/// Where the bisect worktree and the lock live: `netbisect/` in the
/// repository's (common) git directory.
fn state_dir(repo: &Repository) -> PathBuf {
    repo.commondir().join("netbisect")
}

fn metric_of(
    args: &BisectStartArgs,
    bench: Option<&bench_core::run::BenchRequest>,
) -> anyhow::Result<Metric> {
    match (&args.metric, bench) {
        (Some(name), _) => Ok(name.parse()?),
        (None, Some(request)) => Ok(Metric::primary_for(&request.spec)),
        (None, None) => Ok(Metric::ThroughputBps),
    }
}

fn start(global: &GlobalArgs, args: &BisectStartArgs) -> anyhow::Result<Code> {
    let repo = range::open_repository(&args.repo).map_err(input)?;
    let key = repo_key(&repo, &args.repo)?;
    let workdir = PathBuf::from(&key);
    let good = range::resolve(&repo, &args.good).map_err(input)?;
    let bad = range::resolve(&repo, &args.bad).map_err(input)?;
    let graph = range::load(&repo, good, bad, args.first_parent).map_err(input)?;
    if let Some(build) = &args.build {
        runner::check_command(build, &workdir).map_err(input)?;
    }
    let kernel = kernel_session(args)?;
    let bench = match &args.measure {
        MeasureArgs {
            bench: Some(spec), ..
        } if kernel.is_some() => Some(super::request::parse_guest_bench_spec(spec)?),
        MeasureArgs {
            bench: Some(spec), ..
        } => Some(super::request::parse_bench_spec(spec)?),
        MeasureArgs {
            measure: Some(command),
            ..
        } => {
            runner::check_command(command, &workdir).map_err(input)?;
            None
        }
        _ => return Err(input("give --bench SPEC or --measure CMD")),
    };
    let metric = metric_of(args, bench.as_ref())?;
    let direction = match args.direction {
        Some(DirectionArg::Higher) => Direction::HigherIsBetter,
        Some(DirectionArg::Lower) => Direction::LowerIsBetter,
        None if metric.higher_is_better() => Direction::HigherIsBetter,
        None => Direction::LowerIsBetter,
    };
    if !(args.min_effect.is_finite() && args.min_effect >= 0.0) {
        return Err(input(format!(
            "--min-effect {} is not a percentage >= 0",
            args.min_effect
        )));
    }
    let mut defaults = DecisionConfig::default();
    if let Some(n) = args.end_repeats {
        if n < 2 {
            return Err(input(format!("--end-repeats {n} is below 2")));
        }
        defaults.min_end_repeats = n;
    }
    if let Some(n) = args.confirm_repeats {
        defaults.confirm_repeats = n;
    }
    if args.max_repeats < defaults.min_repeats {
        return Err(input(format!(
            "--max-repeats {} is below the {} repeats a step needs",
            args.max_repeats, defaults.min_repeats
        )));
    }
    if let Some(timeout) = args.timeout
        && !(timeout.is_finite() && timeout > 0.0)
    {
        return Err(input(format!(
            "--timeout {timeout} is not a positive number of seconds"
        )));
    }
    let spec = SessionSpec {
        schema: SESSION_SCHEMA.to_string(),
        repo: key.clone(),
        good_rev: args.good.clone(),
        good: good.to_string(),
        bad_rev: args.bad.clone(),
        bad: bad.to_string(),
        first_parent: args.first_parent,
        build: args.build.clone(),
        bench: args.measure.bench.clone(),
        measure: args.measure.measure.clone(),
        timeout_s: args.timeout,
        kernel,
        n_commits: graph.nodes.len() as u32,
        config: BisectConfig {
            metric: metric.name().to_string(),
            direction,
            decision: DecisionConfig {
                min_effect_pct: args.min_effect,
                max_repeats: args.max_repeats,
                method: match args.method {
                    MethodArg::Posterior => WalkMethod::Posterior,
                    MethodArg::Sequential => WalkMethod::Sequential,
                },
                ..defaults
            },
        },
    };
    let text = serde_json::to_string(&spec).context("failed to encode the session")?;
    let mut archive = super::archive::open_archive(global)?;
    let session = archive.start_session(&key, &text).context(
        "failed to start the bisection (`netbisect bisect reset` ends the one in progress)",
    )?;
    let status =
        engine::status(&graph, &spec.config, &[]).context("failed to plan the bisection")?;
    print_status(global, &session, &spec, &graph, &status)?;
    Ok(Code::Ok)
}

/// The kernel part of the session: checked options, the runner's tools
/// found. The image itself is only there once a step is built.
fn kernel_session(args: &BisectStartArgs) -> anyhow::Result<Option<wiring::KernelSession>> {
    let Some(image) = &args.kernel else {
        if args.vm.any() {
            return Err(input("--vm-* options need --kernel RELPATH"));
        }
        return Ok(None);
    };
    if args.measure.bench.is_none() {
        return Err(input(
            "--kernel runs --bench SPEC in the guest: give --bench, not --measure",
        ));
    }
    if image.is_absolute() {
        return Err(input(format!(
            "--kernel {} must be a path in the worktree, such as arch/x86/boot/bzImage",
            image.display()
        )));
    }
    let options = super::kernel::vm_options(&args.vm, None)?;
    crate::vm::check_tools()?;
    Ok(Some(wiring::KernelSession {
        image: image.to_string_lossy().into_owned(),
        options,
        settings: args
            .vm
            .vm_settings
            .as_ref()
            .map(|path| path.to_string_lossy().into_owned()),
    }))
}

/// An active session with its repository and range.
struct Loaded {
    archive: Archive,
    session: BisectSession,
    spec: SessionSpec,
    repo: Repository,
    graph: CommitGraph,
}

fn load(global: &GlobalArgs, path: &Path) -> anyhow::Result<Loaded> {
    let repo = range::discover(path).map_err(input)?;
    let key = repo_key(&repo, path)?;
    let archive = super::archive::open_archive(global)?;
    let session = archive.active_session(&key)?.ok_or_else(|| {
        input(format!(
            "no bisection in progress for {key}: start one with `netbisect bisect start`"
        ))
    })?;
    let spec: SessionSpec = serde_json::from_str(&session.spec)
        .with_context(|| format!("bisection session {} is not readable", session.id))?;
    if spec.schema != SESSION_SCHEMA {
        return Err(input(format!(
            "bisection session {} was written as \"{}\", which this netbisect does not read",
            session.id, spec.schema
        )));
    }
    let good = range::resolve(&repo, &spec.good).map_err(input)?;
    let bad = range::resolve(&repo, &spec.bad).map_err(input)?;
    let graph = range::load(&repo, good, bad, spec.first_parent).map_err(input)?;
    Ok(Loaded {
        archive,
        session,
        spec,
        repo,
        graph,
    })
}

/// Holds the state directory's lock: one `bisect run` per repository at a
/// time. The kernel drops it when the process dies, however it dies.
fn lock_state(dir: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let path = dir.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("failed to open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(input(format!(
            "another `netbisect bisect run` is working on this repository (it holds {})",
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(err)) => {
            Err(anyhow::Error::new(err).context(format!("failed to lock {}", path.display())))
        }
    }
}

fn load_events(loaded: &Loaded) -> anyhow::Result<Vec<bisect::JournalEvent>> {
    let texts = loaded.archive.session_events(loaded.session.id)?;
    wiring::decode_events(&texts).with_context(|| {
        format!(
            "the journal of bisection session {} is damaged",
            loaded.session.id
        )
    })
}

fn run_session(global: &GlobalArgs, args: &BisectRepoArgs) -> anyhow::Result<Code> {
    let loaded = load(global, &args.repo)?;
    let spec = &loaded.spec;
    let dir = state_dir(&loaded.repo);
    let _lock = lock_state(&dir)?;
    // A signal kills the running command's group; the engine journals the
    // interruption and the command exits 130.
    bisect::interrupt::install(bisect::interrupt::Mode::Journal);
    let bad_oid = range::resolve(&loaded.repo, &spec.bad).map_err(input)?;
    let worktree = BisectWorktree::open_or_create(&loaded.repo, &dir, WORKTREE_NAME, bad_oid)
        .context("failed to prepare the bisect worktree")?;
    let metric: Metric = spec.config.metric.parse()?;
    let method = match (&spec.bench, &spec.kernel) {
        (Some(text), Some(kernel)) => Method::Kernel(Box::new(wiring::KernelStep {
            request: super::request::parse_guest_bench_spec(text)?,
            worktree: worktree.path().to_path_buf(),
            image: PathBuf::from(&kernel.image),
            session: kernel.clone(),
            console_dir: dir.join("consoles"),
            quiet: global.quiet,
            verbose: global.verbose > 0,
        })),
        (Some(text), None) => Method::Bench(Box::new(super::request::parse_bench_spec(text)?)),
        (None, _) => Method::Command,
    };
    let step = CommandStep {
        build: spec.build.clone(),
        measure: spec.measure.clone().unwrap_or_default(),
        timeout: spec.timeout_s.map(Duration::from_secs_f64),
        metric,
    };
    let mut measurer = SessionMeasurer::new(
        CommandMeasurer::new(&worktree, step),
        method,
        metric,
        super::archive::open_archive(global)?,
        loaded.session.id,
        loaded.session.config_key.clone(),
    );
    let mut printer = progress::ProgressPrinter::new(
        global.quiet,
        global.verbose > 0,
        spec.config.decision.confirm_repeats,
    );
    // The config_key runs are compared under comes from the first run of
    // the session: one repeat of the good end, before the engine asks the
    // archive what it already has.
    if measurer.config_key().is_none() {
        if printer.enabled() {
            eprintln!(
                "netbisect: first run of the good end {} to learn the configuration",
                short(&loaded.graph.good.id)
            );
        }
        let good = loaded.graph.good.clone();
        let measurement = bisect::Measurer::measure(&mut measurer, &good)
            .map_err(|err| anyhow::anyhow!("{err}"))
            .with_context(|| format!("measuring the good commit {} failed", good.id))?;
        if let bisect::Measurement::Skip(reason) = measurement {
            anyhow::bail!("cannot measure the good commit {}: {reason}", good.id);
        }
    }
    let mut journal = ArchiveJournal::new(super::archive::open_archive(global)?, loaded.session.id);
    let outcome = engine::run(
        &loaded.graph,
        &spec.config,
        &mut measurer,
        &mut journal,
        &mut |progress| printer.show(progress),
    )
    .context("the bisection stopped; `netbisect bisect run` resumes it")?;
    // The session's config_key may have been learnt by this very run:
    // ask the measurer, not the session as it was loaded.
    let config_key = measurer.config_key().map(str::to_string);
    print_outcome(global, &loaded, config_key.as_deref(), &outcome)
}

fn status_of(loaded: &Loaded) -> anyhow::Result<Status> {
    let events = load_events(loaded)?;
    engine::status(&loaded.graph, &loaded.spec.config, &events)
        .context("failed to replay the journal")
}

fn status(global: &GlobalArgs, args: &BisectRepoArgs) -> anyhow::Result<Code> {
    let loaded = load(global, &args.repo)?;
    let status = status_of(&loaded)?;
    print_status(
        global,
        &loaded.session,
        &loaded.spec,
        &loaded.graph,
        &status,
    )?;
    Ok(Code::Ok)
}

fn state_name(status: &Status) -> &'static str {
    match &status.outcome {
        None => "running",
        Some(Outcome::Refused(_)) => "refused",
        Some(Outcome::Finished(report)) => match report.result {
            BisectResult::FirstBad { .. } => "first_bad",
            BisectResult::Range { .. } => "range",
        },
    }
}

fn print_status(
    global: &GlobalArgs,
    session: &BisectSession,
    spec: &SessionSpec,
    graph: &CommitGraph,
    status: &Status,
) -> anyhow::Result<()> {
    let doc = StatusDoc {
        schema: STATUS_SCHEMA,
        session: session.id,
        repo: spec.repo.clone(),
        good: graph.good.clone(),
        bad: graph.nodes[graph.bad_idx()].info.clone(),
        n_commits: graph.nodes.len() as u32,
        metric: spec.config.metric.clone(),
        phase: status.phase,
        state: state_name(status),
        next_commit: status.next_commit.clone(),
        next_n_samples: status.next_n_samples,
        candidates_left: status.candidates_left,
        est_steps_left: status.est_steps_left,
        n_measurements: status.n_measurements,
        n_events: session.n_events,
        steps: status.steps.clone(),
        estimate: status.estimate.clone(),
    };
    let text = if global.json {
        let mut text = serde_json::to_string(&doc).context("failed to encode the status")?;
        text.push('\n');
        text
    } else {
        Renderer::new(global.template_dir.as_deref())
            .render("bisect-status", &doc)
            .context("failed to render the status")?
    };
    write_stdout(&text)
}

/// `git bisect log` lines of the bisection so far.
fn log_lines(loaded: &Loaded, status: &Status) -> Vec<String> {
    if let Some(Outcome::Finished(report)) = &status.outcome {
        return report.log.clone();
    }
    let graph = &loaded.graph;
    let comment =
        |term: &str, commit: &CommitInfo| format!("# {term}: [{}] {}", commit.id, commit.subject);
    let mut lines = vec![if graph.first_parent {
        "git bisect start '--first-parent'".to_string()
    } else {
        "git bisect start".to_string()
    }];
    let bad = &graph.nodes[graph.bad_idx()].info;
    for (term, commit) in [("bad", bad), ("good", &graph.good)] {
        lines.push(comment(term, commit));
        lines.push(format!("git bisect {term} {}", commit.id));
    }
    for step in &status.steps {
        let term = step.verdict.git_term();
        lines.push(comment(term, &step.commit));
        lines.push(format!("git bisect {term} {}", step.commit.id));
    }
    if let Some(Outcome::Refused(_)) = &status.outcome {
        lines.push(
            "# refused: the ends do not differ by more than the noise and the minimum effect"
                .to_string(),
        );
    }
    lines
}

fn log(global: &GlobalArgs, args: &BisectRepoArgs) -> anyhow::Result<Code> {
    let loaded = load(global, &args.repo)?;
    let status = status_of(&loaded)?;
    let lines = log_lines(&loaded, &status);
    let text = if global.json {
        let mut text = serde_json::to_string(&lines).context("failed to encode the log")?;
        text.push('\n');
        text
    } else {
        let mut text = lines.join("\n");
        text.push('\n');
        text
    };
    write_stdout(&text)?;
    Ok(Code::Ok)
}

fn report(global: &GlobalArgs, args: &BisectRepoArgs) -> anyhow::Result<Code> {
    let loaded = load(global, &args.repo)?;
    let status = status_of(&loaded)?;
    match &status.outcome {
        Some(outcome) => print_outcome(
            global,
            &loaded,
            loaded.session.config_key.as_deref(),
            outcome,
        ),
        None => Err(input(
            "the bisection has not finished: `netbisect bisect run` continues it, \
             `netbisect bisect status` shows where it is",
        )),
    }
}

fn reset(global: &GlobalArgs, args: &BisectRepoArgs) -> anyhow::Result<Code> {
    let mut loaded = load(global, &args.repo)?;
    let dir = state_dir(&loaded.repo);
    let lock = lock_state(&dir)?;
    BisectWorktree::remove(&loaded.repo, WORKTREE_NAME)
        .context("failed to remove the bisect worktree")?;
    let worktree_dir = dir.join(WORKTREE_NAME);
    if worktree_dir.exists() {
        std::fs::remove_dir_all(&worktree_dir)
            .with_context(|| format!("failed to remove {}", worktree_dir.display()))?;
    }
    drop(lock);
    let _ = std::fs::remove_file(dir.join("lock"));
    let _ = std::fs::remove_dir(&dir);
    let session = loaded.archive.end_session(loaded.session.id)?;
    if !global.quiet {
        eprintln!(
            "netbisect: bisection session {} of {} ended; its runs stay in the archive",
            session.id, session.repo
        );
    }
    Ok(Code::Ok)
}

/// One line of the environment summary.
#[derive(Debug, Serialize)]
struct EnvLine {
    key: &'static str,
    value: String,
}

/// What the `bisect-report` template is given.
#[derive(Debug, Serialize)]
struct ReportContext<'a> {
    /// `report` or `refusal`.
    kind: &'static str,
    report: Option<&'a bisect::report::BisectReport>,
    refusal: Option<&'a bisect::report::Refusal>,
    /// The test spec of the good end's first run, when archived.
    spec: Option<bench_core::spec::RunSpec>,
    /// The good revision as given.
    good_rev: &'a str,
    /// The bad revision as given.
    bad_rev: &'a str,
    /// The commands that reproduce the bisection, as shell lines.
    reproduce: Vec<String>,
    environment: Vec<EnvLine>,
    /// True when the change is for the worse in the metric's direction.
    is_regression: bool,
}

fn quote(text: &str) -> String {
    shlex::try_quote(text).map_or_else(|_| format!("'{text}'"), |quoted| quoted.into_owned())
}

/// Widest line of a reproduce command, before the indent of the report.
const SHELL_WIDTH: usize = 70;

/// Lays `items` (options with their quoted values) out as shell lines of
/// at most `SHELL_WIDTH` columns, continued with a backslash. A single-quoted
/// value too long for a line is cut into pieces that the shell joins
/// again: `'abc'\` then `'def'` at the start of the next line is `abcdef`.
fn shell_lines(items: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for item in items {
        let indent = if lines.is_empty() && line.is_empty() {
            ""
        } else {
            "  "
        };
        if !line.is_empty() && line.len() + 1 + item.len() + 2 <= SHELL_WIDTH {
            line.push(' ');
            line.push_str(item);
            continue;
        }
        if !line.is_empty() {
            lines.push(format!("{line} \\"));
        }
        line = format!("{indent}{item}");
        if line.len() + 2 > SHELL_WIDTH
            && let Some((head, quoted)) = line.split_once(" '")
            && let Some(body) = quoted.strip_suffix('\'')
            && !body.contains('\'')
        {
            let chars: Vec<char> = body.chars().collect();
            let first_room = SHELL_WIDTH.saturating_sub(head.len() + 5).max(8);
            let (first, mut rest) = chars.split_at(first_room.min(chars.len()));
            lines.push(format!("{head} '{}'\\", first.iter().collect::<String>()));
            while rest.len() > SHELL_WIDTH - 4 {
                let (piece, after) = rest.split_at(SHELL_WIDTH - 4);
                lines.push(format!("'{}'\\", piece.iter().collect::<String>()));
                rest = after;
            }
            line = format!("'{}'", rest.iter().collect::<String>());
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn reproduce(spec: &SessionSpec) -> Vec<String> {
    let mut words = vec![
        "netbisect bisect start".to_string(),
        format!("--repo {}", quote(&spec.repo)),
        format!("--good {}", quote(&spec.good_rev)),
        format!("--bad {}", quote(&spec.bad_rev)),
    ];
    if let Some(build) = &spec.build {
        words.push(format!("--build {}", quote(build)));
    }
    if let Some(bench) = &spec.bench {
        words.push(format!("--bench {}", quote(bench)));
    }
    if let Some(measure) = &spec.measure {
        words.push(format!("--measure {}", quote(measure)));
    }
    if let Some(kernel) = &spec.kernel {
        words.extend(kernel_words(kernel));
    }
    words.push(format!("--metric {}", spec.config.metric));
    let decision = &spec.config.decision;
    let defaults = DecisionConfig::default();
    if decision.min_effect_pct != defaults.min_effect_pct {
        words.push(format!("--min-effect {}", decision.min_effect_pct));
    }
    if decision.max_repeats != defaults.max_repeats {
        words.push(format!("--max-repeats {}", decision.max_repeats));
    }
    if decision.min_end_repeats != defaults.min_end_repeats {
        words.push(format!("--end-repeats {}", decision.min_end_repeats));
    }
    if decision.confirm_repeats != defaults.confirm_repeats {
        words.push(format!("--confirm-repeats {}", decision.confirm_repeats));
    }
    if let Some(timeout) = spec.timeout_s {
        words.push(format!("--timeout {timeout}"));
    }
    if spec.first_parent {
        words.push("--first-parent".to_string());
    }
    let mut lines = shell_lines(&words);
    lines.push("netbisect bisect run".to_string());
    lines
}

/// The `--kernel` and `--vm-*` words of a session.
fn kernel_words(kernel: &wiring::KernelSession) -> Vec<String> {
    let options = &kernel.options;
    let defaults = crate::vm::VmOptions::default();
    let mut words = vec![format!("--kernel {}", quote(&kernel.image))];
    if options.net != defaults.net {
        words.push(format!("--vm-net {}", options.net.name()));
    }
    if options.cpus != defaults.cpus {
        words.push(format!("--vm-cpus {}", options.cpus));
    }
    if options.memory_mib != defaults.memory_mib {
        words.push(format!("--vm-memory {}M", options.memory_mib));
    }
    for append in &options.append {
        words.push(format!("--vm-append {}", quote(append)));
    }
    for (key, value) in &options.sysctls {
        words.push(format!("--vm-sysctl {}", quote(&format!("{key}={value}"))));
    }
    if let Some(settings) = &kernel.settings {
        words.push(format!("--vm-settings {}", quote(settings)));
    }
    if let Some(tap) = &options.tap {
        words.push(format!("--vm-tap {}", quote(tap)));
    }
    if options.timeout_s != defaults.timeout_s {
        words.push(format!("--vm-timeout {}", options.timeout_s));
    }
    match options.accel {
        crate::vm::AccelChoice::Auto => {}
        crate::vm::AccelChoice::Kvm => words.push("--vm-accel kvm".to_string()),
        crate::vm::AccelChoice::Tcg => words.push("--vm-accel tcg".to_string()),
    }
    words
}

/// The first archived run of `commit` under `config_key` when given.
fn first_record(archive: &Archive, commit: &str, config_key: Option<&str>) -> Option<RunRecord> {
    let query = RunQuery {
        commit_prefix: Some(commit.to_string()),
        config_key_prefix: config_key.map(str::to_string),
        limit: Some(1),
        ..RunQuery::default()
    };
    archive.records(&query).ok()?.into_iter().next()
}

/// The first archived run of `commit` with the spec of `like`: the bad
/// end may differ from the good one in its environment (a guest setting
/// of the kernel measured), never in the test.
fn record_like(archive: &Archive, commit: &str, like: &RunRecord) -> Option<RunRecord> {
    let query = RunQuery {
        commit_prefix: Some(commit.to_string()),
        ..RunQuery::default()
    };
    archive
        .records(&query)
        .ok()?
        .into_iter()
        .find(|record| record.spec == like.spec && record.testbed == like.testbed)
}

fn environment(good: Option<&RunRecord>, bad: Option<&RunRecord>) -> Vec<EnvLine> {
    let mut lines = Vec::new();
    let Some(first) = good.or(bad) else {
        return lines;
    };
    lines.push(EnvLine {
        key: "testbed",
        value: first.testbed.clone(),
    });
    let local = &first.env.local;
    if let Some(model) = &local.cpu_model {
        let count = local.cpu_count.map_or(String::new(), |n| format!("{n} x "));
        lines.push(EnvLine {
            key: "cpu",
            value: format!("{count}{model}"),
        });
    }
    if let Some(governor) = &local.governor {
        lines.push(EnvLine {
            key: "governor",
            value: governor.clone(),
        });
    }
    if let Some(cc) = local.sysctls.get("net.ipv4.tcp_congestion_control") {
        lines.push(EnvLine {
            key: "congestion",
            value: cc.clone(),
        });
    }
    for (key, record) in [("kernel (good)", good), ("kernel (bad)", bad)] {
        if let Some(release) = record.and_then(|record| record.env.local.kernel_release.clone()) {
            lines.push(EnvLine {
                key,
                value: release,
            });
        }
    }
    lines
}

/// Prints the end of a bisection; the spec and the environment shown come
/// from runs under `config_key`, so that runs of another test archived for
/// the same commits never name the report.
fn print_outcome(
    global: &GlobalArgs,
    loaded: &Loaded,
    config_key: Option<&str>,
    outcome: &Outcome,
) -> anyhow::Result<Code> {
    let (report, refusal, code) = match outcome {
        Outcome::Finished(report) => (Some(report), None, Code::Ok),
        Outcome::Refused(refusal) => (None, Some(refusal), Code::Refused),
    };
    let text = if global.json {
        let mut text = match (report, refusal) {
            (Some(report), _) => serde_json::to_string(report),
            (_, Some(refusal)) => serde_json::to_string(refusal),
            _ => Ok(String::new()),
        }
        .context("failed to encode the report")?;
        text.push('\n');
        text
    } else {
        let good = first_record(&loaded.archive, &loaded.spec.good, config_key);
        let bad = first_record(&loaded.archive, &loaded.spec.bad, config_key).or_else(|| {
            good.as_ref()
                .and_then(|good| record_like(&loaded.archive, &loaded.spec.bad, good))
        });
        let context = ReportContext {
            kind: if report.is_some() {
                "report"
            } else {
                "refusal"
            },
            report,
            refusal,
            spec: good
                .as_ref()
                .or(bad.as_ref())
                .map(|record| record.spec.clone()),
            good_rev: &loaded.spec.good_rev,
            bad_rev: &loaded.spec.bad_rev,
            reproduce: reproduce(&loaded.spec),
            environment: environment(good.as_ref(), bad.as_ref()),
            is_regression: report.is_some_and(|report| report.is_regression()),
        };
        Renderer::new(global.template_dir.as_deref())
            .render("bisect-report", &context)
            .context("failed to render the report")?
    };
    write_stdout(&text)?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_quoted_values_are_cut_where_the_shell_joins_them() {
        let measure = format!("--measure '{}'", "x".repeat(150));
        let items = vec![
            "netbisect bisect start".to_string(),
            "--good v1".to_string(),
            measure,
            "--bad v2".to_string(),
        ];
        let lines = shell_lines(&items);
        assert!(
            lines.iter().all(|line| line.len() <= SHELL_WIDTH),
            "{lines:#?}"
        );
        // What sh reads: continuations removed, then words split.
        let joined = lines.join("\n").replace("\\\n", "");
        let words = shlex::split(&joined).unwrap();
        assert_eq!(words[6], "x".repeat(150));
        assert_eq!(words.last().unwrap(), "v2");
    }
}
