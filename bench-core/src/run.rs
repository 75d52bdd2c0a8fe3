//! A whole benchmark run: the test against a server (remote, or one
//! started in-process on loopback), with the settings the spec asks of
//! this end made before it and undone after it ([`host::settings`]),
//! turned into a sealed canonical [`RunRecord`].

use crate::client::{self, ClientError, ClientOptions, Session, TestOutcome};
use crate::cpu;
use crate::datapath::{Interim, InterimFigures};
use crate::host;
use crate::host::settings::{self, AppliedSettings, SettingsError};
use crate::iterate;
use crate::latency;
use crate::server::{self, Server, ServerConfig, ServerError};
use crate::sockets;
use run_record::env::HostEnv;
use run_record::record::{
    CpuFigures, Endpoint, Environments, Iteration, LatencyFigures, LatencyHistogram, RecordError,
    RunRecord, SCHEMA, Source, Spread, Subject, Summary, SystemOutcome, UdpFigures,
};
use run_record::spec::{RunSpec, SystemSettings, TestKind};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Everything a run needs besides the spec's own figures.
#[derive(Clone, Debug)]
pub struct BenchRequest {
    /// The resolved test specification.
    pub spec: RunSpec,
    /// The server to run against; `None` starts one in-process on
    /// loopback.
    pub server: Option<ClientOptions>,
    /// The code under test.
    pub subject: Subject,
    /// Testbed name.
    pub testbed: String,
    /// Interim reports while each iteration runs (`-D`), if any.
    pub interim: Option<InterimReports>,
}

/// Where interim reports go, and how often.
#[derive(Clone)]
pub struct InterimReports {
    /// How often to report.
    pub every: Duration,
    /// Called with each report.
    pub report: Arc<dyn Fn(&InterimFigures) + Send + Sync>,
}

impl std::fmt::Debug for InterimReports {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("InterimReports")
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

/// Why a run failed. No record exists for a failed run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The in-process server could not start.
    #[error("cannot start the loopback server: {0}")]
    Server(#[from] ServerError),
    /// The test failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// No interface of this host owns this end's address of the control
    /// connection, so the settings asked have nowhere to go.
    #[error("no interface owns {address}, this end's address of the control connection")]
    NoInterface {
        /// The address, or what was wrong in asking for it.
        address: String,
    },
    /// A setting of `spec.system` could not be made; nothing was left
    /// changed and the test did not run.
    #[error("cannot make the settings asked")]
    Settings(#[from] SettingsError),
    /// The test ran, but what the settings changed was not all put back.
    #[error("the test ran, but {0}")]
    Restore(SettingsError),
    /// The test failed, and what the settings changed was not all put
    /// back.
    #[error("{error}; {restore}")]
    FailedNotRestored {
        /// Why the test failed.
        error: Box<BenchError>,
        /// What was not put back.
        restore: SettingsError,
    },
    /// The record could not be sealed.
    #[error("cannot seal the run record: {0}")]
    Record(#[from] RecordError),
}

impl BenchError {
    /// True for what the user can fix: settings this host cannot make as
    /// asked ([`SettingsError::is_input`]), a record that fails its
    /// checks. A failure to put settings back, alone or after a failed
    /// test, is the host's.
    pub fn is_input(&self) -> bool {
        match self {
            BenchError::Settings(err) => err.is_input(),
            BenchError::Record(_) => true,
            BenchError::Server(_)
            | BenchError::Client(_)
            | BenchError::NoInterface { .. }
            | BenchError::Restore(_)
            | BenchError::FailedNotRestored { .. } => false,
        }
    }
}

/// Runs `request` and returns its sealed record.
///
/// When the spec asks settings of the system under test (`spec.system`),
/// they are made on this end only, on the interface that owns this end's
/// address of the control connection (`lo` on loopback), after the
/// control connection is made and before the test starts; the local
/// environment is captured while they hold, what was granted goes into
/// the record's `system`, and the previous values are put back after the
/// test, whether it succeeded or not. A server never makes them: a
/// client's request does not change the server's host.
pub fn bench(request: &BenchRequest) -> Result<RunRecord, BenchError> {
    request.spec.validate().map_err(ClientError::from)?;
    let started_at = run_record::time::now_rfc3339();
    let interim = request.interim.as_ref().map(|interim| Interim {
        every: interim.every,
        report: &*interim.report,
    });
    let (measured, endpoint) = match &request.server {
        Some(options) => {
            let measured = measure(&request.spec, options, interim)?;
            let endpoint = Endpoint {
                host: options.host.clone(),
                port: Some(options.port),
            };
            (measured, endpoint)
        }
        None => {
            let server =
                Server::bind(ServerConfig::loopback(request.spec.family), server::quiet())?;
            let address = server.local_addr();
            let handle = server.spawn()?;
            let options = ClientOptions::new(&address.ip().to_string(), address.port());
            let measured = measure(&request.spec, &options, interim);
            handle.stop();
            let endpoint = Endpoint {
                host: address.ip().to_string(),
                port: None,
            };
            (measured?, endpoint)
        }
    };
    let record = assemble(request, measured, endpoint, started_at)?;
    Ok(record)
}

/// A finished test with what this end saw of the host while it ran.
struct Measured {
    outcome: TestOutcome,
    local_env: HostEnv,
    system: Option<SystemOutcome>,
    finished_at: String,
}

/// Connects, makes the settings the spec asks, runs the test, captures
/// this host's environment and puts the settings back.
fn measure(
    spec: &RunSpec,
    options: &ClientOptions,
    interim: Option<Interim<'_>>,
) -> Result<Measured, BenchError> {
    let session = Session::connect(options, spec.family)?;
    let applied = match spec.system.as_ref().filter(|system| !system.is_empty()) {
        None => None,
        Some(system) => match apply_settings(&session, system) {
            Ok(applied) => Some(applied),
            Err(err) => {
                session.close();
                return Err(err);
            }
        },
    };
    let outcome = client::run_session(session, spec, interim);
    let finished_at = run_record::time::now_rfc3339();
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(err) => {
            let error = BenchError::from(err);
            return Err(match applied.map(AppliedSettings::restore) {
                Some(Err(restore)) => BenchError::FailedNotRestored {
                    error: Box::new(error),
                    restore,
                },
                _ => error,
            });
        }
    };
    // Beyond loopback, the route to the server names the interface (a
    // guest's virtio-net NIC, a test box's port). It is described while
    // the settings still hold.
    let server_ip = outcome.server.ip();
    let interface =
        sockets::egress_interface(server_ip).or_else(|| host::egress_interface(server_ip));
    let local_env = host::capture_local(interface.as_deref());
    let system = match applied {
        Some(applied) => {
            let system = applied.outcome().clone();
            applied.restore().map_err(BenchError::Restore)?;
            Some(system)
        }
        None => None,
    };
    Ok(Measured {
        outcome,
        local_env,
        system,
        finished_at,
    })
}

/// Makes `system` on the interface that owns this end of `session`.
fn apply_settings(
    session: &Session,
    system: &SystemSettings,
) -> Result<AppliedSettings, BenchError> {
    let local = session
        .local_addr()
        .map_err(|err| BenchError::NoInterface {
            address: format!("(unknown: {err})"),
        })?;
    let interface =
        host::interface_for_address(local.ip()).ok_or_else(|| BenchError::NoInterface {
            address: local.ip().to_string(),
        })?;
    Ok(settings::apply(&interface, system)?)
}

fn assemble(
    request: &BenchRequest,
    measured: Measured,
    endpoint: Endpoint,
    started_at: String,
) -> Result<RunRecord, RecordError> {
    let Measured {
        outcome,
        local_env,
        system,
        finished_at,
    } = measured;
    let mut record = RunRecord {
        schema: SCHEMA.to_string(),
        id: String::new(),
        config_key: String::new(),
        source: Source {
            tool: "netbisect".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
            undated: false,
        },
        started_at,
        finished_at,
        spec: request.spec.clone(),
        endpoint,
        subject: request.subject.clone(),
        testbed: request.testbed.clone(),
        env: Environments {
            local: local_env,
            remote: Some(outcome.remote_env),
            vm: None,
        },
        summary: summarize(&request.spec, &outcome.iterations),
        iterations: outcome.iterations,
        system,
        experiment: None,
        command: None,
    };
    record.seal()?;
    Ok(record)
}

/// The summary over `iterations`.
pub fn summarize(spec: &RunSpec, iterations: &[Iteration]) -> Summary {
    let throughput: Vec<f64> = iterations.iter().map(|i| i.throughput_bps).collect();
    let rates: Vec<f64> = iterations
        .iter()
        .filter_map(|i| i.transaction_rate)
        .collect();
    let udp = (spec.test == TestKind::UdpStream).then(|| {
        let sent: u64 = iterations.iter().filter_map(|i| i.messages_sent).sum();
        let received: u64 = iterations.iter().filter_map(|i| i.messages_received).sum();
        let lost = sent.saturating_sub(received);
        let counted: Vec<u64> = iterations.iter().filter_map(|i| i.send_errors).collect();
        UdpFigures {
            send_errors: (!counted.is_empty()).then(|| counted.iter().sum()),
            messages_sent: sent,
            messages_received: received,
            loss_pct: if sent > 0 {
                100.0 * lost as f64 / sent as f64
            } else {
                0.0
            },
        }
    });
    Summary {
        n_iterations: u32::try_from(iterations.len()).unwrap_or(u32::MAX),
        throughput_bps: Spread::of(&throughput).unwrap_or_default(),
        transaction_rate: if spec.test.is_request_response() {
            Spread::of(&rates)
        } else {
            None
        },
        confidence: iterate::primary_outcome(spec, iterations),
        cpu: summary_cpu(iterations),
        latency: summary_latency(iterations),
        reported_latency: None,
        udp,
        latency_histogram: merge_histograms(
            iterations
                .iter()
                .filter_map(|iteration| iteration.latency_histogram.as_ref()),
        ),
        cpu_confidence: iterate::cpu_outcome(spec, iterations),
    }
}

/// Mean utilisation of each end over the iterations, and the mean of the
/// iterations' service demands ([`cpu::mean_service_demand`]), as netperf
/// reports a run of several iterations.
fn summary_cpu(iterations: &[Iteration]) -> Option<CpuFigures> {
    let cpus: Vec<&CpuFigures> = iterations.iter().filter_map(|i| i.cpu.as_ref()).collect();
    if cpus.is_empty() {
        return None;
    }
    let mean_of = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    Some(CpuFigures {
        local_util_pct: mean_of(cpus.iter().filter_map(|c| c.local_util_pct).collect()),
        remote_util_pct: mean_of(cpus.iter().filter_map(|c| c.remote_util_pct).collect()),
        local_service_demand: cpu::mean_service_demand(cpus.iter().map(|c| c.local_service_demand)),
        remote_service_demand: cpu::mean_service_demand(
            cpus.iter().map(|c| c.remote_service_demand),
        ),
    })
}

/// Latency over every transaction of every iteration: exact pooled mean
/// and standard deviation, percentiles from the merged histogram.
fn summary_latency(iterations: &[Iteration]) -> Option<LatencyFigures> {
    let parts: Vec<(u64, f64, f64)> = iterations
        .iter()
        .filter_map(|i| Some((i.latency_histogram.as_ref()?.count, i.latency.as_ref()?)))
        .map(|(count, figures)| (count, figures.mean_us, figures.stddev_us))
        .collect();
    let (mean_us, stddev_us) = latency::pooled_mean_stddev(&parts)?;
    let merged = merge_histograms(
        iterations
            .iter()
            .filter_map(|iteration| iteration.latency_histogram.as_ref()),
    )?;
    let at = |pct: f64| merged.percentile_ns(pct).unwrap_or(0) as f64 / 1000.0;
    Some(LatencyFigures {
        min_us: merged.min_ns as f64 / 1000.0,
        mean_us,
        stddev_us,
        p50_us: at(50.0),
        p90_us: at(90.0),
        p99_us: at(99.0),
        p999_us: at(99.9),
        max_us: merged.max_ns as f64 / 1000.0,
    })
}

/// Several recorded histograms as one.
pub fn merge_histograms<'a>(
    histograms: impl Iterator<Item = &'a LatencyHistogram>,
) -> Option<LatencyHistogram> {
    let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
    let mut merged: Option<LatencyHistogram> = None;
    for histogram in histograms {
        for [high, count] in &histogram.buckets {
            *buckets.entry(*high).or_default() += count;
        }
        merged = Some(match merged {
            None => LatencyHistogram {
                buckets: Vec::new(),
                ..histogram.clone()
            },
            Some(sum) => LatencyHistogram {
                sub_buckets: sum.sub_buckets,
                count: sum.count + histogram.count,
                min_ns: sum.min_ns.min(histogram.min_ns),
                max_ns: sum.max_ns.max(histogram.max_ns),
                buckets: Vec::new(),
            },
        });
    }
    let mut merged = merged?;
    merged.buckets = buckets
        .into_iter()
        .map(|(high, count)| [high, count])
        .collect();
    Some(merged)
}
