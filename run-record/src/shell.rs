//! Command lines as people paste them into a POSIX shell: every line
//! netbisect prints for a reader to run again (a reproduce line, the
//! command of a configuration, an experiment, a bisection) is a
//! [`CommandLine`], rendered here and only here, so that every value in
//! it (a label, a kernel path, an experiment id, a sweep) comes back to
//! the program exactly as it was and nothing else runs.
//!
//! The rules are POSIX's (XCU 2.2, quoting), kept to what reads safely
//! when pasted into an interactive shell and when mailed:
//!
//! - A word of letters, digits and `_ - . , / : + =` is written as it is
//!   (unless it starts with `=`, which zsh would expand, or is a value
//!   that starts with `-`, which a reader would take for a flag).
//! - Any other word of printable ASCII goes in single quotes, where the
//!   shell reads every character as itself (`!` and `$` too), a single
//!   quote of its own written `'\''`.
//! - A word with any other byte (a line break, a control character, DEL,
//!   anything beyond ASCII) is written `"$(printf 'FORMAT')"`, the bytes
//!   beyond letters, digits and a few punctuation marks as printf's
//!   three-digit octal escapes: the printed line stays one line of
//!   printable ASCII, which a terminal shows as it is and a mail carries
//!   unchanged, and the shell's own printf gives the bytes back. Two
//!   values cannot be given this way, or by any one-line command: a NUL
//!   byte (no argument of a program can hold one; the shell drops it)
//!   and line breaks at the very end of a value (a command substitution
//!   drops them). Neither runs anything.
//!
//! `shlex`'s quoting was not used: it writes control characters and line
//! breaks into single quotes as they are, which breaks a printed line
//! and, pasted into an interactive shell, acts as keystrokes.
//!
//! A long line is broken between arguments, never between a flag and its
//! value: a [`CommandLine`] keeps its arguments as units (`-n 5`,
//! `--kernel-a base/bzImage`, `--nodelay`), and [`wrap_units`] lays them
//! out with a backslash at the end of every line but the last.

use std::borrow::Cow;

/// A command line: the program's words, then its arguments, each a unit
/// that stays on one line (a flag with its value, or a lone word).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandLine {
    /// Each unit's words, as the program receives them.
    units: Vec<Vec<String>>,
}

impl CommandLine {
    /// A command line of `program` (`["netbisect", "ab"]`), kept on one
    /// line, and no argument yet.
    pub fn new(program: &[&str]) -> CommandLine {
        CommandLine {
            units: vec![program.iter().map(|word| word.to_string()).collect()],
        }
    }

    /// Adds a lone word: a flag without a value (`--nodelay`), or a
    /// positional argument.
    pub fn word(&mut self, word: impl Into<String>) -> &mut CommandLine {
        self.units.push(vec![word.into()]);
        self
    }

    /// Adds a flag and its value, kept on one line.
    pub fn option(&mut self, flag: &str, value: impl Into<String>) -> &mut CommandLine {
        self.units.push(vec![flag.to_string(), value.into()]);
        self
    }

    /// Adds every unit of `other` but its program's.
    pub fn extend(&mut self, other: &CommandLine) -> &mut CommandLine {
        self.units.extend(other.units.iter().skip(1).cloned());
        self
    }

    /// Every word, the program's first, as the program receives them.
    pub fn words(&self) -> Vec<String> {
        self.units.iter().flatten().cloned().collect()
    }

    /// The words after the program's.
    pub fn arguments(&self) -> Vec<String> {
        self.units.iter().skip(1).flatten().cloned().collect()
    }

    /// Each unit as the shell reads it, quoted.
    pub fn rendered_units(&self) -> Vec<String> {
        self.units
            .iter()
            .map(|unit| {
                unit.iter()
                    .enumerate()
                    .map(|(word_idx, word)| {
                        // A value that starts with `-` is quoted, so that
                        // neither a reader nor `wrap_words` takes it for a
                        // flag.
                        if word_idx > 0 && word.starts_with('-') {
                            quote_always(word)
                        } else {
                            quote(word).into_owned()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    /// The whole command on one line.
    pub fn render(&self) -> String {
        self.rendered_units().join(" ")
    }

    /// The command in lines of at most `width` columns where its units
    /// allow (see [`wrap_units`]).
    pub fn lines(&self, width: usize, indent: &str) -> Vec<String> {
        wrap_units(&self.rendered_units(), width, indent)
    }
}

/// `word` as one shell word that gives it back (see the module's rules).
pub fn quote(word: &str) -> Cow<'_, str> {
    if !word.is_empty() && !word.starts_with('=') && word.bytes().all(is_plain) {
        return Cow::Borrowed(word);
    }
    Cow::Owned(quote_always(word))
}

/// `word` quoted even when it could be written as it is.
fn quote_always(word: &str) -> String {
    if word.bytes().all(|byte| (b' '..=b'~').contains(&byte)) {
        return format!("'{}'", word.replace('\'', "'\\''"));
    }
    let mut format = String::with_capacity(word.len() * 2);
    for byte in word.bytes() {
        // No `-`: a format that starts with one is an option to some
        // shells' printf.
        if byte.is_ascii_alphanumeric() || matches!(byte, b' ' | b'_' | b'.' | b',' | b'/') {
            format.push(byte as char);
        } else {
            format.push_str(&format!("\\{byte:03o}"));
        }
    }
    format!("\"$(printf '{format}')\"")
}

/// A byte a word may hold outside quotes: nothing the shell reads.
fn is_plain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
        || matches!(byte, b'_' | b'-' | b'.' | b',' | b'/' | b':' | b'+' | b'=')
}

/// Lays `units` (each already quoted, and never cut) out as lines of at
/// most `width` columns where they fit: joined by spaces, a line broken
/// before the unit that would pass the width (counting the ` \` that
/// continues it), every line but the first indented by `indent`. A unit
/// wider than a line has one of its own. Pasted, the lines are the
/// command again: the shell removes each backslash with the line break
/// after it.
pub fn wrap_units(units: &[String], width: usize, indent: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for unit in units.iter().filter(|unit| !unit.is_empty()) {
        let line_indent = if lines.is_empty() { 0 } else { indent.len() };
        if !line.is_empty() && line_indent + line.len() + 1 + unit.len() + 2 > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(unit);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    let n_lines = lines.len();
    lines
        .into_iter()
        .enumerate()
        .map(|(line_idx, line)| {
            let indent = if line_idx == 0 { "" } else { indent };
            let more = if line_idx + 1 < n_lines { " \\" } else { "" };
            format!("{indent}{line}{more}")
        })
        .collect()
}

/// The units of a rendered command line, for a text that has lost them
/// (a template's string): its shell words, a word in quotes kept whole
/// with its spaces, and a flag (a word that starts with `-`) kept with
/// the word after it when that one is not a flag too, which is its value
/// where the line was rendered by [`CommandLine`] (which quotes a value
/// that starts with `-`). A flag without a value that precedes a
/// positional word is kept with it too, which costs only room.
pub fn units_of(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    // The quote that is open at the end of the last word, if any.
    let mut open: Option<char> = None;
    for part in text.split(' ') {
        match words.last_mut() {
            Some(last) if open.is_some() => {
                last.push(' ');
                last.push_str(part);
            }
            _ => words.push(part.to_string()),
        }
        let mut escaped = false;
        for c in part.chars() {
            match (open, c) {
                (Some('"') | None, '\\') if !escaped => {
                    escaped = true;
                    continue;
                }
                (None, '\'' | '"') if !escaped => open = Some(c),
                (Some(quote), c) if c == quote && !escaped => open = None,
                _ => {}
            }
            escaped = false;
        }
    }
    let mut units: Vec<String> = Vec::new();
    let mut words = words.into_iter().filter(|word| !word.is_empty()).peekable();
    while let Some(word) = words.next() {
        let takes_value = word.starts_with('-')
            && word.len() > 1
            && words.peek().is_some_and(|next| !next.starts_with('-'));
        match takes_value.then(|| words.next()).flatten() {
            Some(value) => units.push(format!("{word} {value}")),
            None => units.push(word),
        }
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_as_they_are_and_others_are_quoted() {
        assert_eq!(quote("TCP_RR"), "TCP_RR");
        assert_eq!(quote("m=1024,16384"), "m=1024,16384");
        assert_eq!(quote("base/bzImage"), "base/bzImage");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("=cmd"), "'=cmd'");
        assert_eq!(quote("~/x"), "'~/x'");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("e1;touch pwn;#"), "'e1;touch pwn;#'");
        assert_eq!(quote("$(id)"), "'$(id)'");
        assert_eq!(quote("a\nb"), "\"$(printf 'a\\012b')\"");
        assert_eq!(quote("caf\u{e9}"), "\"$(printf 'caf\\303\\251')\"");
        assert_eq!(quote("100%\t!"), "\"$(printf '100\\045\\011\\041')\"");
    }

    #[test]
    fn every_rendering_is_one_line_of_printable_ascii() {
        for byte in 0u8..=255 {
            let word = String::from_utf8_lossy(&[b'a', byte, b'b']).into_owned();
            let quoted = quote(&word);
            assert!(
                quoted.bytes().all(|b| (b' '..=b'~').contains(&b)),
                "{word:?}: {quoted}"
            );
        }
    }

    #[test]
    fn a_value_that_looks_like_a_flag_is_quoted() {
        let mut command = CommandLine::new(&["netbisect", "bench"]);
        command
            .option("--vm-append", "-x")
            .word("-c")
            .option("-m", "64K");
        assert_eq!(
            command.render(),
            "netbisect bench --vm-append '-x' -c -m 64K"
        );
        assert_eq!(
            command.arguments(),
            ["--vm-append", "-x", "-c", "-m", "64K"]
        );
    }

    #[test]
    fn lines_break_between_units_only() {
        let mut command = CommandLine::new(&["netbisect", "ab"]);
        command
            .option("--kernel-a", "vmlinuz-6.1.0-55-amd64")
            .option("-n", "1")
            .option("--vm-append", "a b c")
            .option("-t", "TCP_RR");
        let lines = command.lines(30, "    ");
        assert_eq!(
            lines,
            [
                "netbisect ab \\",
                "    --kernel-a vmlinuz-6.1.0-55-amd64 \\",
                "    -n 1 --vm-append 'a b c' \\",
                "    -t TCP_RR",
            ]
        );
        // A flag is never the last word of a line: its value follows it.
        for line in &lines {
            let words: Vec<&str> = line.trim_end_matches(" \\").split(' ').collect();
            assert!(!words.last().unwrap().starts_with('-') || line.ends_with("TCP_RR"));
        }
        assert_eq!(
            units_of(&command.render()),
            [
                "netbisect",
                "ab",
                "--kernel-a vmlinuz-6.1.0-55-amd64",
                "-n 1",
                "--vm-append 'a b c'",
                "-t TCP_RR"
            ]
        );
    }
}
