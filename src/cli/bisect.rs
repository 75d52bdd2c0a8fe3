//! The arguments of the commands that find a change in a git range:
//! `bisect`, `verdict` (for `git bisect run`) and `plan`.

use super::values;
use super::vm::VmOptionArgs;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `netbisect bisect`.
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: BisectAction,
}

/// `netbisect bisect ...`.
#[derive(Debug, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "parsed once per process; boxing would only add noise"
)]
pub enum BisectAction {
    /// Check a bisection and record it; nothing is built or measured yet
    ///
    /// Everything is checked before anything runs: the repository has a
    /// working tree and no uncommitted changes, both revisions exist, good
    /// is an ancestor of bad, the build and measure commands' programs
    /// exist and the bench spec parses. Steps are built and measured in a
    /// worktree of their own under the repository's git directory; your
    /// checkout is never touched.
    Start(BisectStartArgs),
    /// Run the bisection to its end, or resume it where it stopped
    Run(BisectRunArgs),
    /// Where the bisection stands (reads the journal, measures nothing)
    Status(BisectRepoArgs),
    /// The bisection as `git bisect log` lines (`git bisect replay` reads
    /// them)
    Log(BisectRepoArgs),
    /// The report of a finished bisection, ready for a mailing list
    Report(BisectReportArgs),
    /// Remove the bisect worktree and end the session; runs stay archived
    Reset(BisectRepoArgs),
}

/// The repository a bisect command works on.
#[derive(Debug, Args)]
pub struct BisectRepoArgs {
    /// The git repository [default: the one of the current directory,
    /// else the one bisection in progress]
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
}

/// `bisect report`.
#[derive(Debug, Args)]
pub struct BisectReportArgs {
    /// The repository.
    #[command(flatten)]
    pub repo: BisectRepoArgs,
    /// Also write the chart of every commit's measurements to FILE (SVG),
    /// as `publish` draws it
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// `netbisect bisect run`.
#[derive(Debug, Args)]
pub struct BisectRunArgs {
    /// The repository.
    #[command(flatten)]
    pub repo: BisectRepoArgs,
    /// Measure up to K commits at once, each slot in a worktree of its
    /// own; commands see NETBISECT_SLOT (0 to K-1) and NETBISECT_JOBS
    /// [default: as the bisection's first run, else 1]
    #[arg(long, value_name = "K", value_parser = values::jobs)]
    pub jobs: Option<u32>,
    /// Run at most N build commands at once on this host [default: K]
    #[arg(long, value_name = "N", value_parser = values::jobs)]
    pub build_jobs: Option<u32>,
}

/// How each repeat is measured: a bench test or a command.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct MeasureArgs {
    /// Run this bench test locally after the build, with `netbisect
    /// bench` flags, for example "-t TCP_RR -l 5 -T 0,1"
    #[arg(long, value_name = "TEST SPEC", allow_hyphen_values = true)]
    pub bench: Option<String>,
    /// Run this shell command in the worktree; it prints one canonical
    /// run record on stdout (exit 125: cannot test this commit)
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub measure: Option<String>,
}

/// `netbisect bisect start`.
#[derive(Debug, Args)]
pub struct BisectStartArgs {
    /// The git repository
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub repo: PathBuf,
    /// A revision with the old (good) performance
    #[arg(long, value_name = "REV")]
    pub good: String,
    /// A revision with the new (bad) performance; good must be its
    /// ancestor
    #[arg(long, value_name = "REV")]
    pub bad: String,
    /// How each commit is built and measured, and how it is decided.
    #[command(flatten)]
    pub recipe: RecipeArgs,
}

/// How each commit is built and measured, and how a change is decided:
/// what `bisect start` and `track` share.
#[derive(Debug, Args)]
pub struct RecipeArgs {
    /// Shell command building the checked-out commit, once per commit
    /// (a failure skips the commit)
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub build: Option<String>,
    /// How to measure.
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Boot this image (a path in the worktree, as the build leaves it,
    /// e.g. arch/x86/boot/bzImage) in a VM and run --bench inside
    #[arg(long, value_name = "RELPATH")]
    pub kernel: Option<PathBuf>,
    /// How the VM is made (with --kernel).
    #[command(flatten)]
    pub vm: VmOptionArgs,
    /// Repeats of each end taken first; more only while their difference
    /// is neither clear nor ruled out, up to --max-repeats [default: 5]
    #[arg(long, value_name = "N", value_parser = values::end_repeats)]
    pub end_repeats: Option<u32>,
    /// Repeats added to the culprit and its parent to confirm the answer
    /// [default: 5]
    #[arg(long, value_name = "N")]
    pub confirm_repeats: Option<u32>,
    /// Metric to bisect on [default: transaction_rate for RR tests of
    /// --bench, else throughput_bps]
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    /// Which way is better [default: higher for throughput and rates,
    /// lower for latency, CPU and service demand]
    #[arg(long, value_enum, value_name = "WAY")]
    pub direction: Option<DirectionArg>,
    /// Smallest difference between the ends worth bisecting, percent, as
    /// a promise: ends that differ by that much are refused at most 2% of
    /// the time, however noisy the runs (noisy runs then take more
    /// repeats of the ends) [default: 1, with the smallest step the ends'
    /// test keeps set by the noise]
    #[arg(long, value_name = "PCT", value_parser = values::min_effect_pct)]
    pub min_effect: Option<f64>,
    /// Most repeats of one commit (an undecided commit is skipped)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100,
        value_parser = values::max_repeats
    )]
    pub max_repeats: u32,
    /// How to walk the range: posterior (every sample updates one
    /// posterior over the culprit; the next goes where it tells the most)
    /// or sequential (one commit at a time until it is classified)
    #[arg(long, value_enum, value_name = "METHOD", default_value = "posterior")]
    pub method: MethodArg,
    /// Seconds a measure command may run before it is killed (a skip)
    #[arg(long, value_name = "SECS", value_parser = values::command_timeout)]
    pub timeout: Option<f64>,
    /// Follow only the first parent of merges (bisects to a merge)
    #[arg(long)]
    pub first_parent: bool,
}

/// `--direction`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DirectionArg {
    /// Larger values are better
    Higher,
    /// Smaller values are better
    Lower,
}

/// How a bisection walks the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    /// Probabilistic bisection over one posterior
    Posterior,
    /// A sequential test per commit, as git bisect with repeats
    Sequential,
}

/// `netbisect verdict`.
#[derive(Debug, Args)]
pub struct VerdictArgs {
    /// The good baseline: an archived run id (prefix), whose commit's runs
    /// with the same config_key count, or a commit (prefix), whose runs of
    /// the test measured count
    #[arg(long, value_name = "ID|COMMIT")]
    pub good_run: String,
    /// The bad baseline, as --good-run
    #[arg(long, value_name = "ID|COMMIT")]
    pub bad_run: String,
    /// How to measure.
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Metric to decide on [default: the baselines' primary metric]
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    /// Most repeats before answering "cannot tell"
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_repeats: u32,
    /// Seconds a measure command may run before it is killed
    #[arg(long, value_name = "SECS", value_parser = values::command_timeout)]
    pub timeout: Option<f64>,
}

const PLAN_AFTER_HELP: &str = "\
The noise (coefficient of variation of one run's figure) and the seconds
per run come from the archived runs of the same bench spec and testbed
that share the config_key of the newest of them (the same environment),
unless --cv and --seconds give them. The estimate bisects 300 simulated
ranges of that length with that step and normal noise, as `bisect start`
would, and prints the mean and 95th percentile of the measurements (ends
and confirmation included) and of the time, builds excluded. Heavier
tails or drift than normal noise cost more. When fewer of the simulated
bisections name the right commit than a bisection aims for (99.5%), a
warning says so; with --strict, the exit code is then 5.";

/// `netbisect plan`.
#[derive(Debug, Args)]
#[command(after_help = PLAN_AFTER_HELP)]
pub struct PlanArgs {
    /// The test, with `netbisect bench` flags, as `bisect start --bench`,
    /// for example "-t TCP_RR -l 5"
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub test: String,
    /// Size of the change to find, percent
    #[arg(long, value_name = "PCT", value_parser = values::plan_effect_pct)]
    pub effect: f64,
    /// Commits in the range
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1024,
        value_parser = values::plan_commits
    )]
    pub commits: usize,
    /// Noise of one run, percent [default: from archived runs]
    #[arg(long, value_name = "PCT", value_parser = values::plan_cv_pct)]
    pub cv: Option<f64>,
    /// Seconds per run [default: from archived runs, else the spec's
    /// length times its iterations]
    #[arg(long, value_name = "SECS", value_parser = values::plan_seconds)]
    pub seconds: Option<f64>,
    /// Exit with 5 when the simulated bisections name the right commit
    /// less often than a bisection aims for
    #[arg(long)]
    pub strict: bool,
    /// Measurements run at once, as `bisect run --jobs K`: the time is
    /// then the rounds' (wall-clock), and the rounds are printed
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = values::jobs)]
    pub jobs: u32,
}
