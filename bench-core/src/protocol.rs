//! The control protocol between `netbisect bench` and `netbisect serve`.
//!
//! One TCP control connection per client carries length-prefixed JSON
//! frames: a 4-byte big-endian payload length, then that many bytes of
//! UTF-8 JSON holding one [`Frame`], tagged by its `type` member. Frames
//! longer than [`MAX_FRAME_BYTES`] ([`MAX_HANDSHAKE_FRAME_BYTES`] while
//! the server reads the handshake) are refused before they are read, and
//! every read has a timeout, so a silent or babbling peer costs a bounded
//! amount of memory and time.
//!
//! A session goes:
//!
//! 1. client `hello` (protocol name and version); the server answers
//!    `welcome` with its version and, when it demands a token, a random
//!    challenge, or `error` naming both versions when they differ;
//! 2. with a challenge, client `auth` carrying HMAC-SHA256 of the challenge
//!    under the pre-shared token (see [`crate::auth`]); server `auth_ok` or
//!    `error`;
//! 3. any number of tests: client `test` with the resolved spec; server
//!    `ready` with one data port per flow (or `error` for a request
//!    outside the limits of [`RunSpec::validate`], after which the session
//!    goes on); the data phase on separate connections; client
//!    `finished`; server `results` with its own figures of every flow,
//!    its CPU over the counted window when `-C` asked for it, and its
//!    environment;
//! 4. client `bye`, or it closes the connection.
//!
//! Data connections use separate ports, chosen by the server (within
//! `data_ports` when the client asks for a range). Each belongs to its
//! test: `ready` carries a fresh random secret, which the client writes
//! as the first bytes of every TCP data connection (with the first request
//! on a TCP_CRR connection) and sends as a datagram of its own to open
//! each UDP flow. The server drops connections and datagrams without it.
//!
//! Version 3 (this one) added the data secret; version 2 gave `ready` a
//! port per flow and `results` a report per flow and the server's CPU. An
//! older peer is refused at `hello`.

use run_record::env::HostEnv;
use run_record::record::{EndReport, HostCpu};
use run_record::spec::RunSpec;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Name of the protocol, sent in `hello`.
pub const PROTOCOL_NAME: &str = "netbisect.control";
/// Version of the protocol this crate speaks.
pub const PROTOCOL_VERSION: u32 = 3;
/// Largest frame payload accepted, bytes.
pub const MAX_FRAME_BYTES: u32 = 256 * 1024;
/// Largest frame payload a server accepts before the handshake is over:
/// `hello` and `auth` are about a hundred bytes.
pub const MAX_HANDSHAKE_FRAME_BYTES: u32 = 4096;
/// Default control port of `netbisect serve`: the one records take for
/// granted (a run's command line names any other).
pub const DEFAULT_PORT: u16 = run_record::record::DEFAULT_CONTROL_PORT;

/// A range of ports, both ends included (`--data-port LOW-HIGH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortRange {
    /// First port.
    pub low: u16,
    /// Last port.
    pub high: u16,
}

impl PortRange {
    /// How many ports the range holds.
    pub fn port_count(&self) -> u32 {
        u32::from(self.high).saturating_sub(u32::from(self.low)) + 1
    }

    /// Whether the range has a port for each of `flows` data sockets (one
    /// each, bound at once): an error that says both numbers if not.
    pub fn check_flows(&self, flows: u32) -> Result<(), TooFewPorts> {
        if flows > self.port_count() {
            return Err(TooFewPorts {
                range: *self,
                flows,
            });
        }
        Ok(())
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.low, self.high)
    }
}

/// A data-port range with fewer ports than the test has flows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the data-port range {range} holds {} port{} for {flows} flows: each flow's data socket takes its own",
    range.port_count(),
    if range.port_count() == 1 { "" } else { "s" }
)]
pub struct TooFewPorts {
    /// The range given.
    pub range: PortRange,
    /// The flows of the test.
    pub flows: u32,
}

/// A port range that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid port range '{0}' (expected LOW-HIGH, 1 <= LOW <= HIGH <= 65535)")]
pub struct InvalidPortRange(pub String);

impl std::str::FromStr for PortRange {
    type Err = InvalidPortRange;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || InvalidPortRange(text.to_string());
        let (low, high) = match text.split_once('-') {
            Some((low, high)) => (low, high),
            None => (text, text),
        };
        let low: u16 = low.trim().parse().map_err(|_| invalid())?;
        let high: u16 = high.trim().parse().map_err(|_| invalid())?;
        if low == 0 || low > high {
            return Err(invalid());
        }
        Ok(PortRange { low, high })
    }
}

/// One control message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Frame {
    /// Client: opens the session.
    Hello {
        /// Always [`PROTOCOL_NAME`].
        protocol: String,
        /// The client's [`PROTOCOL_VERSION`].
        version: u32,
    },
    /// Server: accepts the hello.
    Welcome {
        /// The server's [`PROTOCOL_VERSION`].
        version: u32,
        /// Hex challenge to answer with `auth`, when a token is demanded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        challenge: Option<String>,
    },
    /// Client: answers the challenge.
    Auth {
        /// Hex HMAC-SHA256 of the challenge under the token.
        mac: String,
    },
    /// Server: the answer was right.
    AuthOk,
    /// Client: asks for one test iteration.
    Test {
        /// What to run.
        spec: RunSpec,
        /// Ports the data socket must use, for firewalls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data_ports: Option<PortRange>,
    },
    /// Server: the data sockets are listening.
    Ready {
        /// Their ports, one per flow.
        data_ports: Vec<u16>,
        /// The test's secret: the first bytes of every data connection
        /// and the datagram that opens a UDP flow, so that no other
        /// process can take a flow's place.
        data_secret: String,
    },
    /// Client: its side of the data phase is over.
    Finished,
    /// Server: its side's figures of the iteration.
    Results {
        /// What the server counted, per flow.
        flows: Vec<EndReport>,
        /// The server host's CPU over the counted window (`-C`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu: Option<HostCpu>,
        /// The server's environment.
        env: Box<HostEnv>,
    },
    /// Either side: the request failed; the session may go on.
    Error {
        /// What went wrong, lowercase.
        message: String,
    },
    /// Client: ends the session.
    Bye,
}

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The peer closed the connection.
    #[error("connection closed by the peer")]
    Closed,
    /// No frame arrived in time.
    #[error("no frame within {0:?}")]
    Timeout(Duration),
    /// The announced frame is larger than the limit.
    #[error("frame of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The announced size.
        size: u32,
        /// The limit it exceeds.
        limit: u32,
    },
    /// The frame is not a valid message.
    #[error("malformed frame: {0}")]
    Malformed(String),
    /// The connection failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn is_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Reads one frame, waiting at most `timeout` for each read.
pub fn read_frame<S: Read + ?Sized>(
    stream: &mut S,
    timeout: Duration,
) -> Result<Frame, ProtocolError> {
    let map = |err: io::Error| {
        if err.kind() == io::ErrorKind::UnexpectedEof {
            ProtocolError::Closed
        } else if is_timeout(&err) {
            ProtocolError::Timeout(timeout)
        } else {
            ProtocolError::Io(err)
        }
    };
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).map_err(map)?;
    let size = u32::from_be_bytes(header);
    if size > MAX_FRAME_BYTES {
        return Err(ProtocolError::TooLarge {
            size,
            limit: MAX_FRAME_BYTES,
        });
    }
    let mut payload = vec![0u8; size as usize];
    stream.read_exact(&mut payload).map_err(map)?;
    serde_json::from_slice(&payload).map_err(|err| ProtocolError::Malformed(err.to_string()))
}

/// Reads one frame from a TCP stream, giving up when the whole frame has
/// not arrived within `timeout` (a peer that trickles bytes is bounded
/// too).
pub fn read_frame_within(
    stream: &mut TcpStream,
    timeout: Duration,
) -> Result<Frame, ProtocolError> {
    let deadline = Instant::now() + timeout;
    let mut reader = DeadlineReader { stream, deadline };
    read_frame(&mut reader, timeout)
}

/// A reader whose every read waits at most until a common deadline.
struct DeadlineReader<'a> {
    stream: &'a mut TcpStream,
    deadline: Instant,
}

impl Read for DeadlineReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buffer)
    }
}

/// A frame read piece by piece from a nonblocking stream, as a server
/// reads many handshakes from one thread. It never reads past the end
/// of its frame, so whatever the peer sends after it stays in the socket
/// for the next reader.
#[derive(Debug)]
pub struct FrameReader {
    bytes: Vec<u8>,
    limit: u32,
}

impl FrameReader {
    /// A reader of frames of at most `limit` bytes of payload.
    pub fn new(limit: u32) -> FrameReader {
        FrameReader {
            bytes: Vec::new(),
            limit,
        }
    }

    /// Bytes of the frame being read so far.
    pub fn buffered(&self) -> usize {
        self.bytes.len()
    }

    /// Reads what `stream` has of the frame: the frame once it is whole,
    /// `None` while more is to come (the stream would block). An end of
    /// file, a frame over the limit, a malformed frame or a failed read
    /// is an error.
    pub fn read_from<S: Read + ?Sized>(
        &mut self,
        stream: &mut S,
    ) -> Result<Option<Frame>, ProtocolError> {
        let mut chunk = [0u8; 1024];
        loop {
            let wanted = match self.announced() {
                None => 4,
                Some(size) => 4 + size as usize,
            };
            let missing = wanted - self.bytes.len();
            let room = missing.min(chunk.len());
            match stream.read(&mut chunk[..room]) {
                Ok(0) => return Err(ProtocolError::Closed),
                Ok(got) => self.bytes.extend_from_slice(&chunk[..got]),
                Err(err) if is_timeout(&err) || err.kind() == io::ErrorKind::Interrupted => {
                    return Ok(None);
                }
                Err(err) => return Err(ProtocolError::Io(err)),
            }
            if let Some(size) = self.announced() {
                if size > self.limit {
                    return Err(ProtocolError::TooLarge {
                        size,
                        limit: self.limit,
                    });
                }
                if self.bytes.len() == 4 + size as usize {
                    let frame = serde_json::from_slice(&self.bytes[4..])
                        .map_err(|err| ProtocolError::Malformed(err.to_string()));
                    self.bytes.clear();
                    return frame.map(Some);
                }
            }
        }
    }

    /// The payload size the header announces, once it is read.
    fn announced(&self) -> Option<u32> {
        let header: [u8; 4] = self.bytes.get(..4)?.try_into().ok()?;
        Some(u32::from_be_bytes(header))
    }
}

/// The bytes of one frame: its length, then its JSON.
pub fn encode_frame(frame: &Frame) -> Result<Vec<u8>, ProtocolError> {
    let payload =
        serde_json::to_vec(frame).map_err(|err| ProtocolError::Malformed(err.to_string()))?;
    let too_large = || ProtocolError::TooLarge {
        size: u32::try_from(payload.len()).unwrap_or(u32::MAX),
        limit: MAX_FRAME_BYTES,
    };
    let size = u32::try_from(payload.len())
        .ok()
        .filter(|size| *size <= MAX_FRAME_BYTES)
        .ok_or_else(too_large)?;
    let mut bytes = Vec::with_capacity(4 + payload.len());
    bytes.extend_from_slice(&size.to_be_bytes());
    bytes.extend_from_slice(&payload);
    Ok(bytes)
}

/// Writes one frame in a single write.
pub fn write_frame<S: Write + ?Sized>(stream: &mut S, frame: &Frame) -> Result<(), ProtocolError> {
    let bytes = encode_frame(frame)?;
    stream.write_all(&bytes).map_err(|err| {
        if is_timeout(&err) {
            ProtocolError::Timeout(Duration::ZERO)
        } else {
            ProtocolError::Io(err)
        }
    })?;
    stream.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_limits_hold() {
        let frame = Frame::Welcome {
            version: PROTOCOL_VERSION,
            challenge: Some("00ff".to_string()),
        };
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &frame).unwrap();
        let size = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        assert_eq!(size, bytes.len() - 4);
        let text = std::str::from_utf8(&bytes[4..]).unwrap();
        assert_eq!(text, r#"{"type":"welcome","version":3,"challenge":"00ff"}"#);
        let read = read_frame(&mut bytes.as_slice(), Duration::from_secs(1)).unwrap();
        assert_eq!(read, frame);

        let huge = (MAX_FRAME_BYTES + 1).to_be_bytes();
        let err = read_frame(&mut huge.as_slice(), Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, ProtocolError::TooLarge { .. }), "{err}");

        let mut garbage = 5u32.to_be_bytes().to_vec();
        garbage.extend_from_slice(b"hello");
        let err = read_frame(&mut garbage.as_slice(), Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, ProtocolError::Malformed(_)), "{err}");

        let err = read_frame(&mut [0u8, 0].as_slice(), Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, ProtocolError::Closed), "{err}");
    }

    /// A stream that gives its bytes a few at a time, then would block.
    struct Trickle {
        bytes: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            if self.at == self.bytes.len() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let got = self.step.min(buffer.len()).min(self.bytes.len() - self.at);
            buffer[..got].copy_from_slice(&self.bytes[self.at..self.at + got]);
            self.at += got;
            Ok(got)
        }
    }

    #[test]
    fn a_frame_reader_takes_its_frame_and_no_more() {
        let hello = Frame::Hello {
            protocol: PROTOCOL_NAME.to_string(),
            version: PROTOCOL_VERSION,
        };
        let mut bytes = encode_frame(&hello).unwrap();
        bytes.extend_from_slice(&encode_frame(&Frame::Bye).unwrap());
        let mut stream = Trickle {
            bytes,
            at: 0,
            step: 3,
        };
        let mut reader = FrameReader::new(MAX_HANDSHAKE_FRAME_BYTES);
        assert_eq!(reader.read_from(&mut stream).unwrap(), Some(hello));
        assert_eq!(reader.buffered(), 0);
        assert_eq!(reader.read_from(&mut stream).unwrap(), Some(Frame::Bye));
        assert_eq!(reader.read_from(&mut stream).unwrap(), None);

        let mut huge = Trickle {
            bytes: (MAX_HANDSHAKE_FRAME_BYTES + 1).to_be_bytes().to_vec(),
            at: 0,
            step: 1,
        };
        let err = FrameReader::new(MAX_HANDSHAKE_FRAME_BYTES)
            .read_from(&mut huge)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "frame of 4097 bytes exceeds the limit of 4096 bytes"
        );
        let err = FrameReader::new(64)
            .read_from(&mut [0u8, 0].as_slice())
            .unwrap_err();
        assert!(matches!(err, ProtocolError::Closed), "{err}");
    }

    #[test]
    fn port_ranges_parse() {
        assert_eq!(
            "5000-5010".parse::<PortRange>().unwrap(),
            PortRange {
                low: 5000,
                high: 5010
            }
        );
        assert_eq!("7000".parse::<PortRange>().unwrap().high, 7000);
        assert!("10-5".parse::<PortRange>().is_err());
        assert!("0-5".parse::<PortRange>().is_err());
        assert!("a-b".parse::<PortRange>().is_err());
    }
}
