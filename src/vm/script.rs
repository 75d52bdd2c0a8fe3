//! The script the guest runs from its input directory: sysctls, the NIC
//! pair in a namespace or the host mode's NIC, then one `netbisect
//! guest-runs` process for every run of the job ([`GuestPlan`], written
//! beside the script), which writes each outcome to a file of the output
//! directory: run N's record to `record-N.json`, its error to `err-N`,
//! and last its exit status to `status-N`, moved into place whole, so
//! that the host takes a record only once its run has ended. `status`
//! says the script got to its end. One process for every run: under
//! emulation, starting netbisect took a third to a half of a second.

#[cfg(test)]
use super::GuestRun;
use super::{GuestJob, NetMode, VmOptions, quote};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// The name of the plan in the guest's input directory.
pub const PLAN_FILE: &str = "plan.json";

/// What `netbisect guest-runs` runs in the guest, in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuestPlan {
    /// The runs.
    pub runs: Vec<PlannedRun>,
}

/// One run of a [`GuestPlan`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// `netbisect bench` arguments, paths resolved.
    pub bench_args: Vec<String>,
    /// A spec file whose settings the far NIC of the pair takes first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_settings: Option<String>,
}

/// The control port of the server in the guest's second namespace.
const PAIR_PORT: u16 = 12865;

/// The name of run `run_idx`'s files: `record-NNN.json` and the rest.
pub fn run_file(stem: &str, run_idx: usize) -> String {
    match stem {
        "record" => format!("record-{run_idx:03}.json"),
        _ => format!("{stem}-{run_idx:03}"),
    }
}

/// The script the guest runs (sysctls, the NIC pair, then `guest-runs`,
/// every outcome written to files in the output directory `output`;
/// `input` is the directory it reads from) and the plan of its runs.
pub(super) fn guest_script(
    input: &Path,
    output: &Path,
    options: &VmOptions,
    job: &GuestJob,
) -> (String, GuestPlan) {
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
    let plan = GuestPlan {
        runs: job
            .runs
            .iter()
            .map(|run| PlannedRun {
                bench_args: run
                    .bench_args
                    .iter()
                    .chain(&extra)
                    .map(|arg| arg.replace("{input}", &input_text))
                    .collect(),
                // In the pair, the far NIC's namespace makes the run's
                // settings first; the run's bench makes them on the near
                // NIC.
                peer_settings: match (&run.peer_settings, options.net) {
                    (Some(spec), NetMode::Pair) => Some(format!("{input_text}/{spec}")),
                    _ => None,
                },
            })
            .collect(),
    };
    let peer = if options.net == NetMode::Pair {
        " --peer-interface \"$far\""
    } else {
        ""
    };
    let _ = write!(
        script,
        ": > \"$d/started\"\n\
         {bin} guest-runs --plan {} --output \"$d\"{peer} 2> \"$d/runs.err\"\n\
         echo $? > \"$d/status.tmp\" && mv \"$d/status.tmp\" \"$d/status\"\n",
        quote(&format!("{input_text}/{PLAN_FILE}"))
    );
    (script, plan)
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
        let (script, plan) = guest_script(Path::new("/in"), Path::new("/tmp/x y"), &options, &job);
        assert!(script.contains("printf '%s\\n' '1; reboot' > /proc/sys/net/core/rmem_max"));
        assert!(script.contains("d='/tmp/x y'"));
        // One process runs every run, the far NIC named.
        assert!(script.contains(
            "'/opt/net bisect' guest-runs --plan /in/plan.json --output \"$d\" \
             --peer-interface \"$far\" 2> \"$d/runs.err\""
        ));
        assert!(script.ends_with("mv \"$d/status.tmp\" \"$d/status\"\n"));
        assert_eq!(plan.runs.len(), 2);
        assert_eq!(
            plan.runs[0].bench_args,
            ["--label", "it's", "-H", "10.55.0.2", "-p", "12865"]
        );
        assert_eq!(plan.runs[0].peer_settings, None);
        assert_eq!(plan.runs[1].bench_args[1], "/in/spec-001.json");
        assert_eq!(
            plan.runs[1].peer_settings.as_deref(),
            Some("/in/spec-001.json")
        );
    }
}
