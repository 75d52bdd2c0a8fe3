//! HTML of the site: escaping of free text, and the page every file
//! shares (inline style, no script, no external resource).
//!
//! Every piece of free text (labels, commit subjects, testbed names,
//! test titles) goes through [`escape`] before it is put in a page.

use std::fmt::Write as _;

/// `text` with the five characters that mean something in HTML (and in
/// SVG) replaced by their entities.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// The style of every page, inline: a page opened alone from a CI
/// artifact has all it needs.
const STYLE: &str = "\
body{font-family:sans-serif;margin:1.5em auto;max-width:1000px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:0.5em 0}
th,td{border:1px solid #ccc;padding:0.2em 0.6em;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.change td{background:#fdecea}
code{font-size:0.95em}
svg{max-width:100%;height:auto}
.note{color:#555}
nav{margin-bottom:1em}";

/// A whole page: `title` (escaped here) and `body` (HTML already).
pub fn page(title: &str, body: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"generator\" content=\"netbisect publish\">\n\
         <title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n\
         <nav><a href=\"index.html\">netbisect archive</a></nav>\n{body}</body>\n</html>\n",
        escape(title)
    );
    out
}

/// A cell of a [`table`], its HTML already escaped.
pub enum Cell {
    /// Text, left-aligned.
    Text(String),
    /// A number, right-aligned.
    Num(String),
}

/// A table: a header row, then rows, each with an optional class (for
/// the style) and its cells.
pub fn table(header: &[&str], rows: &[(Option<&str>, Vec<Cell>)]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for name in header {
        let _ = write!(out, "<th>{}</th>", escape(name));
    }
    out.push_str("</tr>\n");
    for (class, cells) in rows {
        match class {
            Some(class) => {
                let _ = write!(out, "<tr class=\"{class}\">");
            }
            None => out.push_str("<tr>"),
        }
        for cell in cells {
            match cell {
                Cell::Num(number) => {
                    let _ = write!(out, "<td class=\"num\">{number}</td>");
                }
                Cell::Text(text) => {
                    let _ = write!(out, "<td>{text}</td>");
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_cannot_open_a_tag_or_leave_an_attribute() {
        assert_eq!(
            escape("<script>\"x\" & 'y'"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;"
        );
        let html = page("a <b>", "");
        assert!(html.contains("<title>a &lt;b&gt;</title>"));
        assert!(html.is_ascii());
    }
}
