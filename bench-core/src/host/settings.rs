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
//! so a test that fails leaves the host as it found it. Reading needs no
//! privilege; changing needs root (`CAP_NET_ADMIN`).
//!
//! Everything here acts on the network namespace of the calling thread:
//! the sockets are opened, and /proc/sys/net is resolved, by it.

mod features;
mod sysctl;

pub use features::{SHORT_NAMES, kernel_pattern};

use super::ethtool::{self, FeatureState};
use super::netlink::{self, IFLA_MTU, IFLA_TXQLEN, LinkAttributes};
use features::{FeaturePlan, FeatureProblem};
use run_record::record::{Granted, SystemOutcome};
use run_record::spec::SystemSettings;
use rustix::io::Errno;
use std::path::{Path, PathBuf};

/// Where the sysctls are.
const PROC_SYS: &str = "/proc/sys";

/// Why a setting could not be made, or undone.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The interface does not exist (in this network namespace).
    #[error("no interface named {interface}")]
    NoSuchInterface {
        /// The name asked.
        interface: String,
    },
    /// The device has no feature of the name asked.
    #[error("{} has no feature {feature}", driver_of(.interface, .driver.as_deref()))]
    NoSuchFeature {
        /// The interface.
        interface: String,
        /// Its driver, when it reports one.
        driver: Option<String>,
        /// The feature asked, short or the kernel's name.
        feature: String,
    },
    /// The device has the feature but does not let it change.
    #[error(
        "{} keeps {feature} fixed {}: it cannot be changed",
        driver_of(.interface, .driver.as_deref()),
        on_off(*.on)
    )]
    FixedFeature {
        /// The interface.
        interface: String,
        /// Its driver, when it reports one.
        driver: Option<String>,
        /// The feature asked.
        feature: String,
        /// Its state, which stays.
        on: bool,
    },
    /// Two names asked cover one feature, one on and one off.
    #[error("{first} and {second} both cover {feature}, one on and one off: ask for one of them")]
    FeatureClash {
        /// The first name, in name order.
        first: String,
        /// The second.
        second: String,
        /// The kernel feature both cover.
        feature: String,
    },
    /// No sysctl of that name.
    #[error("no sysctl named {name}")]
    NoSuchSysctl {
        /// The dotted name.
        name: String,
    },
    /// The caller may not make the change.
    #[error("not permitted to set {setting}: this needs root (CAP_NET_ADMIN)")]
    NotPermitted {
        /// The setting, as `gso=off on eth0` or `net.core.rmem_max=1`.
        setting: String,
    },
    /// The kernel refused the value.
    #[error("the kernel refused {setting}: {errno}")]
    Refused {
        /// The setting, as `mtu=9000 on eth0`.
        setting: String,
        /// What the kernel answered.
        errno: Errno,
    },
    /// A state could not be read, before or after a change.
    #[error("cannot read {what}")]
    Read {
        /// What, as `the offload features of eth0`.
        what: String,
    },
    /// Some previous values could not be put back.
    #[error(
        "{}the previous settings were not all restored: {}",
        cause_prefix(.cause.as_deref()),
        .failures.join("; ")
    )]
    NotRestored {
        /// The error that made the settings be undone, if one did.
        cause: Option<Box<SettingsError>>,
        /// Each value not put back, as `mtu=1500 on eth0 (reason)`.
        failures: Vec<String>,
    },
}

fn driver_of(interface: &str, driver: Option<&str>) -> String {
    match driver {
        Some(driver) => format!("the driver of {interface} ({driver})"),
        None => format!("the driver of {interface}"),
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

fn cause_prefix(cause: Option<&SettingsError>) -> String {
    cause.map(|cause| format!("{cause}; ")).unwrap_or_default()
}

/// The error for a change the kernel answered `errno` to.
fn refusal(setting: String, errno: Errno) -> SettingsError {
    match errno {
        Errno::PERM | Errno::ACCESS => SettingsError::NotPermitted { setting },
        _ => SettingsError::Refused { setting, errno },
    }
}

fn errno_of(error: &std::io::Error) -> Errno {
    Errno::from_io_error(error).unwrap_or(Errno::IO)
}

/// Settings made on one interface and this host, with what was there
/// before them. Restored by [`AppliedSettings::restore`], or when
/// dropped (errors then go unreported).
#[derive(Debug)]
pub struct AppliedSettings {
    outcome: SystemOutcome,
    undo: Option<Undo>,
}

impl AppliedSettings {
    /// What was asked and what the kernel granted.
    pub fn outcome(&self) -> &SystemOutcome {
        &self.outcome
    }

    /// Puts back every value that was there before; the error names
    /// those that could not be.
    pub fn restore(mut self) -> Result<(), SettingsError> {
        self.restore_now()
    }

    fn restore_now(&mut self) -> Result<(), SettingsError> {
        match self.undo.take() {
            Some(mut undo) => undo.run().map_err(|failures| SettingsError::NotRestored {
                cause: None,
                failures,
            }),
            None => Ok(()),
        }
    }
}

impl Drop for AppliedSettings {
    fn drop(&mut self) {
        // Whoever needs the failure calls `restore`; a drop has nobody
        // to tell.
        let _ = self.restore_now();
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
    let checked = check(interface, index, settings, Path::new(PROC_SYS))?;
    let mut undo = Undo {
        interface: interface.to_string(),
        index,
        features: None,
        mtu: None,
        tx_queue_len: None,
        sysctls: Vec::new(),
    };
    let made = make(&checked, settings, &mut undo)
        .and_then(|()| read_back(interface, index, settings, &checked));
    match made {
        Ok(outcome) => Ok(AppliedSettings {
            outcome,
            undo: Some(undo),
        }),
        Err(cause) => Err(match undo.run() {
            Ok(()) => cause,
            Err(failures) => SettingsError::NotRestored {
                cause: Some(Box::new(cause)),
                failures,
            },
        }),
    }
}

/// What the checks found: the feature request with the state before it,
/// the link before, and each sysctl's file and value before.
struct Checked {
    features: Option<(FeaturePlan, FeatureState)>,
    link: Option<LinkAttributes>,
    sysctls: Vec<SysctlBefore>,
}

struct SysctlBefore {
    name: String,
    path: PathBuf,
    value: String,
}

/// Checks every setting against the device and the host, reading what
/// the undo needs; changes nothing.
fn check(
    interface: &str,
    index: u32,
    settings: &SystemSettings,
    proc_sys: &Path,
) -> Result<Checked, SettingsError> {
    let features = if settings.features.is_empty() {
        None
    } else {
        let state = read_features(interface)?;
        let plan = features::plan(&settings.features, &state).map_err(|problem| {
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
        })?;
        Some((plan, state))
    };
    let link = if settings.mtu.is_some() || settings.tx_queue_len.is_some() {
        Some(read_link(interface, index)?)
    } else {
        None
    };
    let mut sysctls = Vec::new();
    for name in settings.sysctls.keys() {
        let missing = || SettingsError::NoSuchSysctl { name: name.clone() };
        let path = sysctl::path(proc_sys, name).ok_or_else(missing)?;
        let value = sysctl::read(&path).map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::IsADirectory => missing(),
            _ => SettingsError::Read {
                what: format!("sysctl {name}: {err}"),
            },
        })?;
        sysctls.push(SysctlBefore {
            name: name.clone(),
            path,
            value,
        });
    }
    Ok(Checked {
        features,
        link,
        sysctls,
    })
}

fn read_features(interface: &str) -> Result<FeatureState, SettingsError> {
    ethtool::feature_state(interface).ok_or_else(|| SettingsError::Read {
        what: format!("the offload features of {interface}"),
    })
}

fn read_link(interface: &str, index: u32) -> Result<LinkAttributes, SettingsError> {
    netlink::link_attributes(index).ok_or_else(|| SettingsError::Read {
        what: format!("the link attributes of {interface}"),
    })
}

/// Makes each change in turn, features first, noting in `undo` what to
/// put back before it is made.
fn make(checked: &Checked, settings: &SystemSettings, undo: &mut Undo) -> Result<(), SettingsError> {
    let interface = undo.interface.clone();
    if let Some((plan, before)) = &checked.features {
        undo.features = Some((plan.valid.clone(), before.requested.clone()));
        ethtool::set_features(&interface, &plan.valid, &plan.requested).map_err(|errno| {
            let asked: Vec<String> = settings
                .features
                .iter()
                .map(|(name, on)| format!("{name}={}", on_off(*on)))
                .collect();
            refusal(format!("{} on {interface}", asked.join(" ")), errno)
        })?;
    }
    let link = checked.link.clone().unwrap_or_default();
    for (attribute, key, asked, before, slot) in [
        (IFLA_MTU, "mtu", settings.mtu, link.mtu, &mut undo.mtu),
        (
            IFLA_TXQLEN,
            "txqueuelen",
            settings.tx_queue_len,
            link.tx_queue_len,
            &mut undo.tx_queue_len,
        ),
    ] {
        let Some(asked) = asked else { continue };
        let before = before.ok_or_else(|| SettingsError::Read {
            what: format!("the {key} of {interface}"),
        })?;
        *slot = Some(before);
        netlink::set_link_value(undo.index, attribute, asked)
            .map_err(|errno| refusal(format!("{key}={asked} on {interface}"), errno))?;
    }
    for before in &checked.sysctls {
        let asked = settings
            .sysctls
            .get(&before.name)
            .map_or("", String::as_str);
        undo.sysctls.push((
            before.name.clone(),
            before.path.clone(),
            before.value.clone(),
        ));
        sysctl::write(&before.path, asked)
            .map_err(|err| refusal(format!("{}={asked}", before.name), errno_of(&err)))?;
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
        let after = read_features(interface)?;
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
    for before in &checked.sysctls {
        let requested = settings
            .sysctls
            .get(&before.name)
            .cloned()
            .unwrap_or_default();
        let read = sysctl::read(&before.path).map_err(|err| SettingsError::Read {
            what: format!("sysctl {}: {err}", before.name),
        })?;
        // The kernel prints a vector with tabs; a value that reads back
        // as asked, but for its spacing, is granted as asked.
        let granted = if sysctl::fold_whitespace(&requested) == read {
            requested.clone()
        } else {
            read
        };
        outcome
            .sysctls
            .insert(before.name.clone(), Granted { requested, granted });
    }
    Ok(outcome)
}

/// What to put back, filled in as each change is made: the feature bits
/// changed with their requested state before, the MTU and tx queue length
/// before, and each sysctl's value before.
#[derive(Debug)]
struct Undo {
    interface: String,
    index: u32,
    features: Option<(Vec<u32>, Vec<u32>)>,
    mtu: Option<u32>,
    tx_queue_len: Option<u32>,
    sysctls: Vec<(String, PathBuf, String)>,
}

impl Undo {
    /// Puts everything back, in the reverse order of the changes; once.
    /// Each value that could not be put back is a failure, and the rest
    /// are still tried.
    fn run(&mut self) -> Result<(), Vec<String>> {
        let mut failures = Vec::new();
        let interface = &self.interface;
        while let Some((name, path, value)) = self.sysctls.pop() {
            if let Err(err) = sysctl::write(&path, &value) {
                failures.push(format!("{name}={value} ({err})"));
            }
        }
        for (attribute, key, slot) in [
            (IFLA_TXQLEN, "txqueuelen", &mut self.tx_queue_len),
            (IFLA_MTU, "mtu", &mut self.mtu),
        ] {
            if let Some(value) = slot.take()
                && let Err(errno) = netlink::set_link_value(self.index, attribute, value)
            {
                failures.push(format!("{key}={value} on {interface} ({errno})"));
            }
        }
        if let Some((valid, requested)) = self.features.take()
            && let Err(errno) = ethtool::set_features(interface, &valid, &requested)
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
