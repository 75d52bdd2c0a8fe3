//! netperf outputs as mails carry them: re-wrapped by a mail client at
//! every width from 72 to 80 columns, quoted before or after, with side
//! names on every line, several in one input. Each imports to exactly the
//! runs of the output as netperf printed it, or is refused naming a line.

use archive::import::{self, ImportOptions};
use run_record::record::Subject;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data")
}

fn data(name: &str) -> String {
    let path = data_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn options() -> ImportOptions {
    ImportOptions {
        subject: Subject {
            commit: Some("0123abcd".to_string()),
            ..Subject::default()
        },
        imported_at: Some(UNIX_EPOCH + Duration::from_secs(1_796_020_000)),
        ..ImportOptions::default()
    }
}

fn ids(text: &str) -> Result<Vec<String>, String> {
    import::parse(text.as_bytes(), &options())
        .map(|imported| {
            imported
                .runs
                .iter()
                .map(|run| run.record().id.clone())
                .collect()
        })
        .map_err(|err| err.to_string())
}

/// How a client treats the spaces where it breaks a line.
#[derive(Clone, Copy, Debug)]
enum Break {
    /// The spaces stay at the end of the first part (`fold -s`).
    KeepSpaces,
    /// The spaces are dropped, as most clients do.
    DropSpaces,
}

/// `text` as a mail client wrapping at `width` columns leaves it: a line
/// longer than `width` is broken at the last space that keeps its first
/// part within `width`, and the rest wrapped again.
fn wrap(text: &str, width: usize, mode: Break) -> String {
    let mut wrapped = String::new();
    for line in text.lines() {
        let mut rest = line;
        while rest.trim_end().len() > width {
            let Some(space) = rest[..=width].rfind(' ').filter(|&at| at > 0) else {
                break;
            };
            let (first, after) = rest.split_at(space);
            let after_spaces = after.trim_start_matches(' ');
            match mode {
                Break::KeepSpaces => {
                    wrapped.push_str(&rest[..space + 1]);
                    rest = &rest[space + 1..];
                }
                Break::DropSpaces => {
                    wrapped.push_str(first.trim_end());
                    rest = after_spaces;
                }
            }
            wrapped.push('\n');
            if rest.is_empty() {
                break;
            }
        }
        wrapped.push_str(rest);
        wrapped.push('\n');
    }
    wrapped
}

fn quote(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.is_empty() {
                ">\n".to_string()
            } else {
                format!("> {line}\n")
            }
        })
        .collect()
}

/// Every real netperf table the tests hold, and the labelled tables of
/// the mails.
fn tables() -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(data_dir().join("peer-outputs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.starts_with("netperf") && !name.contains("omni") {
            names.push(format!("peer-outputs/{name}"));
        }
    }
    names.push("email/udp-stream-side-names.txt".to_string());
    names.push("email/labelled-tcp-rr.txt".to_string());
    names.push("email/quoted-labelled-tcp-stream.txt".to_string());
    names.sort();
    names
}

#[test]
fn every_table_wrapped_at_72_to_80_columns_imports_as_printed() {
    let names = tables();
    assert!(names.len() >= 20, "{names:?}");
    let mut n_broken = 0;
    for name in &names {
        let text = data(name);
        let whole = ids(&text).unwrap_or_else(|err| panic!("{name}: {err}"));
        for width in 72..=80 {
            for mode in [Break::KeepSpaces, Break::DropSpaces] {
                let wrapped = wrap(&text, width, mode);
                if wrapped != text {
                    n_broken += 1;
                }
                for variant in [
                    wrapped.clone(),
                    quote(&wrapped),
                    wrap(&quote(&text), width, mode),
                ] {
                    assert_eq!(
                        ids(&variant).as_ref(),
                        Ok(&whole),
                        "{name} wrapped at {width} ({mode:?}):\n{variant}"
                    );
                }
            }
        }
    }
    // The banners at least are broken at every width.
    assert!(n_broken >= names.len() * 9, "{n_broken}");
}

#[test]
fn the_mails_of_the_corpus_give_the_runs_of_their_outputs() {
    let first = ids(&data("peer-outputs/netperf-TCP_STREAM-l5-cC.txt")).unwrap();
    let second = ids(&data("peer-outputs/netperf-TCP_STREAM-l5-cC-run2.txt")).unwrap();
    let both = [first, second].concat();
    for name in [
        "email/two-outputs-wrapped-72.txt",
        "email/two-outputs-wrapped-72-quoted.txt",
        "email/two-outputs-quoted-wrapped-76.txt",
    ] {
        assert_eq!(ids(&data(name)), Ok(both.clone()), "{name}");
    }
    // Side names on both lines of each UDP_STREAM run, wrapped, quoted.
    let imported = import::parse(
        data("email/udp-stream-cpu-side-names-wrapped-72-quoted.txt").as_bytes(),
        &options(),
    )
    .unwrap();
    let runs: Vec<_> = imported.runs.iter().map(|run| run.record()).collect();
    let labels: Vec<_> = runs.iter().map(|r| r.subject.label.as_deref()).collect();
    assert_eq!(labels, [Some("current"), Some("patched")]);
    let iteration = &runs[1].iterations[0];
    assert_eq!(iteration.throughput_bps, 1394.4e6);
    assert_eq!(iteration.reported_sent_throughput_bps, Some(3283.3e6));
    assert_eq!(iteration.messages_sent, Some(1_394_591));
    assert_eq!(iteration.messages_received, Some(592_278));
    let cpu = iteration.cpu.as_ref().unwrap();
    assert_eq!(
        (cpu.remote_util_pct, cpu.remote_service_demand),
        (Some(100.0), Some(4.99))
    );
}

#[test]
fn a_wrap_that_reads_two_ways_or_a_missing_figure_is_refused_by_line() {
    // The rest of a broken header row that begins as the next row does,
    // with room to have been broken itself: it ends the first row or
    // begins the second, and both give netperf's four rows.
    let output = data("peer-outputs/netperf-TCP_STREAM-l5-cC.txt");
    let wrapped = wrap(&output, 72, Break::DropSpaces);
    assert!(wrapped.contains("\nDemand\n"), "{wrapped}");
    let two_ways = wrapped.replace("\nDemand\n", &format!("\nSocket{}Demand\n", " ".repeat(58)));
    assert_eq!(
        ids(&two_ways).unwrap_err(),
        "line 4: this header line could be joined two ways to the lines a mail \
         client broke; join them by hand"
    );
    // A figure missing from a wrapped line: no joining makes it whole.
    let table = data("email/udp-stream-side-names.txt");
    let wrapped = wrap(&quote(&table), 72, Break::DropSpaces);
    let cut = wrapped.replacen("1659.48", "", 1);
    assert_eq!(
        ids(&cut).unwrap_err(),
        "line 7: 5 figures for the 6 columns of the header (line 3)"
    );
    // Nothing of a refused input is kept: parse gives no run at all.
    assert!(import::parse(cut.as_bytes(), &options()).is_err());
}

/// A TCP_STREAM table with `rows` labelled rows, as a mail comparing
/// two kernels gives it, and a blank line after.
fn labelled_table(rows: usize) -> String {
    let mut text = String::from(
        "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () port 0 AF_INET : demo\n\
         Recv   Send    Send\n\
         Socket Socket  Message  Elapsed\n\
         Size   Size    Size     Time     Throughput\n\
         bytes  bytes   bytes    secs.    10^6bits/sec\n\n",
    );
    for row in 0..rows {
        let side = if row % 2 == 0 { "current" } else { "patched" };
        text.push_str(&format!(
            "{side} 131072  16384  16384    10.00    11967.53\n"
        ));
    }
    text.push('\n');
    text
}

#[test]
fn labelled_rows_past_the_runs_of_an_input_are_refused_at_the_first_one_past() {
    // Six lines above the rows: row N is line N + 6. The rows after the
    // 100001st are not read, and no run is built.
    let err = import::parse(labelled_table(200_000).as_bytes(), &options())
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        "line 100007: run 100001 of one input, more than the 100000 one import stores; \
         import it in parts"
    );
}
