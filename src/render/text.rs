//! [`plain`], the one way text from a record (a label, a testbed, a
//! commit subject, a host name) reaches a terminal or a mail: control
//! characters and non-ASCII letters escaped, so that output is ASCII and
//! each character one column; and [`wrap_text`], plain text in lines of
//! a width.

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
