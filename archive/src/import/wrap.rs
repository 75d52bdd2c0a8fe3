//! Lines re-wrapped by a mail client, as the importers see them.
//!
//! A mail client breaks a line longer than its width (72 to 80 columns)
//! at the last space before that column and puts the rest on the next
//! line, sometimes quoted again (`> `). Whether two lines could be one
//! line broken so is all this module says; which breaks to undo is the
//! business of the layout that knows what a whole line holds (netperf's
//! banner, header rows and result lines), and a break is undone only
//! where that layout leaves one reading.

/// The narrowest width mail clients wrap at, columns.
pub(crate) const MIN_WRAP_COLUMNS: usize = 72;
/// The widest width mail clients wrap at, columns.
pub(crate) const MAX_WRAP_COLUMNS: usize = 80;
/// Columns of quote markers (`> > `) a line may have lost when it was
/// unquoted, or gained after it was broken.
const QUOTE_COLUMNS: usize = 8;

/// True when `first` and `rest`, two lines of unquoted text, could be one
/// line that a mail client broke at a space: `first` fits the widest
/// width, and the first word of `rest` would not have fitted after it at
/// the narrowest (allowing for quote markers added or taken off).
pub(crate) fn could_be_broken(first: &str, rest: &str) -> bool {
    let first_len = first.trim_end().len();
    let rest_trimmed = rest.trim_start();
    let Some(word) = rest_trimmed.split_whitespace().next() else {
        return false;
    };
    first_len > 0
        && first_len <= MAX_WRAP_COLUMNS
        && first_len + 1 + word.len() + QUOTE_COLUMNS > MIN_WRAP_COLUMNS
}

/// `first` and `rest` joined back into one line: as they are when the
/// break kept the spaces around it (`fold -s` keeps them), with one space
/// where the client dropped them.
pub(crate) fn join(first: &str, rest: &str) -> String {
    let kept_space = first.ends_with(char::is_whitespace) || rest.starts_with(char::is_whitespace);
    let mut line = String::with_capacity(first.len() + rest.len() + 1);
    line.push_str(first);
    if !kept_space {
        line.push(' ');
    }
    line.push_str(rest);
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_break_needs_a_long_first_part_and_a_word_that_did_not_fit() {
        let banner = "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to";
        assert!(could_be_broken(
            banner,
            "127.0.0.1 () port 0 AF_INET : demo"
        ));
        // A short line was not broken: the next word would have fitted.
        assert!(!could_be_broken("16384  131072", "16384  131072"));
        // A line wider than any client's width was not broken there.
        assert!(!could_be_broken(&"x".repeat(81), "y"));
        assert!(!could_be_broken(banner, "   "));
        assert_eq!(join("a b", "c"), "a b c");
        assert_eq!(join("a b ", "c"), "a b c");
        assert_eq!(join("a    ", "  c"), "a      c");
    }
}
