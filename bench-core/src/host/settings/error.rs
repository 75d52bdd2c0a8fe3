//! Why a setting could not be made or undone, each error naming the
//! interface, its driver, the setting and what the kernel answered.

use rustix::io::Errno;

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

impl SettingsError {
    /// True when the user can fix the request (another interface, name or
    /// value, or root), false for a state that could not be read or put
    /// back.
    pub fn is_input(&self) -> bool {
        !matches!(
            self,
            SettingsError::Read { .. } | SettingsError::NotRestored { .. }
        )
    }
}

fn driver_of(interface: &str, driver: Option<&str>) -> String {
    match driver {
        Some(driver) => format!("the driver of {interface} ({driver})"),
        None => format!("the driver of {interface}"),
    }
}

pub(super) fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

fn cause_prefix(cause: Option<&SettingsError>) -> String {
    cause.map(|cause| format!("{cause}; ")).unwrap_or_default()
}

/// The error for a change the kernel answered `errno` to.
pub(super) fn refusal(setting: String, errno: Errno) -> SettingsError {
    match errno {
        Errno::PERM | Errno::ACCESS => SettingsError::NotPermitted { setting },
        _ => SettingsError::Refused { setting, errno },
    }
}

pub(super) fn errno_of(error: &std::io::Error) -> Errno {
    Errno::from_io_error(error).unwrap_or(Errno::IO)
}
