//! `netbisect completions` and `netbisect man`.

fn stdout_of(args: &[&str]) -> String {
    let output = crate::netbisect().args(args).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn bash_completions_name_the_commands() {
    let script = stdout_of(&["completions", "bash"]);
    assert!(script.contains("_netbisect()"), "{script}");
    assert!(script.contains("record"));
}

#[test]
fn manual_page_is_roff() {
    let page = stdout_of(&["man"]);
    assert!(
        page.starts_with(".ie \\n(.g .ds Aq"),
        "{}",
        &page[..page.len().min(200)]
    );
    assert!(page.contains(".TH netbisect 1"));
    assert!(page.contains("Exit codes:"));
}

#[test]
fn the_top_page_names_no_page_that_does_not_exist() {
    let page = stdout_of(&["man"]);
    // Only the note's pattern, NAME, looks like a page of a command.
    for (at, _) in page.match_indices("(1)") {
        let start = page[..at].rfind(char::is_whitespace).map_or(0, |i| i + 1);
        assert_eq!(&page[start..at], "netbisect\\-NAME", "{page}");
    }
    assert!(page.contains("\nnetbisect bench\n"), "{page}");
    assert!(!page.contains("netbisect\\-help"), "{page}");
    assert!(page.contains("writes a page for each command"), "{page}");
}

#[test]
fn man_dir_writes_a_page_for_every_command_and_every_page_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let output = crate::netbisect()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "netbisect.1",
        "netbisect-bench.1",
        "netbisect-bisect-start.1",
        "netbisect-archive-import.1",
        "netbisect-plan.1",
    ] {
        assert!(names.iter().any(|name| name == expected), "{names:?}");
    }
    // The bench page has bench's flags.
    let bench = std::fs::read_to_string(dir.path().join("netbisect-bench.1")).unwrap();
    assert!(bench.contains("\\-\\-no\\-archive"), "{bench}");
    // Every page named in a page was written.
    for name in &names {
        let page = std::fs::read_to_string(dir.path().join(name)).unwrap();
        for (at, _) in page.match_indices("(1)") {
            let start = page[..at]
                .rfind(|c: char| c.is_whitespace())
                .map_or(0, |i| i + 1);
            let named = page[start..at].replace("\\-", "-");
            if named.starts_with("netbisect") {
                assert!(
                    names.contains(&format!("{named}.1")),
                    "{name} names {named}(1)"
                );
            }
        }
    }
}

#[test]
fn help_fits_80_columns_in_ascii() {
    let help = stdout_of(&["--help"]);
    for line in help.lines() {
        assert!(
            line.len() <= 80 && line.is_ascii() && !line.contains('\t'),
            "{line:?}"
        );
    }
}
