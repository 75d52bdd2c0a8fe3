//! The context of `compare` (netperf's layout and the matrix) and of
//! `compare-stats`: the archive's comparison, as `compare --json` prints
//! it, and for `compare` its tables laid out (size sweeps of a test as
//! one table, every configuration of a test in one table with `--layout
//! matrix`, each other configuration in netperf's columns for its test),
//! the marks their rows carry, the sides as `--email` introduces them,
//! and what the sides do not share.

pub(super) mod cells;
mod group;
mod layout;
mod tables;

pub use group::GroupTable;
pub use layout::CompareLayout;
pub use tables::{FamilyTable, Marks, MatrixTable};

use crate::render::table::unique_short_names;
use crate::render::text::plain;
use crate::views::units::Units;
use archive::compare::{Comparison, ComparisonGroup, Side, UnmatchedGroup, Verdict};
use group::group_table;
use layout::{families, matrices};
use run_record::record::{RunRecord, SystemOutcome};
use run_record::spec::RunSpec;
use serde::Serialize;
use std::collections::BTreeSet;
use tables::{Frame, family_table, matrix_table};

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

/// What `--email` adds: the records of each side, and what the
/// comparison's own module found of them.
pub struct Email<'r> {
    /// The records of side A and of side B.
    pub side_records: &'r [Vec<RunRecord>; 2],
    /// Runs of experiments: the `netbisect ab` command that makes each
    /// again, one line each.
    pub ab_commands: Vec<String>,
    /// Some of `ab_commands` were rebuilt from runs that did not keep
    /// their command.
    pub ab_commands_rebuilt: bool,
    /// Runs outside any experiment: the `netbisect bench` command of
    /// each of their configurations, once.
    pub commands: Vec<String>,
    /// Runs in VMs: how the guests were made.
    pub measured_in: Option<String>,
}

/// What the `compare` template is given.
#[derive(Debug, Serialize)]
pub struct CompareContext<'a> {
    /// The comparison, as `compare --json` prints it.
    #[serde(flatten)]
    pub comparison: &'a Comparison,
    /// netperf's -f letter.
    pub units: &'static str,
    /// The unit of throughput as a column head names it (`10^6bits/s`).
    pub unit_name: &'static str,
    /// At most 72 columns.
    pub email: bool,
    /// `--email`: what each side is made of.
    pub email_sides: Vec<EmailSide>,
    /// `--email`, runs of experiments: the `netbisect ab` command that
    /// makes the first again (`ab_commands` has every one).
    pub ab_command: Option<String>,
    /// `--email`, runs of experiments: the `netbisect ab` command that
    /// makes each again, one line each, in the order their runs come.
    pub ab_commands: Vec<String>,
    /// `--email`: some of `ab_commands` were rebuilt from runs made
    /// before netbisect kept an experiment's command (kernels named by
    /// release, axes in sorted order): they start a new experiment.
    pub ab_commands_rebuilt: bool,
    /// `--email`, runs in VMs: how the guests were made.
    pub measured_in: Option<String>,
    /// `--email`: the commands that reproduce each configuration with
    /// runs outside any experiment.
    pub commands: Vec<String>,
    /// `--email`: every environment difference, once.
    pub env_differences: Vec<String>,
    /// The sides' names as the heads of columns name them: each in at
    /// most 8 columns, each different (`first_name`, `second_name` when
    /// they fit).
    pub heads: Vec<String>,
    /// Netperf's layout: each size sweep of three sizes or more in one
    /// table, first.
    pub family_tables: Vec<FamilyTable>,
    /// `--layout matrix`: every configuration of a test in one table.
    pub matrix_tables: Vec<MatrixTable>,
    /// Every other configuration in a table of its own, last.
    pub group_tables: Vec<GroupTable>,
    /// The marks the rows of the tables carry, for the legend.
    pub marks: Marks,
    /// Of the rows with too few samples: the fewest and the most runs a
    /// side that would decide them at the noise seen.
    pub more_runs: Option<MoreRuns>,
    /// With no configuration on both sides: what each side has and the
    /// parameters only one side has.
    pub nothing_in_common: Vec<String>,
    /// What the kernel did not grant of the settings the groups asked:
    /// the legend of `KEY=ASKED(GOT)` where a title names one, a line per
    /// group whose sides were granted differently, and a line per pair of
    /// groups whose settings differ as asked but not as kept (their
    /// change compares identical settings).
    pub granted_notes: Vec<String>,
    /// What the CPU figures of runs in VMs are (one guest's for both
    /// ends, or the emulating host's), where a table shows them.
    pub cpu_caveat: Option<String>,
}

/// The runs each side needs to decide the rows with too few samples.
#[derive(Debug, Serialize)]
pub struct MoreRuns {
    /// The fewest, of the row closest to a verdict.
    pub least: usize,
    /// The most.
    pub most: usize,
}

impl<'a> CompareContext<'a> {
    /// The context of `comparison` in `layout`, its groups' settings
    /// (where several pairs of sides were merged) beside it, throughput
    /// in `units`, with what `email` adds.
    pub fn new(
        comparison: &'a Comparison,
        settings: &[String],
        layout: CompareLayout,
        units: Units,
        email: Option<Email<'_>>,
    ) -> CompareContext<'a> {
        let email_records = email.as_ref().map(|email| email.side_records);
        let env_differences = env_differences(comparison);
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
        // Without `--email`, every configuration's command, as a user's
        // template may print them.
        let every_command = || {
            let mut commands: Vec<String> = Vec::new();
            for group in &comparison.groups {
                if !commands.contains(&group.command) {
                    commands.push(group.command.clone());
                }
            }
            commands
        };
        let (ab_commands, ab_commands_rebuilt, commands, measured_in) =
            email.map_or((Vec::new(), false, every_command(), None), |email| {
                (
                    email.ab_commands,
                    email.ab_commands_rebuilt,
                    email.commands,
                    email.measured_in,
                )
            });
        let names = [
            comparison.first_name.as_str(),
            comparison.second_name.as_str(),
        ];
        let heads = unique_short_names(&names.map(|name| plain(name).into_owned()), 8);
        let frame = Frame {
            units,
            heads: &heads,
            names,
            email: email_records.is_some(),
        };
        let mut marks = Marks::default();
        let groups = &comparison.groups;
        let families = families(groups, layout);
        let matrices = if layout == CompareLayout::Matrix {
            matrices(groups, settings)
        } else {
            Vec::new()
        };
        let family_tables: Vec<FamilyTable> = families
            .iter()
            .map(|family| family_table(family, groups, &frame, &mut marks))
            .collect();
        let matrix_tables: Vec<MatrixTable> = matrices
            .iter()
            .map(|matrix| matrix_table(matrix, groups, &frame, &mut marks))
            .collect();
        let in_tables: BTreeSet<usize> = family_tables
            .iter()
            .flat_map(|table| table.groups.iter().copied())
            .chain(
                matrix_tables
                    .iter()
                    .flat_map(|table| table.rows.iter().map(|row| row.group)),
            )
            .collect();
        let group_tables = groups
            .iter()
            .enumerate()
            .filter(|(idx, _)| !in_tables.contains(idx))
            .map(|(idx, group)| group_table(idx, group, &frame, &mut marks))
            .collect();
        let granted_notes = granted_notes(comparison, [&heads[0], &heads[1]]);
        CompareContext {
            comparison,
            units: units.letter,
            unit_name: units.name,
            email: frame.email,
            email_sides,
            commands,
            ab_command: ab_commands.first().cloned(),
            ab_commands,
            ab_commands_rebuilt,
            measured_in,
            env_differences,
            heads,
            family_tables,
            matrix_tables,
            group_tables,
            marks,
            more_runs: more_runs(comparison),
            nothing_in_common: nothing_in_common(comparison),
            granted_notes,
            cpu_caveat: None,
        }
    }
}

/// The notes of [`CompareContext::granted_notes`] on `comparison`, whose
/// sides are named `names` (the short names a table's heads give them,
/// where the full ones would not fit).
pub(crate) fn granted_notes(comparison: &Comparison, names: [&str; 2]) -> Vec<String> {
    use archive::figures::{NOT_GRANTED_LEGEND, any_not_granted, settings_as_kept};
    let groups = &comparison.groups;
    fn outcomes(group: &ComparisonGroup) -> [Option<&SystemOutcome>; 2] {
        group.granted.each_ref().map(Option::as_ref)
    }
    let unmatched = &comparison.unmatched;
    let mut notes = Vec::new();
    if groups.iter().any(|group| {
        outcomes(group)
            .into_iter()
            .any(|outcome| any_not_granted(&group.run_spec, outcome))
    }) || unmatched
        .iter()
        .any(|group| any_not_granted(&group.run_spec, group.granted.as_ref()))
    {
        notes.push(NOT_GRANTED_LEGEND.to_string());
    }
    for group in groups {
        let [first, second] =
            outcomes(group).map(|outcome| settings_as_kept(&group.run_spec, outcome));
        if first != second {
            notes.push(format!(
                "{}: the kernel kept {} on {} and {} on {}.",
                plain(&group.title),
                first.join(" "),
                plain(names[0]),
                second.join(" "),
                plain(names[1])
            ));
        }
    }
    // Groups of one test whose specs differ in their settings alone.
    let without_settings = |run_spec: &RunSpec| RunSpec {
        system: None,
        ..run_spec.clone()
    };
    for (idx, a) in groups.iter().enumerate() {
        for b in &groups[idx + 1..] {
            let same_kept = [0, 1].into_iter().all(|side| {
                settings_as_kept(&a.run_spec, outcomes(a)[side])
                    == settings_as_kept(&b.run_spec, outcomes(b)[side])
            });
            if a.run_spec.system != b.run_spec.system
                && a.spec.testbed == b.spec.testbed
                && without_settings(&a.run_spec) == without_settings(&b.run_spec)
                && same_kept
            {
                notes.push(format!(
                    "{} and {} ran with identical settings as the kernel kept them: \
                     the difference between them compares identical settings.",
                    plain(&a.title),
                    plain(&b.title)
                ));
            }
        }
    }
    // A configuration only one side has beside one only the other has,
    // asked differently but kept alike: the sides' settings differ only
    // as asked (`gso=on` refused beside `gso=off`).
    let only_in = |side: Side| unmatched.iter().filter(move |group| group.side == side);
    for a in only_in(Side::First) {
        for b in only_in(Side::Second) {
            if a.run_spec.system != b.run_spec.system
                && a.spec.testbed == b.spec.testbed
                && without_settings(&a.run_spec) == without_settings(&b.run_spec)
                && settings_as_kept(&a.run_spec, a.granted.as_ref())
                    == settings_as_kept(&b.run_spec, b.granted.as_ref())
            {
                notes.push(format!(
                    "{} on {} and {} on {} differ only in settings the kernel did not grant: \
                     a change between them compares identical settings.",
                    plain(&a.title),
                    plain(names[0]),
                    plain(&b.title),
                    plain(names[1])
                ));
            }
        }
    }
    notes
}

/// Each environment difference, once, as `--email` lists them.
fn env_differences(comparison: &Comparison) -> Vec<String> {
    let mut env_differences: Vec<String> = Vec::new();
    for group in &comparison.groups {
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
    env_differences
}

/// The fewest and the most more runs a side that would decide a row of
/// too few samples, over every row of every group.
pub(super) fn more_runs(comparison: &Comparison) -> Option<MoreRuns> {
    let runs: Vec<usize> = comparison
        .groups
        .iter()
        .flat_map(|group| &group.rows)
        .filter(|row| row.verdict == Verdict::NeedSamples)
        .filter_map(|row| row.more_runs_per_side)
        .filter(|&runs| runs > 0)
        .collect();
    Some(MoreRuns {
        least: *runs.iter().min()?,
        most: *runs.iter().max()?,
    })
}

/// One side as `--email` introduces it.
#[derive(Debug, Serialize)]
pub struct EmailSide {
    /// The side's name.
    pub name: String,
    /// What the side selected.
    pub description: String,
    /// The labels of its runs.
    pub labels: Vec<String>,
    /// The commits of its runs, cut to 12 digits.
    pub commits: Vec<String>,
    /// The kernels of its runs.
    pub kernels: Vec<String>,
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
