//! `netbisect bench --kernel IMAGE`: the test in a VM booting the image
//! (see [`crate::vm::run_tests`]), every configuration of its `--sweep`
//! axes in that one boot; each record given the command that made it
//! (the kernel and VM options as given) and stored here as soon as the
//! guest has finished it, and printed as bench prints a run (`--json`:
//! one record a line).

use crate::exit::{self, Code, Context};
use crate::global_options::GlobalOptions;
use crate::progress::Reporter;
use crate::request::{BenchInvocation, KernelRun};
use crate::store::{fail_if_not_granted, print_run, store_run, warn_of_refused_settings};
use crate::vm::{self, KernelUnderTest};

pub fn run(
    global: &GlobalOptions,
    invocation: &BenchInvocation,
    kernel: &KernelRun,
) -> exit::Result<Code> {
    let under_test = KernelUnderTest::prepare(&kernel.image, kernel.options.clone())?;
    let specs: Vec<_> = kernel
        .configurations
        .iter()
        .map(|configuration| configuration.spec.clone())
        .collect();
    let mut records = Vec::new();
    let mut failures = Vec::new();
    let progress = Reporter::new(global, specs.len() as u64);
    progress.status(&format!(
        "booting {} ({}) for {} configuration{}",
        under_test.image.path.display(),
        under_test
            .image
            .release
            .as_deref()
            .unwrap_or("release unknown"),
        specs.len(),
        if specs.len() == 1 { "" } else { "s" }
    ));
    let mut stored = |run_idx: usize, tested: vm::TestOutcome| -> exit::Result<()> {
        progress.advance(1);
        let name = kernel.configurations[run_idx].name.join(" ");
        progress.status(&format!(
            "{}/{} {} done",
            run_idx + 1,
            specs.len(),
            if name.is_empty() { "the test" } else { &name }
        ));
        match tested {
            Ok(mut record) => {
                fail_if_not_granted(&invocation.output, &record)?;
                // Its line names the kernel and the VM as they were given.
                record.command = Some(kernel.command.clone());
                record.seal().context("failed to seal the run record")?;
                if invocation.output.archive {
                    store_run(global, &record)?;
                }
                records.push(record);
            }
            Err(message) => {
                if specs.len() > 1 {
                    progress.line(&format!("error: {name}: {message}"));
                }
                failures.push((name, message));
            }
        }
        Ok(())
    };
    vm::run_tests(
        &under_test,
        &specs,
        &kernel.subject,
        &std::env::temp_dir(),
        vm::Notes {
            quiet: global.quiet(),
            verbose: global.verbose(),
        },
        &mut stored,
    )?;
    progress.finish();
    if let [(name, message)] = failures.as_slice()
        && records.is_empty()
    {
        let what = if name.is_empty() { "the test" } else { name };
        return Err(exit::Failure::from(vm::VmError::RunFailed(message.clone()))
            .context(format!("{what} failed in the guest; no run was recorded")));
    }
    // Each was stored as the guest finished it: printed as bench prints
    // a run, "not stored" only under --no-archive.
    for record in &records {
        warn_of_refused_settings(global, record);
        print_run(
            global,
            &invocation.output,
            record,
            invocation.output.archive,
        )?;
    }
    if failures.is_empty() {
        Ok(Code::Ok)
    } else {
        Err(exit::Failure::msg(format!(
            "{} of {} configurations failed in the guest (named above)",
            failures.len(),
            specs.len()
        )))
    }
}
