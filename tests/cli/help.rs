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
fn help_fits_80_columns_in_ascii() {
    let help = stdout_of(&["--help"]);
    for line in help.lines() {
        assert!(
            line.len() <= 80 && line.is_ascii() && !line.contains('\t'),
            "{line:?}"
        );
    }
}
