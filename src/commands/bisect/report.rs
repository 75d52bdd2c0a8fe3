//! `bisect report` and the end of `bisect run`: bisect's report or
//! refusal as JSON, or the `bisect-report` template's text for a mail:
//! the result, the test, the environment of the ends and the commands
//! that reproduce the bisection.

use super::input;
use super::session::{Loaded, load, status_of};
use super::timing::timing_of;
use crate::cli::BisectReportArgs;
use crate::exit::{self, Code};
use crate::global_options::GlobalOptions;
use crate::output;
use bisect::report::Outcome;

pub(super) fn report(global: &GlobalOptions, args: &BisectReportArgs) -> exit::Result<Code> {
    let loaded = load(global, args.repo.repo.as_deref())?;
    let status = status_of(&loaded)?;
    if status.outcome.is_some()
        && let Some(path) = &args.svg
    {
        let page = crate::site::bisection::bisection_page(
            &loaded.archive,
            &loaded.session,
            Some(loaded.graph.clone()),
        )?;
        match &page.svg {
            Some(svg) => crate::site::write_file(path, svg.as_str())?,
            None => {
                return Err(input("the bisection has no measurement to draw"));
            }
        }
    }
    match &status.outcome {
        Some(outcome) => print_outcome(
            global,
            &loaded,
            loaded.session.config_key.as_deref(),
            outcome,
        ),
        None => Err(input(
            "the bisection has not finished: `netbisect bisect run` continues it, \
             `netbisect bisect status` shows where it is",
        )),
    }
}

/// Prints the end of a bisection; the spec and the environment shown come
/// from runs under `config_key`, so that runs of another test archived for
/// the same commits never name the report.
pub(super) fn print_outcome(
    global: &GlobalOptions,
    loaded: &Loaded,
    config_key: Option<&str>,
    outcome: &Outcome,
) -> exit::Result<Code> {
    let code = match outcome {
        Outcome::Finished(_) => Code::Ok,
        Outcome::Refused(_) => Code::Refused,
    };
    let json = || match outcome {
        Outcome::Finished(report) => output::line(report, "the report"),
        Outcome::Refused(refusal) => output::line(refusal, "the report"),
    };
    let timing = timing_of(loaded)?;
    let text = || {
        crate::bisection::report::report_text(
            global.template_dir.as_deref(),
            &loaded.archive,
            &loaded.spec,
            config_key,
            outcome,
            Some(timing),
        )
    };
    output::emit(global, json, text)?;
    Ok(code)
}
