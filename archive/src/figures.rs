//! What a netperf-style table needs of a set of runs: the title and the
//! command line of a spec (and of a run's configuration, where it ran),
//! and the figures of one side of a comparison in netperf's columns
//! (socket sizes as granted right after setup, elapsed time, throughput,
//! rate, CPU utilisation and service demand, datagrams, confidence).
//!
//! A title names every parameter of the spec that is not netperf's
//! default for the test, and always the test length, so that two groups
//! of a comparison never share a title. [`spec_options`] destructures the
//! whole [`RunSpec`] without a rest pattern: a new spec parameter does not
//! compile until it is given its words here. The command lines are
//! [`CommandLine`]s, quoted by run-record's one renderer.

mod command;

pub use command::{
    CommandWord, configuration_command, options_of_command, run_command, vm_options_of_env,
};

use run_record::record::SystemOutcome;
use run_record::record::{Metric, RunRecord};
use run_record::shell::CommandLine;
use run_record::spec::{
    AddressFamily, CpuPinning, ReportedSocketBuffers, RunSpec, Setting, TestKind,
};
use serde::Serialize;

/// One parameter of a spec, as a title shows it and as `netbisect bench`
/// takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SpecOption {
    /// Words in a title (`-S 2280`, `nodelay`, `flows 4`).
    pub title: String,
    /// The flag of `netbisect bench` that gives it again (`-S`,
    /// `--nodelay`, `--set`); none where no flag does (the buffers an
    /// import reports as granted).
    pub flag: Option<String>,
    /// The flag's value (`2280`, `gso=off`); none for a flag without one.
    pub value: Option<String>,
}

fn option(title: String, flag: &str, value: Option<String>) -> SpecOption {
    SpecOption {
        title,
        flag: Some(flag.to_string()),
        value,
    }
}

/// A number of seconds without needless digits (`10`, `0.1`, `2.5`).
pub fn seconds(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The parameters of `spec` that differ from netperf's defaults for its
/// test, in netperf's order (global options, then test-specific ones),
/// the test length always included.
pub fn spec_options(spec: &RunSpec) -> Vec<SpecOption> {
    spec_options_as_granted(spec, None)
}

/// The legend of a setting named with what the kernel granted instead
/// ([`granted_words`]), for the line under a table that names one.
pub const NOT_GRANTED_LEGEND: &str =
    "KEY=ASKED(GOT): asked ASKED, the kernel kept GOT; measured with GOT.";

/// A setting's words as the kernel granted it in `outcome`: as asked
/// (`gso=on`) where it gave what was asked (or nothing says otherwise),
/// else what was asked with what it kept in brackets (`gso=on(off)`).
pub fn granted_words(setting: &Setting, outcome: Option<&SystemOutcome>) -> String {
    let asked = setting.text();
    match outcome.and_then(|outcome| outcome.granted_instead(setting)) {
        Some(granted) => format!("{asked}({granted})"),
        None => asked,
    }
}

/// True when `outcome` says the kernel kept something else than one of
/// the settings `spec` asked.
pub fn any_not_granted(spec: &RunSpec, outcome: Option<&SystemOutcome>) -> bool {
    let Some(outcome) = outcome else {
        return false;
    };
    spec.system
        .iter()
        .flat_map(|system| system.settings())
        .any(|setting| outcome.granted_instead(&setting).is_some())
}

/// Of the outcomes of both sides of a group, the one its title names:
/// the first's, or the second's where only that side was refused a
/// setting.
pub fn title_outcome<'a>(
    spec: &RunSpec,
    [first, second]: [Option<&'a SystemOutcome>; 2],
) -> Option<&'a SystemOutcome> {
    if !any_not_granted(spec, first) && any_not_granted(spec, second) {
        second
    } else {
        first
    }
}

/// Each setting of `spec` as the kernel kept it in `outcome`
/// (`gso=off` for `gso=on` not granted), in the order of
/// [`run_record::spec::SystemSettings::settings`].
pub fn settings_as_kept(spec: &RunSpec, outcome: Option<&SystemOutcome>) -> Vec<String> {
    spec.system
        .iter()
        .flat_map(|system| system.settings())
        .map(|setting| {
            let asked = setting.text();
            match outcome.and_then(|outcome| outcome.granted_instead(&setting)) {
                Some(granted) => {
                    let key = asked.split_once('=').map_or(asked.as_str(), |(key, _)| key);
                    format!("{key}={granted}")
                }
                None => asked,
            }
        })
        .collect()
}

/// [`spec_options`], each setting's title named as the kernel granted it
/// in `outcome` ([`granted_words`]); the commands stay as asked.
pub fn spec_options_as_granted(spec: &RunSpec, outcome: Option<&SystemOutcome>) -> Vec<SpecOption> {
    let RunSpec {
        test,
        family,
        duration_s,
        send_size_bytes,
        recv_size_bytes,
        request_size_bytes,
        response_size_bytes,
        local_socket_buffer_bytes,
        remote_socket_buffer_bytes,
        nodelay,
        first_burst,
        cpu_pinning,
        local_cpu,
        remote_cpu,
        confidence,
        iterations_max,
        iterations_min,
        flows,
        warmup_s,
        threads,
        system,
        reported_socket_buffers,
    } = spec;
    let defaults = RunSpec::defaults(*test);
    let mut options = Vec::new();
    let both = |flag: &str, value: String| option(format!("{flag} {value}"), flag, Some(value));
    let alone = |flag: &str| option(flag.to_string(), flag, None);
    if *family == AddressFamily::Ipv6 {
        options.push(alone("-6"));
    }
    options.push(both("-l", seconds(*duration_s)));
    if *local_cpu {
        options.push(alone("-c"));
    }
    if *remote_cpu {
        options.push(alone("-C"));
    }
    if *cpu_pinning != CpuPinning::default() {
        let cpu = |cpu: &Option<u32>| cpu.map_or(String::new(), |cpu| cpu.to_string());
        options.push(both(
            "-T",
            format!("{},{}", cpu(&cpu_pinning.local), cpu(&cpu_pinning.remote)),
        ));
    }
    if let Some(confidence) = confidence {
        options.push(both(
            "-I",
            format!("{},{}", confidence.level_pct, seconds(confidence.width_pct)),
        ));
    }
    if (*iterations_max, *iterations_min) != (defaults.iterations_max, defaults.iterations_min) {
        options.push(both("-i", format!("{iterations_max},{iterations_min}")));
    }
    if let Some(bytes) = local_socket_buffer_bytes {
        options.push(both("-s", bytes.to_string()));
    }
    if let Some(bytes) = remote_socket_buffer_bytes {
        options.push(both("-S", bytes.to_string()));
    }
    // Buffers an imported text says were granted: shown, but no option
    // of a command, since no `-s`/`-S` is known to give them again.
    if let Some(buffers) = reported_socket_buffers {
        options.push(SpecOption {
            title: granted_title(*test, buffers),
            flag: None,
            value: None,
        });
    }
    if *send_size_bytes != defaults.send_size_bytes {
        options.push(both("-m", send_size_bytes.to_string()));
    }
    if *recv_size_bytes != defaults.recv_size_bytes {
        options.push(both("-M", recv_size_bytes.to_string()));
    }
    if (*request_size_bytes, *response_size_bytes)
        != (defaults.request_size_bytes, defaults.response_size_bytes)
    {
        options.push(both(
            "-r",
            format!("{request_size_bytes},{response_size_bytes}"),
        ));
    }
    if *first_burst != defaults.first_burst {
        options.push(both("-b", first_burst.to_string()));
    }
    if *nodelay {
        options.push(option("nodelay".to_string(), "--nodelay", None));
    }
    if *flows != defaults.flows {
        options.push(option(
            format!("flows {flows}"),
            "--flows",
            Some(flows.to_string()),
        ));
    }
    if let Some(threads) = threads {
        options.push(option(
            format!("threads {threads}"),
            "--threads",
            Some(threads.to_string()),
        ));
    }
    if *warmup_s != defaults.warmup_s {
        options.push(option(
            format!("warm-up {}s", seconds(*warmup_s)),
            "--warmup",
            Some(seconds(*warmup_s)),
        ));
    }
    for setting in system.iter().flat_map(|system| system.settings()) {
        let text = setting.text();
        options.push(option(
            granted_words(&setting, outcome),
            "--set",
            Some(text),
        ));
    }
    options
}

impl SpecOption {
    /// Adds the option to `command`, where a flag gives it.
    pub fn add_to(&self, command: &mut CommandLine) {
        match (&self.flag, &self.value) {
            (Some(flag), Some(value)) => {
                command.option(flag, value.clone());
            }
            (Some(flag), None) => {
                command.word(flag.clone());
            }
            (None, _) => {}
        }
    }
}

/// The value of the parameter a title names by `flag` (`-m`, `-M`,
/// `-r`, `-b`, `-i`, `flows`), also where the title leaves it out as
/// netperf's default: what a table's column shows for a configuration
/// that leaves the parameter at its default. `None` for a flag whose
/// default has no value to show (`-s` unset is the system's own size).
pub fn spec_value(spec: &RunSpec, flag: &str) -> Option<String> {
    Some(match flag {
        "-l" => seconds(spec.duration_s),
        "-m" => spec.send_size_bytes.to_string(),
        "-M" => spec.recv_size_bytes.to_string(),
        "-r" => format!("{},{}", spec.request_size_bytes, spec.response_size_bytes),
        "-b" => spec.first_burst.to_string(),
        "-i" => format!("{},{}", spec.iterations_max, spec.iterations_min),
        "flows" => spec.flows.to_string(),
        "nodelay" => if spec.nodelay { "yes" } else { "no" }.to_string(),
        _ => return None,
    })
}

/// The words of a title for the socket buffers an import reports as
/// granted: the sender's send and the receiver's receive buffer of a
/// stream test, each end's send/receive pair of a request/response test.
fn granted_title(test: TestKind, buffers: &ReportedSocketBuffers) -> String {
    let size = |bytes: Option<u32>| bytes.map_or_else(|| "-".to_string(), |b| b.to_string());
    match test {
        TestKind::TcpMaerts => format!(
            "granted send {} recv {}",
            size(buffers.remote_send_bytes),
            size(buffers.local_recv_bytes)
        ),
        TestKind::TcpStream | TestKind::UdpStream => format!(
            "granted send {} recv {}",
            size(buffers.local_send_bytes),
            size(buffers.remote_recv_bytes)
        ),
        _ => format!(
            "granted local {}/{} remote {}/{}",
            size(buffers.local_send_bytes),
            size(buffers.local_recv_bytes),
            size(buffers.remote_send_bytes),
            size(buffers.remote_recv_bytes)
        ),
    }
}

/// The title of a configuration: the test, every parameter of
/// [`spec_options`], and the testbed.
pub fn spec_title(spec: &RunSpec, testbed: &str) -> String {
    spec_title_as_granted(spec, testbed, None)
}

/// [`spec_title`] with each setting named as the kernel granted it in
/// `outcome` ([`granted_words`]).
pub fn spec_title_as_granted(
    spec: &RunSpec,
    testbed: &str,
    outcome: Option<&SystemOutcome>,
) -> String {
    let mut words = vec![spec.test.name().to_string()];
    words.extend(
        spec_options_as_granted(spec, outcome)
            .into_iter()
            .map(|each| each.title),
    );
    format!("{} (testbed {testbed})", words.join(" "))
}

/// The title of the configuration of `record`, its settings as the
/// kernel granted them.
pub fn record_title(record: &RunRecord) -> String {
    spec_title_as_granted(&record.spec, &record.testbed, record.system.as_ref())
}

/// The `netbisect bench` command that runs `spec` again (on loopback:
/// [`configuration_command`] says where a run ran). A `--set` gives the
/// setting as asked, whatever the kernel granted.
pub fn spec_command(spec: &RunSpec) -> CommandLine {
    let mut command = CommandLine::new(&["netbisect", "bench"]);
    add_spec(&mut command, spec);
    command
}

/// Adds `-t` and every parameter of `spec` off its default to `command`.
pub fn add_spec(command: &mut CommandLine, spec: &RunSpec) {
    command.option("-t", spec.test.name());
    for each in spec_options(spec) {
        each.add_to(command);
    }
}

/// The figures of one side of a comparison group, in netperf's columns.
/// Sizes come from the side's earliest run (its last iteration's ends
/// right after setup, as netperf prints them, or for an import the
/// buffers its text reported as granted); every other figure is the mean
/// over every iteration of every run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SideFigures {
    /// Runs of the side.
    pub n_runs: usize,
    /// Iterations over all runs.
    pub n_iterations: usize,
    /// Receive socket of the receiving end, bytes, as granted right after
    /// setup.
    pub recv_socket_bytes: Option<u64>,
    /// Send socket of the sending end.
    pub send_socket_bytes: Option<u64>,
    /// Local send socket (request/response tests).
    pub local_send_socket_bytes: Option<u64>,
    /// Local receive socket.
    pub local_recv_socket_bytes: Option<u64>,
    /// Remote send socket.
    pub remote_send_socket_bytes: Option<u64>,
    /// Remote receive socket.
    pub remote_recv_socket_bytes: Option<u64>,
    /// Elapsed time of an iteration, seconds.
    pub elapsed_s: Option<f64>,
    /// Throughput delivered, bits/s.
    pub throughput_bps: Option<f64>,
    /// Throughput the sender put on the wire, bits/s (UDP_STREAM).
    pub sent_throughput_bps: Option<f64>,
    /// Transactions per second (request/response tests).
    pub transaction_rate: Option<f64>,
    /// Local CPU utilisation, percent of all CPUs.
    pub local_cpu_pct: Option<f64>,
    /// Remote CPU utilisation.
    pub remote_cpu_pct: Option<f64>,
    /// Local service demand (us/KB, or us/Tran for RR tests).
    pub local_service_demand: Option<f64>,
    /// Remote service demand.
    pub remote_service_demand: Option<f64>,
    /// Datagrams sent per iteration (UDP_STREAM), mean.
    pub messages_sent: Option<f64>,
    /// Datagrams received per iteration (UDP_STREAM), mean.
    pub messages_received: Option<f64>,
    /// Sends the kernel failed per iteration (UDP_STREAM), mean; absent
    /// unless every iteration of the side counted them.
    pub send_errors: Option<f64>,
    /// Confidence level asked for with `-I`, percent.
    pub confidence_level_pct: Option<u32>,
    /// Half width of the widest interval reached by a run of the side,
    /// percent of the mean (netperf's `-I 95,5` asks +-2.5%).
    pub confidence_half_width_pct: Option<f64>,
    /// Half width asked for, percent.
    pub confidence_target_half_width_pct: Option<f64>,
    /// True when a run of the side missed its interval (netperf's `!!!`).
    pub confidence_missed: bool,
}

impl SideFigures {
    /// The socket sizes of a run without ends (an import), as its text
    /// gave them.
    fn set_reported_sockets(&mut self, run: &RunRecord) {
        let Some(buffers) = &run.spec.reported_socket_buffers else {
            return;
        };
        let bytes = |size: Option<u32>| size.map(u64::from);
        self.local_send_socket_bytes = bytes(buffers.local_send_bytes);
        self.local_recv_socket_bytes = bytes(buffers.local_recv_bytes);
        self.remote_send_socket_bytes = bytes(buffers.remote_send_bytes);
        self.remote_recv_socket_bytes = bytes(buffers.remote_recv_bytes);
        if run.spec.test == TestKind::TcpMaerts {
            self.send_socket_bytes = self.remote_send_socket_bytes;
            self.recv_socket_bytes = self.local_recv_socket_bytes;
        } else {
            self.send_socket_bytes = self.local_send_socket_bytes;
            self.recv_socket_bytes = self.remote_recv_socket_bytes;
        }
    }
}

fn mean_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0usize), |(sum, count), value| {
        (sum + value, count + 1)
    });
    (count > 0).then(|| sum / count as f64)
}

impl SideFigures {
    /// The figures of `runs`, ordered earliest first.
    pub fn of(runs: &[&RunRecord]) -> SideFigures {
        let mut figures = SideFigures {
            n_runs: runs.len(),
            n_iterations: runs.iter().map(|run| run.iterations.len()).sum(),
            ..SideFigures::default()
        };
        let metric_mean = |metric: Metric| {
            mean_of(
                runs.iter()
                    .flat_map(|run| run.samples(metric))
                    .collect::<Vec<_>>()
                    .into_iter(),
            )
        };
        figures.elapsed_s = mean_of(
            runs.iter()
                .flat_map(|run| run.iterations.iter().map(|iteration| iteration.elapsed_s)),
        );
        figures.throughput_bps = metric_mean(Metric::ThroughputBps);
        figures.transaction_rate = metric_mean(Metric::TransactionRate);
        figures.local_cpu_pct = metric_mean(Metric::LocalCpuPct);
        figures.remote_cpu_pct = metric_mean(Metric::RemoteCpuPct);
        figures.local_service_demand = metric_mean(Metric::LocalServiceDemand);
        figures.remote_service_demand = metric_mean(Metric::RemoteServiceDemand);
        if let Some(ends) = runs
            .first()
            .and_then(|run| run.iterations.last())
            .and_then(|iteration| iteration.ends.as_ref())
        {
            let (local, remote) = (&ends.local.socket, &ends.remote.socket);
            figures.local_send_socket_bytes = Some(local.send_buffer.after_setup_bytes);
            figures.local_recv_socket_bytes = Some(local.recv_buffer.after_setup_bytes);
            figures.remote_send_socket_bytes = Some(remote.send_buffer.after_setup_bytes);
            figures.remote_recv_socket_bytes = Some(remote.recv_buffer.after_setup_bytes);
            let maerts = runs
                .first()
                .is_some_and(|run| run.spec.test == run_record::spec::TestKind::TcpMaerts);
            let (sender, receiver) = if maerts {
                (remote, local)
            } else {
                (local, remote)
            };
            figures.send_socket_bytes = Some(sender.send_buffer.after_setup_bytes);
            figures.recv_socket_bytes = Some(receiver.recv_buffer.after_setup_bytes);
        } else if let Some(run) = runs.first() {
            figures.set_reported_sockets(run);
        }
        let udp_iterations = || {
            runs.iter()
                .filter(|run| run.summary.udp.is_some())
                .flat_map(|run| run.iterations.iter().map(move |iteration| (run, iteration)))
        };
        // What the sender put on the wire: its bytes over its own time; for
        // a run without ends (an import) the figure its tool printed, or
        // else its datagrams of the send size.
        figures.sent_throughput_bps = mean_of(udp_iterations().filter_map(|(run, iteration)| {
            match &iteration.ends {
                Some(ends) => (ends.local.elapsed_s > 0.0)
                    .then(|| ends.local.bytes_sent as f64 * 8.0 / ends.local.elapsed_s),
                None if iteration.reported_sent_throughput_bps.is_some() => {
                    iteration.reported_sent_throughput_bps
                }
                None => {
                    let sent = iteration.messages_sent? as f64;
                    (iteration.elapsed_s > 0.0).then(|| {
                        sent * f64::from(run.spec.send_size_bytes) * 8.0 / iteration.elapsed_s
                    })
                }
            }
        }));
        let per_iteration = |count: fn(&run_record::record::Iteration) -> Option<u64>| {
            let counts: Option<Vec<f64>> = udp_iterations()
                .map(|(_, iteration)| count(iteration).map(|value| value as f64))
                .collect();
            counts.and_then(|counts| mean_of(counts.into_iter()))
        };
        figures.messages_sent = per_iteration(|iteration| iteration.messages_sent);
        figures.messages_received = per_iteration(|iteration| iteration.messages_received);
        figures.send_errors = per_iteration(|iteration| iteration.send_errors);
        for run in runs {
            if let Some(confidence) = &run.summary.confidence {
                figures.confidence_level_pct = Some(confidence.level_pct);
                let half = confidence.width_pct / 2.0;
                figures.confidence_half_width_pct = Some(
                    figures
                        .confidence_half_width_pct
                        .map_or(half, |widest| widest.max(half)),
                );
                figures.confidence_target_half_width_pct = Some(confidence.target_width_pct / 2.0);
                figures.confidence_missed |= !confidence.met;
            }
        }
        figures
    }
}

#[cfg(test)]
mod tests;
