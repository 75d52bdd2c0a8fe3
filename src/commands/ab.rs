//! `netbisect ab`: an experiment across two kernels (see
//! [`crate::experiment`]): every configuration of the `--sweep` axes on
//! kernel A and kernel B, `-n` rounds, every configuration of a round in
//! one boot of each kernel, every run archived under its side's label and
//! the experiment's id; then one comparison of the experiment's own runs
//! (see [`crate::comparison`]).

use crate::cli::AbArgs;
use crate::comparison::{CompareLayout, ComparisonRequest, print_comparison};
use crate::exit::{self, Code, InputError};
use crate::experiment::{self, Experiment, Side};
use crate::global_options::GlobalOptions;
use crate::request::{configurations_of, guest_subject, request_from_args, vm};
use crate::vm::{GuestSubject, KernelUnderTest};

pub fn run(global: &GlobalOptions, args: &AbArgs) -> exit::Result<Code> {
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
    for (option, label) in [("--label-a", &args.label_a), ("--label-b", &args.label_b)] {
        run_record::record::check_name(option, label).map_err(|err| InputError(err.to_string()))?;
    }
    vm::check_guest_bench_args(&args.bench)?;
    let request = request_from_args(&args.bench)?;
    let configurations = configurations_of(&args.bench, &request)?;
    let options = vm::vm_options_with_settings(&args.bench.vm.options)?;
    let side_a = KernelUnderTest::prepare(&args.kernel_a, options.clone())?;
    let side_b = KernelUnderTest::prepare(&args.kernel_b, options)?;
    let n_configurations = configurations.len();
    let one_size_axis = args.bench.sweep.len() == 1
        && matches!(
            args.bench.sweep[0]
                .split_once('=')
                .map(|(key, _)| key.trim()),
            Some("m" | "r")
        );
    let experiment = Experiment::new(
        [
            Side::new(&args.label_a, side_a)?,
            Side::new(&args.label_b, side_b)?,
        ],
        configurations,
        args.rounds,
        GuestSubject {
            label: None,
            ..guest_subject(&args.bench)
        },
        args.fresh,
    )?;
    // Options of the comparison are checked before the first boot.
    let comparison = ComparisonRequest {
        first: format!("label:{}", args.label_a),
        second: format!("label:{}", args.label_b),
        alpha: args.alpha,
        min_effect: 0.0,
        test: None,
        testbed: None,
        // One table for the experiment: netperf's for one configuration
        // or one size swept, else every configuration in a matrix.
        layout: if n_configurations == 1 || one_size_axis {
            CompareLayout::Netperf
        } else {
            CompareLayout::Matrix
        },
        email: args.email,
        units: args.bench.units.units.clone(),
        experiment: Some(experiment.id.clone()),
    };
    comparison.check()?;
    if !global.quiet() {
        eprintln!(
            "netbisect: experiment {}: {n_configurations} configuration{} x 2 kernels x {} \
             round{}, {} boots",
            experiment.id,
            if n_configurations == 1 { "" } else { "s" },
            args.rounds,
            if args.rounds == 1 { "" } else { "s" },
            2 * args.rounds
        );
    }
    let outcome = experiment::run(global, &experiment, &std::env::temp_dir())?;
    print_comparison(global, &comparison)?;
    if outcome.failures.is_empty() {
        return Ok(Code::Ok);
    }
    Err(exit::Failure::msg(format!(
        "{} of the experiment's runs or boots failed (named above); run the same command \
         again to measure what is missing",
        outcome.failures.len()
    )))
}
