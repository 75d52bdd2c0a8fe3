//! The arguments of `bench` (and of `--bench "SPEC"`, the same flags),
//! `serve` and `ab`: a socket test, on this host or in VMs.

use super::UnitsArg;
use super::values;
use super::vm::KernelArgs;
use clap::{Args, Parser};
use std::path::PathBuf;

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
    /// Run one test per value (repeatable: every combination of the axes
    /// given). A single "m=SIZE,..." (bytes per send) or "r=SIZE,..."
    /// (request and response size; "REQ/RESP" sets them apart) prints a
    /// sweep table, e.g. "m=1,900,9000,60000". Axes: t (tests), m, M, r,
    /// s, S ("default": the kernel's own size), b, and the settings of
    /// --set (mtu, txqueuelen, an offload such as gso=on,off, a sysctl)
    #[arg(long, value_name = "AXIS=VALUES")]
    pub sweep: Vec<String>,
    /// One configuration listed whole, "AXIS=VALUE AXIS=VALUE ..."
    /// (repeatable; the axes of --sweep, the same axes in each): the
    /// configurations given instead of a product of axes, e.g. --config
    /// "S=default s=default" --config "S=87380 s=87380"; with --sweep,
    /// each of them with every combination of its axes
    #[arg(long, value_name = "AXES")]
    pub config: Vec<String>,
    /// Set up the system under test before the test (repeatable): an
    /// offload of the test's interface as ethtool -K names it ("gso=off",
    /// "tx-udp-segmentation=on"), "mtu=N", "txqueuelen=N", or a sysctl
    /// ("net.core.rmem_max=4194304"); what the kernel granted is recorded.
    /// Needs root, and changes the host's interface for the test
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
    /// Fail a run whose settings (--set, or a settings axis of --sweep)
    /// the kernel did not all grant, instead of warning and keeping it
    #[arg(long)]
    pub strict_settings: bool,
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
    #[arg(short = 'D', value_name = "SECS", value_parser = values::interim_seconds)]
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

/// The flags of `--bench "SPEC"`: those of `netbisect bench`.
#[derive(Debug, Parser)]
#[command(name = "--bench", no_binary_name = true, disable_help_flag = true)]
pub struct BenchSpecLine {
    /// The bench flags.
    #[command(flatten)]
    pub args: BenchArgs,
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
    /// Most connections in their handshake at once; beyond, the oldest
    /// is closed to make room
    #[arg(
        long,
        value_name = "N",
        default_value_t = bench_core::server::DEFAULT_MAX_PRE_AUTH,
        value_parser = values::max_handshakes
    )]
    pub max_handshakes: usize,
    /// Seconds to wait for a client's next control frame
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 30.0,
        value_parser = values::control_timeout
    )]
    pub timeout: f64,
    /// Most MiB of message buffers one test may ask for
    #[arg(long, value_name = "MIB", default_value_t = bench_core::server::DEFAULT_MAX_TEST_MEMORY >> 20)]
    pub max_test_memory: u64,
    /// Most MiB of message buffers all running tests may hold together
    #[arg(long, value_name = "MIB", default_value_t = bench_core::server::DEFAULT_MAX_TOTAL_MEMORY >> 20)]
    pub max_total_memory: u64,
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
    /// Rounds: boots of each kernel, in the order A B B A A B ..., every
    /// configuration of a round in one boot
    #[arg(short = 'n', value_name = "N", default_value_t = 5, value_parser = values::rounds)]
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
    /// Print one block to paste in a mail (at most 72 columns), with the
    /// command that runs the experiment again
    #[arg(long)]
    pub email: bool,
    /// Measure anew, as a new experiment, even when the archive holds this
    /// one's runs (run again without it, the command measures only what
    /// the experiment still lacks). The experiment's reproduce line names
    /// it as --fresh=TOKEN, which is that experiment again
    #[arg(long, value_name = "TOKEN", num_args = 0..=1, require_equals = true)]
    pub fresh: Option<Option<String>>,
    /// When another `ab` is measuring the same experiment on this machine,
    /// wait for it to end and measure only what it leaves (without it,
    /// this one stops and says so)
    #[arg(long)]
    pub wait: bool,
    /// The test, with `netbisect bench` flags, and the VM options.
    #[command(flatten)]
    pub bench: BenchArgs,
}
