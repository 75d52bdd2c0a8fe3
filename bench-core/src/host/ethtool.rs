//! Driver name and offload features of one interface through the ethtool
//! ioctl (`SIOCETHTOOL` on an `AF_INET` datagram socket), whose read
//! commands need no privilege.
//!
//! Commands and layouts follow `<linux/ethtool.h>`. Every command buffer
//! is a `Vec<u32>` whose first word is the command: the kernel reads and
//! writes the structure in place, and the answers are taken out word by
//! word in native byte order, so no structure is reinterpreted in Rust.
//!
//! The ioctl stays written by hand: rustix wraps no ethtool command (and
//! its generic `ioctl` is as unsafe to call), and the `ethtool` crate
//! speaks ethtool's generic netlink family over an async runtime, too
//! much for four read-only commands.

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
    ethtool_ioctl(&socket, &name, &mut buffer)?;
    let bytes = words_to_bytes(&buffer);
    nul_terminated(bytes.get(4..4 + ETH_GSTRING_LEN)?)
}

/// The offload features of `interface` by ethtool name, true when active.
pub(super) fn features(interface: &str) -> Option<BTreeMap<String, bool>> {
    let socket = open_socket()?;
    let name = if_name(interface)?;
    let count = feature_count(&socket, &name)?;
    let names = feature_names(&socket, &name, count)?;
    let active = active_feature_words(&socket, &name, count)?;
    Some(features_from(&names, &active))
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
    ethtool_ioctl(socket, name, &mut buffer)?;
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
    ethtool_ioctl(socket, name, &mut buffer)?;
    if buffer[2] != count {
        return None;
    }
    let bytes = words_to_bytes(&buffer[3..]);
    Some(strings_from(&bytes, n_strings))
}

/// The `active` word of each feature block, one word per 32 features.
fn active_feature_words(socket: &OwnedFd, name: &IfName, count: u32) -> Option<Vec<u32>> {
    // struct ethtool_gfeatures: cmd, size (blocks), then blocks of
    // available, requested, active and never_changed words. The kernel
    // copies at most `size` blocks.
    let n_blocks = count.div_ceil(32);
    let mut buffer = vec![0u32; 2 + 4 * usize::try_from(n_blocks).ok()?];
    buffer[0] = ETHTOOL_GFEATURES;
    buffer[1] = n_blocks;
    ethtool_ioctl(socket, name, &mut buffer)?;
    if buffer[1] < n_blocks {
        return None;
    }
    Some(buffer[2..].chunks_exact(4).map(|block| block[2]).collect())
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

fn open_socket() -> Option<OwnedFd> {
    rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .ok()
}

/// Runs the ethtool command whose structure is `buffer` (command in the
/// first word) on interface `name`.
fn ethtool_ioctl(socket: &OwnedFd, name: &IfName, buffer: &mut [u32]) -> Option<()> {
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
    (outcome == 0).then_some(())
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
    fn reads_loopback_features() {
        let loopback = features("lo").unwrap();
        assert_eq!(loopback.get("loopback"), Some(&true));
        assert!(features("no-such-if0").is_none());
        assert!(driver("no-such-if0").is_none());
    }
}
