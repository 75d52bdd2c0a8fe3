//! `netbisect guest-runs` (hidden): inside a guest of the VM runner,
//! every run of the guest's plan ([`crate::vm::GuestPlan`]) in this one
//! process, in order: the far NIC's settings first (in the pair), then
//! the test with bench's own flags, its record, its error as bench would
//! print it and then its exit status written whole to the output
//! directory, where the host takes each run as soon as its status is
//! there. One process for every run, since under emulation starting
//! netbisect costs a third of a second or more.

use crate::cli::{BenchSpecLine, GuestRunsArgs};
use crate::exit::{self, Code, Context, InputError};
use crate::output;
use crate::request::request_from_args;
use crate::vm::{GuestPlan, PlannedRun, run_file};
use clap::Parser;
use std::path::Path;

pub fn run(args: &GuestRunsArgs) -> exit::Result<Code> {
    let text = std::fs::read(&args.plan)
        .map_err(|err| InputError(format!("cannot read {}: {err}", args.plan.display())))?;
    let plan: GuestPlan = serde_json::from_slice(&text)
        .map_err(|err| InputError(format!("{} is not a plan: {err}", args.plan.display())))?;
    for (run_idx, planned) in plan.runs.iter().enumerate() {
        let mut notes = String::new();
        let outcome = one_run(planned, args.peer_interface.as_deref(), &mut notes);
        let status = match &outcome {
            Ok(record) => {
                write_whole(&args.output, &run_file("record", run_idx), record)?;
                Code::Ok
            }
            Err(err) => {
                notes.push_str(&exit::error_text(err));
                exit::classify(err)
            }
        };
        write_whole(&args.output, &run_file("err", run_idx), notes.as_bytes())?;
        write_whole(
            &args.output,
            &run_file("status", run_idx),
            format!("{}\n", status as u8).as_bytes(),
        )?;
    }
    Ok(Code::Ok)
}

/// One run: the far NIC's settings, then the test; its record's bytes.
/// What the settings command said goes to `notes`.
fn one_run(
    planned: &PlannedRun,
    peer_interface: Option<&str>,
    notes: &mut String,
) -> exit::Result<Vec<u8>> {
    if let (Some(spec), Some(interface)) = (&planned.peer_settings, peer_interface) {
        let binary = std::env::current_exe().context("cannot find the netbisect binary")?;
        let output = std::process::Command::new("ip")
            .args(["netns", "exec", "nbpeer"])
            .arg(&binary)
            .args([
                "guest-settings",
                "--spec-file",
                spec,
                "--interface",
                interface,
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .context("cannot start the settings of the far NIC")?;
        notes.push_str(&String::from_utf8_lossy(&output.stderr));
        if !output.status.success() {
            return Err(exit::Failure::msg(
                "the far NIC of the pair did not take the run's settings",
            ));
        }
    }
    let line = BenchSpecLine::try_parse_from(&planned.bench_args)
        .map_err(|err| InputError(format!("the plan's bench flags: {err}")))?;
    let request = request_from_args(&line.args)?;
    let record =
        bench_core::run::bench(&request).context("the test failed; no run was recorded")?;
    output::record(&record)
}

/// Writes `bytes` to `name` in `dir` whole: to a file beside it, then
/// renamed, so that a reader never sees part of it.
fn write_whole(dir: &Path, name: &str, bytes: &[u8]) -> exit::Result<()> {
    let part = dir.join(format!("{name}.tmp"));
    std::fs::write(&part, bytes).with_context(|| format!("cannot write {}", part.display()))?;
    std::fs::rename(&part, dir.join(name))
        .with_context(|| format!("cannot write {}", dir.join(name).display()))
}
