//! A whole benchmark run: the test against a server (remote, or one
//! started in-process on loopback), turned into a sealed canonical
//! [`RunRecord`].

use crate::client::{self, ClientError, ClientOptions, TestOutcome};
use crate::env;
use crate::record::{
    Endpoint, Environments, Iteration, RecordError, RunRecord, SCHEMA, Source, Spread, Subject,
    Summary, UdpFigures,
};
use crate::server::{self, Server, ServerConfig, ServerError};
use crate::sockets;
use crate::spec::{RunSpec, TestKind};

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
    /// The record could not be sealed.
    #[error("cannot seal the run record: {0}")]
    Record(#[from] RecordError),
}

/// Runs `request` and returns its sealed record.
pub fn bench(request: &BenchRequest) -> Result<RunRecord, BenchError> {
    request.spec.validate().map_err(ClientError::from)?;
    let started_at = crate::time::now_rfc3339();
    let (outcome, endpoint) = match &request.server {
        Some(options) => {
            let outcome = client::run_test(&request.spec, options)?;
            let endpoint = Endpoint {
                host: options.host.clone(),
                port: Some(options.port),
            };
            (outcome, endpoint)
        }
        None => {
            let server =
                Server::bind(ServerConfig::loopback(request.spec.family), server::quiet())?;
            let address = server.local_addr();
            let handle = server.spawn()?;
            let options = ClientOptions::new(&address.ip().to_string(), address.port());
            let outcome = client::run_test(&request.spec, &options);
            handle.stop();
            let endpoint = Endpoint {
                host: address.ip().to_string(),
                port: None,
            };
            (outcome?, endpoint)
        }
    };
    let finished_at = crate::time::now_rfc3339();
    let record = assemble(request, outcome, endpoint, started_at, finished_at)?;
    Ok(record)
}

fn assemble(
    request: &BenchRequest,
    outcome: TestOutcome,
    endpoint: Endpoint,
    started_at: String,
    finished_at: String,
) -> Result<RunRecord, RecordError> {
    let interface = sockets::egress_interface(outcome.server.ip());
    let mut record = RunRecord {
        schema: SCHEMA.to_string(),
        id: String::new(),
        config_key: String::new(),
        source: Source {
            tool: "netbisect".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        },
        started_at,
        finished_at,
        spec: request.spec.clone(),
        endpoint,
        subject: request.subject.clone(),
        testbed: request.testbed.clone(),
        env: Environments {
            local: env::capture_local(interface.as_deref()),
            remote: Some(outcome.remote_env),
        },
        summary: summarize(&request.spec, &outcome.iterations),
        iterations: outcome.iterations,
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
        let sent: u64 = iterations.iter().map(|i| i.messages_sent).sum();
        let received: u64 = iterations.iter().map(|i| i.messages_received).sum();
        let lost = sent.saturating_sub(received);
        UdpFigures {
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
        confidence: None,
        cpu: None,
        latency: None,
        reported_latency: None,
        udp,
    }
}
