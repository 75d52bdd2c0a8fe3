//! `netbisect record check`: validate canonical run records, for example
//! the output of a `--measure` command, before anything relies on them.

use crate::cli::{GlobalArgs, RecordAction, RecordArgs};
use crate::exit::Code;
use anyhow::Context;
use bench_core::record::RunRecord;
use std::io::{Read, Write};
use std::path::Path;

pub fn run(global: &GlobalArgs, args: &RecordArgs) -> anyhow::Result<Code> {
    match &args.action {
        RecordAction::Check { files } => {
            let mut stdout = std::io::stdout().lock();
            for file in files {
                let record = read_record_file(file)?;
                if global.json {
                    let line = serde_json::json!({
                        "file": file.display().to_string(),
                        "id": record.id,
                        "config_key": record.config_key,
                    });
                    writeln!(stdout, "{line}").map_err(crate::exit::stdout_error)?;
                } else {
                    writeln!(
                        stdout,
                        "{}: ok, id {}, config_key {}",
                        file.display(),
                        &record.id[..12.min(record.id.len())],
                        &record.config_key[..12.min(record.config_key.len())]
                    )
                    .map_err(crate::exit::stdout_error)?;
                }
            }
            Ok(Code::Ok)
        }
    }
}

/// Reads and validates one record file; `-` is standard input.
pub fn read_record_file(path: &Path) -> anyhow::Result<RunRecord> {
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
    RunRecord::from_slice(&bytes)
        .with_context(|| format!("{}: not a valid run record", path.display()))
}
