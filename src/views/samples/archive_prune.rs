//! Samples of `archive-prune`: a dry run over two testbeds, one with a
//! testbed name longer than the table's width allows, where runs are kept
//! for a bisection, a bisection's job and a regression; and a prune that
//! matched nothing.

use super::Sample;
use crate::views::archive_prune::ArchivePruneContext;
use archive::store::{Citation, KeptRun, Pruned, StoredRun};
use run_record::spec::TestKind;

/// A run of `testbed` with `label`, started at `started_at`, whose id
/// starts with `id_digit` repeated.
fn run(id_digit: char, testbed: &str, label: Option<&str>, started_at: &str) -> StoredRun {
    StoredRun {
        id: id_digit.to_string().repeat(64),
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        describe: None,
        label: label.map(str::to_string),
        config_key: "f750a5d489b2336dd85eeeaf9037674a93b8b02a0f729e8d6794c369709bcc8a".into(),
        testbed: testbed.into(),
        test: TestKind::TcpStream,
        source_tool: "netbisect".into(),
        started_at: started_at.into(),
        n_iterations: 3,
        throughput_bps: 9.41e9,
        transaction_rate: None,
        stored_by: Some("lab".into()),
        stored_from: Some("lab-host".into()),
    }
}

pub fn samples() -> Vec<Sample> {
    let long_testbed = "rack-7-row-c-the-testbed-with-a-name-longer-than-the-table-allows-for-it";
    let dry_run = Pruned {
        removed: vec![
            run('1', "lab-a", Some("base"), "2026-01-05T10:00:00.000000Z"),
            run('2', "lab-a", Some("base"), "2026-02-11T10:00:00.000000Z"),
            run('3', long_testbed, None, "2026-02-12T10:00:00.000000Z"),
            run('4', "lab-a", Some("patched"), "2026-03-01T10:00:00.000000Z"),
        ],
        kept: vec![
            KeptRun {
                run: run('5', "lab-a", Some("base"), "2026-01-06T10:00:00.000000Z"),
                cited_by: Citation::Bisection { session_id: 3 },
            },
            KeptRun {
                run: run('6', "lab-a", Some("base"), "2026-01-07T10:00:00.000000Z"),
                cited_by: Citation::Bisection { session_id: 1 },
            },
            KeptRun {
                run: run('7', long_testbed, None, "2026-01-08T10:00:00.000000Z"),
                cited_by: Citation::Job { job_id: 12 },
            },
            KeptRun {
                run: run('8', long_testbed, None, "2026-01-09T10:00:00.000000Z"),
                cited_by: Citation::Regression { regression_id: 2 },
            },
        ],
        dry_run: true,
    };
    let nothing = Pruned::default();
    vec![
        Sample::new(
            "archive-prune",
            "dry-run",
            &ArchivePruneContext::new(&dry_run),
        ),
        Sample::new(
            "archive-prune",
            "nothing",
            &ArchivePruneContext::new(&nothing),
        ),
    ]
}
