//! [`plain`], the one way text from a record (a label, a testbed, a
//! commit subject, a host name) reaches a terminal or a mail: control
//! characters and non-ASCII letters escaped, so that output is ASCII and
//! each character one column; [`plain_lines`], the same for a message
//! of several lines of netbisect's own (an error, a progress line), each
//! line plain; and [`wrap_text`], plain text in lines of a width.
//!
//! Text from a record is made plain where it is put into a message, so
//! that a line break it holds (a forged `Subject:` line) stays in its
//! line; what prints a message (`exit::error_text`, the progress lines,
//! a warning) makes each of its lines plain again, which changes nothing
//! of plain text and escapes whatever a library's message quoted as it
//! was.

/// `text` as it is printed: every control character escaped (`\n`,
/// `\t`, `\r`, else `\x1b`) and every character beyond ASCII as
/// `\u{e9}`. Printable ASCII is kept, the backslash too, so that plain
/// text of plain text is the same text.
pub fn plain(text: &str) -> std::borrow::Cow<'_, str> {
    if text.bytes().all(|byte| (0x20..0x7f).contains(&byte)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            ' '..='~' => out.push(c),
            c if c.is_ascii() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `text` with each of its lines [`plain`], the line breaks kept: a
/// message netbisect wrote over several lines, printed so that no
/// escape sequence in it reaches the terminal.
pub fn plain_lines(text: &str) -> std::borrow::Cow<'_, str> {
    if text
        .bytes()
        .all(|byte| byte == b'\n' || (0x20..0x7f).contains(&byte))
    {
        return std::borrow::Cow::Borrowed(text);
    }
    let lines: Vec<std::borrow::Cow<'_, str>> = text.split('\n').map(plain).collect();
    std::borrow::Cow::Owned(lines.join("\n"))
}

/// `text`, printable ASCII already ([`plain`]), in lines of at most
/// `width` columns: the lines of the `wrap_words` filter.
pub fn wrap_text(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        // Plain text is ASCII: a byte is a column.
        while line.len() > width {
            let rest = line.split_off(width);
            lines.push(std::mem::replace(&mut line, rest));
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_of_lines_keeps_its_breaks_and_escapes_the_rest() {
        assert_eq!(plain_lines("one\ntwo"), "one\ntwo");
        assert_eq!(
            plain_lines("bed\u{1b}[31m\u{1b}]0;x\u{7}\n  caf\u{e9}\r"),
            "bed\\x1b[31m\\x1b]0;x\\x07\n  caf\\u{e9}\\r"
        );
        // What was made plain where it was put in keeps its line.
        let testbed = plain("lab\nSubject: forged");
        assert_eq!(
            plain_lines(&format!("testbed {testbed}")),
            "testbed lab\\nSubject: forged"
        );
    }
}
