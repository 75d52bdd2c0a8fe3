//! Whole messages on a stream socket, and the end of a TCP flow: its
//! buffers and `TCP_INFO` read back.

use super::{DataError, io_error};
use crate::sockets::{self, complete_truth};
use run_record::record::{SocketTruth, TcpInfoFigures};
use socket2::SockRef;
use std::io::{self, Read};
use std::net::TcpStream;
use std::time::Instant;

/// Reads exactly `buffer.len()` bytes. Returns false on end of file before
/// the first byte (a clean end between messages).
pub(crate) fn read_message(stream: &mut impl Read, buffer: &mut [u8]) -> Result<bool, DataError> {
    let mut filled = 0;
    while filled < buffer.len() {
        match stream.read(&mut buffer[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(DataError::PeerClosed),
            Ok(got) => filled += got,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("receive")(err)),
        }
    }
    Ok(true)
}

/// [`read_message`] that gives up at `hard`, however the bytes trickle
/// in: a peer sending one byte per read timeout cannot hold the server.
pub(crate) fn read_message_by(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    hard: Instant,
) -> Result<bool, DataError> {
    let mut filled = 0;
    while filled < buffer.len() {
        if Instant::now() >= hard {
            return Err(DataError::Overrun);
        }
        match stream.read(&mut buffer[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(DataError::PeerClosed),
            Ok(got) => filled += got,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("receive")(err)),
        }
    }
    Ok(true)
}

/// Reads until the peer's end of file, giving up at `hard`.
pub(crate) fn drain_until_closed(stream: &mut TcpStream, hard: Instant) {
    let mut scratch = [0u8; 64];
    while Instant::now() < hard && matches!(stream.read(&mut scratch), Ok(got) if got > 0) {}
}

/// Reads the buffers and `TCP_INFO` of a TCP socket at the end of a test.
pub(crate) fn finish_tcp(stream: &TcpStream, truth: &mut SocketTruth) -> Result<(), DataError> {
    complete_truth(truth, &SockRef::from(stream)).map_err(io_error("reading the socket"))
}

/// `TCP_INFO` of a TCP socket, if the kernel gives it.
pub(crate) fn tcp_info_of(stream: &TcpStream) -> Option<TcpInfoFigures> {
    sockets::tcp_info(&SockRef::from(stream)).ok()
}
