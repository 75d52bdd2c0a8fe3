//! Which groups of a comparison `compare` lays out as one table: size
//! sweeps of a test (families, netperf's layout) and every configuration
//! of a test (matrices, `--layout matrix`), in the order of their rows.

use archive::compare::ComparisonGroup;
use archive::figures::{spec_options, spec_value};
use run_record::spec::{RunSpec, TestKind};
use serde::Serialize;
use std::collections::BTreeMap;

/// How a comparison lays out its tables (`--layout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareLayout {
    /// netperf's tables, a row per side, size sweeps of a test in one.
    Netperf,
    /// One table per test, a row per configuration.
    Matrix,
    /// Mean, spread, change and p value of every metric (the
    /// `compare-stats` template).
    Stats,
}

/// What names the rows of a size sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Swept {
    /// Send sizes (`-m`) of a stream test.
    SendSize,
    /// Send sizes of UDP_STREAM: a send and a receive line each, as
    /// netperf's table has them.
    Datagram,
    /// Request and response sizes (`-r`).
    RequestResponse,
}

/// Configurations laid out as one table: a size sweep (`netperf`
/// layout).
#[derive(Debug)]
pub(super) struct Family {
    /// The title: the test and the parameters every member shares.
    pub(super) title: String,
    /// What the rows are named by ([`swept_parameter`]).
    pub(super) swept: Swept,
    /// Indices of the members in `groups`, in order.
    pub(super) groups: Vec<usize>,
    /// True when every member measured CPU.
    pub(super) with_cpu: bool,
}

/// Every configuration of one test in one table (`--layout matrix`).
#[derive(Debug)]
pub(super) struct Matrix {
    /// The test and the parameters every row shares.
    pub(super) title: String,
    /// Headers of the columns that name a row (`-S`, `-m`, `setting`).
    pub(super) columns: Vec<String>,
    /// Width of each of those columns.
    pub(super) widths: Vec<usize>,
    /// The rows, ordered numerically by their parameters.
    pub(super) rows: Vec<MatrixRow>,
    /// True when every row has service demand on both sides.
    pub(super) with_cpu: bool,
    /// True for request/response tests (the rate is the figure).
    pub(super) request_response: bool,
}

/// One configuration of a matrix.
#[derive(Clone, Debug, Serialize)]
pub struct MatrixRow {
    /// The values of the matrix's columns.
    pub values: Vec<String>,
    /// Index of the group in the comparison's `groups`.
    pub group: usize,
}

/// The order in which titles name the parameters
/// ([`archive::figures::spec_options`]).
const TITLE_ORDER: &[&str] = &[
    "-6", "-l", "-c", "-C", "-T", "-I", "-i", "-s", "-S", "-m", "-M", "-r", "nodelay", "flows",
    "threads", "warm-up",
];

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

/// Of the option titles of each member of a matrix: those every member
/// shares (for the title), and the flags of the others (the columns), in
/// the order titles name the parameters.
fn common_and_columns(options: &[Vec<String>]) -> (Vec<String>, Vec<String>) {
    let common: Vec<String> = options
        .first()
        .into_iter()
        .flatten()
        .filter(|title| options.iter().all(|each| each.contains(title)))
        .cloned()
        .collect();
    let mut columns: Vec<String> = Vec::new();
    for title in options.iter().flatten() {
        let (flag, _) = flag_and_value(title);
        if !common.contains(title) && !columns.iter().any(|column| column == flag) {
            columns.push(flag.to_string());
        }
    }
    let rank_of = |flag: &str| {
        TITLE_ORDER
            .iter()
            .position(|known| *known == flag)
            .unwrap_or(TITLE_ORDER.len())
    };
    columns.sort_by_key(|flag| rank_of(flag));
    (common, columns)
}

/// One matrix per test and testbed, with the parameters that differ
/// between its configurations as columns, and the setting of each pair
/// of sides when there are several.
pub(super) fn matrices(groups: &[ComparisonGroup], settings: &[String]) -> Vec<Matrix> {
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
        let (common, mut columns) = common_and_columns(&options);
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

/// What the rows of a family of `test` are named by.
fn swept_parameter(test: TestKind) -> Swept {
    if test.is_request_response() {
        Swept::RequestResponse
    } else if test == TestKind::UdpStream {
        Swept::Datagram
    } else {
        Swept::SendSize
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
pub(super) fn families(groups: &[ComparisonGroup], layout: CompareLayout) -> Vec<Family> {
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
            let swept = swept_parameter(test);
            let swept_flag = if swept == Swept::RequestResponse {
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
                swept,
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
