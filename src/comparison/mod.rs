//! A comparison as `compare` and `ab` print it: the runs of two selectors
//! (see [`crate::selector`]) side by side, group by group, with a
//! significance verdict per metric; `--json` prints the archive's
//! `Comparison`, the text is the `compare` template's (netperf's layout,
//! the matrix, `--email`, see [`crate::views::compare`]) or
//! `compare-stats`.

pub(crate) mod reproduce;

pub use reproduce::{Printed, experiment_command};

pub use crate::views::compare::CompareLayout;

use crate::exit::{self, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::render::text::plain;
use crate::selector::{self, Selector};
use crate::store::open_archive_read;
use archive::compare::{
    ChangeKind, CompareError, CompareOptions, Comparison, ComparisonRow, Verdict, compare,
};
use archive::{Archive, RunQuery};
use run_record::spec::TestKind;

use crate::views::compare::{CompareContext, Email, short_name};
use crate::views::compare_stats::CompareStatsContext;
use crate::views::units::Units;

/// What to compare and how to print it.
#[derive(Clone, Debug)]
pub struct ComparisonRequest {
    /// The base side: comma-separated selectors, paired in order with
    /// `second`'s.
    pub first: String,
    /// The patched side.
    pub second: String,
    /// Significance level.
    pub alpha: f64,
    /// Smallest change of the means reported as significant, percent.
    pub min_effect: f64,
    /// Only runs of this test kind.
    pub test: Option<TestKind>,
    /// Only runs of this testbed.
    pub testbed: Option<String>,
    /// Layout of the tables.
    pub layout: CompareLayout,
    /// One block to paste in a mail.
    pub email: bool,
    /// Throughput unit, netperf's `-f` letter.
    pub units: String,
    /// Only runs of this experiment (`ab`'s id).
    pub experiment: Option<String>,
    /// The command of that experiment as its runs keep it, when in hand
    /// (`ab`'s own): its line for runs archived before netbisect kept it.
    pub experiment_command: Option<Vec<String>>,
}

impl ComparisonRequest {
    /// Checks the options before any archive is read.
    pub fn check(&self) -> exit::Result<()> {
        if self.email && self.layout == CompareLayout::Stats {
            return Err(InputError(
                "--email prints netperf's tables: give --layout netperf or matrix".to_string(),
            )
            .into());
        }
        let options = CompareOptions {
            alpha: self.alpha,
            min_effect_pct: self.min_effect,
            ..CompareOptions::default()
        };
        compare(&[], &[], &options).map_err(input_error_of)?;
        self.selectors()?;
        Ok(())
    }

    /// The pairs of sides A and B name, in order.
    fn selectors(&self) -> exit::Result<Vec<(Selector, Selector)>> {
        let first_words: Vec<&str> = self.first.split(',').collect();
        let second_words: Vec<&str> = self.second.split(',').collect();
        if first_words.len() != second_words.len() {
            return Err(InputError(format!(
                "A names {} sides and B {}: list as many on each, paired in order \
                 (org-gso-on,org-gso-off new-gso-on,new-gso-off)",
                first_words.len(),
                second_words.len()
            ))
            .into());
        }
        let mut selectors = Vec::new();
        for (first, second) in first_words.iter().zip(&second_words) {
            selectors.push((Selector::parse(first)?, Selector::parse(second)?));
        }
        Ok(selectors)
    }
}

/// Compares the two sides of `args` in the archive, prints the result
/// and returns the comparison, for a caller that judges it.
pub fn print_comparison(
    global: &GlobalOptions,
    args: &ComparisonRequest,
) -> exit::Result<Comparison> {
    args.check()?;
    let archive = open_archive_read(global)?;
    let compared = compare_sides(global, &archive, args)?;
    let json = || {
        let n_differing = compared
            .comparison
            .groups
            .iter()
            .filter(|group| !group.env_differences.is_empty() || group.config_keys_differ)
            .count();
        if n_differing > 0 && !global.quiet() {
            eprintln!(
                "netbisect: warning: the environments of the sides differ in {n_differing} \
                 group{} (see env_differences, config_keys_differ)",
                if n_differing == 1 { "" } else { "s" }
            );
        }
        output::pretty(&compared.comparison, "the comparison")
    };
    output::emit(global, json, || compared.text(global, args))?;
    Ok(compared.comparison)
}

/// The rows of `comparison` where the second side is significantly worse
/// than the first (by at least the comparison's minimum effect, which a
/// significant verdict includes), with the title of each one's group.
pub fn changes_for_the_worse(comparison: &Comparison) -> Vec<(&str, &ComparisonRow)> {
    comparison
        .groups
        .iter()
        .flat_map(|group| group.rows.iter().map(|row| (group.title.as_str(), row)))
        .filter(|(_, row)| {
            row.verdict == Verdict::Significant && row.direction == Some(ChangeKind::Regression)
        })
        .collect()
}

/// The text `compare` prints for `args` (never its `--json`), from
/// `archive`: what a published page shows of an experiment.
pub fn comparison_text(
    global: &GlobalOptions,
    archive: &Archive,
    args: &ComparisonRequest,
) -> exit::Result<String> {
    args.check()?;
    compare_sides(global, archive, args)?.text(global, args)
}

/// A comparison made, with what its text needs beside it.
struct Compared {
    comparison: Comparison,
    /// Each group's settings, where several pairs of sides were merged.
    settings: Vec<String>,
    /// The records of side A and of side B.
    side_records: [Vec<run_record::record::RunRecord>; 2],
}

impl Compared {
    /// The `compare` template's text (or `compare-stats`'s).
    fn text(&self, global: &GlobalOptions, args: &ComparisonRequest) -> exit::Result<String> {
        match args.layout {
            CompareLayout::Stats => output::template(
                global,
                "compare-stats",
                &CompareStatsContext::new(&self.comparison),
                "the comparison",
            ),
            CompareLayout::Netperf | CompareLayout::Matrix => {
                let units = Units::parse(&args.units).map_err(|err| InputError(err.to_string()))?;
                let email = args.email.then(|| self.email(args));
                let mut context = CompareContext::new(
                    &self.comparison,
                    &self.settings,
                    args.layout,
                    units,
                    email,
                );
                let [first, second] = &self.side_records;
                let all: Vec<&run_record::record::RunRecord> = first.iter().chain(second).collect();
                context.cpu_caveat = reproduce::cpu_caveat(&all);
                output::template(global, "compare", &context, "the comparison")
            }
        }
    }
}

impl Compared {
    /// What `--email` adds to the text: the records of the sides, the
    /// commands that make their runs again (an `ab` line per experiment,
    /// a `bench` line per configuration of the runs outside any),
    /// printed as `args` prints, and where they were made.
    fn email(&self, args: &ComparisonRequest) -> Email<'_> {
        let [first, second] = &self.side_records;
        let all: Vec<&run_record::record::RunRecord> = first.iter().chain(second).collect();
        let printed = reproduce::Printed {
            units: &args.units,
            alpha: args.alpha,
            email: args.email,
        };
        let kept = args
            .experiment
            .as_deref()
            .zip(args.experiment_command.as_deref());
        let reproduce = reproduce::reproduce(
            [first, second],
            [&self.comparison.first_name, &self.comparison.second_name],
            &printed,
            kept,
        );
        let mut commands: Vec<String> = Vec::new();
        for group in &self.comparison.groups {
            let Some((_, command)) = reproduce
                .bench_commands
                .iter()
                .find(|(key, _)| *key == group.spec_key)
            else {
                continue;
            };
            let mut command = command.clone();
            // The table's unit, so that the run prints in it too.
            if args.units != "m" {
                command.option("-f", args.units.clone());
            }
            let command = command.render();
            if !commands.contains(&command) {
                commands.push(command);
            }
        }
        Email {
            side_records: &self.side_records,
            ab_commands: reproduce.ab_commands,
            ab_commands_rebuilt: reproduce.ab_commands_rebuilt,
            commands,
            measured_in: reproduce::measured_in(&all),
        }
    }
}

/// The sides of `args` read from `archive` and compared.
fn compare_sides(
    global: &GlobalOptions,
    archive: &Archive,
    args: &ComparisonRequest,
) -> exit::Result<Compared> {
    let selectors = args.selectors()?;
    let filters = RunQuery {
        test: args.test,
        testbed: args.testbed.clone(),
        ..RunQuery::default()
    };
    let base_options = CompareOptions {
        alpha: args.alpha,
        min_effect_pct: args.min_effect,
        ..CompareOptions::default()
    };

    let mut pairs = Vec::new();
    let mut side_records: [Vec<run_record::record::RunRecord>; 2] = [Vec::new(), Vec::new()];
    for (first, second) in &selectors {
        let mut first_selection = selector::resolve(archive, first, &filters)?;
        let mut second_selection = selector::resolve(archive, second, &filters)?;
        if let Some(id) = &args.experiment {
            for (selection, selector) in [
                (&mut first_selection, first),
                (&mut second_selection, second),
            ] {
                selection
                    .records
                    .retain(|record| record.experiment.as_ref().is_some_and(|tag| &tag.id == id));
                if selection.records.is_empty() {
                    return Err(InputError(format!(
                        "experiment {id} has no runs of {}",
                        selector.value
                    ))
                    .into());
                }
                let n_runs = selection.records.len();
                selection.description = format!(
                    "{}, {n_runs} run{} of experiment {id}{}",
                    selector.value,
                    if n_runs == 1 { "" } else { "s" },
                    selector::kernels_of(&selection.records)
                );
            }
        }
        for ambiguity in [&first_selection.ambiguity, &second_selection.ambiguity]
            .into_iter()
            .flatten()
        {
            if !global.quiet() {
                output::note(&format!("warning: {ambiguity}"));
            }
        }
        for (selection, selector) in [
            (&mut first_selection, first),
            (&mut second_selection, second),
        ] {
            if let Some(mixed) = mixed_kernels(&selection.records) {
                if !global.quiet() {
                    output::note(&format!(
                        "warning: {} pools the runs of {}; give one kernel or \
                         commit per side (an experiment's own runs: --experiment ID)",
                        selector.value,
                        plain(&mixed)
                    ));
                }
                selection.description = format!("{}; POOLS {mixed}", selection.description);
            }
        }
        let options = CompareOptions {
            first_label: first_selection.description,
            second_label: second_selection.description,
            first_name: short_name(&first.value),
            second_name: short_name(&second.value),
            ..base_options.clone()
        };
        let comparison = compare(
            &first_selection.records,
            &second_selection.records,
            &options,
        )
        .map_err(input_error_of)?;
        pairs.push(comparison);
        side_records[0].extend(first_selection.records);
        side_records[1].extend(second_selection.records);
    }
    let (comparison, settings) = merge_pairs(pairs);
    Ok(Compared {
        comparison,
        settings,
        side_records,
    })
}

/// The layout `ab` prints the experiment whose configurations `records`
/// are (a run of each) in: netperf's for one configuration or one size
/// swept (`-m` or `-r`), else the matrix.
pub fn experiment_layout(records: &[&run_record::record::RunRecord]) -> CompareLayout {
    let Some(words) = reproduce::test_words(records) else {
        return CompareLayout::Matrix;
    };
    let axes: Vec<&str> = words
        .iter()
        .filter(|(flag, _)| flag == "--sweep")
        .filter_map(|(_, axis)| axis.as_deref())
        .collect();
    match axes.as_slice() {
        [] => CompareLayout::Netperf,
        [axis] if axis.starts_with("m=") || axis.starts_with("r=") => CompareLayout::Netperf,
        _ => CompareLayout::Matrix,
    }
}

/// "2 kernels (6.1.0-55-amd64, 6.1.0-57-amd64)" when `records` come from
/// more than one kernel release or commit, which one side of a comparison
/// should not.
fn mixed_kernels(records: &[run_record::record::RunRecord]) -> Option<String> {
    let mut releases = std::collections::BTreeSet::new();
    let mut commits = std::collections::BTreeSet::new();
    for record in records {
        if let Some(release) = record.subject.kernel_release.as_deref().or(record
            .env
            .local
            .kernel_release
            .as_deref())
        {
            releases.insert(release);
        }
        if let Some(commit) = record.subject.commit.as_deref() {
            commits.insert(&commit[..commit.len().min(12)]);
        }
    }
    let list =
        |set: &std::collections::BTreeSet<&str>| set.iter().copied().collect::<Vec<_>>().join(", ");
    if releases.len() > 1 {
        Some(format!("{} kernels ({})", releases.len(), list(&releases)))
    } else if commits.len() > 1 {
        Some(format!("{} commits ({})", commits.len(), list(&commits)))
    } else {
        None
    }
}

/// Options out of range are the user's to fix; anything else (a damaged
/// record) is reported as it is.
fn input_error_of(err: CompareError) -> exit::Failure {
    match err {
        CompareError::InvalidOption(_) => InputError(err.to_string()).into(),
        other => exit::Failure::from(other).context("failed to compare the runs"),
    }
}

/// The longest prefix of `names` that ends before a `-` (or is whole).
fn common_prefix(names: &[&str]) -> String {
    let Some(first) = names.first() else {
        return String::new();
    };
    let mut len = first.len();
    for name in &names[1..] {
        len = len.min(
            first
                .bytes()
                .zip(name.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    let prefix = &first[..len];
    match prefix.rfind('-') {
        Some(dash) if names.iter().all(|name| name.len() > len) => first[..dash].to_string(),
        _ if names.iter().all(|name| name.len() == len) => prefix.to_string(),
        _ => String::new(),
    }
}

/// One comparison of several pairs of sides (`org-gso-on,org-gso-off
/// new-gso-on,new-gso-off`): the groups of every pair, each titled with
/// its setting (the first side's name without the prefix its names
/// share), and the setting of each group. One pair is returned as it is.
fn merge_pairs(mut pairs: Vec<Comparison>) -> (Comparison, Vec<String>) {
    if pairs.len() == 1 {
        let comparison = pairs.remove(0);
        let settings = vec![String::new(); comparison.groups.len()];
        return (comparison, settings);
    }
    let first_names: Vec<&str> = pairs.iter().map(|pair| pair.first_name.as_str()).collect();
    let second_names: Vec<&str> = pairs.iter().map(|pair| pair.second_name.as_str()).collect();
    let first_prefix = common_prefix(&first_names);
    let second_prefix = common_prefix(&second_names);
    let setting_of = |pair: &Comparison| {
        let setting = pair
            .first_name
            .strip_prefix(&first_prefix)
            .unwrap_or(&pair.first_name)
            .trim_start_matches('-');
        if setting.is_empty() {
            format!("{}/{}", pair.first_name, pair.second_name)
        } else {
            setting.to_string()
        }
    };
    let mut merged = pairs[0].clone();
    merged.groups.clear();
    merged.unmatched.clear();
    merged.first_label = first_names.join(", ");
    merged.second_label = second_names.join(", ");
    merged.first_name = if first_prefix.is_empty() {
        "A".to_string()
    } else {
        first_prefix.clone()
    };
    merged.second_name = if second_prefix.is_empty() {
        "B".to_string()
    } else {
        second_prefix
    };
    let mut settings = Vec::new();
    for pair in &pairs {
        let setting = setting_of(pair);
        for group in &pair.groups {
            let mut group = group.clone();
            group.title = format!("{}, {setting}", group.title);
            merged.groups.push(group);
            settings.push(setting.clone());
        }
        for group in &pair.unmatched {
            let mut group = group.clone();
            group.title = format!("{}, {setting}", group.title);
            merged.unmatched.push(group);
        }
    }
    (merged, settings)
}
