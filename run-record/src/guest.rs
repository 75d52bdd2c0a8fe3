//! What a guest of the VM runner hands back for one run, read as the
//! host takes it: its exit status, its error text, and its record,
//! which is taken only when it is of the run that was asked. The guest
//! is not trusted, so every byte here may be anything; the files are
//! read (without following links, within a size cap) by the binary,
//! which hands their bytes to these functions.

use crate::record::RunRecord;
use crate::spec::RunSpec;

/// The run a guest was asked for: what its record must say.
#[derive(Clone, Copy, Debug)]
pub struct AskedRun<'a> {
    /// The spec handed to the guest.
    pub spec: &'a RunSpec,
    /// The testbed the guest's bench was given.
    pub testbed: &'a str,
    /// The label the guest's bench was given, if any.
    pub label: Option<&'a str>,
    /// The commit the guest's bench was given, if any; without one the
    /// guest takes it from its kernel, and any is taken.
    pub commit: Option<&'a str>,
}

/// How a guest says one of its runs ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// Exit status 0: its record is there.
    Passed,
    /// Any other status, as the guest wrote it (trimmed, at most
    /// [`MAX_STATUS_CHARS`] characters).
    Failed(String),
}

/// The longest status text kept in a message.
pub const MAX_STATUS_CHARS: usize = 16;

/// The status a guest wrote for a run.
pub fn run_status(bytes: &[u8]) -> RunStatus {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text == "0" {
        RunStatus::Passed
    } else {
        RunStatus::Failed(one_line(text).chars().take(MAX_STATUS_CHARS).collect())
    }
}

/// Why a run gave no record, from its status and what its bench said on
/// stderr: the non-empty lines, without bench's `netbisect: error: `
/// prefix, joined on one line.
pub fn failure_message(status: &str, stderr: &[u8]) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let message = stderr
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.strip_prefix("netbisect: error: ").unwrap_or(line))
        .map(one_line)
        .collect::<Vec<_>>()
        .join("; ");
    format!("netbisect bench exited with {status}: {message}")
}

/// A message the guest wrote (its setup error), trimmed, on one line.
pub fn guest_message(bytes: &[u8]) -> String {
    one_line(String::from_utf8_lossy(bytes).trim())
}

/// `text` with its control characters (a carriage return, an escape
/// sequence for the terminal the message is shown on) made spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The guest's record of a run, read with every check of
/// [`RunRecord::from_slice`], and taken only when it is of the run
/// `asked`: the same spec, testbed and label, the commit when one was
/// given, and no experiment or command (the host adds those). The error says every
/// difference.
pub fn record_of_run(bytes: &[u8], asked: &AskedRun<'_>) -> Result<RunRecord, String> {
    let record = RunRecord::from_slice(bytes)
        .map_err(|err| format!("the guest's run record is not readable: {err}"))?;
    let differences = differences(&record, asked);
    if differences.is_empty() {
        Ok(record)
    } else {
        Err(format!(
            "the guest's record is not of the run asked: {}",
            differences.join("; ")
        ))
    }
}

/// What in `record` is not as `asked`.
fn differences(record: &RunRecord, asked: &AskedRun<'_>) -> Vec<String> {
    let shown = |value: Option<&str>| one_line(value.unwrap_or("none"));
    let mut differences = Vec::new();
    if &record.spec != asked.spec {
        differences.push("its spec is another".to_string());
    }
    if record.testbed != asked.testbed {
        differences.push(format!(
            "its testbed is {}, not {}",
            one_line(&record.testbed),
            asked.testbed
        ));
    }
    if record.subject.label.as_deref() != asked.label {
        differences.push(format!(
            "its label is {}, not {}",
            shown(record.subject.label.as_deref()),
            shown(asked.label)
        ));
    }
    if let Some(commit) = asked.commit
        && record.subject.commit.as_deref() != Some(commit)
    {
        differences.push(format!(
            "its commit is {}, not {commit}",
            shown(record.subject.commit.as_deref())
        ));
    }
    if record.experiment.is_some() {
        differences.push("it names an experiment".to_string());
    }
    if record.command.is_some() {
        differences.push("it names a command".to_string());
    }
    differences
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Endpoint, Environments, Source, Subject, Summary};
    use crate::spec::TestKind;

    fn record(label: Option<&str>, commit: Option<&str>) -> RunRecord {
        let mut record = RunRecord {
            schema: String::new(),
            id: String::new(),
            config_key: String::new(),
            source: Source {
                tool: "netbisect".into(),
                version: None,
                undated: false,
            },
            started_at: "2026-01-22T10:00:00Z".into(),
            finished_at: "2026-01-22T10:00:10Z".into(),
            spec: RunSpec::defaults(TestKind::TcpStream),
            endpoint: Endpoint {
                host: "127.0.0.1".into(),
                port: None,
            },
            subject: Subject {
                label: label.map(str::to_string),
                commit: commit.map(str::to_string),
                ..Subject::default()
            },
            testbed: "vm-loopback".into(),
            env: Environments::default(),
            iterations: Vec::new(),
            summary: Summary::default(),
            system: None,
            experiment: None,
            command: None,
        };
        record.seal().unwrap();
        record
    }

    fn bytes(record: &RunRecord) -> Vec<u8> {
        record.to_canonical_bytes().unwrap()
    }

    #[test]
    fn a_record_of_the_run_asked_is_taken() {
        let spec = RunSpec::defaults(TestKind::TcpStream);
        let asked = AskedRun {
            spec: &spec,
            testbed: "vm-loopback",
            label: Some("old"),
            commit: None,
        };
        let guest = record(Some("old"), Some("v6.1"));
        assert_eq!(record_of_run(&bytes(&guest), &asked).unwrap(), guest);
        // A commit asked must be the record's.
        let asked = AskedRun {
            commit: Some("v6.1"),
            ..asked
        };
        assert_eq!(record_of_run(&bytes(&guest), &asked).unwrap(), guest);
    }

    #[test]
    fn every_difference_from_the_run_asked_is_named() {
        let mut spec = RunSpec::defaults(TestKind::TcpStream);
        spec.duration_s = 3.0;
        let asked = AskedRun {
            spec: &spec,
            testbed: "lab",
            label: Some("old"),
            commit: Some("v6.2"),
        };
        let err = record_of_run(&bytes(&record(Some("new\x1b[2J"), None)), &asked).unwrap_err();
        assert_eq!(
            err,
            "the guest's record is not of the run asked: its spec is another; \
             its testbed is vm-loopback, not lab; its label is new [2J, not old; \
             its commit is none, not v6.2"
        );
        let no_label = AskedRun {
            label: None,
            ..asked
        };
        let err = record_of_run(&bytes(&record(Some("x"), Some("v6.2"))), &no_label).unwrap_err();
        assert!(err.contains("its label is x, not none"), "{err}");
        let mut in_experiment = record(Some("old"), Some("v6.2"));
        in_experiment.spec = spec.clone();
        in_experiment.testbed = "lab".into();
        in_experiment.experiment = Some(crate::record::ExperimentTag {
            id: "0123456789abcdef".into(),
            round: 1,
        });
        in_experiment.seal().unwrap();
        let err = record_of_run(&bytes(&in_experiment), &asked).unwrap_err();
        assert!(err.ends_with(": it names an experiment"), "{err}");
        // Nor may a guest say what command made its run.
        let mut with_command = in_experiment.clone();
        with_command.experiment = None;
        with_command.command = Some(vec!["bench".into(), "--kernel".into(), "x".into()]);
        with_command.seal().unwrap();
        let err = record_of_run(&bytes(&with_command), &asked).unwrap_err();
        assert!(err.ends_with(": it names a command"), "{err}");
        // An experiment id of another form is refused as the record is read.
        in_experiment.experiment = Some(crate::record::ExperimentTag {
            id: "e1;touch pwn;#".into(),
            round: 1,
        });
        in_experiment.seal().unwrap();
        let err = record_of_run(&bytes(&in_experiment), &asked).unwrap_err();
        assert!(err.contains("experiment.id \"e1;touch pwn;#\""), "{err}");
    }

    #[test]
    fn what_is_not_a_record_is_refused() {
        let spec = RunSpec::defaults(TestKind::TcpStream);
        let asked = AskedRun {
            spec: &spec,
            testbed: "vm-loopback",
            label: None,
            commit: None,
        };
        for bytes in [&b""[..], b"{}", b"\0\0\0", &[0xff; 64]] {
            let err = record_of_run(bytes, &asked).unwrap_err();
            assert!(
                err.starts_with("the guest's run record is not readable"),
                "{err}"
            );
        }
        // A record whose content no longer matches its id.
        let text = String::from_utf8(bytes(&record(None, None)))
            .unwrap()
            .replace("vm-loopback", "vm-loopbacK");
        assert!(record_of_run(text.as_bytes(), &asked).is_err());
        // A name no archive stores, where the run asked says nothing of
        // it (a guest's own describe or tool).
        let mut named = record(None, None);
        named.subject.describe = Some("v6.1\0".into());
        named.source.tool = "x".repeat(crate::record::MAX_NAME_BYTES + 1);
        named.seal().unwrap();
        let err = record_of_run(&bytes(&named), &asked).unwrap_err();
        assert!(
            err.ends_with(
                "subject.describe holds a NUL character (at byte 4), which no archive stores"
            ),
            "{err}"
        );
        named.subject.describe = None;
        named.seal().unwrap();
        let err = record_of_run(&bytes(&named), &asked).unwrap_err();
        assert!(
            err.ends_with("source.tool is 1025 bytes long, over the limit of 1024 bytes"),
            "{err}"
        );
    }

    #[test]
    fn a_guest_record_with_a_figure_no_run_has_is_refused_by_name() {
        let spec = RunSpec::defaults(TestKind::TcpStream);
        let asked = AskedRun {
            spec: &spec,
            testbed: "vm-loopback",
            label: None,
            commit: None,
        };
        let mut absurd = record(None, None);
        absurd.iterations.push(crate::record::Iteration {
            elapsed_s: 10.0,
            throughput_bps: 8e6,
            transaction_rate: Some(1.7e308),
            ..crate::record::Iteration::default()
        });
        absurd.seal().unwrap();
        let err = record_of_run(&bytes(&absurd), &asked).unwrap_err();
        assert_eq!(
            err,
            "the guest's run record is not readable: $.iterations[0].transaction_rate is \
             1.7e308 /s, beyond 1e10 /s: no run measures that"
        );
    }

    #[test]
    fn statuses_and_messages_are_read_on_one_line() {
        assert_eq!(run_status(b"0\n"), RunStatus::Passed);
        assert_eq!(run_status(b" 0 "), RunStatus::Passed);
        assert_eq!(run_status(b"3\n"), RunStatus::Failed("3".into()));
        assert_eq!(run_status(b""), RunStatus::Failed(String::new()));
        assert_eq!(run_status(b"00"), RunStatus::Failed("00".into()));
        let RunStatus::Failed(long) = run_status(&[b'9'; 4096]) else {
            panic!("a long status passed");
        };
        assert_eq!(long.len(), MAX_STATUS_CHARS);
        assert_eq!(
            failure_message(
                "2",
                b"netbisect: error: bad spec\n\n  caused by: \x1b[31mno\r\n"
            ),
            "netbisect bench exited with 2: bad spec;   caused by:  [31mno"
        );
        assert_eq!(
            failure_message("1", &[0xff, b'\n']),
            "netbisect bench exited with 1: \u{fffd}"
        );
        assert_eq!(guest_message(b"  no NIC\n"), "no NIC");
        assert_eq!(guest_message(b"a\nb\tc"), "a b c");
    }
}
