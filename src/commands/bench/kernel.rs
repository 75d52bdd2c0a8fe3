//! `netbisect bench --kernel IMAGE`: the test in a VM booting the image
//! (see [`crate::vm::run_test`]), its record stored here and printed as
//! bench prints a run.

use crate::cli::GlobalArgs;
use crate::exit::Code;
use crate::request::{BenchInvocation, KernelRun};
use crate::store::store_and_print;
use crate::vm::{self, KernelUnderTest};

pub fn run(
    global: &GlobalArgs,
    invocation: &BenchInvocation,
    kernel: &KernelRun,
) -> anyhow::Result<Code> {
    let under_test = KernelUnderTest::prepare(&kernel.image, kernel.options.clone())?;
    let record = vm::run_test(
        &under_test,
        &invocation.request,
        &kernel.subject,
        &std::env::temp_dir(),
        vm::Notes {
            quiet: global.quiet,
            verbose: global.verbose > 0,
        },
    )?;
    store_and_print(global, &invocation.output, &record)
}
