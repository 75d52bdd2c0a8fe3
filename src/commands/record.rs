//! `netbisect record check`: validate canonical run records, for example
//! the output of a `--measure` command, before anything relies on them.

use crate::cli::{RecordAction, RecordArgs};
use crate::exit::{self, Code, Context};
use crate::global_options::GlobalOptions;
use crate::output;
use run_record::record::RunRecord;
use std::io::Read;
use std::path::Path;

pub fn run(global: &GlobalOptions, args: &RecordArgs) -> exit::Result<Code> {
    match &args.action {
        RecordAction::Check { files } => {
            for file in files {
                let records = read_records_file(file)?;
                for (line_no, record) in &records {
                    let name = match line_no {
                        Some(line_no) => format!("{}:{line_no}", file.display()),
                        None => file.display().to_string(),
                    };
                    let json = || {
                        let line = serde_json::json!({
                            "file": file.display().to_string(),
                            "line": line_no,
                            "id": record.id,
                            "config_key": record.config_key,
                        });
                        output::line(&line, "the check")
                    };
                    let text = || {
                        Ok(format!(
                            "{name}: ok, id {}, config_key {}\n",
                            &record.id[..12.min(record.id.len())],
                            &record.config_key[..12.min(record.config_key.len())]
                        ))
                    };
                    output::emit(global, json, text)?;
                }
            }
            Ok(Code::Ok)
        }
    }
}

fn read_bytes(path: &Path) -> exit::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if path == Path::new("-") {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("failed to read standard input")?;
    } else {
        bytes = std::fs::read(path).map_err(|err| {
            crate::exit::InputError(format!("cannot read {}: {err}", path.display()))
        })?;
    }
    Ok(bytes)
}

/// Reads and validates a file of one record (pretty-printed or not) or of
/// JSON lines, one record a line, as `archive export` writes them. Each
/// record comes with its line number in a file of JSON lines.
pub fn read_records_file(path: &Path) -> exit::Result<Vec<(Option<usize>, RunRecord)>> {
    let bytes = read_bytes(path)?;
    let n_values = serde_json::Deserializer::from_slice(&bytes)
        .into_iter::<serde::de::IgnoredAny>()
        .take(2)
        .take_while(Result::is_ok)
        .count();
    if n_values < 2 {
        let record = RunRecord::from_slice(&bytes)
            .with_context(|| format!("{}: not a valid run record", path.display()))?;
        return Ok(vec![(None, record)]);
    }
    let mut records = Vec::new();
    for (line_idx, line) in bytes.split(|&byte| byte == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line_no = line_idx + 1;
        let record = RunRecord::from_slice(line).with_context(|| {
            format!("{}: line {line_no}: not a valid run record", path.display())
        })?;
        records.push((Some(line_no), record));
    }
    Ok(records)
}
