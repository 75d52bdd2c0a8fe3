//! Which groups of a comparison `compare` lays out as one table: size
//! sweeps of a test (families, netperf's layout) and every configuration
//! of a test (matrices, `--layout matrix`), in the order of their rows.

use archive::compare::ComparisonGroup;
use archive::figures::{granted_words, spec_options, spec_value, title_outcome};
use run_record::record::SystemOutcome;
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
    /// Headers of the columns that name a row (`setting`, `-S`, `-m`).
    pub(super) columns: Vec<String>,
    /// Width of each of those columns, negative for one left-aligned (the
    /// setting of a pair of sides, first, which the table's layout
    /// shortens apart with a legend where the table would pass its
    /// width).
    pub(super) widths: Vec<i64>,
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

/// One parameter of a configuration as a matrix shows it: in a column
/// headed by its flag (`-S`, `gso`), or in the title.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Parameter {
    /// The column's head: an option's flag (`-S` of `-S 2280`, `nodelay`
    /// of `nodelay`) or a setting's key (`gso` of `gso=on`).
    flag: String,
    /// What its column shows (`2280`, `yes`, `on`).
    value: String,
    /// The words of the title ([`archive::figures::SpecOption::title`]).
    title: String,
}

/// The parameters of `spec` a title names, each with its column: the
/// options as [`spec_options`] gives them, and each setting of
/// `spec.system` by its key, so that `gso=on` and `gso=off` are values
/// of one column.
fn parameters(spec: &RunSpec, outcome: Option<&SystemOutcome>) -> Vec<Parameter> {
    let without_settings = RunSpec {
        system: None,
        ..spec.clone()
    };
    let options = spec_options(&without_settings).into_iter().map(|option| {
        let (flag, value) = option
            .title
            .split_once(' ')
            .unwrap_or((&option.title, "yes"));
        Parameter {
            flag: flag.to_string(),
            value: value.to_string(),
            title: option.title.clone(),
        }
    });
    let settings = spec
        .system
        .iter()
        .flat_map(|system| system.settings())
        .map(|setting| {
            let title = granted_words(&setting, outcome);
            let (key, value) = title.split_once('=').unwrap_or((&title, ""));
            Parameter {
                flag: key.to_string(),
                value: value.to_string(),
                title: title.clone(),
            }
        });
    options.chain(settings).collect()
}

/// The outcome of the settings a group's title names.
pub(super) fn group_outcome(group: &ComparisonGroup) -> Option<&SystemOutcome> {
    title_outcome(
        &group.run_spec,
        group.granted.each_ref().map(Option::as_ref),
    )
}

/// A run of a value's text: a number (digits, with a decimal point
/// between digits) or what stands between numbers.
#[derive(Debug)]
enum Chunk<'a> {
    Number(f64),
    Text(&'a str),
}

/// The chunks of `value`, numbers and the text between them.
fn chunks(value: &str) -> Vec<Chunk<'_>> {
    let bytes = value.as_bytes();
    let mut chunks = Vec::new();
    let mut idx = 0;
    while idx < bytes.len() {
        let start = idx;
        if bytes[idx].is_ascii_digit() {
            while idx < bytes.len()
                && (bytes[idx].is_ascii_digit()
                    || (bytes[idx] == b'.' && bytes.get(idx + 1).is_some_and(u8::is_ascii_digit)))
            {
                idx += 1;
            }
            let number = value[start..idx].parse().unwrap_or(f64::MAX);
            chunks.push(Chunk::Number(number));
        } else {
            while idx < bytes.len() && !bytes[idx].is_ascii_digit() {
                idx += 1;
            }
            chunks.push(Chunk::Text(&value[start..idx]));
        }
    }
    chunks
}

/// `a` before `b` as a reader orders a column's values: `-` (not set)
/// first, then by the numbers in them, each by its value (`2280` before
/// `18000`, `0.5` before `10`, `1,1` before `64,64` before `1024,1024`),
/// the text between as text; a total order, ties broken by the text.
fn value_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let is_set = |value: &str| value != "-";
    let chunk_order = |a: &Chunk<'_>, b: &Chunk<'_>| match (a, b) {
        (Chunk::Number(a), Chunk::Number(b)) => a.total_cmp(b),
        (Chunk::Number(_), Chunk::Text(_)) => Ordering::Less,
        (Chunk::Text(_), Chunk::Number(_)) => Ordering::Greater,
        (Chunk::Text(a), Chunk::Text(b)) => a.cmp(b),
    };
    let (a_chunks, b_chunks) = (chunks(a), chunks(b));
    is_set(a)
        .cmp(&is_set(b))
        .then_with(|| {
            a_chunks
                .iter()
                .zip(&b_chunks)
                .map(|(a, b)| chunk_order(a, b))
                .find(|order| order.is_ne())
                .unwrap_or(Ordering::Equal)
        })
        .then_with(|| a_chunks.len().cmp(&b_chunks.len()))
        .then_with(|| a.cmp(b))
}

/// Of the parameters of each member of a matrix: the titles every member
/// shares (for the title), and the flags of the others (the columns), in
/// the order titles name the parameters.
fn common_and_columns(members: &[Vec<Parameter>]) -> (Vec<String>, Vec<String>) {
    let common: Vec<String> = members
        .first()
        .into_iter()
        .flatten()
        .filter(|parameter| members.iter().all(|each| each.contains(parameter)))
        .map(|parameter| parameter.title.clone())
        .collect();
    let mut columns: Vec<String> = Vec::new();
    for parameter in members.iter().flatten() {
        if !common.contains(&parameter.title) && !columns.contains(&parameter.flag) {
            columns.push(parameter.flag.clone());
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
    for ((_, testbed), members) in by_test {
        let parameters: Vec<Vec<Parameter>> = members
            .iter()
            .map(|&idx| parameters(&groups[idx].run_spec, group_outcome(&groups[idx])))
            .collect();
        let (common, mut columns) = common_and_columns(&parameters);
        let with_setting = members.iter().any(|&idx| !settings[idx].is_empty());
        let mut rows: Vec<MatrixRow> = members
            .iter()
            .zip(&parameters)
            .map(|(&idx, parameters)| {
                let mut values: Vec<String> = columns
                    .iter()
                    .map(|column| {
                        parameters
                            .iter()
                            .find(|parameter| parameter.flag == *column)
                            .map(|parameter| parameter.value.clone())
                            .or_else(|| spec_value(&groups[idx].run_spec, column))
                            .unwrap_or_else(|| "-".to_string())
                    })
                    .collect();
                if with_setting {
                    values.insert(0, settings[idx].clone());
                }
                MatrixRow { values, group: idx }
            })
            .collect();
        // Ordered by every column, the first first, each by its values'
        // numbers; the spec key of each group makes the order total.
        rows.sort_by(|a, b| {
            a.values
                .iter()
                .zip(&b.values)
                .map(|(a, b)| value_order(a, b))
                .find(|order| order.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| groups[a.group].spec_key.cmp(&groups[b.group].spec_key))
        });
        let first_idx = rows[0].group;
        if with_setting {
            columns.insert(0, "setting".to_string());
        }
        let widths = columns
            .iter()
            .enumerate()
            .map(|(column_idx, header)| {
                let width = rows
                    .iter()
                    .map(|row: &MatrixRow| row.values[column_idx].len())
                    .chain([header.len()])
                    .max()
                    .unwrap_or(1) as i64;
                // The setting, a name, is left-aligned first, and
                // shortened apart where the table would pass its width.
                if with_setting && column_idx == 0 {
                    -width
                } else {
                    width
                }
            })
            .collect();
        let first = &groups[first_idx];
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

#[cfg(test)]
mod tests {
    use super::*;
    use run_record::spec::Setting;

    #[test]
    fn a_column_orders_its_values_by_their_numbers() {
        let mut values = vec!["18000", "87380", "2280", "28000", "-"];
        values.sort_by(|a, b| value_order(a, b));
        assert_eq!(values, ["-", "2280", "18000", "28000", "87380"]);
        let mut sizes = vec!["1024,1024", "64,64", "1,1", "64,1024"];
        sizes.sort_by(|a, b| value_order(a, b));
        assert_eq!(sizes, ["1,1", "64,64", "64,1024", "1024,1024"]);
        let mut lengths = vec!["10", "0.5", "2.5", "0.25"];
        lengths.sort_by(|a, b| value_order(a, b));
        assert_eq!(lengths, ["0.25", "0.5", "2.5", "10"]);
        let mut rmem = vec![
            "4096 87380 6291456",
            "4096 131072 6291456",
            "4096 16384 4194304",
        ];
        rmem.sort_by(|a, b| value_order(a, b));
        assert_eq!(
            rmem,
            [
                "4096 16384 4194304",
                "4096 87380 6291456",
                "4096 131072 6291456"
            ]
        );
        let mut switches = vec!["on", "off", "-"];
        switches.sort_by(|a, b| value_order(a, b));
        assert_eq!(switches, ["-", "off", "on"]);
    }

    #[test]
    fn a_setting_is_one_column_of_its_key() {
        let mut spec = RunSpec::defaults(TestKind::TcpStream);
        let mut system = run_record::spec::SystemSettings::default();
        system.set(Setting::parse("gso=off").unwrap());
        system.set(Setting::parse("net.ipv4.tcp_rmem=4096 87380 6291456").unwrap());
        spec.system = Some(system);
        let named: Vec<(String, String)> = parameters(&spec, None)
            .into_iter()
            .map(|parameter| (parameter.flag, parameter.value))
            .collect();
        assert_eq!(
            named,
            [
                ("-l".to_string(), "10".to_string()),
                ("gso".to_string(), "off".to_string()),
                (
                    "net.ipv4.tcp_rmem".to_string(),
                    "4096 87380 6291456".to_string()
                ),
            ]
        );
    }
}
