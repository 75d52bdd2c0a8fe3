//! The script the guest runs from the shared directory: sysctls, the NIC
//! pair in a namespace or the host mode's NIC, then `netbisect bench
//! --json`, every outcome written to a file of the shared directory.

use super::{GuestJob, NetMode, VmOptions, quote};
use std::fmt::Write as _;
use std::path::Path;

/// The control port of the server in the guest's second namespace.
const PAIR_PORT: u16 = 12865;

/// The script the guest runs: sysctls, the NIC pair, then the test,
/// every outcome written to files in the shared directory.
pub(super) fn guest_script(shared: &Path, options: &VmOptions, job: &GuestJob) -> String {
    let dir = quote(&shared.to_string_lossy());
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
                extra.extend(["--token-file".to_string(), "{shared}/token".to_string()]);
            }
        }
    }
    let shared_text = shared.to_string_lossy();
    let mut words = vec![
        bin,
        "bench".to_string(),
        "--json".to_string(),
        "--no-archive".to_string(),
    ];
    words.extend(
        job.bench_args
            .iter()
            .chain(&extra)
            .map(|arg| quote(&arg.replace("{shared}", &shared_text))),
    );
    let _ = write!(
        script,
        ": > \"$d/started\"\n\
         {} > \"$d/record.json\" 2> \"$d/bench.err\"\n\
         echo $? > \"$d/status.tmp\" && mv \"$d/status.tmp\" \"$d/status\"\n",
        words.join(" ")
    );
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
            bench_args: vec!["--label".to_string(), "it's".to_string()],
            files: Vec::new(),
            host: None,
            ipv6: false,
        };
        let script = guest_script(Path::new("/tmp/x y"), &options, &job);
        assert!(script.contains("printf '%s\\n' '1; reboot' > /proc/sys/net/core/rmem_max"));
        assert!(script.contains("'/opt/net bisect' bench --json --no-archive --label"));
        assert!(script.contains("-H 10.55.0.2 -p 12865"));
        assert!(script.contains("d='/tmp/x y'"));
    }
}
