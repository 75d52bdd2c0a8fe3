//! Every command line netbisect prints is one a shell gives back exactly
//! and that runs nothing else: run-record's one renderer against hostile
//! values, and the lines `compare --email` and the published site print
//! of runs with hostile labels, testbeds and commands, each pasted into
//! `sh` (and bash, where installed) with `netbisect` a shell function
//! that records its arguments. An experiment id not of its form is
//! refused as a record is read.

use crate::compare::{import, netbisect, stderr_of_failure, stdout_of};
use run_record::env::VmEnv;
use run_record::record::{ExperimentTag, RunRecord};
use run_record::shell::CommandLine;
use run_record::spec::TestKind;
use std::path::Path;
use test_fixtures::record::{RecordBuilder, json_lines};

/// Values an attacker would put where a command line prints them.
const HOSTILE: &[&str] = &[
    "e1;touch pwn;#",
    "$(touch pwn)",
    "`touch pwn`",
    "'",
    "\"",
    "a'b\"c\\d",
    "it's; touch pwn",
    "a\nb",
    "line\ntouch pwn\n#",
    "\t",
    "\r",
    "\u{1b}[31mred\u{1b}]0;title\u{7}",
    "a\u{7f}b",
    "caf\u{e9}",
    "\u{65e5}\u{672c}",
    "\u{a0}",
    "",
    " ",
    "-x",
    "--archive=/tmp/x",
    "=cmd",
    "~root",
    "!!",
    "!$",
    "^x^y",
    "%s%n",
    "$HOME",
    "*",
    "?",
    "[a]",
    "{a,b}",
    "a b  c",
    "#",
    "&",
    "|",
    ">pwn",
    "\\",
];

/// The shells a line is pasted into.
fn shells() -> Vec<&'static str> {
    ["sh", "bash", "dash", "busybox"]
        .into_iter()
        .filter(|shell| {
            std::process::Command::new("sh")
                .args(["-c", &format!("command -v {shell}")])
                .output()
                .is_ok_and(|output| output.status.success())
        })
        .collect()
}

/// Runs `script` in `shell`, in `dir`, with `netbisect` a function that
/// writes a mark and then each of its arguments, NUL-terminated; returns
/// the arguments of each call.
pub fn recorded_calls(shell: &str, dir: &Path, script: &str) -> Vec<Vec<Vec<u8>>> {
    let recorder = "netbisect() { printf 'CALL\\000'; for arg in \"$@\"; do printf '%s' \"$arg\"; \
                    printf '\\000'; done; }\n";
    let mut command = std::process::Command::new(shell);
    if shell == "busybox" {
        command.arg("sh");
    }
    let output = command
        .arg("-c")
        .arg(format!("{recorder}{script}"))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{shell}: {}\n{script}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut calls: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut fields: Vec<&[u8]> = output.stdout.split(|byte| *byte == 0).collect();
    // After the last NUL, nothing.
    assert_eq!(fields.pop(), Some(&b""[..]), "{shell}: {script}");
    for field in fields {
        if field == b"CALL" {
            calls.push(Vec::new());
        } else {
            calls.last_mut().expect("a call first").push(field.to_vec());
        }
    }
    calls
}

/// Nothing but the recorder ran: no file was made in `dir`.
pub fn nothing_ran(dir: &Path, script: &str) {
    let made: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert!(made.is_empty(), "{made:?} made by:\n{script}");
}

#[test]
fn hostile_values_come_back_exactly_and_run_nothing() {
    let mut command = CommandLine::new(&["netbisect", "ab"]);
    for value in HOSTILE {
        command
            .option("--label-a", *value)
            .option("--vm-append", *value)
            .word(*value);
    }
    let expected: Vec<Vec<u8>> = command
        .words()
        .into_iter()
        .skip(1)
        .map(String::into_bytes)
        .collect();
    let line = command.render();
    assert!(
        line.bytes().all(|byte| (b' '..=b'~').contains(&byte)),
        "one line of printable ASCII: {line:?}"
    );
    // As printed on one line, and wrapped as `--email` wraps it.
    let wrapped = command.lines(40, "    ").join("\n");
    for shell in shells() {
        for script in [&line, &wrapped] {
            let dir = tempfile::tempdir().unwrap();
            let calls = recorded_calls(shell, dir.path(), script);
            assert_eq!(calls, std::slice::from_ref(&expected), "{shell}: {script}");
            nothing_ran(dir.path(), script);
        }
    }
}

#[test]
fn what_no_one_line_command_can_give_is_dropped_and_runs_nothing() {
    // A NUL byte no argument can hold; line breaks at the end of a value
    // a command substitution drops.
    for (value, given) in [("a\0b", "ab"), ("a\n\n", "a"), ("\n", "")] {
        let mut command = CommandLine::new(&["netbisect"]);
        command.word(value);
        let line = command.render();
        for shell in shells() {
            let dir = tempfile::tempdir().unwrap();
            let calls = recorded_calls(shell, dir.path(), &line);
            assert_eq!(calls, [vec![given.as_bytes().to_vec()]], "{shell}: {line}");
            nothing_ran(dir.path(), &line);
        }
    }
}

/// The lines of `text` that are commands, continuation lines joined: a
/// line that starts with `netbisect` (after its indent), and the lines
/// its ` \` continues.
pub fn printed_commands(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with("netbisect ") {
            continue;
        }
        let mut command = trimmed.to_string();
        while command.ends_with(" \\") {
            command.truncate(command.len() - 2);
            command.push(' ');
            command.push_str(lines.next().unwrap_or_default().trim_start());
        }
        commands.push(command);
    }
    commands
}

/// Two runs of an experiment whose every printed value is hostile.
fn hostile_runs() -> Vec<RunRecord> {
    let labels = ["e1;touch pwn;#", "$(touch pwn)\n`touch pwn`"];
    let testbed = "lab'; touch pwn; echo '";
    let command: Vec<String> = [
        "ab".to_string(),
        "--kernel-a=/tmp/a b; touch pwn".to_string(),
        "--kernel-b=$(touch pwn)".to_string(),
        format!("--label-a={}", labels[0]),
        format!("--label-b={}", labels[1]),
        "-n=1".to_string(),
        "--vm-append=x\ntouch pwn".to_string(),
        "-t=TCP_STREAM".to_string(),
        "-l=10".to_string(),
        format!("--testbed={testbed}"),
    ]
    .to_vec();
    let mut records = Vec::new();
    for (idx, label) in labels.iter().enumerate() {
        for run_idx in 0..3 {
            let mut record = RecordBuilder::new(TestKind::TcpStream)
                .label(label)
                .testbed(testbed)
                .started_at(&format!("2026-05-01T10:0{idx}:0{run_idx}Z"))
                .samples(&[9.4e9, 9.41e9, 9.39e9])
                .build_unsealed();
            record.env.vm = Some(VmEnv {
                runner: "qemu".into(),
                accelerator: "tcg".into(),
                vcpus: 2,
                memory_mib: 1024,
                network: "loopback".into(),
                ..VmEnv::default()
            });
            record.experiment = Some(ExperimentTag {
                id: "0123456789abcdef".into(),
                round: 1,
            });
            record.command = Some(command.clone());
            record.seal().unwrap();
            records.push(record);
        }
        // And a run of the same label outside the experiment, which a
        // `bench` line runs again.
        let mut outside = RecordBuilder::new(TestKind::TcpStream)
            .label(label)
            .testbed(testbed)
            .started_at(&format!("2026-05-02T10:0{idx}:00Z"))
            .samples(&[9.4e9])
            .build();
        outside.seal().unwrap();
        records.push(outside);
    }
    records
}

/// Every command of `text` pasted into each shell: nothing else runs,
/// and each gives `netbisect` its words.
fn paste_each(text: &str) -> Vec<Vec<Vec<u8>>> {
    let commands = printed_commands(text);
    assert!(!commands.is_empty(), "no command in:\n{text}");
    let mut calls = Vec::new();
    for command in &commands {
        for shell in shells() {
            let dir = tempfile::tempdir().unwrap();
            let recorded = recorded_calls(shell, dir.path(), command);
            assert_eq!(recorded.len(), 1, "{shell}: {command}");
            nothing_ran(dir.path(), command);
            calls.extend(recorded);
        }
    }
    calls
}

#[test]
fn printed_lines_of_hostile_runs_run_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    import(&archive, &hostile_runs());
    let email = stdout_of(netbisect(&archive).args([
        "compare",
        "label:e1;touch pwn;#",
        "label:$(touch pwn)\n`touch pwn`",
        "--email",
    ]));
    crate::check_mailing_list_rules(&email);
    let calls = paste_each(&email);
    // The experiment's line gives its labels back as they were.
    assert!(
        calls
            .iter()
            .any(|call| call.contains(&b"$(touch pwn)\n`touch pwn`".to_vec())
                && call.first() == Some(&b"ab".to_vec())),
        "{email}"
    );
    // The bench line names the testbed as it is.
    assert!(
        calls
            .iter()
            .any(|call| call.first() == Some(&b"bench".to_vec())
                && call.contains(&b"lab'; touch pwn; echo '".to_vec())),
        "{email}"
    );

    // The published pages: every command in them, unescaped, pasted.
    let site = dir.path().join("site");
    stdout_of(netbisect(&archive).arg("publish").arg(&site));
    let commands = site_commands(&site);
    assert!(!commands.is_empty(), "the site prints no command");
    // The pages of the charts' points give each run's own line, its
    // label among its words.
    assert!(
        commands
            .iter()
            .any(|command| command.starts_with("netbisect bench") && command.contains("--label")),
        "{commands:?}"
    );
    for command in commands {
        paste_each(&command);
    }
}

/// Every command the pages of the site in `site` print, as a browser
/// shows it (unescaped): the text of each `<code>` element (of any
/// class) that starts with `netbisect `.
pub fn site_commands(site: &Path) -> Vec<String> {
    let mut commands = Vec::new();
    for entry in std::fs::read_dir(site).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|extension| extension != "html") {
            continue;
        }
        let html = std::fs::read_to_string(&path).unwrap();
        for code in html.split("<code").skip(1) {
            let Some((_, code)) = code.split_once('>') else {
                continue;
            };
            let code = html_unescaped(code.split("</code>").next().unwrap());
            if code.starts_with("netbisect ") {
                commands.push(code);
            }
        }
    }
    commands
}

/// HTML text as a browser shows it: the five characters and numeric
/// entities.
fn html_unescaped(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let end = rest[at..].find(';').map(|end| at + end).unwrap();
        let entity = &rest[at + 1..end];
        out.push(match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            _ => {
                let number = entity.trim_start_matches('#');
                let code = match number.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).unwrap(),
                    None => number.parse().unwrap(),
                };
                char::from_u32(code).unwrap()
            }
        });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn an_experiment_id_not_of_its_form_is_refused_on_import() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let mut record = RecordBuilder::new(TestKind::TcpStream).build_unsealed();
    record.experiment = Some(ExperimentTag {
        id: "e1;touch pwn;#".into(),
        round: 1,
    });
    record.seal().unwrap();
    let file = dir.path().join("hostile.jsonl");
    std::fs::write(&file, json_lines(&[record])).unwrap();
    let stderr = stderr_of_failure(
        netbisect(&archive).args(["archive", "import"]).arg(&file),
        2,
    );
    assert!(
        stderr.contains("experiment.id \"e1;touch pwn;#\" is not an experiment id"),
        "{stderr}"
    );
}
