//! What `--email` says of runs made in VMs: where the figures come from
//! (the runner, accelerator, vCPUs, memory and network of the guests) and,
//! for the runs of one experiment, the `netbisect ab` command that makes
//! it again, read from the runs themselves: the kernels by their
//! releases, the labels, the rounds, the VM options, the options every
//! configuration shares as flags and those that vary as `--sweep` axes.

use archive::figures::{spec_options, spec_value};
use run_record::env::VmEnv;
use run_record::record::RunRecord;
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

/// The `netbisect ab` command that runs again the experiment whose runs
/// are `sides` (A's and B's, named `names`); `None` when the runs are not
/// of one experiment in VMs, or vary in a way no axis expresses.
pub fn ab_command(sides: [&[RunRecord]; 2], names: [&str; 2]) -> Option<String> {
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
    let mut words: Vec<String> = vec!["netbisect".into(), "ab".into()];
    for (flag, side) in [("--kernel-a", sides[0]), ("--kernel-b", sides[1])] {
        let release = side.first().and_then(|record| {
            record
                .subject
                .kernel_release
                .clone()
                .or_else(|| record.env.local.kernel_release.clone())
        })?;
        words.extend([flag.to_string(), format!("vmlinuz-{release}")]);
    }
    words.extend([
        "--label-a".to_string(),
        shell_word(names[0]),
        "--label-b".to_string(),
        shell_word(names[1]),
        "-n".to_string(),
        rounds.to_string(),
        "--vm-net".to_string(),
        vm.network.clone(),
        "--vm-cpus".to_string(),
        vm.vcpus.to_string(),
        "--vm-memory".to_string(),
        format!("{}M", vm.memory_mib),
        "--vm-accel".to_string(),
        vm.accelerator.clone(),
    ]);
    if vm.vhost {
        words.push("--vm-vhost".to_string());
    }
    if let Some(size) = vm.tx_queue_size {
        words.extend(["--vm-tx-queue-size".to_string(), size.to_string()]);
    }
    for append in &vm.append {
        words.extend(["--vm-append".to_string(), shell_word(append)]);
    }
    for (key, value) in &vm.sysctls {
        words.extend([
            "--vm-sysctl".to_string(),
            shell_word(&format!("{key}={value}")),
        ]);
    }
    words.extend(test_words(&all)?);
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
        words.extend(["--commit".to_string(), shell_word(commit)]);
    }
    Some(words.join(" "))
}

/// `-t TEST`, the options every configuration shares, and a `--sweep` for
/// each that varies.
pub(super) fn test_words(records: &[&RunRecord]) -> Option<Vec<String>> {
    // Each configuration's options by flag: `-m` -> `1024`,
    // `--set gso` -> `off`, `-t` -> `TCP_STREAM`.
    let given: Vec<Vec<(String, String)>> = records
        .iter()
        .map(|record| {
            let mut options = vec![("-t".to_string(), record.spec.test.name().to_string())];
            for option in spec_options(&record.spec) {
                let (flag, value) = match option.command.strip_prefix("--set ") {
                    Some(setting) => {
                        let setting = setting.trim_matches('\'');
                        let (key, value) = setting.split_once('=').unwrap_or((setting, ""));
                        (format!("--set {key}"), value.to_string())
                    }
                    None => match option.command.split_once(' ') {
                        Some((flag, value)) => (flag.to_string(), value.to_string()),
                        None => (option.command.clone(), String::new()),
                    },
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
                Some(key) => {
                    words.extend(["--set".to_string(), shell_word(&format!("{key}={value}"))])
                }
                None => {
                    words.push(flag.clone());
                    if !value.is_empty() {
                        words.push(shell_word(value));
                    }
                }
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
        sweeps.push(format!(
            "--sweep {}",
            shell_word(&format!("{key}={}", shown.join(",")))
        ));
    }
    words.extend(sweeps);
    Some(words)
}

/// `word` as one shell word: as it is when it holds nothing the shell
/// reads, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '=' | '.' | '_' | '-' | ',' | '/' | ':' | '+')
        });
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
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
        let command = ab_command([&current, &patched], ["current", "patched"]).unwrap();
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
            ab_command(
                [std::slice::from_ref(&host), std::slice::from_ref(&host)],
                ["a", "b"]
            ),
            None
        );
    }
}
