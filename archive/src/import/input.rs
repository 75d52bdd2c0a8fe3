//! Reading an input within its ceilings, as a stream: a line is refused
//! as soon as it passes [`MAX_LINE_BYTES`], a text as soon as it passes
//! [`MAX_TEXT_BYTES`] or [`MAX_TEXT_LINES`], a JSON document as soon as
//! it passes [`MAX_DOCUMENT_BYTES`], so that no input holds more memory
//! than its ceiling whatever its length (`yes | netbisect archive import
//! -` is refused after its first MiBs).
//!
//! [`Start`] reads the blank lines before the first character, which
//! tells the format: a `{` starts JSON documents, read one at a time by
//! [`Documents`]; anything else is text, read whole by [`read_text`].

use super::{ImportError, MAX_DOCUMENT_BYTES, MAX_LINE_BYTES, MAX_TEXT_BYTES, MAX_TEXT_LINES};
use std::io::{BufRead, ErrorKind};

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The reader failed.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// The input is past a ceiling, or is not what it claims.
    #[error(transparent)]
    Input(#[from] ImportError),
}

/// The bytes `reader` has ready, read again after an interruption; empty
/// at the end of the input.
fn ready(reader: &mut dyn BufRead) -> Result<&[u8], ReadError> {
    // Filled once past any interruption, then asked again for what it
    // holds (which reads nothing more): a borrow returned from inside
    // the loop would outlive the loop's next turn.
    while let Err(err) = reader.fill_buf() {
        if err.kind() != ErrorKind::Interrupted {
            return Err(err.into());
        }
    }
    Ok(reader.fill_buf()?)
}

/// Where reading stands: the line being read and its length so far.
#[derive(Clone, Copy, Debug)]
struct Lines {
    /// The line being read, from 1.
    line: usize,
    /// Bytes of it read so far.
    line_bytes: usize,
}

impl Lines {
    fn new() -> Lines {
        Lines {
            line: 1,
            line_bytes: 0,
        }
    }

    /// Counts `bytes`, refusing a line longer than [`MAX_LINE_BYTES`].
    fn count(&mut self, bytes: &[u8]) -> Result<(), ImportError> {
        for &byte in bytes {
            if byte == b'\n' {
                self.line += 1;
                self.line_bytes = 0;
            } else {
                self.line_bytes += 1;
            }
        }
        if self.line_bytes > MAX_LINE_BYTES {
            return Err(ImportError::LineTooLong { line: self.line });
        }
        Ok(())
    }
}

/// The start of an input: its leading blank lines, read, and where its
/// first character is.
pub(crate) struct Start {
    /// The blank lines and spaces before the first character.
    pub(crate) blank: Vec<u8>,
    /// The first character, if the input has one.
    pub(crate) first: Option<u8>,
    lines: Lines,
}

impl Start {
    /// Reads `reader` up to its first character that is not blank,
    /// leaving that character unread.
    pub(crate) fn read(reader: &mut dyn BufRead) -> Result<Start, ReadError> {
        let mut blank = Vec::new();
        let mut lines = Lines::new();
        loop {
            let bytes = ready(reader)?;
            if bytes.is_empty() {
                return Ok(Start {
                    blank,
                    first: None,
                    lines,
                });
            }
            let n_blank = bytes
                .iter()
                .position(|byte| !byte.is_ascii_whitespace())
                .unwrap_or(bytes.len());
            let first = bytes.get(n_blank).copied();
            let taken = &bytes[..n_blank];
            lines.count(taken)?;
            blank.extend_from_slice(taken);
            reader.consume(n_blank);
            check_text_ceilings(blank.len(), lines.line)?;
            if first.is_some() {
                return Ok(Start {
                    blank,
                    first,
                    lines,
                });
            }
        }
    }
}

/// Refuses a text past [`MAX_TEXT_BYTES`] or [`MAX_TEXT_LINES`], given
/// its bytes so far and the line it has reached; the error names the
/// first line past the ceiling.
fn check_text_ceilings(n_bytes: usize, line: usize) -> Result<(), ImportError> {
    if line > MAX_TEXT_LINES {
        return Err(ImportError::TooManyLines {
            line: MAX_TEXT_LINES + 1,
        });
    }
    if n_bytes > MAX_TEXT_BYTES {
        return Err(ImportError::TextTooLarge { line });
    }
    Ok(())
}

/// The rest of an input as text, after `start` (and `read`, bytes of it
/// read already), refused as soon as it passes a ceiling of a text, and
/// when it is not UTF-8.
pub(crate) fn read_text(
    reader: &mut dyn BufRead,
    start: Start,
    read: &[u8],
) -> Result<String, ReadError> {
    let Start {
        blank: mut text,
        mut lines,
        ..
    } = start;
    let mut take = |text: &mut Vec<u8>, bytes: &[u8]| {
        // Up to the first byte past the ceiling of bytes, so that the
        // refusal names the line where the text passes it.
        let room = (MAX_TEXT_BYTES + 1).saturating_sub(text.len());
        let bytes = &bytes[..bytes.len().min(room)];
        lines.count(bytes)?;
        text.extend_from_slice(bytes);
        // A line past the last counts once it has a character, as the
        // lines of a text do.
        let line_reached = if lines.line_bytes > 0 {
            lines.line
        } else {
            lines.line - 1
        };
        check_text_ceilings(text.len(), line_reached)
    };
    take(&mut text, read)?;
    loop {
        let bytes = ready(reader)?;
        if bytes.is_empty() {
            break;
        }
        let n_bytes = bytes.len();
        take(&mut text, bytes)?;
        reader.consume(n_bytes);
    }
    String::from_utf8(text).map_err(|err| {
        let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
        let line = 1 + valid.iter().filter(|&&byte| byte == b'\n').count();
        ImportError::parse(line, "not UTF-8 text").into()
    })
}

/// One JSON document of an input: the line it starts on and its bytes.
#[derive(Debug)]
pub(crate) struct Document {
    /// The line of its first character.
    pub(crate) line: usize,
    /// Its text, from its first character to its last.
    pub(crate) bytes: Vec<u8>,
}

/// Where the scan of a document stands.
#[derive(Clone, Copy, Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Scan {
    /// Takes `byte`; true when it ends the document.
    fn take(&mut self, byte: u8) -> bool {
        if self.in_string {
            match (self.escaped, byte) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                _ => {}
            }
            return false;
        }
        match byte {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }
}

/// The JSON documents of an input, one at a time, each refused as soon as
/// it passes [`MAX_DOCUMENT_BYTES`]: an object or array runs to its
/// closing bracket (found without parsing it), anything else to the end
/// of its line, where the parser that reads it says what is wrong.
pub(crate) struct Documents<'r> {
    reader: &'r mut dyn BufRead,
    lines: Lines,
    /// Whether the documents' bytes are kept (or only counted).
    keep: bool,
}

impl<'r> Documents<'r> {
    /// The documents of `reader`, whose first character is on the line
    /// `start` says.
    pub(crate) fn new(reader: &'r mut dyn BufRead, start: &Start, keep: bool) -> Documents<'r> {
        Documents {
            reader,
            lines: start.lines,
            keep,
        }
    }

    /// The next document, `None` at the end of the input.
    pub(crate) fn next_document(&mut self) -> Result<Option<Document>, ReadError> {
        // Blank space between documents.
        loop {
            let bytes = ready(self.reader)?;
            if bytes.is_empty() {
                return Ok(None);
            }
            let n_blank = bytes
                .iter()
                .position(|byte| !byte.is_ascii_whitespace())
                .unwrap_or(bytes.len());
            let found = n_blank < bytes.len();
            self.lines.count(&bytes[..n_blank])?;
            self.reader.consume(n_blank);
            if found {
                break;
            }
        }
        let line = self.lines.line;
        let mut bytes = Vec::new();
        let mut n_bytes = 0_usize;
        let mut scan = Scan::default();
        let bracketed = matches!(ready(self.reader)?.first(), Some(b'{' | b'['));
        loop {
            let ready_bytes = ready(self.reader)?;
            if ready_bytes.is_empty() {
                break;
            }
            let end = if bracketed {
                ready_bytes
                    .iter()
                    .position(|&byte| scan.take(byte))
                    .map(|idx| idx + 1)
            } else {
                ready_bytes.iter().position(|&byte| byte == b'\n')
            };
            let taken = &ready_bytes[..end.unwrap_or(ready_bytes.len())];
            self.lines.count(taken)?;
            n_bytes += taken.len();
            if n_bytes > MAX_DOCUMENT_BYTES {
                return Err(ImportError::DocumentTooLarge { line }.into());
            }
            if self.keep {
                bytes.extend_from_slice(taken);
            }
            let n_taken = taken.len();
            self.reader.consume(n_taken);
            if end.is_some() {
                break;
            }
        }
        Ok(Some(Document { line, bytes }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn documents(input: &[u8]) -> Result<Vec<(usize, String)>, ReadError> {
        // Only short documents are shown: a test failure prints them.
        let mut reader = input;
        let start = Start::read(&mut reader)?;
        let mut documents = Documents::new(&mut reader, &start, true);
        let mut found = Vec::new();
        while let Some(document) = documents.next_document()? {
            found.push((document.line, String::from_utf8(document.bytes).unwrap()));
        }
        Ok(found)
    }

    #[test]
    fn documents_are_split_at_their_closing_bracket_whatever_their_strings_hold() {
        let input = b"\n\n{\"a\":\"}{\\\"\"}\n  {\"b\":[1,\n2]}{\"c\":{}}\n42 x\n[]";
        assert_eq!(
            documents(input).unwrap(),
            [
                (3, "{\"a\":\"}{\\\"\"}".to_string()),
                (4, "{\"b\":[1,\n2]}".to_string()),
                (5, "{\"c\":{}}".to_string()),
                (6, "42 x".to_string()),
                (7, "[]".to_string()),
            ]
        );
        // A document cut short ends with the input.
        assert_eq!(
            documents(b"{\"a\":[1,2").unwrap(),
            [(1, "{\"a\":[1,2".to_string())]
        );
    }

    #[test]
    fn a_long_line_or_document_is_refused_when_it_passes_its_ceiling() {
        let mut long_line = b"{\"x\":\"".to_vec();
        long_line.resize(MAX_LINE_BYTES + 10, b'a');
        let found = documents(&long_line).map(|found| found.len());
        assert!(
            matches!(
                found,
                Err(ReadError::Input(ImportError::LineTooLong { line: 1 }))
            ),
            "{found:?}"
        );
        let mut tall = b"\n{\"x\":[\n".to_vec();
        while tall.len() <= MAX_DOCUMENT_BYTES + 8 {
            tall.extend_from_slice(b"1,\n");
        }
        let found = documents(&tall).map(|found| found.len());
        assert!(
            matches!(
                found,
                Err(ReadError::Input(ImportError::DocumentTooLarge { line: 2 }))
            ),
            "{found:?}"
        );
    }

    #[test]
    fn a_text_is_refused_at_the_line_past_its_ceiling() {
        let lines = "y\n".repeat(MAX_TEXT_LINES + 5);
        let mut reader = lines.as_bytes();
        let start = Start::read(&mut reader).unwrap();
        let err = read_text(&mut reader, start, b"").unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::Input(ImportError::TooManyLines { line }) if line == MAX_TEXT_LINES + 1
            ),
            "{err}"
        );
        // Exactly at the ceiling, with its last line ended, it is read.
        let lines = "y\n".repeat(MAX_TEXT_LINES);
        let mut reader = lines.as_bytes();
        let start = Start::read(&mut reader).unwrap();
        assert_eq!(
            read_text(&mut reader, start, b"").unwrap().len(),
            lines.len()
        );
        let mut reader = &b"\n\nok \xff\n"[..];
        let start = Start::read(&mut reader).unwrap();
        assert_eq!(start.lines.line, 3);
        let err = read_text(&mut reader, start, b"").unwrap_err();
        assert_eq!(err.to_string(), "line 3: not UTF-8 text");
    }
}
