//! The script the guest runs from its input directory: sysctls, the NIC
//! pair in a namespace or the host mode's NIC, then `netbisect bench
//! --json` once per run, every outcome written to a file of the output
//! directory: run N's record to `record-N.json`, its stderr to `err-N`,
//! and last its exit status to `status-N`, moved into place whole, so
//! that the host takes a record only once its run has ended. `status`
//! says the script got to its end.

#[cfg(test)]
use super::GuestRun;
use super::{GuestJob, NetMode, VmOptions, quote};
use std::fmt::Write as _;
use std::path::Path;

/// The control port of the server in the guest's second namespace.
const PAIR_PORT: u16 = 12865;

/// The name of run `run_idx`'s files: `record-NNN.json` and the rest.
pub(super) fn run_file(stem: &str, run_idx: usize) -> String {
    match stem {
        "record" => format!("record-{run_idx:03}.json"),
        _ => format!("{stem}-{run_idx:03}"),
    }
}

/// The script the guest runs: sysctls, the NIC pair, then each run, every
/// outcome written to files in the output directory `output`; `input`
/// is the directory it reads from.
pub(super) fn guest_script(
    input: &Path,
    output: &Path,
    options: &VmOptions,
    job: &GuestJob,
) -> String {
    let dir = quote(&output.to_string_lossy());
    let bin = quote(&job.binary.to_string_lossy());
    let mut script = String::new();
    let _ = writeln!(script, "#!/bin/sh\nd={dir}");
    script.push_str("fail() { echo \"$1\" > \"$d/setup-error\"; exit 0; }\n");
    for (key, value) in &options.sysctls {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        let _ = writeln!(
            script,
            "[ -w {path} ] || fail {why}\nprintf '%s\\n' {value} > {path} 2>/dev/null || fail {refused}",
            path = quote(&path),
            why = quote(&format!("the guest kernel has no sysctl {key}")),
            value = quote(value),
            refused = quote(&format!("the guest kernel refused {key}={value}")),
        );
    }
    let mut extra: Vec<String> = Vec::new();
    match options.net {
        NetMode::Loopback => {}
        NetMode::Pair => {
            let (client, server, prefix, nodad) = if job.ipv6 {
                ("fd55::1", "fd55::2", "64", " nodad")
            } else {
                ("10.55.0.1", "10.55.0.2", "24", "")
            };
            let family = if job.ipv6 { "-6 " } else { "" };
            let _ = write!(
                script,
                "set -- $(ls /sys/class/net | grep -vx lo | sort)\n\
                 [ $# -ge 2 ] || fail 'the guest has no pair of NICs'\n\
                 near=$1 far=$2\n\
                 ip netns add nbpeer || fail 'cannot create a network namespace in the guest'\n\
                 ip link set \"$far\" netns nbpeer || fail \"cannot move $far to a namespace\"\n\
                 ip {family}addr add {client}/{prefix} dev \"$near\"{nodad} || fail \"cannot address $near\"\n\
                 ip link set \"$near\" up\n\
                 ip -n nbpeer {family}addr add {server}/{prefix} dev \"$far\"{nodad} || fail \"cannot address $far\"\n\
                 ip -n nbpeer link set \"$far\" up\n\
                 ip -n nbpeer link set lo up\n\
                 ip netns exec nbpeer {bin} serve --listen {server} --no-auth -p {PAIR_PORT} \
                 > \"$d/serve.log\" 2>&1 &\n\
                 i=0\n\
                 until ip netns exec nbpeer cat /proc/net/tcp /proc/net/tcp6 2>/dev/null \
                 | grep -qi ':{PAIR_PORT:04X} .* 0A '; do\n\
                 \x20 i=$((i+1)); [ $i -lt 300 ] || fail 'the server in the guest did not start'\n\
                 \x20 sleep 0.1\n\
                 done\n"
            );
            extra.extend(["-H".to_string(), server.to_string()]);
            extra.extend(["-p".to_string(), PAIR_PORT.to_string()]);
        }
        NetMode::Host => {
            if let Some((link, port)) = &job.host {
                let _ = write!(
                    script,
                    "set -- $(ls /sys/class/net | grep -vx lo | sort)\n\
                     [ $# -ge 1 ] || fail 'the guest has no NIC'\n\
                     ip addr add {guest}/{prefix} dev \"$1\" || fail \"cannot address $1\"\n\
                     ip link set \"$1\" up || fail \"cannot set $1 up\"\n",
                    guest = link.guest,
                    prefix = link.prefix,
                );
                extra.extend(["-H".to_string(), link.host.to_string()]);
                extra.extend(["-p".to_string(), port.to_string()]);
                extra.extend(["--token-file".to_string(), "{input}/token".to_string()]);
            }
        }
    }
    let input_text = input.to_string_lossy();
    script.push_str(": > \"$d/started\"\n");
    for (run_idx, run) in job.runs.iter().enumerate() {
        let mut words = vec![
            bin.clone(),
            "bench".to_string(),
            "--json".to_string(),
            "--no-archive".to_string(),
            // Its stderr is the run's error message, not a log.
            "--progress".to_string(),
            "never".to_string(),
        ];
        words.extend(
            run.bench_args
                .iter()
                .chain(&extra)
                .map(|arg| quote(&arg.replace("{input}", &input_text))),
        );
        let (record, err, status) = (
            run_file("record", run_idx),
            run_file("err", run_idx),
            run_file("status", run_idx),
        );
        // In the pair, the far NIC's namespace makes the run's settings
        // first; the run's bench makes them on the near NIC.
        let settings = match (&run.peer_settings, options.net) {
            (Some(spec), NetMode::Pair) => format!(
                "ip netns exec nbpeer {bin} guest-settings --spec-file {} --interface \"$far\" \
                 2> \"$d/{err}\"",
                quote(&format!("{input_text}/{spec}"))
            ),
            _ => ": > \"$d/{err}\"".replace("{err}", &err),
        };
        let _ = write!(
            script,
            "if {settings}; then\n\
             {} > \"$d/{record}\" 2>> \"$d/{err}\"; echo $? > \"$d/{status}.tmp\"\n\
             else echo 97 > \"$d/{status}.tmp\"; fi\n\
             mv \"$d/{status}.tmp\" \"$d/{status}\"\n",
            words.join(" ")
        );
    }
    script.push_str("echo 0 > \"$d/status.tmp\" && mv \"$d/status.tmp\" \"$d/status\"\n");
    script
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_guest_script_quotes_what_it_is_given() {
        let mut options = VmOptions::default();
        options
            .sysctls
            .insert("net.core.rmem_max".to_string(), "1; reboot".to_string());
        options.net = NetMode::Pair;
        let job = GuestJob {
            binary: PathBuf::from("/opt/net bisect"),
            runs: vec![
                GuestRun {
                    bench_args: vec!["--label".to_string(), "it's".to_string()],
                    peer_settings: None,
                },
                GuestRun {
                    bench_args: vec![
                        "--spec-file".to_string(),
                        "{input}/spec-001.json".to_string(),
                    ],
                    peer_settings: Some("spec-001.json".to_string()),
                },
            ],
            files: Vec::new(),
            host: None,
            ipv6: false,
        };
        let script = guest_script(Path::new("/in"), Path::new("/tmp/x y"), &options, &job);
        assert!(script.contains("printf '%s\\n' '1; reboot' > /proc/sys/net/core/rmem_max"));
        assert!(
            script.contains("'/opt/net bisect' bench --json --no-archive --progress never --label")
        );
        assert!(script.contains("-H 10.55.0.2 -p 12865"));
        assert!(script.contains("d='/tmp/x y'"));
        // Each run has its files; the status comes last, whole.
        assert!(script.contains("--spec-file /in/spec-001.json"));
        assert!(script.contains(
            "> \"$d/record-001.json\" 2>> \"$d/err-001\"; echo $? > \"$d/status-001.tmp\"\n\
             else echo 97 > \"$d/status-001.tmp\"; fi\n\
             mv \"$d/status-001.tmp\" \"$d/status-001\""
        ));
        // The far NIC takes the second run's settings first.
        assert!(script.contains(
            "if ip netns exec nbpeer '/opt/net bisect' guest-settings --spec-file \
             /in/spec-001.json --interface \"$far\""
        ));
        assert!(script.contains("if : > \"$d/err-000\"; then"));
        assert!(script.ends_with("mv \"$d/status.tmp\" \"$d/status\"\n"));
    }
}
