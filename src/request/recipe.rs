//! How commits are built, measured and decided, from the command line
//! (`bisect start`, `track`): [`RecipeArgs`] checked into a [`Recipe`]
//! before anything runs: the build and measure commands' programs are
//! there, the bench spec parses, `--kernel` comes with `--bench` and the
//! VM's tools, the metric is known.

use crate::bisection::Recipe;
use crate::bisection::measuring::KernelSession;
use crate::cli::{DirectionArg, MeasureArgs, MethodArg, RecipeArgs};
use crate::exit::{self, InputError};
use bisect::config::BisectConfig;
use bisect::decision::{DecisionConfig, FutilityAlternative, Method as WalkMethod};
use child_process::runner;
use run_record::record::{Direction, Metric};
use std::path::Path;

fn input(err: impl std::fmt::Display) -> exit::Failure {
    InputError(err.to_string()).into()
}

/// `args` checked, with the commands looked for from `workdir`.
pub fn recipe_of(args: &RecipeArgs, workdir: &Path) -> exit::Result<Recipe> {
    if let Some(build) = &args.build {
        runner::check_command(build, workdir).map_err(input)?;
    }
    let kernel = kernel_session(args)?;
    let bench = match &args.measure {
        MeasureArgs {
            bench: Some(spec), ..
        } if kernel.is_some() => Some(super::parse_guest_bench_spec(spec)?),
        MeasureArgs {
            bench: Some(spec), ..
        } => Some(super::parse_bench_spec(spec)?),
        MeasureArgs {
            measure: Some(command),
            ..
        } => {
            runner::check_command(command, workdir).map_err(input)?;
            None
        }
        _ => return Err(input("give --bench SPEC or --measure CMD")),
    };
    let metric = match (&args.metric, &bench) {
        (Some(name), _) => name.parse()?,
        (None, Some(request)) => Metric::primary_for(&request.spec),
        (None, None) => Metric::ThroughputBps,
    };
    let direction = match args.direction {
        Some(DirectionArg::Higher) => Direction::HigherIsBetter,
        Some(DirectionArg::Lower) => Direction::LowerIsBetter,
        None => metric.direction(),
    };
    let mut defaults = DecisionConfig::default();
    if let Some(n) = args.end_repeats {
        defaults.min_end_repeats = n;
    }
    if let Some(n) = args.confirm_repeats {
        defaults.confirm_repeats = n;
    }
    Ok(Recipe {
        first_parent: args.first_parent,
        build: args.build.clone(),
        bench: args.measure.bench.clone(),
        measure: args.measure.measure.clone(),
        timeout_s: args.timeout,
        kernel,
        config: BisectConfig {
            metric: metric.name().to_string(),
            direction,
            decision: DecisionConfig {
                min_effect_pct: args.min_effect.unwrap_or(defaults.min_effect_pct),
                // A minimum effect given is a promise: the ends' test is
                // built against it, not against the noise.
                futility_alternative: match args.min_effect {
                    Some(_) => FutilityAlternative::MinEffect,
                    None => FutilityAlternative::NoiseScale,
                },
                max_repeats: args.max_repeats,
                method: match args.method {
                    MethodArg::Posterior => WalkMethod::Posterior,
                    MethodArg::Sequential => WalkMethod::Sequential,
                },
                ..defaults
            },
        },
    })
}

/// The kernel part of the recipe: checked options, the runner's tools
/// found. The image itself is only there once a commit is built.
fn kernel_session(args: &RecipeArgs) -> exit::Result<Option<KernelSession>> {
    let Some(image) = &args.kernel else {
        if args.vm.any() {
            return Err(input("--vm-* options need --kernel RELPATH"));
        }
        return Ok(None);
    };
    if args.measure.bench.is_none() {
        return Err(input(
            "--kernel runs --bench SPEC in the guest: give --bench, not --measure",
        ));
    }
    if image.is_absolute() {
        return Err(input(format!(
            "--kernel {} must be a path in the worktree, such as arch/x86/boot/bzImage",
            image.display()
        )));
    }
    let options = super::vm::vm_options(&args.vm, None)?;
    crate::vm::check_tools()?;
    Ok(Some(KernelSession {
        image: image.to_string_lossy().into_owned(),
        options,
        settings: args
            .vm
            .vm_settings
            .as_ref()
            .map(|path| path.to_string_lossy().into_owned()),
    }))
}
