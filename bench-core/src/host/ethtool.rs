//! Driver name and offload features of one interface through the ethtool
//! ioctl (`SIOCETHTOOL` on an `AF_INET` datagram socket), whose read
//! commands need no privilege; and the one write command netbisect sends,
//! `ETHTOOL_SFEATURES`, which needs `CAP_NET_ADMIN`.
//!
//! Commands and layouts follow `<linux/ethtool.h>`. Every command buffer
//! is a `Vec<u32>` whose first word is the command: the kernel reads and
//! writes the structure in place, and the answers are taken out word by
//! word in native byte order, so no structure is reinterpreted in Rust.
//!
//! The ioctl stays written by hand: rustix wraps no ethtool command (and
//! its generic `ioctl` is as unsafe to call), and the `ethtool` crate
//! speaks ethtool's generic netlink family over an async runtime, too
//! much for five commands.

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};

/// `ETHTOOL_GDRVINFO`: driver name, version, bus.
const ETHTOOL_GDRVINFO: u32 = 0x03;
/// `ETHTOOL_GSTRINGS`: the names of a string set.
const ETHTOOL_GSTRINGS: u32 = 0x1b;
/// `ETHTOOL_GSSET_INFO`: the sizes of string sets.
const ETHTOOL_GSSET_INFO: u32 = 0x37;
/// `ETHTOOL_GFEATURES`: available, requested and active feature bits.
const ETHTOOL_GFEATURES: u32 = 0x3a;
/// `ETHTOOL_SFEATURES`: change the requested feature bits.
const ETHTOOL_SFEATURES: u32 = 0x3b;
/// The string set that names the netdev features.
const ETH_SS_FEATURES: u32 = 4;
/// Length of one ethtool string, NUL-padded.
const ETH_GSTRING_LEN: usize = 32;
/// Size of `struct ethtool_drvinfo`: the command word, five 32-byte
/// strings, 12 reserved bytes and five counters.
const DRVINFO_LEN: usize = 4 + 5 * 32 + 12 + 5 * 4;
/// More features than any kernel defines; a larger count is not trusted.
const MAX_FEATURES: u32 = 1024;

/// The interface name in the form `struct ifreq` wants it.
type IfName = [libc::c_char; libc::IFNAMSIZ];

/// The name of `interface`'s driver, when the driver reports one.
pub(super) fn driver(interface: &str) -> Option<String> {
    let socket = open_socket()?;
    let name = if_name(interface)?;
    let mut buffer = vec![0u32; DRVINFO_LEN / 4];
    buffer[0] = ETHTOOL_GDRVINFO;
    ethtool_ioctl(&socket, &name, &mut buffer).ok()?;
    let bytes = words_to_bytes(&buffer);
    nul_terminated(bytes.get(4..4 + ETH_GSTRING_LEN)?)
}

/// The offload features of `interface` by ethtool name, true when active.
pub(super) fn features(interface: &str) -> Option<BTreeMap<String, bool>> {
    let state = feature_state(interface)?;
    Some(features_from(&state.names, &state.active))
}

/// Every feature of one interface as `ETHTOOL_GFEATURES` reports it: the
/// names of the kernel's feature bits, and four masks of one word per 32
/// bits each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct FeatureState {
    /// The name of each bit, in bit order; empty for an unnamed bit.
    pub(super) names: Vec<String>,
    /// Bits the driver lets be changed (`hw_features`).
    pub(super) available: Vec<u32>,
    /// Bits asked for (`wanted_features`).
    pub(super) requested: Vec<u32>,
    /// Bits in effect (`features`).
    pub(super) active: Vec<u32>,
    /// Bits no request may change (`NETIF_F_NEVER_CHANGE`).
    pub(super) never_changed: Vec<u32>,
}

/// True when bit `bit_idx` of `words` is set.
pub(super) fn bit_is_set(words: &[u32], bit_idx: usize) -> bool {
    words
        .get(bit_idx / 32)
        .is_some_and(|word| word & (1 << (bit_idx % 32)) != 0)
}

/// Sets bit `bit_idx` of `words` to `on`; a bit past the words is left
/// alone.
pub(super) fn set_bit(words: &mut [u32], bit_idx: usize, on: bool) {
    if let Some(word) = words.get_mut(bit_idx / 32) {
        let mask = 1 << (bit_idx % 32);
        if on {
            *word |= mask;
        } else {
            *word &= !mask;
        }
    }
}

/// The names and feature masks of `interface`; `None` when it cannot be
/// read (no such interface, or a kernel without the features string set).
pub(super) fn feature_state(interface: &str) -> Option<FeatureState> {
    feature_state_on(&open_socket()?, interface)
}

/// [`feature_state`] asked on `socket`, which names interfaces in the
/// network namespace it was opened in.
pub(super) fn feature_state_on(socket: &OwnedFd, interface: &str) -> Option<FeatureState> {
    let name = if_name(interface)?;
    let count = feature_count(socket, &name)?;
    let names = feature_names(socket, &name, count)?;
    let mut state = feature_blocks(socket, &name, count)?;
    state.names = names;
    Some(state)
}

/// Asks, on `socket` (of [`open_socket`]), for the features of
/// `interface` whose bits are set in `valid` to be on or off as the same
/// bits of `requested` say, as `ethtool -K` does; the kernel keeps the
/// other features as they are. `Ok` holds the kernel's flags
/// (`ETHTOOL_F_WISH` when some feature is not as asked, which the caller
/// reads back anyway); `Err` is the kernel's refusal (`EPERM` without
/// `CAP_NET_ADMIN`, `ENODEV`, `EINVAL`).
pub(super) fn set_features(
    socket: &OwnedFd,
    interface: &str,
    valid: &[u32],
    requested: &[u32],
) -> Result<u32, Errno> {
    let name = if_name(interface).ok_or(Errno::NODEV)?;
    // struct ethtool_sfeatures: cmd, size (blocks), then blocks of valid
    // and requested words. The kernel refuses any size but its own
    // number of blocks, which `valid` holds (one block per 32 features
    // of the string set).
    let n_blocks = u32::try_from(valid.len()).map_err(|_| Errno::INVAL)?;
    if requested.len() != valid.len() {
        return Err(Errno::INVAL);
    }
    let mut buffer = Vec::with_capacity(2 + 2 * valid.len());
    buffer.push(ETHTOOL_SFEATURES);
    buffer.push(n_blocks);
    for (valid_word, requested_word) in valid.iter().zip(requested) {
        buffer.push(*valid_word);
        buffer.push(*requested_word);
    }
    let flags = ethtool_ioctl(socket, &name, &mut buffer)?;
    Ok(u32::try_from(flags).unwrap_or(0))
}

/// Number of strings in the features set.
fn feature_count(socket: &OwnedFd, name: &IfName) -> Option<u32> {
    // struct ethtool_sset_info: cmd, reserved, a 64-bit mask of the sets
    // asked for, then one count per set present in the answer's mask.
    let mask = (1u64 << ETH_SS_FEATURES).to_ne_bytes();
    let mut buffer = vec![0u32; 5];
    buffer[0] = ETHTOOL_GSSET_INFO;
    buffer[2] = u32::from_ne_bytes(mask[..4].try_into().ok()?);
    buffer[3] = u32::from_ne_bytes(mask[4..].try_into().ok()?);
    ethtool_ioctl(socket, name, &mut buffer).ok()?;
    let mut answered = [0u8; 8];
    answered[..4].copy_from_slice(&buffer[2].to_ne_bytes());
    answered[4..].copy_from_slice(&buffer[3].to_ne_bytes());
    if u64::from_ne_bytes(answered) & (1 << ETH_SS_FEATURES) == 0 {
        return None;
    }
    let count = buffer[4];
    (count > 0 && count <= MAX_FEATURES).then_some(count)
}

/// The `count` feature names, in bit order.
fn feature_names(socket: &OwnedFd, name: &IfName, count: u32) -> Option<Vec<String>> {
    // struct ethtool_gstrings: cmd, string_set, len, then len strings. The
    // kernel writes as many strings as the set has, which for the features
    // set is a constant of the running kernel, the count just read.
    let n_strings = usize::try_from(count).ok()?;
    let mut buffer = vec![0u32; 3 + n_strings * ETH_GSTRING_LEN / 4];
    buffer[0] = ETHTOOL_GSTRINGS;
    buffer[1] = ETH_SS_FEATURES;
    buffer[2] = count;
    ethtool_ioctl(socket, name, &mut buffer).ok()?;
    if buffer[2] != count {
        return None;
    }
    let bytes = words_to_bytes(&buffer[3..]);
    Some(strings_from(&bytes, n_strings))
}

/// The four masks of the feature blocks, one word per 32 features each
/// (the names left empty).
fn feature_blocks(socket: &OwnedFd, name: &IfName, count: u32) -> Option<FeatureState> {
    // struct ethtool_gfeatures: cmd, size (blocks), then blocks of
    // available, requested, active and never_changed words. The kernel
    // copies at most `size` blocks.
    let n_blocks = count.div_ceil(32);
    let mut buffer = vec![0u32; 2 + 4 * usize::try_from(n_blocks).ok()?];
    buffer[0] = ETHTOOL_GFEATURES;
    buffer[1] = n_blocks;
    ethtool_ioctl(socket, name, &mut buffer).ok()?;
    if buffer[1] < n_blocks {
        return None;
    }
    let column = |idx: usize| -> Vec<u32> {
        buffer[2..]
            .chunks_exact(4)
            .map(|block| block[idx])
            .collect()
    };
    Some(FeatureState {
        names: Vec::new(),
        available: column(0),
        requested: column(1),
        active: column(2),
        never_changed: column(3),
    })
}

/// Pairs names with their active bits, skipping unnamed bits.
fn features_from(names: &[String], active: &[u32]) -> BTreeMap<String, bool> {
    names
        .iter()
        .enumerate()
        .filter(|(_, name)| !name.is_empty())
        .filter_map(|(bit_idx, name)| {
            let word = active.get(bit_idx / 32)?;
            Some((name.clone(), word & (1 << (bit_idx % 32)) != 0))
        })
        .collect()
}

/// Splits `n_strings` NUL-padded ethtool strings; an unreadable one is
/// empty.
fn strings_from(bytes: &[u8], n_strings: usize) -> Vec<String> {
    bytes
        .chunks_exact(ETH_GSTRING_LEN)
        .take(n_strings)
        .map(|chunk| nul_terminated(chunk).unwrap_or_default())
        .collect()
}

fn nul_terminated(bytes: &[u8]) -> Option<String> {
    let end = bytes
        .iter()
        .position(|&byte| byte == 0)
        .unwrap_or(bytes.len());
    let text = std::str::from_utf8(&bytes[..end]).ok()?;
    (!text.is_empty()).then(|| text.to_string())
}

fn words_to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|word| word.to_ne_bytes()).collect()
}

/// `interface` as a NUL-terminated `ifr_name`; `None` when it cannot be
/// an interface name.
fn if_name(interface: &str) -> Option<IfName> {
    let bytes = interface.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return None;
    }
    let mut name: IfName = [0; libc::IFNAMSIZ];
    for (slot, &byte) in name.iter_mut().zip(bytes) {
        *slot = byte as libc::c_char;
    }
    Some(name)
}

/// A socket for ethtool commands on the interfaces of the calling
/// thread's network namespace.
pub(super) fn open_socket() -> Option<OwnedFd> {
    rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .ok()
}

/// Runs the ethtool command whose structure is `buffer` (command in the
/// first word) on interface `name`; the ioctl's result (0, or the flags
/// of `ETHTOOL_SFEATURES`), or the error it set.
fn ethtool_ioctl(socket: &OwnedFd, name: &IfName, buffer: &mut [u32]) -> Result<i32, Errno> {
    let mut request = libc::ifreq {
        ifr_name: *name,
        ifr_ifru: libc::__c_anonymous_ifr_ifru {
            ifru_data: buffer.as_mut_ptr().cast(),
        },
    };
    // SAFETY: `request` holds a NUL-terminated name and points at
    // `buffer`, which stays borrowed mutably for the call and is sized by
    // each caller for the structure its command reads and writes (see the
    // comments at the call sites).
    let outcome = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCETHTOOL, &raw mut request) };
    if outcome < 0 {
        let error = std::io::Error::last_os_error();
        return Err(Errno::from_io_error(&error).unwrap_or(Errno::IO));
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_fit_ifreq() {
        assert!(if_name("lo").is_some());
        assert!(if_name("fifteen-chars-x").is_some());
        assert!(if_name("sixteen-chars-xx").is_none());
        assert!(if_name("").is_none());
        assert!(if_name("a\0b").is_none());
        let name = if_name("eth0").unwrap();
        assert_eq!(
            name[..5],
            [b'e', b't', b'h', b'0', 0].map(|b| b as libc::c_char)
        );
    }

    #[test]
    fn splits_padded_strings() {
        let mut bytes = vec![0u8; 3 * ETH_GSTRING_LEN];
        bytes[..7].copy_from_slice(b"tx-sg\0x");
        bytes[2 * ETH_GSTRING_LEN..2 * ETH_GSTRING_LEN + 6].copy_from_slice(b"rx-gro");
        assert_eq!(strings_from(&bytes, 3), vec!["tx-sg", "", "rx-gro"]);
        // A set shorter than announced yields what is there.
        assert_eq!(strings_from(&bytes[..ETH_GSTRING_LEN], 3), vec!["tx-sg"]);
    }

    #[test]
    fn pairs_names_with_active_bits() {
        let mut names: Vec<String> = (0..40).map(|bit| format!("f{bit}")).collect();
        names[2] = String::new();
        let active = [0b101, 1 << 3];
        let features = features_from(&names, &active);
        assert_eq!(features.len(), 39);
        assert!(features["f0"]);
        assert!(!features["f1"]);
        assert!(!features.contains_key(""));
        assert!(features["f35"]);
        assert!(!features["f36"]);
        // Bits past the words the kernel returned are left out.
        assert_eq!(features_from(&names, &active[..1]).len(), 31);
    }

    #[test]
    fn bits_are_read_and_set_by_index() {
        let mut words = vec![0u32; 2];
        set_bit(&mut words, 0, true);
        set_bit(&mut words, 33, true);
        // A bit past the words is left alone, and reads as off.
        set_bit(&mut words, 64, true);
        assert_eq!(words, [1, 2]);
        assert!(bit_is_set(&words, 33));
        assert!(!bit_is_set(&words, 32));
        assert!(!bit_is_set(&words, 64));
        set_bit(&mut words, 0, false);
        assert_eq!(words, [0, 2]);
    }

    #[test]
    fn reads_the_loopback_feature_masks() {
        let state = feature_state("lo").unwrap();
        assert_eq!(state.available.len(), state.names.len().div_ceil(32));
        for words in [&state.requested, &state.active, &state.never_changed] {
            assert_eq!(words.len(), state.available.len());
        }
        let bit_idx = state.names.iter().position(|n| n == "loopback").unwrap();
        // Loopback is the device's own nature: on, and not the user's to
        // change.
        assert!(bit_is_set(&state.active, bit_idx));
        assert!(!bit_is_set(&state.available, bit_idx));
        assert!(feature_state("no-such-if0").is_none());
    }

    #[test]
    fn reads_loopback_features() {
        let loopback = features("lo").unwrap();
        assert_eq!(loopback.get("loopback"), Some(&true));
        assert!(features("no-such-if0").is_none());
        assert!(driver("no-such-if0").is_none());
    }
}
