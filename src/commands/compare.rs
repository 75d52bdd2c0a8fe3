//! `netbisect compare A B`: the runs of two selectors (see
//! [`super::selector`]) side by side, group by group, with a significance
//! verdict per metric; `--json` prints the archive's `Comparison`.
//!
//! compare reports and does not judge: it exits with 0 whatever the
//! verdicts are, 2 when a selector or an option is wrong.

use super::archive::open_archive_read;
use super::selector::{self, Selector};
use crate::cli::{CompareArgs, GlobalArgs};
use crate::exit::{Code, InputError};
use crate::render::Renderer;
use anyhow::Context;
use archive::RunQuery;
use archive::compare::{CompareError, CompareOptions, compare};
use std::io::Write;

pub fn run(global: &GlobalArgs, args: &CompareArgs) -> anyhow::Result<Code> {
    let first = Selector::parse(&args.first)?;
    let second = Selector::parse(&args.second)?;
    let filters = RunQuery {
        test: args.test,
        testbed: args.testbed.clone(),
        ..RunQuery::default()
    };
    let mut options = CompareOptions {
        alpha: args.alpha,
        min_effect_pct: args.min_effect,
        ..CompareOptions::default()
    };
    // Options are checked before the archive is read.
    compare(&[], &[], &options).map_err(input_error_of)?;

    let archive = open_archive_read(global)?;
    let first = selector::resolve(&archive, &first, &filters)?;
    let second = selector::resolve(&archive, &second, &filters)?;
    for ambiguity in [&first.ambiguity, &second.ambiguity].into_iter().flatten() {
        if !global.quiet {
            eprintln!("netbisect: warning: {ambiguity}");
        }
    }
    options.first_label = first.description;
    options.second_label = second.description;
    let comparison = compare(&first.records, &second.records, &options).map_err(input_error_of)?;

    let text = if global.json {
        let n_differing = comparison
            .groups
            .iter()
            .filter(|group| !group.env_differences.is_empty() || group.config_keys_differ)
            .count();
        if n_differing > 0 && !global.quiet {
            eprintln!(
                "netbisect: warning: the environments of the sides differ in {n_differing} \
                 group{} (see env_differences, config_keys_differ)",
                if n_differing == 1 { "" } else { "s" }
            );
        }
        let mut text =
            serde_json::to_string_pretty(&comparison).context("failed to format the comparison")?;
        text.push('\n');
        text
    } else {
        Renderer::new(global.template_dir.as_deref())
            .render("compare", &comparison)
            .context("failed to render the comparison")?
    };
    std::io::stdout()
        .write_all(text.as_bytes())
        .map_err(crate::exit::stdout_error)?;
    Ok(Code::Ok)
}

/// Options out of range are the user's to fix; anything else (a damaged
/// record) is reported as it is.
fn input_error_of(err: CompareError) -> anyhow::Error {
    match err {
        CompareError::InvalidOption(_) => InputError(err.to_string()).into(),
        other => anyhow::Error::new(other).context("failed to compare the runs"),
    }
}
