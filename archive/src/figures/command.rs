//! The `netbisect bench` line of a run's configuration where it ran: the
//! server it was measured against (`-H`, `-p`), or the kernel and VM it
//! was measured in, its testbed where the line would not name it alike,
//! and its spec.
//!
//! A run made in a VM by `bench --kernel` or `ab` carries the command
//! that made it (the record's `command`, since 1.4), one option a word
//! (`--kernel-a=base/bzImage`, `--vm-vhost`), words after `--` as they
//! were: the kernel and the VM options come from there as they were
//! given. An older run, or one of a bisection, has only its `vm`
//! section: the VM options are read from it (the accelerator as it was
//! granted) and the kernel is named by its release (`vmlinuz-RELEASE`),
//! the best the record knows.

use super::add_spec;
use run_record::env::VmEnv;
use run_record::record::{DEFAULT_CONTROL_PORT, RunRecord};
use run_record::shell::CommandLine;

/// One word of a record's `command`: an option (`--vm-net=pair` is
/// `--vm-net` with `pair`, `--vm-vhost` a flag alone), or a word after
/// `--`, handed on as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandWord<'a> {
    /// A flag, with its value where it has one.
    Option {
        /// The flag (`--kernel-a`, `-n`).
        flag: &'a str,
        /// Its value.
        value: Option<&'a str>,
    },
    /// `--`, or a word after it.
    Raw(&'a str),
}

/// The words of a record's `command` after its subcommand, read.
pub fn options_of_command(words: &[String]) -> Vec<CommandWord<'_>> {
    let mut options = Vec::new();
    let mut raw = false;
    for word in words.iter().skip(1) {
        if raw || word == "--" {
            raw = true;
            options.push(CommandWord::Raw(word));
            continue;
        }
        options.push(match word.split_once('=') {
            Some((flag, value)) if flag.starts_with('-') => CommandWord::Option {
                flag,
                value: Some(value),
            },
            _ => CommandWord::Option {
                flag: word,
                value: None,
            },
        });
    }
    options
}

/// The `netbisect bench` command that runs `record`'s configuration again
/// where it ran, on any commit: its kernel and VM, or its server, its
/// testbed unless the line's default names it, and its spec.
pub fn configuration_command(record: &RunRecord) -> CommandLine {
    let mut command = CommandLine::new(&["netbisect", "bench"]);
    add_where_it_ran(&mut command, record);
    add_spec(&mut command, &record.spec);
    command
}

/// The `netbisect bench` command that runs `record` again as it was made:
/// [`configuration_command`]'s line with the run's commit (`--commit`)
/// and label (`--label`), so that the run it makes is stored beside it.
pub fn run_command(record: &RunRecord) -> CommandLine {
    let mut command = CommandLine::new(&["netbisect", "bench"]);
    add_where_it_ran(&mut command, record);
    if let Some(commit) = &record.subject.commit {
        command.option("--commit", commit.clone());
    }
    if let Some(label) = &record.subject.label {
        command.option("--label", label.clone());
    }
    add_spec(&mut command, &record.spec);
    command
}

/// Adds where `record` ran: its kernel and VM, or its server; then its
/// testbed unless the line's default names it.
fn add_where_it_ran(command: &mut CommandLine, record: &RunRecord) {
    let default_testbed = match (&record.command, &record.env.vm) {
        (Some(words), _) if words.len() > 1 => add_vm_of_command(command, record, words),
        (_, Some(vm)) => {
            let release = record.subject.kernel_release.as_deref().or(record
                .env
                .local
                .kernel_release
                .as_deref());
            if let Some(release) = release {
                command.option("--kernel", format!("vmlinuz-{release}"));
            }
            for (flag, value) in vm_options_of_env(vm) {
                match value {
                    Some(value) => command.option(flag, value),
                    None => command.word(flag),
                };
            }
            format!("vm-{}", vm.network)
        }
        _ => match record.endpoint.port {
            Some(port) => {
                command.option("-H", record.endpoint.host.clone());
                if port != DEFAULT_CONTROL_PORT {
                    command.option("-p", port.to_string());
                }
                record.endpoint.host.clone()
            }
            // A peer tool's run (imported) names the host it measured
            // against and no port of netbisect's: the line runs against
            // that host, on the default port.
            None if !is_loopback(&record.endpoint.host) => {
                command.option("-H", record.endpoint.host.clone());
                record.endpoint.host.clone()
            }
            None => "loopback".to_string(),
        },
    };
    if record.testbed != default_testbed {
        command.option("--testbed", record.testbed.clone());
    }
}

/// True when `host` is this machine as `bench` without `-H` measures
/// it: a loopback address, `localhost`, or no host at all.
fn is_loopback(host: &str) -> bool {
    host.is_empty()
        || host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// Adds the kernel of `record`'s side and the `--vm-*` options of the
/// command `words` that made it; returns the testbed a line without
/// `--testbed` gives (`vm-loopback`, `vm-pair`, `vm-host`).
fn add_vm_of_command(command: &mut CommandLine, record: &RunRecord, words: &[String]) -> String {
    let options = options_of_command(words);
    let value_of = |wanted: &str| {
        options.iter().find_map(|word| match word {
            CommandWord::Option { flag, value } if *flag == wanted => *value,
            _ => None,
        })
    };
    // `ab`'s runs carry their side's label (its command names both):
    // the kernel is that side's.
    let kernel_flag = if words[0] != "ab" {
        "--kernel"
    } else if record.subject.label.is_some()
        && record.subject.label.as_deref() == value_of("--label-b")
    {
        "--kernel-b"
    } else {
        "--kernel-a"
    };
    if let Some(kernel) = value_of(kernel_flag) {
        command.option("--kernel", kernel);
    }
    for word in &options {
        if let CommandWord::Option { flag, value } = word
            && flag.starts_with("--vm-")
        {
            match value {
                Some(value) => command.option(flag, *value),
                None => command.word(*flag),
            };
        }
    }
    format!("vm-{}", value_of("--vm-net").unwrap_or("loopback"))
}

/// The `--vm-*` options a `vm` section says of how its guest was made, in
/// the order `ab` takes them: the accelerator as it was granted, the
/// rest as asked.
pub fn vm_options_of_env(vm: &VmEnv) -> Vec<(&'static str, Option<String>)> {
    let mut options = vec![
        ("--vm-net", Some(vm.network.clone())),
        ("--vm-cpus", Some(vm.vcpus.to_string())),
        ("--vm-memory", Some(format!("{}M", vm.memory_mib))),
        ("--vm-accel", Some(vm.accelerator.clone())),
    ];
    if vm.vhost {
        options.push(("--vm-vhost", None));
    }
    if let Some(size) = vm.tx_queue_size {
        options.push(("--vm-tx-queue-size", Some(size.to_string())));
    }
    for append in &vm.append {
        options.push(("--vm-append", Some(append.clone())));
    }
    for (key, value) in &vm.sysctls {
        options.push(("--vm-sysctl", Some(format!("{key}={value}"))));
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use run_record::record::{Endpoint, Environments, Source, Subject, Summary};
    use run_record::spec::{RunSpec, TestKind};

    fn record(testbed: &str, endpoint: Endpoint) -> RunRecord {
        let mut spec = RunSpec::defaults(TestKind::TcpRr);
        spec.duration_s = 1.0;
        let mut record = RunRecord {
            schema: String::new(),
            id: String::new(),
            config_key: String::new(),
            source: Source {
                tool: "netbisect".into(),
                version: None,
                undated: false,
            },
            started_at: "2026-01-22T10:00:00Z".into(),
            finished_at: "2026-01-22T10:00:10Z".into(),
            spec,
            endpoint,
            subject: Subject::default(),
            testbed: testbed.into(),
            env: Environments::default(),
            iterations: Vec::new(),
            summary: Summary::default(),
            system: None,
            experiment: None,
            command: None,
        };
        record.seal().unwrap();
        record
    }

    #[test]
    fn a_run_on_hosts_names_its_server_and_testbed() {
        let loopback = Endpoint {
            host: "127.0.0.1".into(),
            port: None,
        };
        assert_eq!(
            configuration_command(&record("loopback", loopback.clone())).render(),
            "netbisect bench -t TCP_RR -l 1"
        );
        assert_eq!(
            configuration_command(&record("lab a", loopback)).render(),
            "netbisect bench --testbed 'lab a' -t TCP_RR -l 1"
        );
        // An imported netperf run against a server elsewhere: its host,
        // no port; against this machine, none.
        let imported = Endpoint {
            host: "rack-2.lab".into(),
            port: None,
        };
        assert_eq!(
            configuration_command(&record("lab", imported)).render(),
            "netbisect bench -H rack-2.lab --testbed lab -t TCP_RR -l 1"
        );
        for host in ["::1", "localhost", "127.0.0.2"] {
            let here = Endpoint {
                host: host.into(),
                port: None,
            };
            assert_eq!(
                configuration_command(&record("lab", here)).render(),
                "netbisect bench --testbed lab -t TCP_RR -l 1"
            );
        }
        let remote = Endpoint {
            host: "10.0.0.2".into(),
            port: Some(DEFAULT_CONTROL_PORT),
        };
        assert_eq!(
            configuration_command(&record("10.0.0.2", remote.clone())).render(),
            "netbisect bench -H 10.0.0.2 -t TCP_RR -l 1"
        );
        let elsewhere = Endpoint {
            port: Some(5000),
            ..remote
        };
        assert_eq!(
            configuration_command(&record("rack-1", elsewhere.clone())).render(),
            "netbisect bench -H 10.0.0.2 -p 5000 --testbed rack-1 -t TCP_RR -l 1"
        );
        // A run's own line adds its commit and its label, quoted.
        let mut run = record("rack-1", elsewhere);
        run.subject.commit = Some("abc1234".into());
        run.subject.label = Some("it's new".into());
        assert_eq!(
            run_command(&run).render(),
            "netbisect bench -H 10.0.0.2 -p 5000 --testbed rack-1 --commit abc1234 \
             --label 'it'\\''s new' -t TCP_RR -l 1"
        );
    }

    #[test]
    fn a_run_in_a_vm_names_its_kernel_and_vm_as_given() {
        let mut run = record(
            "vm-host",
            Endpoint {
                host: "10.0.2.1".into(),
                port: Some(40000),
            },
        );
        run.env.vm = Some(VmEnv {
            runner: "qemu".into(),
            accelerator: "tcg".into(),
            vcpus: 2,
            memory_mib: 1024,
            network: "host".into(),
            ..VmEnv::default()
        });
        run.subject.label = Some("new".into());
        let words = [
            "ab",
            "--kernel-a=base/bzImage",
            "--kernel-b=patched/bzImage",
            "--label-a=old",
            "--label-b=new",
            "-n=2",
            "--vm-net=host",
            "--vm-tap=nbtap0",
            "--vm-accel=auto",
            "--vm-vhost",
            "--sweep=S=18000,2280",
        ];
        run.command = Some(words.map(String::from).to_vec());
        assert_eq!(
            configuration_command(&run).render(),
            "netbisect bench --kernel patched/bzImage --vm-net host --vm-tap nbtap0 \
             --vm-accel auto --vm-vhost -t TCP_RR -l 1"
        );
        run.subject.commit = Some("0123456789abcdef0123456789abcdef01234567".into());
        assert_eq!(
            run_command(&run).render(),
            "netbisect bench --kernel patched/bzImage --vm-net host --vm-tap nbtap0 \
             --vm-accel auto --vm-vhost --commit 0123456789abcdef0123456789abcdef01234567 \
             --label new -t TCP_RR -l 1"
        );
        // Without the command, the vm section and the release.
        run.command = None;
        run.subject.kernel_release = Some("6.1.0-57-amd64".into());
        assert_eq!(
            configuration_command(&run).render(),
            "netbisect bench --kernel vmlinuz-6.1.0-57-amd64 --vm-net host --vm-cpus 2 \
             --vm-memory 1024M --vm-accel tcg -t TCP_RR -l 1"
        );
        let raw = ["bench", "--kernel=k", "-l=1", "--", "-P", ",5000"].map(String::from);
        assert_eq!(
            options_of_command(&raw),
            [
                CommandWord::Option {
                    flag: "--kernel",
                    value: Some("k")
                },
                CommandWord::Option {
                    flag: "-l",
                    value: Some("1")
                },
                CommandWord::Raw("--"),
                CommandWord::Raw("-P"),
                CommandWord::Raw(",5000"),
            ]
        );
    }
}
