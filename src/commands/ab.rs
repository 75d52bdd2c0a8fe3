//! `netbisect ab`: kernels A and B booted in turn, `-n` rounds, every run
//! archived under its side's label, then the comparison of the two labels
//! (see [`crate::comparison`]).

use crate::cli::{AbArgs, CompareLayout, GlobalArgs};
use crate::comparison::{ComparisonRequest, print_comparison};
use crate::exit::{Code, InputError};
use crate::request::{guest_subject, request_from_args, vm};
use crate::store::store_run;
use crate::vm::{GuestSubject, KernelUnderTest, Notes, run_test};

pub fn run(global: &GlobalArgs, args: &AbArgs) -> anyhow::Result<Code> {
    if args.bench.vm.kernel.is_some() {
        return Err(InputError("ab takes --kernel-a and --kernel-b, not --kernel".into()).into());
    }
    if args.bench.label.is_some() {
        return Err(InputError("ab takes --label-a and --label-b, not --label".into()).into());
    }
    if args.bench.no_archive {
        return Err(InputError("ab compares archived runs: --no-archive is refused".into()).into());
    }
    if args.label_a == args.label_b {
        return Err(InputError("--label-a and --label-b must differ".into()).into());
    }
    vm::check_guest_bench_args(&args.bench)?;
    let request = request_from_args(&args.bench)?;
    let options = vm::vm_options_with_settings(&args.bench.vm.options)?;
    let side_a = KernelUnderTest::prepare(&args.kernel_a, options.clone())?;
    let side_b = KernelUnderTest::prepare(&args.kernel_b, options)?;
    // Options of the comparison are checked before the first boot.
    let comparison = ComparisonRequest {
        first: format!("label:{}", args.label_a),
        second: format!("label:{}", args.label_b),
        alpha: args.alpha,
        min_effect: 0.0,
        test: None,
        testbed: None,
        layout: CompareLayout::Netperf,
        email: false,
        units: args.bench.units.units.clone(),
    };
    comparison.check()?;
    let notes = Notes {
        quiet: global.quiet,
        verbose: global.verbose > 0,
    };
    let console_dir = std::env::temp_dir();
    for round in 1..=args.rounds {
        for (kernel, label) in [(&side_a, &args.label_a), (&side_b, &args.label_b)] {
            if !global.quiet {
                eprintln!(
                    "netbisect: round {round}/{}: {label} ({})",
                    args.rounds,
                    kernel.image.path.display()
                );
            }
            let subject = GuestSubject {
                label: Some(label.clone()),
                ..guest_subject(&args.bench)
            };
            let record = run_test(kernel, &request, &subject, &console_dir, notes)?;
            store_run(global, &record)?;
        }
    }
    print_comparison(global, &comparison)?;
    Ok(Code::Ok)
}
