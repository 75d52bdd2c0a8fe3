//! The arguments of the commands of a lab that runs itself: `track` (and
//! `track status`), `worker` and `regressions`.

use super::bisect::RecipeArgs;
use super::values;
use clap::{Args, Subcommand};
use std::path::PathBuf;

const TRACK_AFTER_HELP: &str = "\
Each new commit of the branch is measured once by a worker of the
testbed kind (`netbisect worker --testbed NAME --kind KIND`, KIND
defaulting to NAME), the newest first; when commits land faster than the
workers measure, the others are measured later, the middle of the widest
gap first. After each new point the head is compared with the points
before it; a suspected change is measured again at the head and at the
last point before it, as a bisection measures its ends, and a confirmed
regression is bisected on the workers (--jobs at once), reusing every run
the archive holds. The report goes to --notify CMD on its stdin and stays
in the archive (`netbisect regressions`). Everything is kept in the
archive: any number of trackers may watch the same branch, and a tracker
that restarts carries on.";

/// `netbisect track`.
#[derive(Debug, Args)]
#[command(
    after_help = TRACK_AFTER_HELP,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct TrackArgs {
    /// `status`: what the lab does now.
    #[command(subcommand)]
    pub action: Option<TrackAction>,
    /// What to watch and how (unused with `status`).
    #[command(flatten)]
    pub watch: TrackWatchArgs,
}

/// `netbisect track ...`.
#[derive(Debug, Subcommand)]
pub enum TrackAction {
    /// What each worker does, what is queued, the regressions, and how
    /// long the queue takes to drain
    Status(LabListArgs),
}

/// What `track` watches, how it measures, and where.
#[derive(Debug, Args)]
pub struct TrackWatchArgs {
    /// The git repository the commits are built from (a clone of the
    /// branch's repository when --remote is given)
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub repo: PathBuf,
    /// The branch followed
    #[arg(long, value_name = "NAME", default_value = "main")]
    pub branch: String,
    /// Fetch the branch from this remote (a name or a URL) before each
    /// look, into refs/netbisect/fetched/BRANCH of the repository
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
    /// The oldest commit tracked, when the branch is first tracked
    /// [default: 10 commits before its head]
    #[arg(long, value_name = "REV")]
    pub since: Option<String>,
    /// The kind of testbed the commits are measured on: the workers
    /// started with --testbed KIND or --kind KIND
    #[arg(long, value_name = "KIND", required = true)]
    pub testbed: Option<String>,
    /// Measure up to K commits at once when bisecting a regression, each
    /// on a free worker of the kind
    #[arg(long, value_name = "K", default_value_t = 2, value_parser = values::jobs)]
    pub jobs: u32,
    /// Hand each report to this shell command, on its stdin (as
    /// `sendmail -t` reads a mail); retried until it exits 0
    #[arg(long, value_name = "CMD")]
    pub notify: Option<String>,
    /// Seconds between two looks at the branch and the queue
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = values::lab_seconds)]
    pub interval: f64,
    /// Look once (measurements asked, a bisection driven to its end,
    /// reports sent) and exit, for a scheduler that starts the tracker
    #[arg(long)]
    pub once: bool,
    /// Seconds a tracker's hold on a regression's bisection lasts
    /// without its renewal; another tracker then takes it over
    #[arg(long, value_name = "SECS", default_value_t = 120.0, value_parser = values::lab_seconds, hide = true)]
    pub hold: f64,
    /// Seconds after which a failed report is tried again, doubling with
    /// each failure up to an hour
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = values::lab_seconds, hide = true)]
    pub retry: f64,
    /// How each commit is built and measured, and how a change is
    /// decided.
    #[command(flatten)]
    pub recipe: RecipeArgs,
}

/// `netbisect worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// This testbed's name, unique in the lab
    #[arg(long, value_name = "NAME")]
    pub testbed: String,
    /// The kind of testbed it is: it takes the jobs of trackers started
    /// with --testbed KIND [default: its name]
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Take one job (if one waits), do it and exit: for cron, systemd
    /// timers, CI runners
    #[arg(long)]
    pub once: bool,
    /// The repository to build from [default: the one each job names]
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Where the worker's worktree is kept [default:
    /// $XDG_STATE_HOME/netbisect/worker/NAME]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Seconds of a job's lease, extended every third of it while the
    /// job runs; a worker that dies loses its job to another after it
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = values::lab_seconds)]
    pub lease: f64,
    /// Seconds between two looks at an empty queue
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = values::lab_seconds)]
    pub poll: f64,
}

/// `netbisect regressions` and `track status`.
#[derive(Debug, Args)]
pub struct LabListArgs {
    /// Also the suspicions that measuring again dismissed
    #[arg(long)]
    pub all: bool,
}
