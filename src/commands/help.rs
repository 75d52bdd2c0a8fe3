//! `netbisect completions SHELL` and `netbisect man`.
//!
//! `man` prints the top page on stdout, where the commands are listed by
//! name (the pages of the commands exist only once written), or with
//! `--dir DIR` writes the top page and one page per command and
//! subcommand, as clap_mangen names them (`netbisect-bench.1`,
//! `netbisect-archive-import.1`), each listing the pages of its
//! subcommands, all written alongside.

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::exit::{self, Code, Context};
use crate::global_options::GlobalOptions;
use crate::output;
use clap::CommandFactory;

pub fn completions(args: &CompletionsArgs) -> exit::Result<Code> {
    let mut command = Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(args.shell, &mut command, "netbisect", &mut buffer);
    output::write_stdout(&buffer)?;
    Ok(Code::Ok)
}

pub fn man(global: &GlobalOptions, args: &ManArgs) -> exit::Result<Code> {
    // `help` is clap's, not a command with a page of its own.
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    let Some(dir) = &args.dir else {
        let mut buffer = Vec::new();
        clap_mangen::Man::new(command.clone())
            .render(&mut buffer)
            .context("failed to render the manual page")?;
        let page = String::from_utf8_lossy(&buffer);
        output::write_stdout(commands_by_name(&page, &command).as_bytes())?;
        return Ok(Code::Ok);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let n_pages = write_pages(&command, dir)?;
    if !global.quiet() {
        eprintln!(
            "netbisect: wrote {n_pages} manual pages to {} (netbisect.1 and one per command)",
            dir.display()
        );
    }
    Ok(Code::Ok)
}

/// Writes the page of `command` and of every subcommand below it to
/// `dir`; returns how many.
fn write_pages(command: &clap::Command, dir: &std::path::Path) -> exit::Result<usize> {
    let mut n_pages = 0;
    for subcommand in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        n_pages += write_pages(subcommand, dir)?;
    }
    let page = clap_mangen::Man::new(command.clone());
    let path = dir.join(page.get_filename());
    page.generate_to(dir)
        .with_context(|| format!("failed to write {}", path.display()))?;
    Ok(n_pages + 1)
}

/// The top page with its commands listed as `netbisect NAME` instead of
/// the `netbisect-NAME(1)` pages that exist only once `--dir` writes
/// them, and a line that says so.
fn commands_by_name(page: &str, command: &clap::Command) -> String {
    let mut page = page.to_string();
    for subcommand in command.get_subcommands() {
        let name = subcommand.get_name();
        page = page.replace(
            &format!("\nnetbisect\\-{name}(1)\n"),
            &format!("\nnetbisect {name}\n"),
        );
    }
    match page.find("\n.SH EXTRA\n") {
        Some(at) => {
            let note = "\n.PP\n\\fBnetbisect man \\-\\-dir\\fR \\fIDIR\\fR writes a page for \
                        each command, netbisect\\-NAME(1).";
            page.insert_str(at, note);
            page
        }
        None => page,
    }
}
