//! What `--email` says of how runs were made and how to make them again:
//! where the figures come from (the runner, accelerator, vCPUs, memory
//! and network of the guests) and the lines that run the runs again,
//! each a [`CommandLine`] rendered by run-record's one renderer.
//!
//! - The runs of an experiment: the `netbisect ab` line of each, from the
//!   command its runs kept (the record's `command`): the kernels as their
//!   paths were given, the VM options as given, the axes and values in
//!   the order given, so that pasted it names the same experiment and
//!   finds every run archived; then the options of the comparison that
//!   printed it (`-f`, `--alpha`, `--email`). Runs made before netbisect
//!   kept the command give a line rebuilt from the runs themselves (the
//!   kernels by their releases, the axes in sorted order), which the
//!   mail says starts a new experiment.
//! - Runs outside any experiment: the `netbisect bench` line of each of
//!   their configurations, where its first such run ran (see
//!   [`archive::figures::configuration_command`]), in the comparison's
//!   unit.

use archive::figures::{
    CommandWord, configuration_command, options_of_command, spec_options, spec_value,
    vm_options_of_env,
};
use run_record::env::VmEnv;
use run_record::record::RunRecord;
use run_record::shell::CommandLine;
use std::collections::{BTreeMap, BTreeSet};

/// "qemu 10.0.2 guests under TCG, 2 vCPUs, 1024 MiB, network pair
/// (virtio-net, qemu hub)", when every run of `records` ran in a VM made
/// the same way; `None` when none did.
pub fn measured_in(records: &[&RunRecord]) -> Option<String> {
    let vms: Vec<&VmEnv> = records
        .iter()
        .filter_map(|record| record.env.vm.as_ref())
        .collect();
    let first = vms.first()?;
    if vms.len() != records.len() {
        return Some("some runs in VMs, some on hosts".to_string());
    }
    let describe = |vm: &VmEnv| {
        let mut text = format!(
            "{}{} guests under {}, {} vCPU{}, {} MiB, network {}",
            vm.runner,
            vm.runner_version
                .as_ref()
                .map_or_else(String::new, |version| format!(" {version}")),
            vm.accelerator.to_uppercase(),
            vm.vcpus,
            if vm.vcpus == 1 { "" } else { "s" },
            vm.memory_mib,
            vm.network
        );
        if let Some(backend) = &vm.network_backend {
            text.push_str(&format!(" ({backend})"));
        }
        text
    };
    let text = describe(first);
    if vms.iter().any(|vm| describe(vm) != text) {
        return Some(format!("{text}, and guests made otherwise"));
    }
    Some(text)
}

/// What the CPU figures of `records` mean where they ran in VMs: with
/// both ends in one guest (network `pair` or `loopback`) the local and
/// remote CPU are the same vCPUs; with the guest against this host
/// (`host`), the remote CPU is this host's, busy with the emulator as
/// well as with the test. `None` where no run measured the CPU that
/// needs it said, or none ran in a VM.
pub fn cpu_caveat(records: &[&RunRecord]) -> Option<String> {
    let measured = |record: &RunRecord, remote_only: bool| {
        record.spec.remote_cpu || (!remote_only && record.spec.local_cpu)
    };
    let network = |record: &RunRecord| record.env.vm.as_ref().map(|vm| vm.network.clone());
    let one_guest = records.iter().any(|record| {
        matches!(network(record).as_deref(), Some("pair" | "loopback")) && measured(record, false)
    });
    let against_host = records
        .iter()
        .any(|record| network(record).as_deref() == Some("host") && measured(record, true));
    match (one_guest, against_host) {
        (true, false) => Some(
            "CPU: both ends ran in one guest, so local and remote CPU are the same vCPUs."
                .to_string(),
        ),
        (false, true) => Some(
            "CPU: remote is this host's, busy running the emulator as well as the test."
                .to_string(),
        ),
        (true, true) => Some(
            "CPU: where both ends ran in one guest, local and remote are the same vCPUs; \
             where the guest ran against this host, remote is the host's, busy running \
             the emulator as well."
                .to_string(),
        ),
        (false, false) => None,
    }
}

/// How a comparison is printed: what an `ab` line adds to the
/// experiment's own words, so that pasted it prints the same table.
#[derive(Clone, Debug, PartialEq)]
pub struct Printed<'a> {
    /// netperf's `-f` letter.
    pub units: &'a str,
    /// The significance level.
    pub alpha: f64,
    /// `--email`.
    pub email: bool,
}

/// The lines that run again the runs of `sides` (A's and B's, named
/// `names`), as `--email` lists them.
#[derive(Debug, Default, PartialEq)]
pub struct Reproduce {
    /// One `netbisect ab` line per experiment the runs belong to, in the
    /// order their runs come.
    pub ab_commands: Vec<String>,
    /// Some of those were rebuilt from runs that did not keep their
    /// command (made before netbisect kept it): such a line names the
    /// kernels by release and starts a new experiment.
    pub ab_commands_rebuilt: bool,
    /// The configurations with runs outside any experiment, by spec
    /// key, each with the `netbisect bench` line of its first such run
    /// (its server or VM, its testbed), in the order their runs come.
    pub bench_commands: Vec<(String, CommandLine)>,
}

/// The lines that run again the runs of `sides`: an `ab` line for each
/// experiment (the command its runs kept, checked to be one, else one
/// rebuilt from the runs), printed as `printed` asks, and which
/// configurations have runs outside any experiment. `kept` is the
/// command of an experiment in hand (`ab`'s own), for runs archived
/// before netbisect kept it.
pub fn reproduce(
    sides: [&[RunRecord]; 2],
    names: [&str; 2],
    printed: &Printed<'_>,
    kept: Option<(&str, &[String])>,
) -> Reproduce {
    let all: Vec<&RunRecord> = sides.iter().flat_map(|side| side.iter()).collect();
    let mut reproduce = Reproduce::default();
    let mut experiments: Vec<&str> = Vec::new();
    for record in &all {
        match &record.experiment {
            Some(tag) if !experiments.contains(&tag.id.as_str()) => experiments.push(&tag.id),
            Some(_) => {}
            None => {
                if let Ok(key) = record.compute_spec_key()
                    && !reproduce
                        .bench_commands
                        .iter()
                        .any(|(seen, _)| *seen == key)
                {
                    reproduce
                        .bench_commands
                        .push((key, configuration_command(record)));
                }
            }
        }
    }
    for id in experiments {
        let of_experiment = |side: &[RunRecord]| -> Vec<RunRecord> {
            side.iter()
                .filter(|record| record.experiment.as_ref().is_some_and(|tag| tag.id == id))
                .cloned()
                .collect()
        };
        let runs: Vec<&RunRecord> = all
            .iter()
            .copied()
            .filter(|record| record.experiment.as_ref().is_some_and(|tag| tag.id == id))
            .collect();
        let words = runs
            .iter()
            .filter_map(|record| record.command.as_deref())
            .find(|words| words.first().map(String::as_str) == Some("ab"))
            .or(kept
                .filter(|(kept_id, _)| *kept_id == id)
                .map(|(_, words)| words));
        match words.and_then(|words| experiment_command(words, printed)) {
            Some(command) => reproduce.ab_commands.push(command),
            None => {
                if let Some(command) =
                    rebuilt_ab_command([&of_experiment(sides[0]), &of_experiment(sides[1])], names)
                {
                    reproduce.ab_commands.push(command);
                    reproduce.ab_commands_rebuilt = true;
                }
            }
        }
    }
    reproduce
}

/// The `netbisect ab` line of an experiment from the command its runs
/// kept, printed as `printed` asks; `None` when the words are not an
/// `ab` command netbisect reads.
pub fn experiment_command(words: &[String], printed: &Printed<'_>) -> Option<String> {
    (words.first().map(String::as_str) == Some("ab")
        && crate::request::command::is_kept_command(words))
    .then(|| kept_ab_command(words, printed).render())
}

/// The `netbisect ab` line of an experiment's kept words, with the
/// options `printed` asks before any `--`.
fn kept_ab_command(words: &[String], printed: &Printed<'_>) -> CommandLine {
    let mut command = CommandLine::new(&["netbisect", "ab"]);
    let options = options_of_command(words);
    let mut rest = options.iter().peekable();
    while let Some(CommandWord::Option { flag, value }) = rest.peek() {
        match value {
            Some(value) => command.option(flag, *value),
            None => command.word(*flag),
        };
        rest.next();
    }
    if printed.units != "m" {
        command.option("-f", printed.units);
    }
    if printed.alpha != 0.05 {
        command.option("--alpha", printed.alpha.to_string());
    }
    if printed.email {
        command.word("--email");
    }
    // `--` and the words after it, last, as they were.
    for word in rest {
        match word {
            CommandWord::Raw(word)
            | CommandWord::Option {
                flag: word,
                value: None,
            } => {
                command.word(*word);
            }
            CommandWord::Option {
                flag,
                value: Some(value),
            } => {
                command.option(flag, *value);
            }
        }
    }
    command
}

/// The `netbisect ab` command rebuilt from the runs of one experiment in
/// VMs (A's and B's, named `names`), for runs that did not keep the
/// command that made them: the kernels by their releases, the VM options
/// as the runs describe them, the options every configuration shares as
/// flags and those that vary as `--sweep` axes; `None` when the runs are
/// not of one experiment in VMs, or vary in a way no axis expresses.
pub fn rebuilt_ab_command(sides: [&[RunRecord]; 2], names: [&str; 2]) -> Option<String> {
    let all: Vec<&RunRecord> = sides.iter().flat_map(|side| side.iter()).collect();
    let first = all.first()?;
    let experiment = first.experiment.as_ref()?;
    if all
        .iter()
        .any(|record| record.experiment.as_ref().map(|tag| &tag.id) != Some(&experiment.id))
    {
        return None;
    }
    let vm = first.env.vm.as_ref()?;
    let rounds = all
        .iter()
        .filter_map(|record| record.experiment.as_ref().map(|tag| tag.round))
        .max()?;
    let mut command = CommandLine::new(&["netbisect", "ab"]);
    for (flag, side) in [("--kernel-a", sides[0]), ("--kernel-b", sides[1])] {
        let release = side.first().and_then(|record| {
            record
                .subject
                .kernel_release
                .clone()
                .or_else(|| record.env.local.kernel_release.clone())
        })?;
        command.option(flag, format!("vmlinuz-{release}"));
    }
    command
        .option("--label-a", names[0])
        .option("--label-b", names[1])
        .option("-n", rounds.to_string());
    for (flag, value) in vm_options_of_env(vm) {
        match value {
            Some(value) => command.option(flag, value),
            None => command.word(flag),
        };
    }
    for (flag, value) in test_words(&all)? {
        match value {
            Some(value) => command.option(&flag, value),
            None => command.word(flag),
        };
    }
    if let Some(commit) = &first.subject.commit
        && all
            .iter()
            .all(|record| record.subject.commit.as_ref() == Some(commit))
        && first
            .subject
            .kernel_release
            .as_deref()
            .and_then(|release| run_record::kernel::parse_release(release).commit)
            != Some(commit.clone())
    {
        command.option("--commit", commit.clone());
    }
    Some(command.render())
}

/// `-t TEST`, the options every configuration shares, and a `--sweep` for
/// each that varies, each a flag with its value where it has one. The
/// runs do not say in which order the axes and their values were given:
/// they come in the order the configurations sort in.
pub(super) fn test_words(records: &[&RunRecord]) -> Option<Vec<(String, Option<String>)>> {
    // Each configuration's options by flag: `-m` -> `1024`,
    // `--set gso` -> `off`, `-t` -> `TCP_STREAM`.
    let given: Vec<Vec<(String, String)>> = records
        .iter()
        .map(|record| {
            let mut options = vec![("-t".to_string(), record.spec.test.name().to_string())];
            for option in spec_options(&record.spec) {
                let Some(flag) = option.flag else {
                    continue;
                };
                let value = option.value.unwrap_or_default();
                let (flag, value) = match (flag.as_str(), value.split_once('=')) {
                    ("--set", Some((key, value))) => (format!("--set {key}"), value.to_string()),
                    _ => (flag, value),
                };
                options.push((flag, value));
            }
            options
        })
        .collect();
    // A size one configuration gives and another leaves at its default
    // is an axis over both values: the default is written out where the
    // title left it.
    let defaulted = ["-m", "-M", "-r", "-b"];
    let configurations: BTreeSet<Vec<(String, String)>> = records
        .iter()
        .zip(given.iter())
        .map(|(record, options)| {
            let mut options = options.clone();
            for (rank, flag) in defaulted.iter().enumerate() {
                let elsewhere = given
                    .iter()
                    .any(|other| other.iter().any(|(given, _)| given == flag));
                if !elsewhere || options.iter().any(|(given, _)| given == flag) {
                    continue;
                }
                let Some(value) = spec_value(&record.spec, flag) else {
                    continue;
                };
                let later =
                    |given: &str| defaulted[rank + 1..].contains(&given) || given.starts_with("--");
                let at = options
                    .iter()
                    .position(|(given, _)| later(given))
                    .unwrap_or(options.len());
                options.insert(at, (flag.to_string(), value));
            }
            options
        })
        .collect();
    let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut flag_order: Vec<String> = Vec::new();
    for configuration in &configurations {
        for (flag, value) in configuration {
            if !flag_order.contains(flag) {
                flag_order.push(flag.clone());
            }
            let seen = values.entry(flag.clone()).or_default();
            if !seen.contains(value) {
                seen.push(value.clone());
            }
        }
    }
    let mut words = Vec::new();
    let mut sweeps = Vec::new();
    for flag in &flag_order {
        let flag_values = &values[flag];
        let everywhere = configurations
            .iter()
            .all(|configuration| configuration.iter().any(|(given, _)| given == flag));
        if everywhere && flag_values.len() == 1 {
            let value = &flag_values[0];
            match flag.strip_prefix("--set ") {
                Some(key) => words.push(("--set".to_string(), Some(format!("{key}={value}")))),
                None => words.push((flag.clone(), (!value.is_empty()).then(|| value.clone()))),
            }
            continue;
        }
        // A flag that varies (or is left at its default somewhere)
        // becomes an axis, when one expresses it.
        let key = match flag.as_str() {
            "-t" => "t".to_string(),
            "-m" | "-M" | "-s" | "-S" | "-b" => flag.trim_start_matches('-').to_string(),
            "-r" => "r".to_string(),
            other => other.strip_prefix("--set ")?.to_string(),
        };
        if !everywhere {
            return None;
        }
        let shown: Vec<String> = flag_values
            .iter()
            .map(|value| {
                if key == "r" {
                    value.replace(',', "/")
                } else {
                    value.clone()
                }
            })
            .collect();
        sweeps.push((
            "--sweep".to_string(),
            Some(format!("{key}={}", shown.join(","))),
        ));
    }
    words.extend(sweeps);
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use run_record::record::ExperimentTag;
    use run_record::spec::{RunSpec, Setting, SystemSettings, TestKind};
    use test_fixtures::record::RecordBuilder;

    fn run(label: &str, release: &str, size: u32, gso: bool, round: u32) -> RunRecord {
        let mut spec = RunSpec::defaults(TestKind::TcpStream);
        spec.duration_s = 1.0;
        spec.send_size_bytes = size;
        let mut settings = SystemSettings::default();
        settings.set(Setting::Feature {
            name: "gso".to_string(),
            on: gso,
        });
        spec.system = Some(settings);
        let mut record = RecordBuilder::new(TestKind::TcpStream)
            .spec(spec)
            .label(label)
            .testbed("vm-pair")
            .build();
        record.subject.kernel_release = Some(release.to_string());
        record.env.vm = Some(VmEnv {
            runner: "qemu".to_string(),
            runner_version: Some("10.0.2".to_string()),
            accelerator: "tcg".to_string(),
            vcpus: 2,
            memory_mib: 1024,
            network: "pair".to_string(),
            network_backend: Some("virtio-net, tap".to_string()),
            ..VmEnv::default()
        });
        record.experiment = Some(ExperimentTag {
            id: "0123456789abcdef".to_string(),
            round,
        });
        record.seal().unwrap();
        record
    }

    #[test]
    fn an_experiment_is_made_again_from_its_runs() {
        let mut current = Vec::new();
        let mut patched = Vec::new();
        for round in 1..=2 {
            for size in [1024, 16384] {
                for gso in [true, false] {
                    current.push(run("current", "6.1.0-55-amd64", size, gso, round));
                    patched.push(run("patched", "6.1.0-57-amd64", size, gso, round));
                }
            }
        }
        let command = rebuilt_ab_command([&current, &patched], ["current", "patched"]).unwrap();
        assert_eq!(
            command,
            "netbisect ab --kernel-a vmlinuz-6.1.0-55-amd64 --kernel-b vmlinuz-6.1.0-57-amd64 \
             --label-a current --label-b patched -n 2 --vm-net pair --vm-cpus 2 \
             --vm-memory 1024M --vm-accel tcg -t TCP_STREAM -l 1 --sweep m=1024,16384 \
             --sweep gso=off,on"
        );
        let all: Vec<&RunRecord> = current.iter().collect();
        assert_eq!(
            measured_in(&all).unwrap(),
            "qemu 10.0.2 guests under TCG, 2 vCPUs, 1024 MiB, network pair (virtio-net, tap)"
        );
        // Runs of a host have no such line, and no ab command.
        let host = RecordBuilder::new(TestKind::TcpStream).build();
        assert_eq!(measured_in(&[&host]), None);
        assert_eq!(
            rebuilt_ab_command(
                [std::slice::from_ref(&host), std::slice::from_ref(&host)],
                ["a", "b"]
            ),
            None
        );
    }

    #[test]
    fn each_experiment_runs_again_with_the_command_its_runs_kept() {
        let kept = |id: &str, words: &[&str], record: RunRecord| {
            let mut record = record;
            record.experiment = Some(ExperimentTag {
                id: id.to_string(),
                round: 1,
            });
            record.command = Some(words.iter().map(|word| word.to_string()).collect());
            record.seal().unwrap();
            record
        };
        let words = |kernel_a: &str| {
            vec![
                "ab".to_string(),
                format!("--kernel-a={kernel_a}"),
                "--kernel-b=patched/bzImage".to_string(),
                "--label-a=current".to_string(),
                "--label-b=patched".to_string(),
                "-n=2".to_string(),
                "--vm-accel=auto".to_string(),
                "--sweep=S=18000,2280,28000".to_string(),
                "--".to_string(),
                "-P".to_string(),
                ",5000".to_string(),
            ]
        };
        let first = words("base/bzImage");
        let second = words("other/bzImage");
        fn as_str(words: &[String]) -> Vec<&str> {
            words.iter().map(String::as_str).collect()
        }
        let current = vec![
            kept(
                "00000000000000e1",
                &as_str(&first),
                run("current", "6.1.0-55-amd64", 1024, true, 1),
            ),
            kept(
                "00000000000000e2",
                &as_str(&second),
                run("current", "6.1.0-55-amd64", 1024, true, 1),
            ),
        ];
        let patched = vec![kept(
            "00000000000000e1",
            &as_str(&first),
            run("patched", "6.1.0-57-amd64", 1024, true, 1),
        )];
        let printed = Printed {
            units: "g",
            alpha: 0.01,
            email: true,
        };
        let found = reproduce([&current, &patched], ["current", "patched"], &printed, None);
        assert_eq!(
            found.ab_commands,
            [
                "netbisect ab --kernel-a base/bzImage --kernel-b patched/bzImage --label-a current \
                 --label-b patched -n 2 --vm-accel auto --sweep S=18000,2280,28000 -f g \
                 --alpha 0.01 --email -- -P ,5000",
                "netbisect ab --kernel-a other/bzImage --kernel-b patched/bzImage --label-a current \
                 --label-b patched -n 2 --vm-accel auto --sweep S=18000,2280,28000 -f g \
                 --alpha 0.01 --email -- -P ,5000",
            ]
        );
        assert!(!found.ab_commands_rebuilt && found.bench_commands.is_empty());
        // Words that are not an `ab` command netbisect reads (a global
        // option) are not printed: the line is rebuilt from the runs.
        let hostile_words = ["ab", "--archive=/tmp/x", "--kernel-a=a", "--kernel-b=b"];
        let hostile = [("current", "6.1.0-55-amd64"), ("patched", "6.1.0-57-amd64")].map(
            |(label, release)| {
                vec![kept(
                    "00000000000000e3",
                    &hostile_words,
                    run(label, release, 1024, true, 1),
                )]
            },
        );
        let found = reproduce(
            [&hostile[0], &hostile[1]],
            ["current", "patched"],
            &printed,
            None,
        );
        assert!(found.ab_commands_rebuilt, "{found:?}");
        assert!(
            found.ab_commands[0].contains("vmlinuz-6.1.0-55-amd64"),
            "{found:?}"
        );
    }
}
