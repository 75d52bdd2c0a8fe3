//! Command-line arguments (clap derive). These types stay in the CLI; each
//! command turns them into the libraries' option structs before any work.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Exit codes:
  0    success; for verdicts: old (like the good side)
  1    verdict: new (like the bad side), a regression
  2    usage or input error
  3    runtime failure (network, file system, a failed command)
  4    bisect refused: the good and bad ends do not differ enough
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
    /// Archive file [default: $XDG_DATA_HOME/netbisect/archive.db]
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
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check run record files: schema, numbers, id and config_key
    Record(RecordArgs),
    /// Show this host's environment as netbisect records it
    Env(EnvArgs),
    /// List the built-in templates or print one, to start your own
    Templates(TemplatesArgs),
    /// Keep runs in the archive: import, list, show, export, merge, check
    Archive(ArchiveArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on stdout
    Man,
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

/// `netbisect env`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Also describe this network interface (MTU, driver, offloads)
    #[arg(short = 'i', long, value_name = "IFACE")]
    pub interface: Option<String>,
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

/// `netbisect bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Host running `netbisect serve` [default: a server started in-process
    /// on loopback]
    #[arg(short = 'H', long, value_name = "HOST")]
    pub host: Option<String>,
    /// Control port of the server
    #[arg(short = 'p', long, value_name = "PORT", default_value_t = bench_core::protocol::DEFAULT_PORT)]
    pub port: u16,
    /// Test: TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, UDP_STREAM, UDP_RR
    #[arg(
        short = 't',
        long = "test",
        value_name = "TEST",
        default_value = "TCP_STREAM"
    )]
    pub test: String,
    /// Test length in seconds; fractions allowed [default: 10]
    #[arg(short = 'l', long = "length", value_name = "SECS")]
    pub length: Option<f64>,
    /// Local socket buffer, send and receive (K/M/G: powers of 2, k/m/g:
    /// powers of 10) [default: left to the kernel]
    #[arg(short = 's', value_name = "BYTES")]
    pub local_buffer: Option<String>,
    /// Remote socket buffer, send and receive [default: left to the kernel]
    #[arg(short = 'S', value_name = "BYTES")]
    pub remote_buffer: Option<String>,
    /// Bytes per send [default: 16K; UDP_STREAM: 1472]
    #[arg(short = 'm', value_name = "BYTES")]
    pub send_size: Option<String>,
    /// Bytes per receive [default: 128K]
    #[arg(short = 'M', value_name = "BYTES")]
    pub recv_size: Option<String>,
    /// Request and response sizes of RR tests [default: 1,1]
    #[arg(short = 'r', value_name = "REQ,RESP")]
    pub request_response: Option<String>,
    /// Run one test per size and print a sweep table: "m=SIZE,..." (bytes
    /// per send, stream tests) or "r=SIZE,..." (request and response size,
    /// RR tests; "REQ/RESP" sets them apart), e.g. "m=1,900,9000,60000"
    #[arg(long, value_name = "m|r=SIZES")]
    pub sweep: Option<String>,
    /// Set TCP_NODELAY on the data connections
    #[arg(long)]
    pub nodelay: bool,
    /// First burst of TCP_RR and UDP_RR: N requests beyond the first
    /// outstanding before a response is awaited, as netperf's -b
    /// [default: 0]
    #[arg(short = 'b', value_name = "N")]
    pub first_burst: Option<u32>,
    /// Pin the local and remote end to CPUs ("N" both, "N," local only,
    /// ",N" remote only)
    #[arg(short = 'T', value_name = "LCPU,RCPU")]
    pub cpus: Option<String>,
    /// Ports the server's data socket must use, for firewalls
    #[arg(long, value_name = "LOW-HIGH")]
    pub data_port: Option<bench_core::protocol::PortRange>,
    /// Use IPv4
    #[arg(short = '4', conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6
    #[arg(short = '6')]
    pub ipv6: bool,
    /// File holding the token the server demands
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Commit under test [default: from the running kernel's release]
    #[arg(long, value_name = "COMMIT")]
    pub commit: Option<String>,
    /// Free-form label of the run, such as "base" or "patched"
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Testbed name [default: "loopback" without -H, else the host]
    #[arg(long, value_name = "NAME")]
    pub testbed: Option<String>,
    /// Do not store the run in the archive
    #[arg(long)]
    pub no_archive: bool,
    /// Repeat iterations until the LEVEL% confidence interval (95 or 99)
    /// of the mean is WIDTH% of it wide (5: +-2.5%) [default width: 5]
    #[arg(short = 'I', value_name = "LEVEL,WIDTH")]
    pub confidence: Option<String>,
    /// Most and fewest iterations [default: 1; with -I: 10,3]
    #[arg(short = 'i', value_name = "MAX,MIN")]
    pub iterations: Option<String>,
    /// Measure local CPU utilisation and service demand
    #[arg(short = 'c')]
    pub local_cpu: bool,
    /// Measure remote CPU utilisation and service demand
    #[arg(short = 'C')]
    pub remote_cpu: bool,
    /// Parallel flows, started together over a common window
    #[arg(long, value_name = "N")]
    pub flows: Option<u32>,
    /// Local threads to spread the flows over [default: one per flow]
    #[arg(long, value_name = "T")]
    pub threads: Option<u32>,
    /// Seconds of traffic before each measured window, not counted
    #[arg(long, value_name = "SECS")]
    pub warmup: Option<f64>,
    /// Print interim results on stderr every SECS seconds
    #[arg(short = 'D', value_name = "SECS")]
    pub interim: Option<f64>,
    #[command(flatten)]
    pub units: UnitsArg,
    /// Show (1) or leave out (0) the test banner, as netperf's -P
    #[arg(short = 'P', value_name = "0|1", value_parser = clap::value_parser!(u8).range(0..=1))]
    pub banner: Option<u8>,
    /// netperf's test-specific options, after "--": -m -M (stream), -r
    /// and -b (RR), -s -S, -D (TCP_NODELAY), -P ,RPORT, -4 -6. With "--",
    /// give -s, -S and -r after it, as netperf reads them.
    #[arg(last = true, value_name = "TEST OPTIONS")]
    pub test_options: Vec<String>,
    /// Kernel under test: boot this image in a VM and run the test there.
    #[command(flatten)]
    pub vm: KernelArgs,
}

/// `netbisect serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; anything but loopback demands --token-file or
    /// --no-auth
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub listen: std::net::IpAddr,
    /// Control port (0: any free port)
    #[arg(short = 'p', long, value_name = "PORT", default_value_t = bench_core::protocol::DEFAULT_PORT)]
    pub port: u16,
    /// File holding the pre-shared token clients must prove they hold
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Serve anyone beyond loopback without a token
    #[arg(long, conflicts_with = "token_file")]
    pub no_auth: bool,
    /// Ports for data sockets when the client names none
    #[arg(long, value_name = "LOW-HIGH")]
    pub data_port: Option<bench_core::protocol::PortRange>,
    /// Most clients served at once
    #[arg(long, value_name = "N", default_value_t = bench_core::server::DEFAULT_MAX_CLIENTS)]
    pub max_clients: usize,
    /// Seconds to wait for a client's next control frame
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub timeout: f64,
    /// Most MiB of message buffers one test may ask for
    #[arg(long, value_name = "MIB", default_value_t = bench_core::server::DEFAULT_MAX_TEST_MEMORY >> 20)]
    pub max_test_memory: u64,
    /// Most MiB of message buffers all running tests may hold together
    #[arg(long, value_name = "MIB", default_value_t = bench_core::server::DEFAULT_MAX_TOTAL_MEMORY >> 20)]
    pub max_total_memory: u64,
}

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
    /// Import netperf or iperf3 outputs, or run record files
    ///
    /// The format is detected from the content: netperf classic, omni -k
    /// or -o output; iperf3 -J; canonical run records (one document or JSON
    /// lines). Each file is imported in its own transaction: a file that
    /// does not parse stores nothing, is reported with its first bad line,
    /// and the other files are still imported (exit code 2 at the end).
    /// --commit, --label and --testbed apply to peer-tool outputs; run
    /// records keep their own.
    Import(ImportArgs),
    /// List archived runs, oldest first
    List(RunFilterArgs),
    /// Print one run as its netperf table (the record with --json)
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
        /// The other archive file
        other: PathBuf,
    },
    /// Check the archive file and every stored run
    Check,
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
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
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
    pub test: Option<bench_core::spec::TestKind>,
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
    Run(BisectRepoArgs),
    /// Where the bisection stands (reads the journal, measures nothing)
    Status(BisectRepoArgs),
    /// The bisection as `git bisect log` lines (`git bisect replay` reads
    /// them)
    Log(BisectRepoArgs),
    /// The report of a finished bisection, ready for a mailing list
    Report(BisectRepoArgs),
    /// Remove the bisect worktree and end the session; runs stay archived
    Reset(BisectRepoArgs),
}

/// The repository a bisect command works on.
#[derive(Debug, Args)]
pub struct BisectRepoArgs {
    /// The git repository
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub repo: PathBuf,
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
    /// Repeats of each end before the steps [default: 5]
    #[arg(long, value_name = "N")]
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
    /// Smallest difference between the ends worth bisecting, percent
    #[arg(long, value_name = "PCT", default_value_t = 1.0)]
    pub min_effect: f64,
    /// Most repeats of one commit (an undecided commit is skipped)
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_repeats: u32,
    /// How to walk the range: posterior (every sample updates one
    /// posterior over the culprit; the next goes where it tells the most)
    /// or sequential (one commit at a time until it is classified)
    #[arg(long, value_enum, value_name = "METHOD", default_value = "posterior")]
    pub method: MethodArg,
    /// Seconds a measure command may run before it is killed (a skip)
    #[arg(long, value_name = "SECS")]
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

/// `netbisect verdict`.
/// How a bisection walks the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    /// Probabilistic bisection over one posterior
    Posterior,
    /// A sequential test per commit, as git bisect with repeats
    Sequential,
}

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
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
}

/// The flags of `--bench "SPEC"`: those of `netbisect bench`.
#[derive(Debug, Parser)]
#[command(name = "--bench", no_binary_name = true, disable_help_flag = true)]
pub struct BenchSpecLine {
    /// The bench flags.
    #[command(flatten)]
    pub args: BenchArgs,
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
compare reports and does not judge: it exits with 0 whatever it finds.";

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
    #[arg(long, value_name = "PCT", default_value_t = 0.0)]
    pub min_effect: f64,
    /// Only runs of this test kind, on both sides
    #[arg(long, value_name = "TEST")]
    pub test: Option<bench_core::spec::TestKind>,
    /// Only runs of this testbed, on both sides
    #[arg(long, value_name = "NAME")]
    pub testbed: Option<String>,
    /// Layout of the tables: netperf's, one table per configuration with
    /// a row per side (size sweeps as one table); matrix, every
    /// configuration of a test in one table; stats, the statistics of
    /// every metric
    #[arg(long, value_name = "LAYOUT", value_enum, default_value_t = CompareLayout::Netperf)]
    pub layout: CompareLayout,
    /// One block to paste in a mail, at most 72 columns: the sides, the
    /// commands that reproduce each configuration, the environment
    /// differences, the tables and the statistics used
    #[arg(long)]
    pub email: bool,
    #[command(flatten)]
    pub units: UnitsArg,
}

/// How `compare` lays out its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareLayout {
    /// netperf's tables, a row per side
    Netperf,
    /// One table per test, a row per configuration
    Matrix,
    /// Mean, spread, change and p value of every metric
    Stats,
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

const HISTORY_AFTER_HELP: &str = "\
With --repo, points are the commits of --range (default: HEAD and all its
ancestors) in git order, oldest first, each with all its selected runs;
runs of other commits are left out. Without --repo, every selected run
is a point, in order of start time.

A history follows one test configuration (test spec and testbed). When
the selected runs span several, the command lists them and exits with
2: narrow the selection with --spec-key (or --test, --testbed, --label,
--config-key).";

const PLAN_AFTER_HELP: &str = "\
The noise (coefficient of variation of one run's figure) and the seconds
per run come from the archived runs of the same bench spec and testbed,
unless --cv and --seconds give them. The estimate bisects a few hundred
simulated ranges of that length with that step and normal noise, as
`bisect start` would, and prints the mean and 95th percentile of the
measurements (ends and confirmation included) and of the time, builds
excluded. Heavier tails or drift than normal noise cost more.";

/// `netbisect plan`.
#[derive(Debug, Args)]
#[command(after_help = PLAN_AFTER_HELP)]
pub struct PlanArgs {
    /// The test, with `netbisect bench` flags, as `bisect start --bench`,
    /// for example "-t TCP_RR -l 5"
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub test: String,
    /// Size of the change to find, percent
    #[arg(long, value_name = "PCT")]
    pub effect: f64,
    /// Commits in the range
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub commits: usize,
    /// Noise of one run, percent [default: from archived runs]
    #[arg(long, value_name = "PCT")]
    pub cv: Option<f64>,
    /// Seconds per run [default: from archived runs, else the spec's
    /// length times its iterations]
    #[arg(long, value_name = "SECS")]
    pub seconds: Option<f64>,
}

/// `netbisect history`.
#[derive(Debug, Args)]
#[command(after_help = HISTORY_AFTER_HELP)]
pub struct HistoryArgs {
    /// Metric to follow: throughput_bps, transaction_rate,
    /// latency_{mean,p50,p90,p99,p999}_us, {local,remote}_cpu_pct,
    /// {local,remote}_service_demand
    #[arg(long, value_name = "METRIC")]
    pub metric: bench_core::record::Metric,
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
    pub test: Option<bench_core::spec::TestKind>,
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
    #[command(flatten)]
    pub units: UnitsArg,
}

// ---- Kernels under test (the VM runner) ----------------------------------

/// `--kernel IMAGE` of `bench`, and how its VM is made.
#[derive(Debug, Args)]
pub struct KernelArgs {
    /// Boot this kernel image (bzImage) in a VM with qemu and run the test
    /// inside it; the record comes back to this host's archive
    #[arg(long, value_name = "IMAGE")]
    pub kernel: Option<PathBuf>,
    /// How the VM is made.
    #[command(flatten)]
    pub options: VmOptionArgs,
    /// The resolved test spec as JSON (the host hands it to the guest)
    #[arg(long, value_name = "FILE", hide = true)]
    pub spec_file: Option<PathBuf>,
}

/// The options of the VM a kernel is tested in; they need a kernel.
#[derive(Debug, Default, Args)]
pub struct VmOptionArgs {
    /// Where the traffic flows: inside the guest over loopback, between
    /// two virtio-net NICs of the guest (one per network namespace), or
    /// from the guest to a server on this host [default: loopback]
    #[arg(long, value_enum, value_name = "MODE")]
    pub vm_net: Option<VmNetArg>,
    /// Virtual CPUs of the guest [default: 2]
    #[arg(long, value_name = "N")]
    pub vm_cpus: Option<u32>,
    /// Memory of the guest, MiB (M and G suffixes allowed) [default: 1G]
    #[arg(long, value_name = "SIZE")]
    pub vm_memory: Option<String>,
    /// Arguments added to the guest kernel's command line (repeatable)
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub vm_append: Vec<String>,
    /// Set a sysctl in the guest before the test (repeatable)
    #[arg(long, value_name = "KEY=VALUE")]
    pub vm_sysctl: Vec<String>,
    /// A file of guest settings, one per line: "sysctl KEY=VALUE" or
    /// "append ARGS" ('#' starts a comment). With bisect, a path in the
    /// worktree read at each step, so that the build can leave it
    #[arg(long, value_name = "FILE")]
    pub vm_settings: Option<PathBuf>,
    /// With --vm-net host: the tap device of this host the guest's NIC is
    /// attached to; it must be up, with an IPv4 address (the server's)
    #[arg(long, value_name = "IFACE")]
    pub vm_tap: Option<String>,
    /// Seconds from the start of the boot to the end of the test before
    /// the guest is killed [default: 300]
    #[arg(long, value_name = "SECS")]
    pub vm_timeout: Option<f64>,
    /// Accelerator: KVM if it works (tried, with a timeout), else TCG
    #[arg(long, value_enum, value_name = "ACCEL")]
    pub vm_accel: Option<VmAccelArg>,
}

impl VmOptionArgs {
    /// True when any VM option was given.
    pub fn any(&self) -> bool {
        self.vm_net.is_some()
            || self.vm_cpus.is_some()
            || self.vm_memory.is_some()
            || !self.vm_append.is_empty()
            || !self.vm_sysctl.is_empty()
            || self.vm_settings.is_some()
            || self.vm_tap.is_some()
            || self.vm_timeout.is_some()
            || self.vm_accel.is_some()
    }
}

/// `--vm-net`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum VmNetArg {
    /// Loopback inside the guest
    Loopback,
    /// Two virtio-net NICs of the guest looped to each other
    Pair,
    /// The guest to `netbisect serve` on this host
    Host,
}

/// `--vm-accel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum VmAccelArg {
    /// KVM when it works, else TCG
    Auto,
    /// KVM only
    Kvm,
    /// TCG (emulation) only
    Tcg,
}

/// `netbisect ab`.
#[derive(Debug, Args)]
pub struct AbArgs {
    /// The base kernel image
    #[arg(long, value_name = "IMAGE")]
    pub kernel_a: PathBuf,
    /// The patched kernel image
    #[arg(long, value_name = "IMAGE")]
    pub kernel_b: PathBuf,
    /// Boots of each kernel, alternating A B A B ...
    #[arg(short = 'n', value_name = "N", default_value_t = 5)]
    pub rounds: u32,
    /// Label of A's runs
    #[arg(long, value_name = "LABEL", default_value = "current")]
    pub label_a: String,
    /// Label of B's runs
    #[arg(long, value_name = "LABEL", default_value = "patched")]
    pub label_b: String,
    /// Significance level of the comparison, in (0, 1)
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    pub alpha: f64,
    /// The test, with `netbisect bench` flags, and the VM options.
    #[command(flatten)]
    pub bench: BenchArgs,
}
