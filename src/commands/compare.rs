//! `netbisect compare A B`: the runs of two selectors (see
//! [`super::selector`]) side by side, group by group, with a significance
//! verdict per metric; `--json` prints the archive's `Comparison`.
//!
//! compare reports and does not judge: it exits with 0 whatever the
//! verdicts are, 2 when a selector or an option is wrong.

use super::archive::open_archive;
use super::selector::{self, Selector};
use crate::cli::{CompareArgs, CompareLayout, GlobalArgs};
use crate::exit::{Code, InputError};
use crate::render::Renderer;
use anyhow::Context;
use archive::RunQuery;
use archive::compare::{
    CompareError, CompareOptions, Comparison, ComparisonGroup, Side, UnmatchedGroup, compare,
};
use archive::figures::spec_options;
use bench_core::spec::{RunSpec, TestKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

pub fn run(global: &GlobalArgs, args: &CompareArgs) -> anyhow::Result<Code> {
    let first = Selector::parse(&args.first)?;
    let second = Selector::parse(&args.second)?;
    let first_selector_value = first.value.clone();
    let second_selector_value = second.value.clone();
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

    let archive = open_archive(global)?;
    let first = selector::resolve(&archive, &first, &filters)?;
    let second = selector::resolve(&archive, &second, &filters)?;
    for ambiguity in [&first.ambiguity, &second.ambiguity].into_iter().flatten() {
        if !global.quiet {
            eprintln!("netbisect: warning: {ambiguity}");
        }
    }
    options.first_label = first.description;
    options.second_label = second.description;
    options.first_name = short_name(&first_selector_value);
    options.second_name = short_name(&second_selector_value);
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
        let mut renderer = Renderer::new(global.template_dir.as_deref());
        match args.layout {
            CompareLayout::Stats => renderer.render("compare-stats", &comparison),
            CompareLayout::Netperf | CompareLayout::Matrix => renderer.render(
                "compare",
                &NetperfContext::new(&comparison, args.layout, &args.units.units, args.email),
            ),
        }
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

/// The short name of a side in the rows of a table: the selector without
/// its kind, a commit or run id cut to 12 digits.
fn short_name(value: &str) -> String {
    let is_hex = value.len() > 12 && value.bytes().all(|byte| byte.is_ascii_hexdigit());
    if is_hex {
        value[..12].to_string()
    } else {
        value.to_string()
    }
}

/// Configurations laid out as one table: a size sweep (`netperf`
/// layout) or every configuration of a test (`matrix`).
#[derive(Debug, Serialize)]
struct Family {
    /// The title: the test and the parameters every member shares.
    title: String,
    /// `send_size` or `request_response`: what the rows are named by.
    parameter: &'static str,
    /// Indices of the members in `groups`, in order.
    groups: Vec<usize>,
    /// True when every member measured CPU.
    with_cpu: bool,
}

/// What the `compare` template is given.
#[derive(Debug, Serialize)]
struct NetperfContext<'a> {
    #[serde(flatten)]
    comparison: &'a Comparison,
    /// netperf's -f letter.
    units: &'a str,
    /// At most 72 columns.
    email: bool,
    families: Vec<Family>,
    /// Indices of the groups shown in a family's table.
    in_families: Vec<usize>,
    /// With no configuration on both sides: what each side has and the
    /// parameters only one side has.
    nothing_in_common: Vec<String>,
}

impl<'a> NetperfContext<'a> {
    fn new(
        comparison: &'a Comparison,
        layout: CompareLayout,
        units: &'a str,
        email: bool,
    ) -> NetperfContext<'a> {
        let families = families(&comparison.groups, layout);
        let in_families = families
            .iter()
            .flat_map(|family| family.groups.iter().copied())
            .collect();
        NetperfContext {
            comparison,
            units,
            email,
            families,
            in_families,
            nothing_in_common: nothing_in_common(comparison),
        }
    }
}

/// The parameter a family of `test` is swept over.
fn swept_parameter(test: TestKind) -> &'static str {
    if test.is_request_response() {
        "request_response"
    } else {
        "send_size"
    }
}

/// `spec` with its swept size set to zero: what the members of a sweep
/// share.
fn without_size(spec: &RunSpec) -> RunSpec {
    let mut shared = spec.clone();
    if spec.test.is_request_response() {
        shared.request_size_bytes = 0;
        shared.response_size_bytes = 0;
    } else {
        shared.send_size_bytes = 0;
    }
    shared
}

/// Families of groups: with the netperf layout, size sweeps of three
/// sizes or more (everything else equal), for stream tests other than
/// UDP_STREAM, whose send and receive lines do not fit a sweep row, and
/// for request/response tests.
fn families(groups: &[ComparisonGroup], layout: CompareLayout) -> Vec<Family> {
    if layout != CompareLayout::Netperf {
        return Vec::new();
    }
    let mut by_shared: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (idx, group) in groups.iter().enumerate() {
        if group.run_spec.test == TestKind::UdpStream {
            continue;
        }
        let shared = without_size(&group.run_spec);
        let key = format!(
            "{}\u{0}{}",
            serde_json::to_string(&shared).unwrap_or_default(),
            group.spec.testbed
        );
        by_shared.entry(key).or_default().push(idx);
    }
    let mut families: Vec<Family> = by_shared
        .into_values()
        .filter(|members| members.len() >= 3)
        .map(|members| {
            let first = &groups[members[0]];
            let test = first.run_spec.test;
            let parameter = swept_parameter(test);
            let swept_flag = if parameter == "send_size" { "-m" } else { "-r" };
            let mut words = vec![test.name().to_string()];
            words.extend(
                spec_options(&first.run_spec)
                    .into_iter()
                    .map(|option| option.title)
                    .filter(|title| !title.starts_with(swept_flag)),
            );
            let title = format!(
                "{} over {swept_flag} sizes (testbed {})",
                words.join(" "),
                first.spec.testbed
            );
            Family {
                title,
                parameter,
                with_cpu: members.iter().all(|&idx| {
                    groups[idx].first_figures.local_service_demand.is_some()
                        && groups[idx].second_figures.local_service_demand.is_some()
                }),
                groups: members,
            }
        })
        .collect();
    families.sort_by_key(|family| family.groups[0]);
    families
}

/// With no configuration on both sides: the parameters (the test and
/// testbed included) only one side has, as "-S 2280 only in patched".
fn nothing_in_common(comparison: &Comparison) -> Vec<String> {
    if !comparison.groups.is_empty() || comparison.unmatched.is_empty() {
        return Vec::new();
    }
    let words_of = |side: Side| -> BTreeSet<String> {
        comparison
            .unmatched
            .iter()
            .filter(|group| group.side == side)
            .flat_map(|group: &UnmatchedGroup| {
                let mut words = vec![
                    group.spec.test.clone(),
                    format!("testbed {}", group.spec.testbed),
                ];
                words.extend(group.title_options.iter().cloned());
                words
            })
            .collect()
    };
    let first = words_of(Side::First);
    let second = words_of(Side::Second);
    let mut lines = Vec::new();
    for (only, other, name) in [
        (&first, &second, &comparison.first_name),
        (&second, &first, &comparison.second_name),
    ] {
        let words: Vec<&str> = only.difference(other).map(String::as_str).collect();
        if !words.is_empty() {
            lines.push(format!("only in {name}: {}", words.join(", ")));
        }
    }
    lines
}
