//! The arguments of the commands over archived runs: `archive`,
//! `compare` and `history`.

use super::UnitsArg;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `netbisect archive`.
#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// What to do with the archive.
    #[command(subcommand)]
    pub action: ArchiveAction,
}

/// `netbisect archive ...`.
#[derive(Debug, Subcommand)]
pub enum ArchiveAction {
    /// Import netperf, uperf or iperf3 outputs, or run record files
    ///
    /// The format is detected from the content: netperf classic, omni -k
    /// or -o output, also as a mail carries it (quoted, re-wrapped at 72-80
    /// columns, several outputs); uperf's text output of pbench-uperf's
    /// profiles; iperf3 -J; canonical run records (one document or JSON
    /// lines). Each file is imported in its own transaction: a file that
    /// does not parse stores nothing, is reported with its first bad line,
    /// and the other files are still imported (exit code 2 at the end).
    /// --commit, --label and --testbed apply to peer-tool outputs; run
    /// records keep their own.
    Import(ImportArgs),
    /// List archived runs, newest first (with --limit N, the N newest)
    List(RunFilterArgs),
    /// Print one run as its netperf table, and who stored it (the record
    /// with --json)
    Show {
        /// Run id or a unique prefix of it
        id: String,
        #[command(flatten)]
        units: UnitsArg,
    },
    /// Print the selected runs as canonical JSON lines
    Export(RunFilterArgs),
    /// Copy in every run of another archive that this one lacks
    Merge {
        /// The other archive: a file or a postgres:// address
        other: PathBuf,
    },
    /// Check the archive file and every stored run
    Check,
    /// Remove old runs: by age, testbed, label or commits, never one a
    /// bisection or a regression cites
    ///
    /// Every selection given must match; at least one is needed. A run
    /// is kept, and counted as kept, when a bisection's journal names it,
    /// when a lab job of a bisection measured it, or when it is of a
    /// commit a lab regression names (its ends, culprit or fix). The runs
    /// go with their history rows in one transaction: all or none.
    /// --dry-run says what would go and changes nothing. A file keeps
    /// the space of the runs removed for later writes; --vacuum gives it
    /// back to the file system.
    Prune(PruneArgs),
    /// Send a shared archive the runs kept while it was unreachable
    ///
    /// A run measured while its PostgreSQL archive cannot be reached is
    /// kept in the spool ($XDG_STATE_HOME/netbisect/spool, else
    /// ~/.local/state/netbisect/spool); the next command that writes to
    /// that archive sends it, and so does this one. Exit code 3 while the
    /// archive is still unreachable; nothing kept is lost.
    Sync,
}

/// `netbisect archive import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files to import ("-" for standard input)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Commit id of the code the runs measured
    #[arg(long, value_name = "COMMIT")]
    pub commit: Option<String>,
    /// `git describe` of that commit
    #[arg(long, value_name = "TEXT")]
    pub describe: Option<String>,
    /// Free-form label, such as base or patched
    #[arg(long, value_name = "LABEL", conflicts_with = "labels")]
    pub label: Option<String>,
    /// Label the outputs of one input in order: the first output's runs
    /// LABEL1, the next LABEL2, ...; one label per output, and none for
    /// an output whose lines name their sides
    #[arg(long, value_name = "LABEL1,LABEL2,...", value_delimiter = ',')]
    pub labels: Vec<String>,
    /// Testbed name [default: default]
    #[arg(long, value_name = "NAME")]
    pub testbed: Option<String>,
    /// Label the runs of rows beginning with the side name NAME (as in
    /// "current", "patched", "Org") LABEL instead [repeatable]
    #[arg(long, value_name = "NAME=LABEL")]
    #[expect(
        rustdoc::broken_intra_doc_links,
        reason = "the comment is clap's help text, where [repeatable] is no link"
    )]
    pub side_label: Vec<String>,
    /// Put PREFIX before the label taken from a row's side name
    #[arg(long, value_name = "PREFIX")]
    pub label_prefix: Option<String>,
}

/// `netbisect archive prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Runs started more than AGE ago (90d, 12w, 36h) or before DATE
    /// (2026-09-01, or a UTC time as 2026-09-01T12:00:00Z)
    #[arg(long, value_name = "AGE|DATE", value_parser = super::values::cutoff)]
    pub older_than: Option<super::values::Cutoff>,
    /// Runs of this testbed
    #[arg(long, value_name = "NAME")]
    pub testbed: Option<String>,
    /// Runs with this label
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Runs of the commits of a git range: A..B (after A up to B, as git
    /// log A..B) or one revision and its ancestors
    #[arg(long, value_name = "A..B")]
    pub commits: Option<String>,
    /// Git repository the range is read in [default: the current
    /// directory]
    #[arg(long, value_name = "PATH", requires = "commits")]
    pub repo: Option<PathBuf>,
    /// Follow first parents only in the range (the mainline of merges)
    #[arg(long, requires = "commits")]
    pub first_parent: bool,
    /// Say what would be removed and kept; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Then rewrite the archive file without the space freed (a file
    /// only; it needs as much free disk as the file takes)
    #[arg(long, conflicts_with = "dry_run")]
    pub vacuum: bool,
}

/// Filters selecting archived runs; all given must match.
#[derive(Debug, Args)]
pub struct RunFilterArgs {
    /// Commit id or a prefix of it
    #[arg(long, value_name = "PREFIX")]
    pub commit: Option<String>,
    /// Label
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Run id or a prefix of it
    #[arg(long, value_name = "PREFIX")]
    pub id: Option<String>,
    /// config_key or a prefix of it
    #[arg(long, value_name = "PREFIX")]
    pub config_key: Option<String>,
    /// Test kind (TCP_STREAM, TCP_RR, ...)
    #[arg(long, value_name = "TEST")]
    pub test: Option<run_record::spec::TestKind>,
    /// Testbed name
    #[arg(long, value_name = "NAME")]
    pub testbed: Option<String>,
    /// Tool that produced the runs (netbisect, netperf, iperf3)
    #[arg(long, value_name = "TOOL")]
    pub tool: Option<String>,
    /// At most this many runs
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
}

const COMPARE_AFTER_HELP: &str = "\
Selectors (A and B) are tried in this order; the first that matches wins:
  1. a run id prefix of at least 6 hex digits matching exactly one run:
     that run;
  2. a commit id or a prefix of it: all runs of that commit (a prefix
     matching several commits is an error);
  3. a label: all runs with that label.
When a later kind matches too, a warning says so; force the kind with
run:X, commit:X or label:X. A selector matching nothing exits with 2.

Runs are grouped by test spec and testbed; each group shows mean,
spread, samples, change and a Mann-Whitney verdict per metric (\"~\":
within noise). Differences of environment are listed as warnings.
compare reports and does not judge: it exits with 0 whatever it finds,
unless --check is given: then it exits with 1 when B is significantly
worse than A in any metric of any group, by at least --min-effect.";

/// `netbisect compare`.
#[derive(Debug, Args)]
#[command(after_help = COMPARE_AFTER_HELP)]
pub struct CompareArgs {
    /// The base side: run id, commit or label (or run:X, commit:X,
    /// label:X)
    #[arg(value_name = "A")]
    pub first: String,
    /// The patched side, as A
    #[arg(value_name = "B")]
    pub second: String,
    /// Significance level of the two-sided Mann-Whitney test, in (0, 1)
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    pub alpha: f64,
    /// Smallest change of the means, percent, reported as significant
    /// (and, with --check, failed)
    #[arg(long, value_name = "PCT", default_value_t = 0.0, alias = "effect")]
    pub min_effect: f64,
    /// Exit with 1 when B is significantly worse than A, by at least
    /// --min-effect, in any metric (for scripts and CI)
    #[arg(long)]
    pub check: bool,
    /// Only runs of this test kind, on both sides
    #[arg(long, value_name = "TEST")]
    pub test: Option<run_record::spec::TestKind>,
    /// Only runs of this testbed, on both sides
    #[arg(long, value_name = "NAME")]
    pub testbed: Option<String>,
    /// Layout of the tables: netperf's, one table per configuration with
    /// a row per side (size sweeps as one table); matrix, every
    /// configuration of a test in one table; stats, the statistics of
    /// every metric
    #[arg(long, value_name = "LAYOUT", value_enum, default_value_t = CompareLayoutArg::Netperf)]
    pub layout: CompareLayoutArg,
    /// One block to paste in a mail, at most 72 columns: the sides, the
    /// commands that reproduce each configuration, the environment
    /// differences, the tables and the statistics used
    #[arg(long)]
    pub email: bool,
    /// Only the runs of this experiment (the id `ab` prints)
    #[arg(long, value_name = "ID")]
    pub experiment: Option<String>,
    #[command(flatten)]
    pub units: UnitsArg,
}

/// How `compare` lays out its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareLayoutArg {
    /// netperf's tables, a row per side
    Netperf,
    /// One table per test, a row per configuration
    Matrix,
    /// Mean, spread, change and p value of every metric
    Stats,
}

const HISTORY_AFTER_HELP: &str = "\
With --repo, points are the commits of --range (default: HEAD and all its
ancestors) in git order, oldest first, each with all its selected runs;
runs of other commits are left out. Without --repo, every selected run
is a point, in order of start time.

A history follows one test configuration (test spec and testbed). When
the selected runs span several, the command lists them and exits with
2: narrow the selection with --spec-key (or --test, --testbed, --label,
--config-key).

With --check, the command exits with 1 when the newest level of the
series began with a change for the worse: the last change point found
is a regression. Narrow the series (--range, --label) to the window a
check judges, since a change accepted long ago stays the last one.";

/// `netbisect history`.
#[derive(Debug, Args)]
#[command(after_help = HISTORY_AFTER_HELP)]
pub struct HistoryArgs {
    /// Metric to follow: throughput_bps, transaction_rate,
    /// latency_{mean,p50,p90,p99,p999}_us, {local,remote}_cpu_pct,
    /// {local,remote}_service_demand
    #[arg(long, value_name = "METRIC")]
    pub metric: run_record::record::Metric,
    /// Git repository giving the commit order
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Commits to show: A..B (after A up to B, as git log A..B) or one
    /// revision and its ancestors [default: HEAD]
    #[arg(long, value_name = "A..B", requires = "repo")]
    pub range: Option<String>,
    /// Follow first parents only (the mainline of merges)
    #[arg(long, requires = "repo")]
    pub first_parent: bool,
    /// Test kind (TCP_STREAM, TCP_RR, ...)
    #[arg(long, value_name = "TEST")]
    pub test: Option<run_record::spec::TestKind>,
    /// Testbed name
    #[arg(long, value_name = "NAME")]
    pub testbed: Option<String>,
    /// Label
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// config_key or a prefix of it
    #[arg(long, value_name = "PREFIX")]
    pub config_key: Option<String>,
    /// Spec key (test spec and testbed) or a prefix of it
    #[arg(long, value_name = "PREFIX")]
    pub spec_key: Option<String>,
    /// Tool that produced the runs (netbisect, netperf, iperf3)
    #[arg(long, value_name = "TOOL")]
    pub tool: Option<String>,
    /// Significance level of the change-point test, in (0, 1)
    #[arg(long, value_name = "ALPHA", default_value_t = 0.001)]
    pub alpha: f64,
    /// Smallest change of level, percent, marked as a change point
    #[arg(long, value_name = "PCT", default_value_t = 0.0)]
    pub min_change: f64,
    /// Exit with 1 when the newest level began with a change for the
    /// worse (for scripts and CI)
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub units: UnitsArg,
    /// Also write the history's chart to FILE (SVG), as `publish` draws it
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// `netbisect publish`.
#[derive(Debug, Args)]
pub struct PublishArgs {
    /// Directory of the site (created if missing; pages in it are replaced)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Git repository giving the commit order of the charts [default: time
    /// order]
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Commits of the charts: A..B or one revision and its ancestors
    /// [default: HEAD]
    #[arg(long, value_name = "A..B", requires = "repo")]
    pub range: Option<String>,
    /// Follow first parents only (the mainline of merges)
    #[arg(long, requires = "repo")]
    pub first_parent: bool,
    /// A compare page of two sides, as `compare A B` takes them (commit,
    /// label or run id); repeat for more pages
    #[arg(long, value_name = "A..B")]
    pub compare: Vec<String>,
}

// ---- Kernels under test (the VM runner) ----------------------------------
