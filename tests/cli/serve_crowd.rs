//! `netbisect serve` against a crowd from hundreds of addresses: a
//! server in a network namespace of its own, a veth pair to a second
//! namespace whose end carries 300 addresses, and 1,200 connections from
//! them (four per address) that say hello, never prove the token, and
//! connect again as soon as they are closed. A client that holds the
//! token, from one of the crowd's own addresses, must be served every
//! time, with the default places and with 512. Nothing leaves the two namespaces, which are removed at the
//! end; where they cannot be made (not root) the test says why and
//! passes without running (a failure under `NETBISECT_SLOW_TESTS=1`,
//! since CI runs as root).

use crate::netns::Namespace;
use bench_core::protocol::{Frame, PROTOCOL_NAME, PROTOCOL_VERSION};
use rustix::event::{PollFd, PollFlags, poll};
use socket2::{Domain, Socket, Type};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const N_ADDRESSES: usize = 300;
const CONNECTIONS_PER_ADDRESS: usize = 4;

/// The `address_idx`th address of the crowd; the first is the client
/// namespace's primary address, the one a client there connects from.
fn crowd_address(address_idx: usize) -> Ipv4Addr {
    Ipv4Addr::new(
        10,
        77,
        1 + (address_idx / 250) as u8,
        1 + (address_idx % 250) as u8,
    )
}

/// The two namespaces, joined by a veth pair: the server's end has
/// 10.77.0.1, the crowd's end all the crowd's addresses.
fn namespaces() -> Result<(Namespace, Namespace), String> {
    let server = Namespace::new("crowdsrv")?;
    let crowd = Namespace::new("crowdcli")?;
    let ip = |argv: &[&str]| {
        let output = std::process::Command::new("ip")
            .args(argv)
            .output()
            .map_err(|err| format!("cannot run ip: {err}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "ip {argv:?}: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    };
    ip(&[
        "-n",
        crowd.name(),
        "link",
        "add",
        "nbc",
        "type",
        "veth",
        "peer",
        "name",
        "nbs",
        "netns",
        server.name(),
    ])?;
    ip(&[
        "-n",
        server.name(),
        "addr",
        "add",
        "10.77.0.1/16",
        "dev",
        "nbs",
    ])?;
    ip(&["-n", server.name(), "link", "set", "nbs", "up"])?;
    // All of the crowd's addresses in one `ip -batch`.
    let batch: String = (0..N_ADDRESSES)
        .map(|address_idx| format!("addr add {}/16 dev nbc\n", crowd_address(address_idx)))
        .collect();
    let mut adding = std::process::Command::new("ip")
        .args(["-n", crowd.name(), "-batch", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot run ip: {err}"))?;
    adding
        .stdin
        .take()
        .unwrap()
        .write_all(batch.as_bytes())
        .unwrap();
    if !adding.wait().unwrap().success() {
        return Err("ip -batch failed to add the crowd's addresses".to_string());
    }
    ip(&["-n", crowd.name(), "link", "set", "nbc", "up"])?;
    Ok((server, crowd))
}

/// Moves this thread into the network namespace `name`: the sockets it
/// makes from now on are made there.
fn enter(name: &str) {
    let file = std::fs::File::open(format!("/run/netns/{name}")).unwrap();
    // SAFETY: the descriptor is a network namespace's, open for the
    // call; setns changes only this thread's namespace.
    let entered = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(entered, 0, "{}", std::io::Error::last_os_error());
}

/// The bytes of a hello frame.
fn hello_bytes() -> Vec<u8> {
    let mut bytes = Vec::new();
    bench_core::protocol::write_frame(
        &mut bytes,
        &Frame::Hello {
            protocol: PROTOCOL_NAME.to_string(),
            version: PROTOCOL_VERSION,
        },
    )
    .unwrap();
    bytes
}

/// One of the crowd's connections: connecting, or said hello and
/// waiting to be closed.
struct Member {
    socket: Socket,
    said_hello: bool,
}

fn connect_from(source: Ipv4Addr, server: SocketAddr) -> Option<Socket> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    socket.set_nonblocking(true).ok()?;
    socket
        .bind(&SocketAddr::V4(SocketAddrV4::new(source, 0)).into())
        .ok()?;
    match socket.connect(&server.into()) {
        Ok(()) => Some(socket),
        Err(err) if err.raw_os_error() == Some(libc::EINPROGRESS) => Some(socket),
        Err(_) => None,
    }
}

/// What the crowd did: connections made, and how many of them the
/// server closed with a `busy` error frame.
#[derive(Default)]
struct CrowdCounts {
    connects: AtomicU64,
    told_busy: AtomicU64,
}

/// Runs the crowd from one thread until `stop` (at most 60 s, at most
/// 500,000 connections): every member says hello once connected, reads
/// what the server sends, and connects again when it is closed.
fn run_crowd(server: SocketAddr, stop: &AtomicBool, counts: &CrowdCounts) {
    let hello = hello_bytes();
    let give_up = Instant::now() + Duration::from_secs(60);
    let sources: Vec<Ipv4Addr> = (0..N_ADDRESSES * CONNECTIONS_PER_ADDRESS)
        .map(|member_idx| crowd_address(member_idx % N_ADDRESSES))
        .collect();
    let mut members: Vec<Option<Member>> = sources.iter().map(|_| None).collect();
    let mut scratch = [0u8; 512];
    while !stop.load(Ordering::Relaxed)
        && Instant::now() < give_up
        && counts.connects.load(Ordering::Relaxed) < 500_000
    {
        for (slot, source) in members.iter_mut().zip(&sources) {
            if slot.is_none()
                && let Some(socket) = connect_from(*source, server)
            {
                counts.connects.fetch_add(1, Ordering::Relaxed);
                *slot = Some(Member {
                    socket,
                    said_hello: false,
                });
            }
        }
        let mut fds: Vec<PollFd> = members
            .iter()
            .flatten()
            .map(|member| {
                let flags = if member.said_hello {
                    PollFlags::IN
                } else {
                    PollFlags::OUT
                };
                PollFd::new(&member.socket, flags)
            })
            .collect();
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 50_000_000,
        };
        if poll(&mut fds, Some(&timeout)).is_err() {
            continue;
        }
        let ready: Vec<PollFlags> = fds.iter().map(PollFd::revents).collect();
        drop(fds);
        let mut ready = ready.into_iter();
        for slot in members.iter_mut() {
            let Some(member) = slot else {
                continue;
            };
            let Some(revents) = ready.next() else {
                break;
            };
            if revents.is_empty() {
                continue;
            }
            let closed = if !member.said_hello {
                member.said_hello = true;
                member.socket.take_error().ok().flatten().is_some()
                    || (&member.socket).write(&hello).is_err()
            } else {
                match (&member.socket).read(&mut scratch) {
                    Ok(0) => true,
                    Ok(got) => {
                        if String::from_utf8_lossy(&scratch[..got]).contains("server busy") {
                            counts.told_busy.fetch_add(1, Ordering::Relaxed);
                        }
                        false
                    }
                    Err(err) => err.kind() != std::io::ErrorKind::WouldBlock,
                }
            };
            if closed {
                *slot = None;
            }
        }
    }
}

/// The namespaces and the token of a test.
struct Setup {
    server_ns: Namespace,
    crowd_ns: Namespace,
    dir: tempfile::TempDir,
}

impl Setup {
    fn token(&self) -> std::path::PathBuf {
        self.dir.path().join("token")
    }
}

/// Starts `serve ARGS` in the server's namespace with the crowd against
/// it, runs the token holder's test three times from the crowd's first
/// address, and checks that it was served every time and that the crowd
/// was closed to make room (and told so).
fn serve_through_the_crowd(setup: &Setup, serve_args: &[&str]) {
    let token = setup.token();
    let mut server = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            setup.server_ns.name(),
            env!("CARGO_BIN_EXE_netbisect"),
        ])
        .args(["serve", "--listen", "10.77.0.1", "-p", "0", "--token-file"])
        .arg(&token)
        .args(serve_args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let port: u16 = first.rsplit(':').next().unwrap().parse().unwrap();
    let log = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<String>>());
    let address = SocketAddr::from((SERVER_IP, port));

    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(CrowdCounts::default());
    let crowd = std::thread::spawn({
        let (stop, counts) = (Arc::clone(&stop), Arc::clone(&counts));
        let name = setup.crowd_ns.name().to_string();
        move || {
            enter(&name);
            run_crowd(address, &stop, &counts);
        }
    });
    // The whole crowd is connected before the client comes.
    let give_up = Instant::now() + Duration::from_secs(20);
    while counts.connects.load(Ordering::Relaxed) < (N_ADDRESSES * CONNECTIONS_PER_ADDRESS) as u64
        && Instant::now() < give_up
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let archive = setup.dir.path().join("a.db");
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        let output = setup
            .crowd_ns
            .netbisect(&archive)
            .args(["bench", "-H", "10.77.0.1", "-p", &port.to_string()])
            .args(["-t", "TCP_RR", "-l", "0.2", "--no-archive", "--token-file"])
            .arg(&token)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        outcomes.push((
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ));
    }
    stop.store(true, Ordering::Relaxed);
    crowd.join().unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let log = log.join().unwrap();
    let tail = log[log.len().saturating_sub(20)..].join("\n");
    for (code, stderr) in &outcomes {
        assert_eq!(
            *code,
            Some(0),
            "{serve_args:?}: the client was not served: {stderr}\n{tail}"
        );
    }
    // The crowd was all there, and more than the server has places
    // for: some of it was closed to make room, and told so.
    let connects = counts.connects.load(Ordering::Relaxed);
    assert!(
        connects >= (N_ADDRESSES * CONNECTIONS_PER_ADDRESS) as u64,
        "{serve_args:?}: {connects}"
    );
    assert!(
        counts.told_busy.load(Ordering::Relaxed) > 0,
        "{serve_args:?}: {tail}"
    );
}

#[test]
fn a_token_holder_is_served_through_a_crowd_of_hundreds_of_addresses() {
    let (server_ns, crowd_ns) = match namespaces() {
        Ok(pair) => pair,
        Err(reason) => {
            test_fixtures::skip::skip(format!("no network namespaces: {reason}"));
            return;
        }
    };
    let setup = Setup {
        server_ns,
        crowd_ns,
        dir: tempfile::tempdir().unwrap(),
    };
    std::fs::write(setup.token(), "a secret the crowd does not hold\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(setup.token(), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    // The default places (1,024) for a crowd of 1,200; then 512 places,
    // under a crowd of more than twice that.
    serve_through_the_crowd(&setup, &[]);
    serve_through_the_crowd(&setup, &["--max-handshakes", "512"]);
}
