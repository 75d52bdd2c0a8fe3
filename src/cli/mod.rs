//! Command-line arguments (clap derive), nothing else. These types stay in
//! the CLI; each command turns them into the libraries' option structs
//! before any work. One module per group of commands; arguments with a
//! range are read by the parsers of [`values`].

mod archive;
mod bench;
mod bisect;
mod lab;
mod values;
mod vm;

pub use archive::*;
pub use bench::*;
pub use bisect::*;
pub use lab::*;
pub use values::{Cutoff, MAX_JOBS};
pub use vm::*;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Exit codes:
  0    success; for verdicts: old (like the good side)
  1    verdict: new (like the bad side), a regression; history --check,
       compare --check: a change for the worse
  2    usage or input error
  3    runtime failure (network, file system, a failed command)
  4    bisect refused: the good and bad ends do not differ enough
  5    plan --strict: the simulated bisections miss their accuracy aim
  125  cannot tell (read by `git bisect run` as skip)
  128  verdict: a usage or configuration error (aborts `git bisect run`)
  130  interrupted by SIGINT or SIGTERM";

/// Network benchmark, archive and bisection for Linux networking.
#[derive(Debug, Parser)]
#[command(name = "netbisect", version, after_help = AFTER_HELP, max_term_width = 80)]
pub struct Cli {
    /// Global options.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Archive file, or postgres://USER@HOST/DB
    /// [default: $XDG_DATA_HOME/netbisect/archive.db]
    #[arg(long, global = true, env = "NETBISECT_ARCHIVE", value_name = "PATH")]
    pub archive: Option<PathBuf>,
    /// Print JSON on stdout instead of a table
    #[arg(long, global = true)]
    pub json: bool,
    /// Directory of templates overriding the built-in ones
    #[arg(
        long,
        global = true,
        env = "NETBISECT_TEMPLATE_DIR",
        value_name = "DIR"
    )]
    pub template_dir: Option<PathBuf>,
    /// More detail on stderr (repeat for more)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Progress of long work on stderr: a live line on a terminal, else
    /// timestamped lines; "always" shows it under -q too
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ProgressArg::Auto)]
    pub progress: ProgressArg,
}

/// `--progress`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressArg {
    /// Unless -q
    Auto,
    /// Even with -q
    Always,
    /// Never
    Never,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check run record files: schema, numbers, id and config_key
    Record(RecordArgs),
    /// In a guest of the VM runner: make a spec's settings on an interface
    /// of this namespace and leave them made (the far NIC of --vm-net pair)
    #[command(hide = true)]
    GuestSettings(GuestSettingsArgs),
    /// In a guest of the VM runner: every run of the guest's plan, in one
    /// process, each outcome written to the output directory
    #[command(hide = true)]
    GuestRuns(GuestRunsArgs),
    /// Show this host's environment as netbisect records it
    Env(EnvArgs),
    /// List the built-in templates or print one, to start your own
    Templates(TemplatesArgs),
    /// Keep runs in the archive: import, list, show, export, merge, check,
    /// prune
    Archive(ArchiveArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on stdout, or write a page per
    /// command to a directory
    Man(ManArgs),
    /// Run a socket test (netperf's flags) and print its record
    Bench(BenchArgs),
    /// Serve as the remote end of tests (netserver's role)
    Serve(ServeArgs),
    /// Bisect a git range to the commit that changed a metric
    Bisect(BisectArgs),
    /// Measure the current tree against archived good and bad runs (for
    /// `git bisect run`): exit 0 old, 1 new, 125 cannot tell, 128 bad
    /// configuration
    Verdict(VerdictArgs),
    /// Compare the runs of two commits, labels or run ids
    Compare(CompareArgs),
    /// Boot two kernels in turn (A B A B ...), test each, compare them
    Ab(AbArgs),
    /// A metric across commits (git order) or runs (time order)
    History(HistoryArgs),
    /// Estimate how many measurements and how long a bisection will take
    Plan(PlanArgs),
    /// Write the archive as a static site: charts of every configuration
    /// across commits with a page per point, comparisons, bisections, and
    /// the lab's regressions with an Atom feed
    Publish(PublishArgs),
    /// Watch a branch: measure each new commit on the lab's workers,
    /// confirm a change at the head, bisect it and report it
    Track(TrackArgs),
    /// Take the lab's jobs for this testbed from the archive's queue
    Worker(WorkerArgs),
    /// The regressions the trackers found: open, bisected, fixed
    Regressions(LabListArgs),
}

/// `netbisect record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// What to do with the records.
    #[command(subcommand)]
    pub action: RecordAction,
}

/// `netbisect record ...`.
#[derive(Debug, Subcommand)]
pub enum RecordAction {
    /// Validate record files and print each one's id and config_key
    Check {
        /// Files holding one canonical run record each ("-" for stdin)
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

/// `netbisect guest-settings`.
#[derive(Debug, Args)]
pub struct GuestSettingsArgs {
    /// The resolved test spec as JSON, whose `system` settings are made
    #[arg(long, value_name = "FILE")]
    pub spec_file: PathBuf,
    /// The interface to make them on
    #[arg(long, value_name = "IFACE")]
    pub interface: String,
}

/// `netbisect guest-runs`.
#[derive(Debug, Args)]
pub struct GuestRunsArgs {
    /// The plan of the runs (JSON)
    #[arg(long, value_name = "FILE")]
    pub plan: PathBuf,
    /// Where each run's record, error and status go
    #[arg(long, value_name = "DIR")]
    pub output: PathBuf,
    /// The far NIC of the pair, in namespace nbpeer, which takes a run's
    /// settings first
    #[arg(long, value_name = "IFACE")]
    pub peer_interface: Option<String>,
}

/// `netbisect env`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Also describe this network interface (MTU, driver, offloads)
    #[arg(short = 'i', long, value_name = "IFACE")]
    pub interface: Option<String>,
}

/// `netbisect man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write netbisect.1 and a page for every command (netbisect-bench.1,
    /// netbisect-archive-import.1, ...) to this directory instead
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `netbisect completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    pub shell: clap_complete::Shell,
}

/// `netbisect templates`.
#[derive(Debug, Args)]
pub struct TemplatesArgs {
    /// What to do with the templates.
    #[command(subcommand)]
    pub action: TemplatesAction,
}

/// `netbisect templates ...`.
#[derive(Debug, Subcommand)]
pub enum TemplatesAction {
    /// List template names and where each would be loaded from
    List,
    /// Print a template's source (the override if there is one)
    Dump {
        /// Template name, as `templates list` prints it
        name: String,
    },
}

/// netperf's `-f`: the unit of throughput.
#[derive(Debug, Args)]
pub struct UnitsArg {
    /// Throughput unit, as netperf's -f: k, m, g (10^3, 10^6, 10^9
    /// bits/s) or K, M, G (2^10, 2^20, 2^30 bytes/s)
    #[arg(
        short = 'f',
        value_name = "UNIT",
        default_value = "m",
        value_parser = ["k", "m", "g", "K", "M", "G"]
    )]
    pub units: String,
}
