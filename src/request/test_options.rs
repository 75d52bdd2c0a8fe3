//! netperf's command-line shape: global options before `--`, the test's
//! own options after it, so that a netperf command line pasted from an
//! email runs unchanged (`bench -t TCP_STREAM -- -m 16K -D`).
//!
//! After `--` the letters mean what netperf's test-specific options mean:
//! `-m`/`-M` send and receive size (stream tests), `-r req,resp` (RR
//! tests), `-s`/`-S` local and remote socket buffer, `-D` TCP_NODELAY,
//! `-P lport,rport` data ports (only the remote one is supported: it
//! becomes `--data-port`), `-b` first burst (TCP_RR, UDP_RR), `-4`/`-6`. An
//! option the test does not take, or one netbisect does not know, is a
//! usage error naming it, never ignored.
//!
//! Before `--` today's flags keep their meaning; but in a line that has
//! `--` (a netperf line), `-s`, `-S` and `-r` before it are netperf's
//! global options, which mean something else there, so they are refused
//! with the advice to move them after `--`.

use crate::cli::BenchArgs;
use crate::exit::InputError;
use bench_core::protocol::PortRange;
use run_record::spec::{AddressFamily, RunSpec, TestKind, parse_size};

/// What the options after `--` set; `None` leaves the global value.
#[derive(Debug, Default, PartialEq)]
pub struct TestOptions {
    send_size: Option<u32>,
    recv_size: Option<u32>,
    request_size: Option<u32>,
    response_size: Option<u32>,
    local_buffer: Option<u32>,
    remote_buffer: Option<u32>,
    nodelay: bool,
    first_burst: Option<u32>,
    family: Option<AddressFamily>,
    /// The remote data port (`-P ,rport`).
    pub data_port: Option<PortRange>,
}

/// Which tests take an option after `--`.
fn taken_by(letter: char, test: TestKind) -> bool {
    let stream = !test.is_request_response();
    match letter {
        'm' | 'M' => stream,
        'r' | 'b' => !stream,
        'D' => !test.is_udp(),
        's' | 'S' | 'P' | '4' | '6' => true,
        _ => false,
    }
}

fn known(letter: char) -> bool {
    matches!(
        letter,
        'm' | 'M' | 'r' | 'b' | 'D' | 's' | 'S' | 'P' | '4' | '6'
    )
}

fn takes_value(letter: char) -> bool {
    matches!(letter, 'm' | 'M' | 'r' | 'b' | 's' | 'S' | 'P')
}

/// Refuses, in a line with `--`, the flags that netperf reads as global
/// options with another meaning.
pub fn refuse_clashing_globals(args: &BenchArgs) -> Result<(), InputError> {
    if args.test_options.is_empty() {
        return Ok(());
    }
    let clashes = [
        ("-s", args.local_buffer.is_some(), "the local socket buffer"),
        (
            "-S",
            args.remote_buffer.is_some(),
            "the remote socket buffer",
        ),
        (
            "-r",
            args.request_response.is_some(),
            "request/response sizes",
        ),
    ];
    for (flag, given, what) in clashes {
        if given {
            return Err(InputError(format!(
                "{flag} before \"--\": netperf reads {what} after \"--\"; \
                 move {flag} there"
            )));
        }
    }
    Ok(())
}

/// Reads the words after `--` for `test`.
pub fn parse(test: TestKind, words: &[String]) -> Result<TestOptions, InputError> {
    let mut options = TestOptions::default();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let mut letters = word.strip_prefix('-').unwrap_or("").chars();
        let Some(letter) = letters.next().filter(|letter| *letter != '-') else {
            return Err(InputError(format!(
                "\"{word}\" after \"--\" is not a test option (netperf's test-specific \
                 options are single letters: -m 16K)"
            )));
        };
        let attached = letters.as_str();
        if !known(letter) {
            return Err(InputError(format!(
                "-{letter} after \"--\" is not a test option netbisect knows"
            )));
        }
        if !taken_by(letter, test) {
            return Err(InputError(format!(
                "-{letter} after \"--\": {test} does not take it"
            )));
        }
        let value = if takes_value(letter) {
            if attached.is_empty() {
                words
                    .next()
                    .map(String::as_str)
                    .ok_or_else(|| InputError(format!("-{letter} after \"--\" needs a value")))?
            } else {
                attached
            }
        } else if attached.is_empty() {
            ""
        } else {
            return Err(InputError(format!(
                "\"{word}\" after \"--\": -{letter} takes no value"
            )));
        };
        let flag = format!("-{letter}");
        let size = |text: &str| parse_size(&flag, text).map_err(|err| InputError(err.to_string()));
        match letter {
            'm' => options.send_size = Some(size(value)?),
            'M' => options.recv_size = Some(size(value)?),
            'r' => {
                let (request, response) = pair(value);
                options.request_size = request.map(size).transpose()?;
                options.response_size = response.map(size).transpose()?;
            }
            's' => options.local_buffer = Some(one_buffer(&flag, value)?),
            'S' => options.remote_buffer = Some(one_buffer(&flag, value)?),
            'b' => {
                options.first_burst =
                    Some(value.parse().map_err(|_| {
                        InputError(format!("invalid first burst '{value}' for -b"))
                    })?);
            }
            'P' => options.data_port = data_port(value)?,
            'D' => options.nodelay = true,
            '4' => options.family = Some(AddressFamily::Ipv4),
            _ => options.family = Some(AddressFamily::Ipv6),
        }
    }
    Ok(options)
}

/// netperf's `A,B`, `A`, `A,` and `,B`.
fn pair(text: &str) -> (Option<&str>, Option<&str>) {
    fn non_empty(part: &str) -> Option<&str> {
        (!part.is_empty()).then_some(part)
    }
    match text.split_once(',') {
        Some((first, second)) => (non_empty(first), non_empty(second)),
        None => (non_empty(text), non_empty(text)),
    }
}

/// netperf's `-s send,recv`: netbisect sets one size for both, so the two
/// must agree when both are given.
fn one_buffer(flag: &str, text: &str) -> Result<u32, InputError> {
    let size = |part: &str| parse_size(flag, part).map_err(|err| InputError(err.to_string()));
    match pair(text) {
        (Some(send), Some(recv)) => {
            let (send, recv) = (size(send)?, size(recv)?);
            if send == recv {
                Ok(send)
            } else {
                Err(InputError(format!(
                    "{flag} {text}: different send and receive buffers are not supported"
                )))
            }
        }
        (Some(one), None) | (None, Some(one)) => size(one),
        (None, None) => Err(InputError(format!("{flag} after \"--\" needs a size"))),
    }
}

/// netperf's `-P lport,rport`: the remote port becomes the server's data
/// port; a local port cannot be chosen.
fn data_port(text: &str) -> Result<Option<PortRange>, InputError> {
    let (local, remote) = match text.split_once(',') {
        Some((local, remote)) => (local, remote),
        None => (text, ""),
    };
    if !local.is_empty() && local != "0" {
        return Err(InputError(format!(
            "-P {text}: choosing the local data port is not supported; give ,{}",
            if remote.is_empty() { "RPORT" } else { remote }
        )));
    }
    if remote.is_empty() || remote == "0" {
        return Ok(None);
    }
    remote
        .parse::<PortRange>()
        .map(Some)
        .map_err(|_| InputError(format!("invalid remote data port '{remote}' for -P")))
}

impl TestOptions {
    /// Sets what was given after `--` over the global values in `spec`.
    pub fn apply(&self, spec: &mut RunSpec) {
        let set = |field: &mut u32, value: Option<u32>| {
            if let Some(value) = value {
                *field = value;
            }
        };
        set(&mut spec.send_size_bytes, self.send_size);
        set(&mut spec.recv_size_bytes, self.recv_size);
        set(&mut spec.request_size_bytes, self.request_size);
        set(&mut spec.response_size_bytes, self.response_size);
        set(&mut spec.first_burst, self.first_burst);
        if self.local_buffer.is_some() {
            spec.local_socket_buffer_bytes = self.local_buffer;
        }
        if self.remote_buffer.is_some() {
            spec.remote_socket_buffer_bytes = self.remote_buffer;
        }
        spec.nodelay |= self.nodelay;
        if let Some(family) = self.family {
            spec.family = family;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn error(test: TestKind, line: &str) -> String {
        parse(test, &words(line)).unwrap_err().to_string()
    }

    #[test]
    fn netperf_test_options_set_the_spec() {
        let mut spec = RunSpec::defaults(TestKind::TcpStream);
        parse(
            TestKind::TcpStream,
            &words("-m 16K -M64K -s 87380 -S 87380,87380 -D -6"),
        )
        .unwrap()
        .apply(&mut spec);
        assert_eq!(spec.send_size_bytes, 16384);
        assert_eq!(spec.recv_size_bytes, 65536);
        assert_eq!(spec.local_socket_buffer_bytes, Some(87380));
        assert_eq!(spec.remote_socket_buffer_bytes, Some(87380));
        assert!(spec.nodelay);
        assert_eq!(spec.family, AddressFamily::Ipv6);

        let mut spec = RunSpec::defaults(TestKind::TcpRr);
        let options = parse(TestKind::TcpRr, &words("-r 64,1K -b 4 -P ,12866")).unwrap();
        options.apply(&mut spec);
        assert_eq!(
            (spec.request_size_bytes, spec.response_size_bytes),
            (64, 1024)
        );
        assert_eq!(spec.first_burst, 4);
        assert_eq!(
            options.data_port,
            Some(PortRange {
                low: 12866,
                high: 12866
            })
        );
    }

    #[test]
    fn a_bench_spec_of_bisect_takes_test_options_too() {
        use clap::Parser;
        let line = crate::cli::BenchSpecLine::try_parse_from([
            "-t", "TCP_RR", "-l", "0.1", "--", "-r", "64,64", "-D",
        ])
        .unwrap();
        let request = crate::request::request_from_args(&line.args).unwrap();
        assert_eq!(request.spec.request_size_bytes, 64);
        assert!(request.spec.nodelay);
    }

    #[test]
    fn options_a_test_does_not_take_are_named() {
        assert_eq!(
            error(TestKind::TcpStream, "-r 64,64"),
            "-r after \"--\": TCP_STREAM does not take it"
        );
        assert_eq!(
            error(TestKind::TcpStream, "-b 4"),
            "-b after \"--\": TCP_STREAM does not take it"
        );
        assert_eq!(
            error(TestKind::UdpStream, "-D"),
            "-D after \"--\": UDP_STREAM does not take it"
        );
        assert_eq!(
            error(TestKind::TcpRr, "-m 1K"),
            "-m after \"--\": TCP_RR does not take it"
        );
        assert_eq!(
            error(TestKind::TcpRr, "-k throughput"),
            "-k after \"--\" is not a test option netbisect knows"
        );
        assert_eq!(
            error(TestKind::TcpRr, "-r"),
            "-r after \"--\" needs a value"
        );
        assert_eq!(
            error(TestKind::TcpStream, "-Dx"),
            "\"-Dx\" after \"--\": -D takes no value"
        );
        assert!(error(TestKind::TcpStream, "16K").contains("\"16K\" after \"--\" is not"));
        assert_eq!(
            error(TestKind::TcpStream, "-s 64K,128K"),
            "-s 64K,128K: different send and receive buffers are not supported"
        );
        assert!(error(TestKind::TcpRr, "-P 5000,6000").contains("local data port"));
    }
}
