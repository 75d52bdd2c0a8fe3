//! What a guest of the VM runner hands back for a run, on arbitrary
//! bytes: the input is split at its first two NUL bytes into a status, a
//! stderr and a record. Nothing panics; a failure's message stays on one
//! line; a record taken is of the run asked, whole and canonical.
#![no_main]

use libfuzzer_sys::fuzz_target;
use run_record::guest::{AskedRun, RunStatus, failure_message, guest_message, record_of_run, run_status};
use run_record::record::RunRecord;
use run_record::spec::{RunSpec, TestKind};

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&byte| byte == 0);
    let status = parts.next().unwrap_or_default();
    let stderr = parts.next().unwrap_or_default();
    let record = parts.next().unwrap_or_default();

    match run_status(status) {
        RunStatus::Passed => {}
        RunStatus::Failed(text) => {
            assert!(text.chars().count() <= run_record::guest::MAX_STATUS_CHARS);
            let message = failure_message(&text, stderr);
            assert!(!message.contains(['\n', '\r']), "{message:?}");
        }
    }
    assert!(!guest_message(stderr).contains(['\n', '\r']));

    // The run asked: the record's own, when it reads, so that the checks
    // past the reading are reached; and a fixed one.
    let fixed_spec = RunSpec::defaults(TestKind::TcpStream);
    let fixed = AskedRun {
        spec: &fixed_spec,
        testbed: "vm-loopback",
        label: None,
        commit: None,
    };
    let read = RunRecord::from_slice(record).ok();
    let own = read.as_ref().map(|read| AskedRun {
        spec: &read.spec,
        testbed: &read.testbed,
        label: read.subject.label.as_deref(),
        commit: read.subject.commit.as_deref(),
    });
    for asked in std::iter::once(fixed).chain(own) {
        match record_of_run(record, &asked) {
            Ok(taken) => {
                assert_eq!(&taken.spec, asked.spec);
                assert_eq!(taken.testbed, asked.testbed);
                assert_eq!(taken.subject.label.as_deref(), asked.label);
                assert!(taken.experiment.is_none());
                let bytes = taken.to_canonical_bytes().expect("a record taken encodes");
                assert_eq!(RunRecord::from_slice(&bytes).expect("reads back"), taken);
            }
            Err(message) => assert!(!message.is_empty()),
        }
    }
});
