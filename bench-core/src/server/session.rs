//! One client's session, once its handshake is over (see `admission`):
//! test after test, each validated, its memory reserved against the
//! caps, and its data phase run on threads of their own.

use super::config::ServerEvent;
use super::data::{self, ServerPlan};
use super::shared::{Shared, thread_error};
use crate::auth;
use crate::protocol::{Frame, PortRange, ProtocolError, read_frame_within, write_frame};
use crate::sockets::{self, is_timeout};
use run_record::env::HostEnv;
use run_record::spec::RunSpec;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How a session ended other than by the client's goodbye: the
/// connection was lost or broke the protocol.
pub(super) enum SessionEnd {
    Dropped(String),
}

impl From<ProtocolError> for SessionEnd {
    fn from(err: ProtocolError) -> SessionEnd {
        SessionEnd::Dropped(err.to_string())
    }
}

/// A slot among the authenticated sessions, taken by the accept loop and
/// given back when dropped.
pub(super) struct SessionSlot<'a>(pub(super) &'a AtomicUsize);

impl Drop for SessionSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Bytes of message buffers reserved for one test, given back when
/// dropped.
struct MemoryReservation<'a> {
    in_use: &'a AtomicU64,
    bytes: u64,
}

impl Drop for MemoryReservation<'_> {
    fn drop(&mut self) {
        self.in_use.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// The bytes of message buffers the server allocates for `spec`: each
/// flow's send and receive buffers.
pub fn test_buffer_bytes(spec: &RunSpec) -> u64 {
    use run_record::spec::TestKind;
    let per_flow = match spec.test {
        TestKind::TcpStream => u64::from(spec.recv_size_bytes),
        TestKind::TcpMaerts => u64::from(spec.send_size_bytes),
        TestKind::TcpRr | TestKind::TcpCrr | TestKind::UdpRr => {
            u64::from(spec.request_size_bytes) + u64::from(spec.response_size_bytes)
        }
        TestKind::UdpStream => {
            u64::from(spec.send_size_bytes.max(spec.recv_size_bytes))
                + u64::from(spec.response_size_bytes)
        }
    };
    per_flow * u64::from(spec.flows.max(1))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// Reserves the buffers of `spec` against both memory limits.
fn reserve_memory<'a>(shared: &'a Shared, spec: &RunSpec) -> Result<MemoryReservation<'a>, String> {
    let config = &shared.config;
    let bytes = test_buffer_bytes(spec);
    if bytes > config.max_test_memory {
        return Err(format!(
            "the test needs {} of buffers, over the server's limit of {} per test \
             (serve --max-test-memory)",
            mib(bytes),
            mib(config.max_test_memory)
        ));
    }
    let reserved =
        shared
            .memory_in_use
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |in_use| {
                in_use
                    .checked_add(bytes)
                    .filter(|total| *total <= config.max_total_memory)
            });
    match reserved {
        Ok(_) => Ok(MemoryReservation {
            in_use: &shared.memory_in_use,
            bytes,
        }),
        Err(in_use) => Err(format!(
            "the test needs {} of buffers and tests running now hold {}, over the \
             server's limit of {} in all (serve --max-total-memory); try again later",
            mib(bytes),
            mib(in_use),
            mib(config.max_total_memory)
        )),
    }
}

fn send_error(stream: &mut TcpStream, message: String) -> Result<(), SessionEnd> {
    write_frame(stream, &Frame::Error { message })?;
    Ok(())
}

/// Serves one client from the end of its handshake to its goodbye.
pub(super) fn serve_client(
    stream: &mut TcpStream,
    peer: SocketAddr,
    shared: &Shared,
) -> Result<(), SessionEnd> {
    let timeout = shared.config.control_timeout;
    stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|err| SessionEnd::Dropped(err.to_string()))?;
    let mut env: Option<Box<HostEnv>> = None;
    loop {
        match read_frame_within(stream, timeout) {
            Ok(Frame::Test { spec, data_ports }) => {
                run_one(stream, peer, shared, &spec, data_ports, &mut env)?;
            }
            Ok(Frame::Bye) | Err(ProtocolError::Closed) => return Ok(()),
            Ok(other) => {
                let message = format!("unexpected frame: {}", frame_name(&other));
                send_error(stream, message.clone())?;
                return Err(SessionEnd::Dropped(message));
            }
            Err(err) => return Err(err.into()),
        }
    }
}

fn frame_name(frame: &Frame) -> &'static str {
    match frame {
        Frame::Hello { .. } => "hello",
        Frame::Welcome { .. } => "welcome",
        Frame::Auth { .. } => "auth",
        Frame::AuthOk => "auth_ok",
        Frame::Test { .. } => "test",
        Frame::Ready { .. } => "ready",
        Frame::Finished => "finished",
        Frame::Results { .. } => "results",
        Frame::Error { .. } => "error",
        Frame::Bye => "bye",
    }
}

/// Runs one test iteration for a client. A bad request or a failed data
/// phase is answered with an error frame and the session goes on; a
/// broken control connection ends the session.
fn run_one(
    stream: &mut TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    spec: &RunSpec,
    data_ports: Option<PortRange>,
    env: &mut Option<Box<HostEnv>>,
) -> Result<(), SessionEnd> {
    let config = &shared.config;
    let reject = |stream: &mut TcpStream, message: String| {
        shared.log.emit(&ServerEvent::Rejected {
            peer,
            message: message.clone(),
        });
        send_error(stream, message)
    };
    if let Err(err) = spec.validate() {
        return reject(stream, err.to_string());
    }
    if let Some(range) = data_ports
        && (range.low == 0 || range.low > range.high)
    {
        return reject(
            stream,
            format!(
                "invalid data_ports {}-{}: ports must be 1-65535, low <= high",
                range.low, range.high
            ),
        );
    }
    let _memory = match reserve_memory(shared, spec) {
        Ok(reservation) => reservation,
        Err(message) => return reject(stream, message),
    };
    let local_ip = match stream.local_addr() {
        Ok(address) => address.ip(),
        Err(err) => return Err(SessionEnd::Dropped(err.to_string())),
    };
    let ports = data_ports.or(config.data_ports);
    if let Some(Err(err)) = ports.map(|range| range.check_flows(spec.flows.max(1))) {
        return reject(stream, err.to_string());
    }
    let prepared = match data::prepare_server(spec, local_ip, ports) {
        Ok(prepared) => prepared,
        Err(err) => return reject(stream, format!("cannot open a data socket: {err}")),
    };
    let ports: Vec<u16> = prepared.iter().map(|flow| flow.port).collect();
    let data_secret = match auth::new_challenge() {
        Ok(secret) => secret,
        Err(err) => return reject(stream, err.to_string()),
    };
    let stop = AtomicBool::new(false);
    let data_done = AtomicBool::new(false);
    let flows_started = AtomicU8::new(0);
    let plan = ServerPlan {
        spec,
        client_ip: peer.ip(),
        stop: &stop,
        io_timeout: config.io_timeout,
        data_secret: data_secret.as_bytes(),
        flows_started: &flows_started,
    };
    let wait = Duration::from_secs_f64(spec.warmup_s + spec.duration_s)
        + config.io_timeout
        + config.control_timeout;
    let scoped = std::thread::scope(|scope| {
        let data = std::thread::Builder::new()
            .name(format!("data {peer}"))
            .spawn_scoped(scope, || {
                let side = data::run_server(&plan, prepared);
                data_done.store(true, Ordering::SeqCst);
                side
            });
        let data = match data {
            Ok(data) => data,
            Err(err) => return Err(thread_error("the test", &err)),
        };
        // `ready` promises that the server carries the test: wait until
        // every flow's thread runs.
        let give_up = Instant::now() + config.io_timeout;
        while flows_started.load(Ordering::SeqCst) == 0
            && !data_done.load(Ordering::SeqCst)
            && Instant::now() < give_up
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        if flows_started.load(Ordering::SeqCst) != data::FLOWS_STARTED {
            stop.store(true, Ordering::Relaxed);
            return Err(match data.join() {
                Ok(Err(err)) => format!("server side of {} failed: {err}", spec.test),
                _ => format!("server side of {} could not start", spec.test),
            });
        }
        let ready = Frame::Ready {
            data_ports: ports,
            data_secret: data_secret.clone(),
        };
        let control = match write_frame(stream, &ready) {
            Ok(()) => {
                shared.log.emit(&ServerEvent::Started {
                    peer,
                    test: spec.test.name(),
                });
                wait_for_frame(stream, wait, config.control_timeout, &data_done)
            }
            Err(err) => Err(err),
        };
        stop.store(true, Ordering::Relaxed);
        Ok((control, data.join()))
    });
    let (control, data) = match scoped {
        Ok(outcome) => outcome,
        Err(message) => return reject(stream, message),
    };
    match control {
        Ok(Frame::Finished) => {}
        Ok(other) => {
            let message = format!("expected finished, got {}", frame_name(&other));
            send_error(stream, message.clone())?;
            return Err(SessionEnd::Dropped(message));
        }
        Err(err) => return Err(SessionEnd::Dropped(format!("during {}: {err}", spec.test))),
    }
    let side = match data {
        Ok(Ok(side)) => side,
        Ok(Err(err)) => {
            return reject(
                stream,
                format!("server side of {} failed: {err}", spec.test),
            );
        }
        Err(_) => return reject(stream, format!("server side of {} failed", spec.test)),
    };
    let env = env.get_or_insert_with(|| {
        let interface = sockets::egress_interface(local_ip);
        Box::new(crate::host::capture_local(interface.as_deref()))
    });
    write_frame(
        stream,
        &Frame::Results {
            flows: side.flows,
            cpu: side.cpu,
            env: env.clone(),
        },
    )?;
    shared.log.emit(&ServerEvent::Tested {
        peer,
        test: spec.test.name(),
    });
    Ok(())
}

/// Waits for the client's next control frame for at most `wait`, and for
/// at most `after_data` once the server's side of the test is over
/// (`data_done`): a client whose data connections never came, or that
/// went silent, frees its slot within the test's own bound.
fn wait_for_frame(
    stream: &mut TcpStream,
    wait: Duration,
    after_data: Duration,
    data_done: &AtomicBool,
) -> Result<Frame, ProtocolError> {
    const POLL: Duration = Duration::from_millis(50);
    let started = Instant::now();
    let mut done_at: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if done_at.is_none() && data_done.load(Ordering::SeqCst) {
            done_at = Some(now);
        }
        let mut deadline = started + wait;
        if let Some(done_at) = done_at {
            deadline = deadline.min(done_at + after_data);
        }
        let left = deadline.saturating_duration_since(now);
        if left.is_zero() {
            return Err(ProtocolError::Timeout(now - started));
        }
        stream.set_read_timeout(Some(left.min(POLL)))?;
        let mut probe = [0u8; 1];
        match stream.peek(&mut probe) {
            // Bytes are there, or the end of the stream: read the frame.
            Ok(_) => return read_frame_within(stream, after_data.max(POLL)),
            Err(err) if is_timeout(&err) || err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(ProtocolError::Io(err)),
        }
    }
}
