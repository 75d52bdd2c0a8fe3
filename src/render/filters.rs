//! Filters every table needs: fixed-width alignment, consistent
//! decimals, signed percentages, unit scaling as netperf's `-f` does it,
//! and wrapping long labels; every text they print is [`plain`] first.

use super::table::{TableRow, lay_out, unique_short_names};
use super::text::{plain, wrap_text};
use minijinja::value::Value;
use minijinja::{Environment, Error, ErrorKind};

/// Registers the filters on `environment`.
pub fn register(environment: &mut Environment<'static>) {
    environment.add_filter("rjust", rjust);
    environment.add_filter("ljust", ljust);
    environment.add_filter("fixed", fixed);
    environment.add_filter("figure", figure);
    environment.add_filter("for_people", for_people);
    environment.add_filter("cut", cut);
    environment.add_filter("signed_pct", signed_pct);
    environment.add_filter("netperf_units", netperf_units);
    environment.add_filter("wrap_words", wrap_words);
    environment.add_filter("wrap_command", wrap_command);
    environment.add_filter("row", row);
    environment.add_filter("length", length);
    environment.add_filter("table", table);
    environment.add_filter("short_names", short_names);
    environment.add_filter("history_rows", history::history_rows);
}

/// The cells of each row of a [`table`] and the set of widths it takes.
fn table_rows(rows: &Value) -> Result<Vec<TableRow>, Error> {
    let mut parsed = Vec::new();
    for row in rows.try_iter()? {
        let (set, cells) = match row.get_attr("cells") {
            Ok(cells) if !cells.is_undefined() => {
                let set = row
                    .get_attr("set")
                    .ok()
                    .and_then(|set| usize::try_from(set).ok());
                (set.unwrap_or(0), cells)
            }
            _ => (0, row),
        };
        let cells: Vec<String> = cells.try_iter()?.map(|cell| text_of(&cell)).collect();
        parsed.push(TableRow { set, cells });
    }
    Ok(parsed)
}

fn widths_of(value: &Value) -> Result<Vec<i64>, Error> {
    value
        .try_iter()?
        .map(|width| {
            i64::try_from(width).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    "column widths are integers".to_string(),
                )
            })
        })
        .collect()
}

/// A whole table, laid out by [`lay_out`]: each row a list of cells (or
/// `{"set": N, "cells": [...]}` for a row of the N-th set of widths, such
/// as a side's CPU line under its figures; an empty row is a blank line),
/// `widths` one set of widths or a list of sets.
pub fn table(rows: Value, widths: Value, limit: usize) -> Result<Vec<String>, Error> {
    let sets: Vec<Vec<i64>> = if widths
        .try_iter()?
        .next()
        .is_some_and(|first| first.try_iter().is_ok() && first.as_str().is_none())
    {
        widths
            .try_iter()?
            .map(|set| widths_of(&set))
            .collect::<Result<_, _>>()?
    } else {
        vec![widths_of(&widths)?]
    };
    let rows = table_rows(&rows)?;
    lay_out(&rows, &sets, limit)
        .map_err(|err| Error::new(ErrorKind::InvalidOperation, err.to_string()))
}

/// The filter of [`unique_short_names`], for names that head columns.
pub fn short_names(names: Value, width: usize) -> Result<Vec<String>, Error> {
    let names: Vec<String> = names.try_iter()?.map(|name| text_of(&name)).collect();
    Ok(unique_short_names(&names, width))
}

/// The columns a value takes when printed: its [`plain`] characters
/// for text, the number of items of a list or map.
pub fn length(value: Value) -> Result<usize, Error> {
    if let Some(text) = value.as_str() {
        return Ok(plain(text).chars().count());
    }
    value.len().ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("cannot take the length of {value}"),
        )
    })
}

/// One line of a table: each text padded to the width of its column
/// (right-aligned, or left-aligned for a negative width) and joined by
/// one space, without trailing spaces. A column of width 0 is left out,
/// and so are texts beyond the widths given.
pub fn row(texts: Value, widths: Value) -> Result<String, Error> {
    let mut line = String::new();
    let widths: Vec<i64> = widths
        .try_iter()?
        .map(|width| {
            i64::try_from(width).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    "column widths are integers".to_string(),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let mut first = true;
    for (text, width) in texts.try_iter()?.zip(widths) {
        if width == 0 {
            continue;
        }
        let text = text_of(&text);
        if !first {
            line.push(' ');
        }
        first = false;
        let pad = (width.unsigned_abs() as usize).saturating_sub(text.chars().count());
        if width < 0 {
            line.push_str(&text);
            line.push_str(&" ".repeat(pad));
        } else {
            line.push_str(&" ".repeat(pad));
            line.push_str(&text);
        }
    }
    Ok(line.trim_end().to_string())
}

fn text_of(value: &Value) -> String {
    match value.as_str() {
        Some(text) => plain(text).into_owned(),
        None if value.is_none() || value.is_undefined() => String::new(),
        None => value.to_string(),
    }
}

fn number_of(value: &Value) -> Result<f64, Error> {
    f64::try_from(value.clone()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("expected a number, got {value}"),
        )
    })
}

/// Right-aligns in `width` columns (never truncates).
pub fn rjust(value: Value, width: usize) -> String {
    format!("{:>width$}", text_of(&value))
}

/// Left-aligns in `width` columns (never truncates).
pub fn ljust(value: Value, width: usize) -> String {
    format!("{:<width$}", text_of(&value))
}

/// A number with exactly `decimals` decimals; `-` for none.
pub fn fixed(value: Value, decimals: Option<usize>) -> Result<String, Error> {
    if value.is_none() || value.is_undefined() {
        return Ok("-".to_string());
    }
    Ok(fixed_text(number_of(&value)?, decimals.unwrap_or(2)))
}

/// `number` with exactly `decimals` decimals ([`fixed`]'s text).
pub(crate) fn fixed_text(number: f64, decimals: usize) -> String {
    format!("{number:.*}", decimals)
}

/// A measured figure (a rate, a throughput, a utilisation, a service
/// demand) with `decimals` decimals, or more where it needs them to keep
/// two significant digits (at most 12): a throughput of 0.0064 is
/// `0.0064`, not `0.01`, and a figure that is not zero never prints as
/// zero. A figure printed exactly (`0.05`) keeps its decimals; `-` for
/// none.
pub fn figure(value: Value, decimals: Option<usize>) -> Result<String, Error> {
    if value.is_none() || value.is_undefined() {
        return Ok("-".to_string());
    }
    Ok(figure_text(number_of(&value)?, decimals.unwrap_or(2)))
}

/// `number` as [`figure`] prints it.
pub(crate) fn figure_text(number: f64, decimals: usize) -> String {
    let text = fixed_text(number, decimals);
    let exact = text.parse::<f64>().is_ok_and(|printed| printed == number);
    if number == 0.0 || !number.is_finite() || exact {
        return text;
    }
    let needed = (-number.abs().log10()).ceil() + 1.0;
    if needed > decimals as f64 {
        return format!("{number:.*}", needed.min(12.0) as usize);
    }
    text
}

/// A record's time (RFC 3339, UTC) as text for people prints dates:
/// git's short ISO form, `2026-12-01 14:24:33 +0000`. JSON keeps RFC 3339.
pub fn for_people(value: Value) -> String {
    run_record::time::for_people(&text_of(&value))
}

/// Text in at most `width` columns as printed ([`plain`]): whole when
/// it fits, else its first `width - 1` columns and a visible `~`.
pub fn cut(value: Value, width: usize) -> String {
    let text = text_of(&value);
    if text.len() <= width {
        text
    } else {
        format!("{}~", &text[..width.saturating_sub(1)])
    }
}

/// A percentage with its sign: `+1.2%`, `-8.1%`, `+0.0%`.
pub fn signed_pct(value: Value, decimals: Option<usize>) -> Result<String, Error> {
    if value.is_none() || value.is_undefined() {
        return Ok("-".to_string());
    }
    Ok(signed_pct_text(number_of(&value)?, decimals.unwrap_or(1)))
}

/// `number` as [`signed_pct`] prints it.
pub(crate) fn signed_pct_text(number: f64, decimals: usize) -> String {
    let text = format!("{number:+.decimals$}%");
    // A value that rounds to zero reads better without a minus sign.
    text.replace("-0.0%", "+0.0%").replace("-0%", "+0%")
}

/// Converts bits per second to the unit netperf's `-f` letter names:
/// `k`, `m`, `g` are 10^3, 10^6, 10^9 bits/s; `K`, `M`, `G` are 2^10,
/// 2^20, 2^30 bytes/s.
pub fn netperf_units(value: Value, letter: &str) -> Result<f64, Error> {
    Ok(number_of(&value)? / netperf_divisor(letter)?)
}

/// Bits per second in one unit of netperf's `-f` `letter`.
pub(crate) fn netperf_divisor(letter: &str) -> Result<f64, Error> {
    Ok(match letter {
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "K" => 8.0 * 1024.0,
        "M" => 8.0 * 1024.0 * 1024.0,
        "G" => 8.0 * 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("unknown unit letter '{other}' (use k, m, g, K, M or G)"),
            ));
        }
    })
}

/// Splits text into lines of at most `width` columns at spaces; a word
/// longer than `width` (a label of 150 characters) is cut into pieces of
/// `width`, so that no line is wider.
pub fn wrap_words(value: Value, width: usize) -> Vec<String> {
    wrap_text(&text_of(&value), width)
}

/// Splits a shell command into lines of at most `width` columns, only
/// between its arguments, never between a flag and its value: every line
/// but the last ends with ` \`, and the lines after the first are
/// indented by four spaces, so that the lines pasted together are the
/// command again. A quoted word with spaces, in single or double quotes
/// (`'a b'`, `CC="ccache gcc"`), is kept whole. The arguments are read
/// back from the text ([`run_record::shell::units_of`]) and laid out by
/// the same code as every command line of netbisect
/// ([`run_record::shell::wrap_units`]).
pub fn wrap_command(value: Value, width: usize) -> Vec<String> {
    let text = text_of(&value);
    run_record::shell::wrap_units(&run_record::shell::units_of(&text), width, "    ")
}

pub mod history;
#[cfg(test)]
mod tests;
