//! The settings a spec asks of the system under test (`spec.system`),
//! made before a test and undone after it: the offload features of the
//! test's interface (`ETHTOOL_SFEATURES`, as `ethtool -K` sets them), its
//! MTU and transmit queue length (an rtnetlink `RTM_NEWLINK` request), and
//! sysctls (/proc/sys). Each is read back once made, so that the record
//! holds what the kernel granted beside what was asked
//! ([`SystemOutcome`]):
//!
//! - an offload is read back with `ETHTOOL_GFEATURES` (its active bit);
//!   a short name that covers several features ([`SHORT_NAMES`]) is
//!   granted on when every one of them that the device has is on. The
//!   kernel may leave a feature other than asked (TSO stays off while SG
//!   is off; some kernels keep GSO off without SG): that is no error, it
//!   is recorded as requested on, granted off;
//! - the MTU and the tx queue length are the link's, read back with
//!   `RTM_GETLINK`;
//! - a sysctl is its file read back, whitespace folded to single spaces.
//!
//! [`apply`] checks every setting before it changes anything, so that an
//! interface that does not exist, a feature the device does not have or
//! may not change, or a sysctl that does not exist is an error while
//! everything is as it was. A change the kernel refuses (not permitted
//! without root, an MTU out of the device's range) is an error too, after
//! what was already changed is put back. The [`AppliedSettings`] it
//! returns puts back the previous values when it is restored or dropped,
//! so a test that fails leaves the host as it found it; a signal that
//! ends the process puts them back too, through the signal watcher
//! (`child_process::interrupt::before_exit`). Reading needs no
//! privilege; changing needs root (`CAP_NET_ADMIN`).
//!
//! [`apply`] acts on the network namespace of the calling thread: the
//! sockets are opened, and /proc/sys/net is resolved, by it. The guard
//! keeps those sockets and sysctl files, so the values are put back in
//! that namespace from whichever thread restores them.

mod error;
mod features;
mod sysctl;

pub use error::SettingsError;
pub use features::{SHORT_NAMES, kernel_pattern};

use super::ethtool::{self, FeatureState};
use super::netlink::{self, IFLA_MTU, IFLA_TXQLEN, LinkAttributes};
use child_process::interrupt::BeforeExit;
use error::{errno_of, on_off, refusal};
use features::{FeaturePlan, FeatureProblem};
use run_record::record::{Granted, SystemOutcome};
use run_record::spec::SystemSettings;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Where the sysctls are.
const PROC_SYS: &str = "/proc/sys";

/// Settings made on one interface and this host, with what was there
/// before them. Restored by [`AppliedSettings::restore`], or when
/// dropped (errors then go unreported), or, when a signal ends the
/// process, by the signal watcher of `child_process::interrupt`. The
/// sockets and sysctl files it restores through are those of the network
/// namespace the settings were made in, whichever thread restores them.
#[derive(Debug)]
pub struct AppliedSettings {
    outcome: SystemOutcome,
    undo: Arc<Mutex<Option<Undo>>>,
    _at_signal: BeforeExit,
}

impl AppliedSettings {
    /// What was asked and what the kernel granted.
    pub fn outcome(&self) -> &SystemOutcome {
        &self.outcome
    }

    /// Leaves the settings made and returns what was granted: for a
    /// system that is thrown away after its tests (a guest of the VM
    /// runner), whose next configuration makes its own settings.
    pub fn keep(self) -> SystemOutcome {
        self.undo
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        self.outcome.clone()
    }

    /// Puts back every value that was there before; the error names
    /// those that could not be.
    pub fn restore(self) -> Result<(), SettingsError> {
        undo_once(&self.undo).map_err(|failures| SettingsError::NotRestored {
            cause: None,
            failures,
        })
    }
}

impl Drop for AppliedSettings {
    fn drop(&mut self) {
        // Whoever needs the failure calls `restore`; a drop has nobody
        // to tell.
        let _ = undo_once(&self.undo);
    }
}

/// Runs the undo in `shared` unless it ran already.
fn undo_once(shared: &Mutex<Option<Undo>>) -> Result<(), Vec<String>> {
    let undo = shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take();
    match undo {
        Some(mut undo) => undo.run(),
        None => Ok(()),
    }
}

/// Makes `settings` on `interface` (the interface settings) and on this
/// host (the sysctls), reads back what was granted, and returns the guard
/// that undoes them. Nothing is changed when a setting fails its checks;
/// a change the kernel refuses is an error after what was already changed
/// is put back.
pub fn apply(interface: &str, settings: &SystemSettings) -> Result<AppliedSettings, SettingsError> {
    let index = super::is_interface_name(interface)
        .then(|| super::interface_index(interface))
        .flatten()
        .ok_or_else(|| SettingsError::NoSuchInterface {
            interface: interface.to_string(),
        })?;
    let mut checked = check(interface, index, settings, Path::new(PROC_SYS))?;
    let undo = Undo {
        interface: interface.to_string(),
        index,
        ethtool_socket: checked.ethtool_socket.take(),
        route_socket: checked.route_socket.take(),
        features: None,
        mtu: None,
        tx_queue_len: None,
        sysctls: Vec::new(),
    };
    // The undo is registered with the signal watcher before the first
    // change, and holds its lock while the changes are made: a signal in
    // between puts back all of them, after the last is made.
    let shared = Arc::new(Mutex::new(None::<Undo>));
    let at_signal = {
        let shared = Arc::clone(&shared);
        child_process::interrupt::before_exit(move || {
            let _ = undo_once(&shared);
        })
    };
    let made = {
        let mut slot = shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        make(&mut checked, settings, slot.insert(undo))
    };
    match made.and_then(|()| read_back(interface, index, settings, &checked)) {
        Ok(outcome) => Ok(AppliedSettings {
            outcome,
            undo: shared,
            _at_signal: at_signal,
        }),
        Err(cause) => Err(match undo_once(&shared) {
            Ok(()) => cause,
            Err(failures) => SettingsError::NotRestored {
                cause: Some(Box::new(cause)),
                failures,
            },
        }),
    }
}

/// What the checks found: the feature request with the state before it,
/// the link before, each sysctl's open file and value before, and the
/// sockets the changes are made through.
struct Checked {
    features: Option<(FeaturePlan, FeatureState)>,
    link: Option<LinkAttributes>,
    sysctls: Vec<SysctlBefore>,
    ethtool_socket: Option<OwnedFd>,
    route_socket: Option<OwnedFd>,
}

struct SysctlBefore {
    name: String,
    file: Option<File>,
    value: String,
}

/// Checks every setting against the device and the host, reading what
/// the undo needs and opening what the changes go through; changes
/// nothing.
fn check(
    interface: &str,
    index: u32,
    settings: &SystemSettings,
    proc_sys: &Path,
) -> Result<Checked, SettingsError> {
    let mut checked = Checked {
        features: None,
        link: None,
        sysctls: Vec::new(),
        ethtool_socket: None,
        route_socket: None,
    };
    if !settings.features.is_empty() {
        let socket = ethtool::open_socket().ok_or_else(|| SettingsError::Read {
            what: format!("the offload features of {interface}: no socket"),
        })?;
        let state = read_features(&socket, interface)?;
        let plan = features::plan(&settings.features, &state)
            .map_err(|problem| feature_error(interface, problem))?;
        checked.features = Some((plan, state));
        checked.ethtool_socket = Some(socket);
    }
    if settings.mtu.is_some() || settings.tx_queue_len.is_some() {
        checked.link = Some(read_link(interface, index)?);
        checked.route_socket =
            Some(
                netlink::open_route_socket().ok_or_else(|| SettingsError::Read {
                    what: format!("the link attributes of {interface}: no socket"),
                })?,
            );
    }
    for (name, asked) in &settings.sysctls {
        let missing = || SettingsError::NoSuchSysctl { name: name.clone() };
        let path = sysctl::path(proc_sys, name).ok_or_else(missing)?;
        let file = sysctl::open(&path).map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::IsADirectory => missing(),
            _ if rustix::process::geteuid().is_root() => SettingsError::Refused {
                setting: format!("{name}={asked}"),
                errno: errno_of(&err),
            },
            _ => refusal(format!("{name}={asked}"), errno_of(&err)),
        })?;
        let value = sysctl::read(&file).map_err(|err| SettingsError::Read {
            what: format!("sysctl {name}: {err}"),
        })?;
        checked.sysctls.push(SysctlBefore {
            name: name.clone(),
            file: Some(file),
            value,
        });
    }
    Ok(checked)
}

fn feature_error(interface: &str, problem: FeatureProblem) -> SettingsError {
    let driver = ethtool::driver(interface);
    let interface = interface.to_string();
    match problem {
        FeatureProblem::Unknown { name } => SettingsError::NoSuchFeature {
            interface,
            driver,
            feature: name,
        },
        FeatureProblem::Fixed { name, on } => SettingsError::FixedFeature {
            interface,
            driver,
            feature: name,
            on,
        },
        FeatureProblem::Clash {
            first,
            second,
            feature,
        } => SettingsError::FeatureClash {
            first,
            second,
            feature,
        },
    }
}

fn read_features(socket: &OwnedFd, interface: &str) -> Result<FeatureState, SettingsError> {
    ethtool::feature_state_on(socket, interface).ok_or_else(|| SettingsError::Read {
        what: format!("the offload features of {interface}"),
    })
}

fn read_link(interface: &str, index: u32) -> Result<LinkAttributes, SettingsError> {
    netlink::link_attributes(index).ok_or_else(|| SettingsError::Read {
        what: format!("the link attributes of {interface}"),
    })
}

/// Makes each change in turn, features first, noting in `undo` what to
/// put back before it is made; the sysctl files move to the undo.
fn make(
    checked: &mut Checked,
    settings: &SystemSettings,
    undo: &mut Undo,
) -> Result<(), SettingsError> {
    let interface = undo.interface.clone();
    // A request the kernel refuses changes nothing (each is one
    // attribute, one feature request or one write), so each change joins
    // the undo once it is made.
    if let (Some((plan, before)), Some(socket)) = (&checked.features, &undo.ethtool_socket) {
        ethtool::set_features(socket, &interface, &plan.valid, &plan.requested).map_err(
            |errno| {
                let asked: Vec<String> = settings
                    .features
                    .iter()
                    .map(|(name, on)| format!("{name}={}", on_off(*on)))
                    .collect();
                refusal(format!("{} on {interface}", asked.join(" ")), errno)
            },
        )?;
        undo.features = Some((plan.valid.clone(), before.requested.clone()));
    }
    let link = checked.link.clone().unwrap_or_default();
    for (attribute, key, asked, before) in [
        (IFLA_MTU, "mtu", settings.mtu, link.mtu),
        (
            IFLA_TXQLEN,
            "txqueuelen",
            settings.tx_queue_len,
            link.tx_queue_len,
        ),
    ] {
        let (Some(asked), Some(socket)) = (asked, &undo.route_socket) else {
            continue;
        };
        let before = before.ok_or_else(|| SettingsError::Read {
            what: format!("the {key} of {interface}"),
        })?;
        netlink::set_link_value(socket, undo.index, attribute, asked)
            .map_err(|errno| refusal(format!("{key}={asked} on {interface}"), errno))?;
        if attribute == IFLA_MTU {
            undo.mtu = Some(before);
        } else {
            undo.tx_queue_len = Some(before);
        }
    }
    for before in &mut checked.sysctls {
        let Some(file) = before.file.take() else {
            continue;
        };
        let asked = settings
            .sysctls
            .get(&before.name)
            .map_or("", String::as_str);
        sysctl::write(&file, asked)
            .map_err(|err| refusal(format!("{}={asked}", before.name), errno_of(&err)))?;
        undo.sysctls
            .push((before.name.clone(), file, before.value.clone()));
    }
    Ok(())
}

/// Reads back what the kernel granted of each setting asked.
fn read_back(
    interface: &str,
    index: u32,
    settings: &SystemSettings,
    checked: &Checked,
) -> Result<SystemOutcome, SettingsError> {
    let mut outcome = SystemOutcome {
        interface: interface.to_string(),
        ..SystemOutcome::default()
    };
    if let Some((plan, _)) = &checked.features {
        let socket = ethtool::open_socket().ok_or_else(|| SettingsError::Read {
            what: format!("the offload features of {interface}: no socket"),
        })?;
        let after = read_features(&socket, interface)?;
        for (name, members) in &plan.members {
            let requested = settings.features.get(name).copied().unwrap_or_default();
            let granted = features::granted(members, &after);
            outcome
                .features
                .insert(name.clone(), Granted { requested, granted });
        }
    }
    if checked.link.is_some() {
        let after = read_link(interface, index)?;
        let granted = |asked: Option<u32>, got: Option<u32>, key: &str| {
            asked
                .map(|requested| {
                    got.map(|granted| Granted { requested, granted })
                        .ok_or_else(|| SettingsError::Read {
                            what: format!("the {key} of {interface}"),
                        })
                })
                .transpose()
        };
        outcome.mtu = granted(settings.mtu, after.mtu, "mtu")?;
        outcome.tx_queue_len = granted(settings.tx_queue_len, after.tx_queue_len, "txqueuelen")?;
    }
    for (name, requested) in &settings.sysctls {
        let path = sysctl::path(Path::new(PROC_SYS), name)
            .ok_or_else(|| SettingsError::NoSuchSysctl { name: name.clone() })?;
        let read = sysctl::open(&path)
            .and_then(|file| sysctl::read(&file))
            .map_err(|err| SettingsError::Read {
                what: format!("sysctl {name}: {err}"),
            })?;
        // The kernel prints a vector with tabs; a value that reads back
        // as asked, but for its spacing, is granted as asked.
        let granted = if sysctl::fold_whitespace(requested) == read {
            requested.clone()
        } else {
            read
        };
        outcome.sysctls.insert(
            name.clone(),
            Granted {
                requested: requested.clone(),
                granted,
            },
        );
    }
    Ok(outcome)
}

/// What to put back, filled in as each change is made: the feature bits
/// changed with their requested state before, the MTU and tx queue length
/// before, and each sysctl's open file and value before; and the sockets
/// the changes were made through.
#[derive(Debug)]
struct Undo {
    interface: String,
    index: u32,
    ethtool_socket: Option<OwnedFd>,
    route_socket: Option<OwnedFd>,
    features: Option<(Vec<u32>, Vec<u32>)>,
    mtu: Option<u32>,
    tx_queue_len: Option<u32>,
    sysctls: Vec<(String, File, String)>,
}

impl Undo {
    /// Puts everything back, in the reverse order of the changes. Each
    /// value that could not be put back is a failure, and the rest are
    /// still tried.
    fn run(&mut self) -> Result<(), Vec<String>> {
        let mut failures = Vec::new();
        let interface = &self.interface;
        while let Some((name, file, value)) = self.sysctls.pop() {
            if let Err(err) = sysctl::write(&file, &value) {
                failures.push(format!("{name}={value} ({err})"));
            }
        }
        if let Some(socket) = &self.route_socket {
            for (attribute, key, value) in [
                (IFLA_TXQLEN, "txqueuelen", self.tx_queue_len.take()),
                (IFLA_MTU, "mtu", self.mtu.take()),
            ] {
                if let Some(value) = value
                    && let Err(errno) =
                        netlink::set_link_value(socket, self.index, attribute, value)
                {
                    failures.push(format!("{key}={value} on {interface} ({errno})"));
                }
            }
        }
        if let (Some((valid, requested)), Some(socket)) =
            (self.features.take(), &self.ethtool_socket)
            && let Err(errno) = ethtool::set_features(socket, interface, &valid, &requested)
        {
            failures.push(format!("the offload features of {interface} ({errno})"));
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures)
        }
    }
}

#[cfg(test)]
mod tests;
