//! One connection's handshake, read and answered without blocking: the
//! client's `hello`, the server's `welcome` (with a challenge when a
//! token is demanded), then its `auth` and the server's `auth_ok`. The
//! accept loop steps many of these at once from one thread (see
//! `admission`); a step never waits for the client.

use crate::auth::{self, Token};
use crate::protocol::{
    Frame, FrameReader, MAX_HANDSHAKE_FRAME_BYTES, PROTOCOL_NAME, PROTOCOL_VERSION, encode_frame,
};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Where a handshake is: what the server waits for.
enum Step {
    /// The client's `hello`.
    Hello,
    /// The client's `auth`, answering `challenge`.
    Auth { challenge: String },
}

/// How a step of a handshake ended.
pub(super) enum Outcome {
    /// The server waits for the client's next frame.
    Pending,
    /// The handshake is over: the session may start.
    Done,
    /// The client was refused, and told why: wrong version, no token or
    /// a wrong one, or the time is up while the token was demanded.
    Refused(String),
    /// The connection broke, was closed or spoke something else.
    Dropped(String),
}

/// A connection in its handshake.
pub(super) struct Handshake {
    pub(super) stream: TcpStream,
    pub(super) peer: SocketAddr,
    /// When the handshake must be over.
    pub(super) deadline: Instant,
    step: Step,
    reader: FrameReader,
}

impl Handshake {
    /// A handshake for a connection just accepted (already nonblocking),
    /// which has `timeout` in all.
    pub(super) fn new(stream: TcpStream, peer: SocketAddr, timeout: Duration) -> Handshake {
        Handshake {
            stream,
            peer,
            deadline: Instant::now() + timeout,
            step: Step::Hello,
            reader: FrameReader::new(MAX_HANDSHAKE_FRAME_BYTES),
        }
    }

    /// Reads what the client has sent and answers a whole frame.
    pub(super) fn advance(&mut self, token: Option<&Token>) -> Outcome {
        match self.reader.read_from(&mut &self.stream) {
            Ok(None) => Outcome::Pending,
            Ok(Some(frame)) => self.answer(frame, token),
            Err(err) => match self.step {
                Step::Hello => Outcome::Dropped(err.to_string()),
                Step::Auth { .. } => Outcome::Refused(format!("authentication failed: {err}")),
            },
        }
    }

    /// The outcome of a handshake whose time is up.
    pub(super) fn expired(&self, timeout: Duration) -> Outcome {
        let what = if self.reader.buffered() > 0 {
            "no whole frame"
        } else {
            "no frame"
        };
        match self.step {
            Step::Hello => Outcome::Dropped(format!("{what} within {timeout:?}")),
            Step::Auth { .. } => {
                Outcome::Refused(format!("authentication failed: {what} within {timeout:?}"))
            }
        }
    }

    /// Tells the client why it is closed, if its socket takes the frame
    /// at once; the connection closes when the handshake is dropped.
    pub(super) fn tell(&self, message: String) {
        let _ = self.send(&Frame::Error { message });
    }

    fn answer(&mut self, frame: Frame, token: Option<&Token>) -> Outcome {
        match (&self.step, frame) {
            (Step::Hello, Frame::Hello { protocol, version })
                if protocol == PROTOCOL_NAME && version == PROTOCOL_VERSION =>
            {
                let challenge = match token {
                    None => None,
                    Some(_) => match auth::new_challenge() {
                        Ok(challenge) => Some(challenge),
                        Err(err) => return Outcome::Dropped(err.to_string()),
                    },
                };
                let welcome = Frame::Welcome {
                    version: PROTOCOL_VERSION,
                    challenge: challenge.clone(),
                };
                if let Err(reason) = self.send(&welcome) {
                    return Outcome::Dropped(reason);
                }
                match challenge {
                    None => Outcome::Done,
                    Some(challenge) => {
                        self.step = Step::Auth { challenge };
                        Outcome::Pending
                    }
                }
            }
            (Step::Hello, Frame::Hello { protocol, version }) if protocol == PROTOCOL_NAME => self
                .refuse(format!(
                    "protocol version mismatch: client speaks {version}, server speaks \
                     {PROTOCOL_VERSION}"
                )),
            (Step::Hello, _) => self.refuse(format!("expected a {PROTOCOL_NAME} hello")),
            (Step::Auth { challenge }, Frame::Auth { mac }) => {
                let verified = token.is_some_and(|token| token.verify(challenge, &mac));
                if !verified {
                    return self.refuse("authentication failed: wrong token".to_string());
                }
                match self.send(&Frame::AuthOk) {
                    Ok(()) => Outcome::Done,
                    Err(reason) => Outcome::Dropped(reason),
                }
            }
            (Step::Auth { .. }, _) => {
                self.tell("authentication required: this server demands a token".to_string());
                Outcome::Refused("authentication failed: no token".to_string())
            }
        }
    }

    /// Sends `message` as an error frame and refuses the client with it.
    fn refuse(&self, message: String) -> Outcome {
        self.tell(message.clone());
        Outcome::Refused(message)
    }

    /// Writes `frame` in one nonblocking write. A handshake's frames are
    /// a few hundred bytes, which a new connection's send buffer always
    /// has room for; a client that has not made that room is not reading.
    fn send(&self, frame: &Frame) -> Result<(), String> {
        let bytes = encode_frame(frame).map_err(|err| err.to_string())?;
        match (&self.stream).write(&bytes) {
            Ok(sent) if sent == bytes.len() => Ok(()),
            Ok(_) => Err("the client does not read what the server sends".to_string()),
            Err(err) => Err(err.to_string()),
        }
    }
}
