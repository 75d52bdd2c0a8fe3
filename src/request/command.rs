//! The command a run in a VM keeps (the record's `command`): the words
//! after `netbisect` of the `bench --kernel` or `ab` that made it, from
//! its arguments as given: kernels as their paths were given, the VM
//! options as given (`--vm-accel auto`, not the accelerator it got),
//! sizes as written, sweep axes and their values in the order given.
//! Each option is one word, `FLAG=VALUE` where it has a value
//! (`--kernel-a=base/bzImage`, `-n=5`, `--vm-vhost`), which clap reads
//! as the flag and its value, so that a reader of the record needs no
//! list of which flags take one; the words after `--` follow as they
//! were.
//!
//! What only changes how a command prints (`-f`, `-P`, `-D`, `--alpha`,
//! `--email`) is not kept: the command that prints a line adds its own.
//! An experiment's id hashes what these words give back (see
//! [`crate::experiment`]), so that the line printed from them names the
//! same experiment; [`is_kept_command`] checks a record's words before
//! they are printed.

use crate::cli::{AbArgs, BenchArgs, Cli, Command, KernelArgs, VmOptionArgs};
use clap::{CommandFactory, Parser, ValueEnum};

/// The words of `bench`'s `args`, `bench` first.
pub fn bench_command(args: &BenchArgs) -> Vec<String> {
    let mut words = Words(vec!["bench".to_string()]);
    words.bench(args);
    words.0
}

/// The words of `ab`'s `args`, `ab` first; `fresh` is the token of a
/// fresh experiment (`--fresh=TOKEN`, which names it again).
pub fn ab_command(args: &AbArgs, fresh: Option<&str>) -> Vec<String> {
    let AbArgs {
        kernel_a,
        kernel_b,
        rounds,
        label_a,
        label_b,
        // How the comparison is printed.
        alpha: _,
        email: _,
        fresh: _,
        // Who measures, not what: another runner's lock.
        wait: _,
        bench,
    } = args;
    let mut words = Words(vec!["ab".to_string()]);
    words.value("--kernel-a", kernel_a.to_string_lossy());
    words.value("--kernel-b", kernel_b.to_string_lossy());
    words.value("--label-a", label_a);
    words.value("--label-b", label_b);
    words.value("-n", rounds.to_string());
    if let Some(token) = fresh {
        words.value("--fresh", token);
    }
    words.bench(bench);
    words.0
}

/// True when `words` (a record's `command`) are a `bench` or `ab` command
/// netbisect reads, with only options of that command (no global one,
/// such as `--archive`): a line printed from them runs that command.
pub fn is_kept_command(words: &[String]) -> bool {
    let Some(name) = words.first() else {
        return false;
    };
    let root = Cli::command();
    let Some(subcommand) = root.find_subcommand(name) else {
        return false;
    };
    let own_flag = |flag: &str| {
        subcommand.get_arguments().any(|arg| {
            flag.strip_prefix("--")
                .is_some_and(|long| arg.get_long() == Some(long))
                || flag.strip_prefix('-').is_some_and(|short| {
                    short.chars().count() == 1 && arg.get_short() == short.chars().next()
                })
        })
    };
    for word in words.iter().skip(1) {
        if word == "--" {
            break;
        }
        let flag = word.split_once('=').map_or(word.as_str(), |(flag, _)| flag);
        if !own_flag(flag) {
            return false;
        }
    }
    let argv = std::iter::once("netbisect").chain(words.iter().map(String::as_str));
    matches!(
        Cli::try_parse_from(argv).map(|cli| cli.command),
        Ok(Command::Bench(_) | Command::Ab(_))
    )
}

/// Words being written, one an option.
struct Words(Vec<String>);

impl Words {
    fn value(&mut self, flag: &str, value: impl AsRef<str>) {
        self.0.push(format!("{flag}={}", value.as_ref()));
    }

    fn given(&mut self, flag: &str, value: Option<impl ToString>) {
        if let Some(value) = value {
            self.value(flag, value.to_string());
        }
    }

    fn flag(&mut self, flag: &str, given: bool) {
        if given {
            self.0.push(flag.to_string());
        }
    }

    fn each(&mut self, flag: &str, values: &[String]) {
        for value in values {
            self.value(flag, value);
        }
    }

    /// Every option of `args` that shapes a run, as given. The struct is
    /// taken apart whole: a new option does not compile until it is
    /// placed here or among those left out.
    fn bench(&mut self, args: &BenchArgs) {
        let BenchArgs {
            host,
            port,
            test,
            length,
            local_buffer,
            remote_buffer,
            send_size,
            recv_size,
            request_response,
            sweep,
            config,
            settings,
            nodelay,
            first_burst,
            cpus,
            data_port,
            ipv4,
            ipv6,
            token_file,
            commit,
            label,
            testbed,
            confidence,
            iterations,
            local_cpu,
            remote_cpu,
            flows,
            threads,
            warmup,
            test_options,
            vm,
            // Whether the run is stored, and how it is printed: a run
            // --strict-settings kept had every setting granted anyway.
            no_archive: _,
            strict_settings: _,
            interim: _,
            units: _,
            banner: _,
        } = args;
        let KernelArgs {
            kernel,
            options,
            // The host's spec handed to a guest: never a user's.
            spec_file: _,
        } = vm;
        self.given(
            "--kernel",
            kernel.as_ref().map(|path| path.to_string_lossy()),
        );
        self.vm(options);
        self.given("-H", host.as_ref());
        if *port != bench_core::protocol::DEFAULT_PORT {
            self.value("-p", port.to_string());
        }
        self.value("-t", test);
        self.given("-l", *length);
        self.flag("-4", *ipv4);
        self.flag("-6", *ipv6);
        self.given("-s", local_buffer.as_ref());
        self.given("-S", remote_buffer.as_ref());
        self.given("-m", send_size.as_ref());
        self.given("-M", recv_size.as_ref());
        self.given("-r", request_response.as_ref());
        self.given("-b", *first_burst);
        self.flag("--nodelay", *nodelay);
        self.given("-T", cpus.as_ref());
        self.given("-I", confidence.as_ref());
        self.given("-i", iterations.as_ref());
        self.flag("-c", *local_cpu);
        self.flag("-C", *remote_cpu);
        self.given("--flows", *flows);
        self.given("--threads", *threads);
        self.given("--warmup", *warmup);
        self.each("--set", settings);
        self.each("--config", config);
        self.each("--sweep", sweep);
        self.given(
            "--data-port",
            data_port.map(|range| format!("{}-{}", range.low, range.high)),
        );
        self.given(
            "--token-file",
            token_file.as_ref().map(|path| path.to_string_lossy()),
        );
        self.given("--commit", commit.as_ref());
        self.given("--label", label.as_ref());
        self.given("--testbed", testbed.as_ref());
        if !test_options.is_empty() {
            self.0.push("--".to_string());
            self.0.extend(test_options.iter().cloned());
        }
    }

    fn vm(&mut self, options: &VmOptionArgs) {
        let VmOptionArgs {
            vm_net,
            vm_cpus,
            vm_memory,
            vm_append,
            vm_sysctl,
            vm_settings,
            vm_tap,
            vm_timeout,
            vm_accel,
            vm_vhost,
            vm_share,
            vm_tx_queue_size,
        } = options;
        let name = |value: &dyn Fn() -> Option<clap::builder::PossibleValue>| {
            value().map(|value| value.get_name().to_string())
        };
        self.given(
            "--vm-net",
            vm_net.and_then(|net| name(&|| net.to_possible_value())),
        );
        self.given("--vm-cpus", *vm_cpus);
        self.given("--vm-memory", vm_memory.map(|mib| format!("{mib}M")));
        self.each("--vm-append", vm_append);
        self.each("--vm-sysctl", vm_sysctl);
        self.given(
            "--vm-settings",
            vm_settings.as_ref().map(|path| path.to_string_lossy()),
        );
        self.given("--vm-tap", vm_tap.as_ref());
        self.given("--vm-timeout", *vm_timeout);
        self.given(
            "--vm-accel",
            vm_accel.and_then(|accel| name(&|| accel.to_possible_value())),
        );
        self.flag("--vm-vhost", *vm_vhost);
        for share in vm_share {
            self.value("--vm-share", share.to_string_lossy());
        }
        self.given("--vm-tx-queue-size", *vm_tx_queue_size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ab_args(words: &[&str]) -> AbArgs {
        let argv = std::iter::once("netbisect").chain(words.iter().copied());
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Ab(args) => args,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_words_kept_are_read_back_as_the_same_arguments() {
        let given = [
            "ab",
            "--kernel-a",
            "base/bzImage",
            "--kernel-b",
            "/boot/vmlinuz-6.1.0-57-amd64",
            "-n",
            "2",
            "--vm-net",
            "host",
            "--vm-tap",
            "nbtap0",
            "--vm-accel",
            "auto",
            "--vm-memory",
            "2G",
            "--vm-append",
            "-x mitigations=off",
            "-l",
            "0.3",
            "--config",
            "s=default S=default",
            "--config",
            "s=87380 S=87380",
            "--sweep",
            "S=18000,2280,28000",
            "--sweep",
            "r=1/1,4000/4000,60000/60000,90/90",
            "-t",
            "TCP_RR",
            "-c",
            "-C",
            "-f",
            "g",
            "--email",
            "--testbed",
            "lab a",
            "--",
            "-P",
            ",5000",
        ];
        let args = ab_args(&given);
        let words = ab_command(&args, Some("2026-01-22T10:00:00Z"));
        assert!(is_kept_command(&words), "{words:?}");
        assert!(words.contains(&"--sweep=S=18000,2280,28000".to_string()));
        assert!(words.contains(&"--vm-accel=auto".to_string()));
        assert!(
            !words
                .iter()
                .any(|word| word.starts_with("-f") || word == "--email")
        );
        let again = ab_args(&words.iter().map(String::as_str).collect::<Vec<_>>());
        // Read back, the words give the same words: nothing was lost.
        assert_eq!(ab_command(&again, Some("2026-01-22T10:00:00Z")), words);
        assert_eq!(again.bench.sweep, args.bench.sweep);
        assert_eq!(
            again.bench.config,
            ["s=default S=default", "s=87380 S=87380"]
        );
        assert_eq!(again.bench.vm.options.vm_memory, Some(2048));
        assert_eq!(again.bench.test_options, ["-P", ",5000"]);
        assert_eq!(again.fresh, Some(Some("2026-01-22T10:00:00Z".to_string())));
    }

    #[test]
    fn words_of_another_command_or_with_a_global_option_are_not_kept() {
        let words = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert!(is_kept_command(&words(&["bench", "--kernel=k", "-l=1"])));
        assert!(!is_kept_command(&words(&["bench", "--archive=/tmp/x"])));
        assert!(!is_kept_command(&words(&["bench", "--json"])));
        assert!(!is_kept_command(&words(&["archive", "list"])));
        assert!(!is_kept_command(&words(&["bench", "--no-such-flag"])));
        assert!(!is_kept_command(&words(&[])));
    }
}
