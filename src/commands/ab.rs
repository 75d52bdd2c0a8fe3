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
use crate::request::axes::Configuration;
use crate::request::command::ab_command;
use crate::request::{configurations_of, guest_subject, request_from_args, vm};
use crate::vm::{GuestSubject, KernelUnderTest, VmOptions};

/// What the arguments of `ab` define of its experiment, beside its
/// kernels and labels: every part of its id but the images' bytes, and
/// the command its runs keep, from which the same parts come again.
#[derive(Debug, PartialEq)]
struct Defined {
    configurations: Vec<Configuration>,
    options: VmOptions,
    subject: GuestSubject,
    /// The token of `--fresh` (the time, when none was given).
    fresh: Option<String>,
    command: Vec<String>,
}

impl Defined {
    /// Reads and checks `args`, before any kernel is read.
    fn of(args: &AbArgs) -> exit::Result<Defined> {
        vm::check_guest_bench_args(&args.bench)?;
        let request = request_from_args(&args.bench)?;
        let configurations = configurations_of(&args.bench, &request)?;
        let options = vm::vm_options_with_settings(&args.bench.vm.options)?;
        // A fresh experiment is named by its token, which its command
        // keeps.
        let fresh = args
            .fresh
            .as_ref()
            .map(|token| token.clone().unwrap_or_else(run_record::time::now_rfc3339));
        let command = ab_command(args, fresh.as_deref());
        Ok(Defined {
            configurations,
            options,
            subject: GuestSubject {
                label: None,
                ..guest_subject(&args.bench)
            },
            fresh,
            command,
        })
    }
}

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
    let defined = Defined::of(args)?;
    let side_a = KernelUnderTest::prepare(&args.kernel_a, defined.options.clone())?;
    let side_b = KernelUnderTest::prepare(&args.kernel_b, defined.options.clone())?;
    let n_configurations = defined.configurations.len();
    let one_size_axis = args.bench.config.is_empty()
        && args.bench.sweep.len() == 1
        && matches!(
            args.bench.sweep[0]
                .split_once('=')
                .map(|(key, _)| key.trim()),
            Some("m" | "r")
        );
    let mut experiment = Experiment::new(
        [
            Side::new(&args.label_a, side_a)?,
            Side::new(&args.label_b, side_b)?,
        ],
        defined.configurations,
        args.rounds,
        defined.subject,
        defined.fresh,
        defined.command,
    )?;
    experiment.strict_settings = args.bench.strict_settings;
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
        experiment_command: Some(experiment.command.clone()),
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
    // One runner per experiment: a second one would measure it all again.
    let _lock = experiment::lock::hold(&experiment.id, args.wait, |text| {
        if !global.quiet() {
            eprintln!("netbisect: {text}");
        }
    })?;
    let outcome = experiment::run(global, &experiment, &std::env::temp_dir())?;
    if outcome.n_stored + outcome.n_found == 0 {
        return Err(exit::Failure::msg(format!(
            "every configuration of experiment {} failed, on both kernels (named above): \
             nothing to compare",
            experiment.id
        )));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::vm::KernelImage;
    use clap::Parser;

    fn ab_args<'a>(words: impl IntoIterator<Item = &'a str>) -> AbArgs {
        let argv = std::iter::once("netbisect").chain(words);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Ab(args) => args,
            other => panic!("{other:?}"),
        }
    }

    /// The id of the experiment `args` define, its kernels named by
    /// their paths as given (as their bytes would be).
    fn id_of(args: &AbArgs) -> String {
        let defined = Defined::of(args).unwrap();
        let side = |label: &str, path: &std::path::Path| Side {
            label: label.to_string(),
            kernel: KernelUnderTest {
                image: KernelImage::for_tests(&path.to_string_lossy()),
                options: defined.options.clone(),
            },
            image_hash: path.to_string_lossy().into_owned(),
        };
        Experiment::new(
            [
                side(&args.label_a, &args.kernel_a),
                side(&args.label_b, &args.kernel_b),
            ],
            defined.configurations,
            args.rounds,
            defined.subject,
            defined.fresh,
            defined.command,
        )
        .unwrap()
        .id
    }

    /// The contract of an experiment's reproduce line: the command its
    /// runs keep, read back, defines the same experiment, whatever was
    /// given and in whatever order.
    #[test]
    fn the_kept_command_defines_the_same_experiment() {
        let given: Vec<Vec<&str>> = vec![
            vec![
                "ab",
                "--kernel-a",
                "base/bzImage",
                "--kernel-b",
                "patched/bzImage",
            ],
            vec![
                "ab",
                "--kernel-a",
                "/boot/vmlinuz-6.1.0-55-amd64",
                "--kernel-b",
                "./b",
                "-n",
                "2",
                "--label-a",
                "e1;touch pwn;#",
                "--label-b",
                "$(id)",
                "--vm-net",
                "host",
                "--vm-tap",
                "nbtap0",
                "--vm-accel",
                "auto",
                "--vm-memory",
                "2G",
                "--vm-cpus",
                "4",
                "--vm-append",
                "mitigations=off",
                "--vm-sysctl",
                "net.core.rmem_max=4194304",
                "--vm-timeout",
                "120.5",
                "--vm-share",
                "/usr",
                "-t",
                "TCP_RR",
                "-l",
                "0.3",
                "--sweep",
                "r=1/1,4000/4000,60000/60000,90/90",
                "--sweep",
                "S=18000,2280,28000",
                "--set",
                "gso=off",
                "-c",
                "-C",
                "--testbed",
                "lab a",
                "--commit",
                "0123abc",
                "--fresh=2026-01-22T10:00:00Z",
                "-f",
                "g",
                "--email",
            ],
            vec![
                "ab",
                "--kernel-a",
                "a",
                "--kernel-b",
                "b",
                "-m",
                "1K",
                "--sweep",
                "gso=on,off",
                "--sweep",
                "t=UDP_STREAM,TCP_STREAM",
                "-I",
                "99,2",
                "--nodelay",
                "--",
                "-P",
                ",5000",
            ],
        ];
        for words in given {
            let args = ab_args(words.iter().copied());
            let defined = Defined::of(&args).unwrap();
            let again = ab_args(defined.command.iter().map(String::as_str));
            assert_eq!(Defined::of(&again).unwrap(), defined, "{words:?}");
            assert_eq!(id_of(&again), id_of(&args), "{words:?}");
        }
        // The order of values is part of the experiment (its id, as
        // before commands were kept): the line keeps it.
        let sorted = ab_args([
            "ab",
            "--kernel-a",
            "a",
            "--kernel-b",
            "b",
            "--sweep",
            "S=18000,2280",
        ]);
        let given = ab_args([
            "ab",
            "--kernel-a",
            "a",
            "--kernel-b",
            "b",
            "--sweep",
            "S=2280,18000",
        ]);
        assert_ne!(id_of(&sorted), id_of(&given));
        assert!(
            Defined::of(&given)
                .unwrap()
                .command
                .contains(&"--sweep=S=2280,18000".to_string())
        );
    }
}
