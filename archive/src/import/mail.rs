//! What a mail does to the text around peer tools' outputs: quote
//! markers to take off before the outputs are read, and headers and prose
//! to look past when the error of an input that holds no output points
//! at the table a person made by hand.

/// Where a table of figures starts in `text`, counted from 1, with its
/// line: the first line of the body (after a mail's headers, when it
/// opens with them) whose words are mostly numbers, two or more, or the
/// heading just above it (words and no number). `None` without one.
pub(super) fn table_start(text: &str) -> Option<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let is_header = |line: &str| {
        line.starts_with("From ")
            || line.split_once(": ").is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
    };
    let first = lines.iter().position(|line| !line.trim().is_empty())?;
    let body = if is_header(lines[first]) {
        first
            + lines[first..]
                .iter()
                .position(|line| line.trim().is_empty())?
    } else {
        first
    };
    let numbers = |line: &str| {
        line.split_whitespace()
            .filter(|word| word.trim_end_matches(['%', ',']).parse::<f64>().is_ok())
            .count()
    };
    // Two numbers or more, and at least as many numbers as other words:
    // a row, not a sentence that quotes a figure or two.
    let is_row = |line: &str| {
        let n_numbers = numbers(line);
        n_numbers >= 2 && 2 * n_numbers >= line.split_whitespace().count()
    };
    let row = body + lines[body..].iter().position(|line| is_row(line))?;
    let heading = row.checked_sub(1).filter(|&idx| {
        idx >= body && lines[idx].split_whitespace().count() >= 2 && numbers(lines[idx]) == 0
    });
    let idx = heading.unwrap_or(row);
    Some((idx + 1, lines[idx]))
}

/// `text` with the quote markers of an email (`> `, `>> `, `> > `) taken
/// off the start of each line; each line keeps its place, so line numbers
/// still count in the input, and the columns of a quoted table stay
/// aligned because every line loses the same prefix.
pub(super) fn unquote(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.lines().any(|line| line.starts_with('>')) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut unquoted = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        while let Some(after) = rest.strip_prefix('>') {
            rest = after.strip_prefix(' ').unwrap_or(after);
        }
        unquoted.push_str(rest);
    }
    std::borrow::Cow::Owned(unquoted)
}
