//! The context of `compare` (netperf's layout and the matrix) and of
//! `compare-stats`: the archive's comparison, as `compare --json` prints
//! it, and for `compare` size sweeps of a test as one table (families),
//! every configuration of a test in one table (matrices), the sides as
//! `--email` introduces them, and what the sides do not share.

use crate::cli::CompareLayout;
use archive::compare::{Comparison, ComparisonGroup, Side, UnmatchedGroup};
use archive::figures::{spec_options, spec_value};
use run_record::record::RunRecord;
use run_record::spec::{RunSpec, TestKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The short name of a side in the rows of a table: the selector without
/// its kind, a commit or run id cut to 12 digits.
pub fn short_name(value: &str) -> String {
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
    /// `send_size`, `datagram` or `request_response`: what the rows are
    /// named by ([`swept_parameter`]).
    parameter: &'static str,
    /// Indices of the members in `groups`, in order.
    groups: Vec<usize>,
    /// True when every member measured CPU.
    with_cpu: bool,
}

/// Every configuration of one test in one table (`--layout matrix`).
#[derive(Debug, Serialize)]
struct Matrix {
    /// The test and the parameters every row shares.
    title: String,
    /// Headers of the columns that name a row (`-S`, `-m`, `setting`).
    columns: Vec<String>,
    /// Width of each of those columns.
    widths: Vec<usize>,
    /// The rows, ordered numerically by their parameters.
    rows: Vec<MatrixRow>,
    /// True when every row has service demand on both sides.
    with_cpu: bool,
    /// True for request/response tests (the rate is the figure).
    request_response: bool,
}

/// One configuration of a [`Matrix`].
#[derive(Debug, Serialize)]
struct MatrixRow {
    /// The values of the matrix's columns.
    values: Vec<String>,
    /// Index of the group in `groups`.
    group: usize,
}

/// What `--email` adds: the records of each side, and what the
/// comparison's own module found of them.
pub struct Email<'r> {
    /// The records of side A and of side B.
    pub side_records: &'r [Vec<RunRecord>; 2],
    /// Runs of one experiment: the `netbisect ab` command that makes it
    /// again.
    pub ab_command: Option<String>,
    /// Runs in VMs: how the guests were made.
    pub measured_in: Option<String>,
}

/// What the `compare` template is given.
#[derive(Debug, Serialize)]
pub struct CompareContext<'a> {
    #[serde(flatten)]
    comparison: &'a Comparison,
    /// netperf's -f letter.
    units: &'a str,
    /// At most 72 columns.
    email: bool,
    /// `--email`: what each side is made of.
    email_sides: Vec<EmailSide>,
    /// `--email`, runs of one experiment: the `netbisect ab` command that
    /// makes it again (then `commands` is left empty).
    ab_command: Option<String>,
    /// `--email`, runs in VMs: how the guests were made.
    measured_in: Option<String>,
    /// `--email`: the commands that reproduce each configuration.
    commands: Vec<String>,
    /// `--email`: every environment difference, once.
    env_differences: Vec<String>,
    families: Vec<Family>,
    /// Indices of the groups shown in a family's table.
    in_families: Vec<usize>,
    /// `--layout matrix`: one table per test.
    matrices: Vec<Matrix>,
    /// With no configuration on both sides: what each side has and the
    /// parameters only one side has.
    pub nothing_in_common: Vec<String>,
}

impl<'a> CompareContext<'a> {
    /// The context of `comparison` in `layout`, its groups' settings
    /// (where several pairs of sides were merged) beside it, throughput
    /// in netperf's `-f` `units`, with what `email` adds.
    pub fn new(
        comparison: &'a Comparison,
        settings: &[String],
        layout: CompareLayout,
        units: &'a str,
        email: Option<Email<'_>>,
    ) -> CompareContext<'a> {
        let email_records = email.as_ref().map(|email| email.side_records);
        let families = families(&comparison.groups, layout);
        let matrices = if layout == CompareLayout::Matrix {
            matrices(&comparison.groups, settings)
        } else {
            Vec::new()
        };
        let in_families = families
            .iter()
            .flat_map(|family| family.groups.iter().copied())
            .chain(
                matrices
                    .iter()
                    .flat_map(|matrix| matrix.rows.iter().map(|row| row.group)),
            )
            .collect();
        let mut commands: Vec<String> = Vec::new();
        let mut env_differences: Vec<String> = Vec::new();
        for group in &comparison.groups {
            if !commands.contains(&group.command) {
                commands.push(group.command.clone());
            }
            for difference in &group.env_differences {
                let text = format!(
                    "{} {}: {} -> {}",
                    match difference.host {
                        archive::compare::Host::Local => "local",
                        archive::compare::Host::Remote => "remote",
                    },
                    difference.key,
                    difference.first.as_deref().unwrap_or("(unset)"),
                    difference.second.as_deref().unwrap_or("(unset)")
                );
                if !env_differences.contains(&text) {
                    env_differences.push(text);
                }
            }
        }
        let email_sides = email_records.map_or_else(Vec::new, |records| {
            [
                (&comparison.first_name, &comparison.first_label, &records[0]),
                (
                    &comparison.second_name,
                    &comparison.second_label,
                    &records[1],
                ),
            ]
            .into_iter()
            .map(|(name, description, records)| EmailSide::of(name, description, records))
            .collect()
        });
        let (ab_command, measured_in) =
            email.map_or((None, None), |email| (email.ab_command, email.measured_in));
        if ab_command.is_some() {
            commands.clear();
        }
        CompareContext {
            comparison,
            units,
            email: email_records.is_some(),
            email_sides,
            ab_command,
            measured_in,
            commands,
            env_differences,
            families,
            in_families,
            matrices,
            nothing_in_common: nothing_in_common(comparison),
        }
    }
}

/// The order in which titles name the parameters
/// ([`archive::figures::spec_options`]).
const TITLE_ORDER: &[&str] = &[
    "-6", "-l", "-c", "-C", "-T", "-I", "-i", "-s", "-S", "-m", "-M", "-r", "nodelay", "flows",
    "threads", "warm-up",
];

/// One side as `--email` introduces it.
#[derive(Debug, Serialize)]
struct EmailSide {
    name: String,
    description: String,
    labels: Vec<String>,
    commits: Vec<String>,
    kernels: Vec<String>,
}

impl EmailSide {
    fn of(name: &str, description: &str, records: &[RunRecord]) -> EmailSide {
        let collect = |values: Vec<Option<String>>| -> Vec<String> {
            values
                .into_iter()
                .flatten()
                .collect::<BTreeSet<String>>()
                .into_iter()
                .collect()
        };
        EmailSide {
            name: name.to_string(),
            description: description.to_string(),
            labels: collect(
                records
                    .iter()
                    .map(|run| run.subject.label.clone())
                    .collect(),
            ),
            commits: collect(
                records
                    .iter()
                    .map(|run| run.subject.commit.as_ref().map(|commit| short_name(commit)))
                    .collect(),
            ),
            kernels: collect(
                records
                    .iter()
                    .map(|run| {
                        run.subject
                            .kernel_release
                            .clone()
                            .or_else(|| run.env.local.kernel_release.clone())
                    })
                    .collect(),
            ),
        }
    }
}

/// The flag of an option's title (`-S` of `-S 2280`) and its value.
fn flag_and_value(title: &str) -> (&str, &str) {
    title.split_once(' ').unwrap_or((title, "yes"))
}

/// A numeric key that orders configurations by their parameters.
fn numeric_order(spec: &RunSpec) -> (Option<u32>, Option<u32>, u32, u32, u32, u32, u32, u64) {
    (
        spec.remote_socket_buffer_bytes,
        spec.local_socket_buffer_bytes,
        spec.send_size_bytes,
        spec.recv_size_bytes,
        spec.request_size_bytes,
        spec.response_size_bytes,
        spec.flows,
        (spec.duration_s * 1000.0) as u64,
    )
}

/// One matrix per test and testbed, with the parameters that differ
/// between its configurations as columns, and the setting of each pair
/// of sides when there are several.
fn matrices(groups: &[ComparisonGroup], settings: &[String]) -> Vec<Matrix> {
    let mut by_test: BTreeMap<(usize, String), Vec<usize>> = BTreeMap::new();
    for (idx, group) in groups.iter().enumerate() {
        let rank = TestKind::ALL
            .iter()
            .position(|kind| *kind == group.run_spec.test)
            .unwrap_or(usize::MAX);
        by_test
            .entry((rank, group.spec.testbed.clone()))
            .or_default()
            .push(idx);
    }
    let mut matrices = Vec::new();
    for ((_, testbed), mut members) in by_test {
        let options: Vec<Vec<String>> = members
            .iter()
            .map(|&idx| {
                spec_options(&groups[idx].run_spec)
                    .into_iter()
                    .map(|option| option.title)
                    .collect()
            })
            .collect();
        let common: Vec<String> = options[0]
            .iter()
            .filter(|title| options.iter().all(|each| each.contains(title)))
            .cloned()
            .collect();
        let mut columns: Vec<String> = Vec::new();
        for each in &options {
            for title in each {
                let (flag, _) = flag_and_value(title);
                if !common.contains(title) && !columns.iter().any(|column| column == flag) {
                    columns.push(flag.to_string());
                }
            }
        }
        // Columns in the order titles name the parameters.
        let rank_of = |flag: &str| {
            TITLE_ORDER
                .iter()
                .position(|known| *known == flag)
                .unwrap_or(TITLE_ORDER.len())
        };
        columns.sort_by_key(|flag| rank_of(flag));
        let with_setting = members.iter().any(|&idx| !settings[idx].is_empty());
        members.sort_by(|&a, &b| {
            numeric_order(&groups[a].run_spec)
                .cmp(&numeric_order(&groups[b].run_spec))
                .then_with(|| settings[a].cmp(&settings[b]))
        });
        let rows: Vec<MatrixRow> = members
            .iter()
            .map(|&idx| {
                let titles: Vec<String> = spec_options(&groups[idx].run_spec)
                    .into_iter()
                    .map(|option| option.title)
                    .collect();
                let mut values: Vec<String> = columns
                    .iter()
                    .map(|column| {
                        titles
                            .iter()
                            .map(|title| flag_and_value(title))
                            .find(|(flag, _)| flag == column)
                            .map(|(_, value)| value.to_string())
                            .or_else(|| spec_value(&groups[idx].run_spec, column))
                            .unwrap_or_else(|| "-".to_string())
                    })
                    .collect();
                if with_setting {
                    values.push(settings[idx].clone());
                }
                MatrixRow { values, group: idx }
            })
            .collect();
        if with_setting {
            columns.push("setting".to_string());
        }
        let widths = columns
            .iter()
            .enumerate()
            .map(|(column_idx, header)| {
                rows.iter()
                    .map(|row: &MatrixRow| row.values[column_idx].len())
                    .chain([header.len()])
                    .max()
                    .unwrap_or(1)
            })
            .collect();
        let first = &groups[members[0]];
        let mut words = vec![first.run_spec.test.name().to_string()];
        words.extend(common);
        matrices.push(Matrix {
            title: format!("{} (testbed {testbed})", words.join(" ")),
            columns,
            widths,
            rows,
            with_cpu: members.iter().all(|&idx| {
                groups[idx].first_figures.local_service_demand.is_some()
                    && groups[idx].second_figures.local_service_demand.is_some()
            }),
            request_response: first.run_spec.test.is_request_response(),
        });
    }
    matrices
}

/// What the rows of a family of `test` are: `request_response` sizes,
/// `datagram` sizes (UDP_STREAM, a send and a receive line each) or
/// `send_size`s.
fn swept_parameter(test: TestKind) -> &'static str {
    if test.is_request_response() {
        "request_response"
    } else if test == TestKind::UdpStream {
        "datagram"
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
/// sizes or more (everything else equal), of every test. A UDP_STREAM
/// sweep gives each size a send and a receive line, as netperf's table
/// does.
fn families(groups: &[ComparisonGroup], layout: CompareLayout) -> Vec<Family> {
    if layout != CompareLayout::Netperf {
        return Vec::new();
    }
    let mut by_shared: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (idx, group) in groups.iter().enumerate() {
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
            let swept_flag = if parameter == "request_response" {
                "-r"
            } else {
                "-m"
            };
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
