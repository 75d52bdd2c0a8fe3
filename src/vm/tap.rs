//! The host's tap device of [`super::NetMode::Host`]: checked before anything
//! boots, and the guest's address in the tap's subnet.

use super::VmError;
use std::net::Ipv4Addr;
use std::path::Path;

/// The host's tap device of [`super::NetMode::Host`] and the addresses of its
/// two ends: the host's (the tap's own IPv4 address) and the guest's (the
/// next free one of the tap's subnet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapLink {
    /// The tap device.
    pub tap: String,
    /// The host's address, where the server listens.
    pub host: Ipv4Addr,
    /// The guest's address.
    pub guest: Ipv4Addr,
    /// Length of the subnet's prefix.
    pub prefix: u8,
}

/// `/sys/class/net/*/tun_flags` bit of a tap (not tun) device.
const IFF_TAP: u32 = 0x0002;
/// `/sys/class/net/*/flags` bit of a device that is up (`IFF_UP` of
/// `<net/if.h>`).
const IFF_UP: u32 = 0x0001;

/// Checks that `tap` is a tap device of this host (of this network
/// namespace), up, with an IPv4 address in a subnet that leaves room for
/// the guest's; returns the link.
pub fn tap_link(tap: &str) -> Result<TapLink, VmError> {
    let bad = |why: String| VmError::BadOption(format!("--vm-tap {tap}: {why}"));
    if tap.is_empty()
        || tap.len() > 15
        || tap.contains(['/', ',', '='])
        || tap.contains(char::is_whitespace)
    {
        return Err(bad("not a network device name".to_string()));
    }
    let sys = Path::new("/sys/class/net").join(tap);
    if !sys.exists() {
        return Err(bad(format!(
            "no such device; create it: ip tuntap add dev {tap} mode tap user $USER"
        )));
    }
    let read_hex = |name: &str| {
        std::fs::read_to_string(sys.join(name))
            .ok()
            .and_then(|text| u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok())
    };
    if read_hex("tun_flags").is_none_or(|flags| flags & IFF_TAP == 0) {
        return Err(bad(
            "not a tap device (ip tuntap add ... mode tap)".to_string()
        ));
    }
    if read_hex("flags").is_none_or(|flags| flags & IFF_UP == 0) {
        return Err(bad(format!("the device is down: ip link set {tap} up")));
    }
    let Some((host, prefix)) = bench_core::host::interface_ipv4(tap) else {
        return Err(bad(format!(
            "no IPv4 address: ip addr add 10.0.0.1/24 dev {tap} (or any free subnet)"
        )));
    };
    let guest = guest_address(host, prefix).ok_or_else(|| {
        bad(format!(
            "{host}/{prefix} leaves no address for the guest: give a /30 or wider"
        ))
    })?;
    Ok(TapLink {
        tap: tap.to_string(),
        host,
        guest,
        prefix,
    })
}

/// The address after `host` in its subnet (the one before, when `host`
/// is the last), never the subnet's own address or its broadcast.
fn guest_address(host: Ipv4Addr, prefix: u8) -> Option<Ipv4Addr> {
    if prefix > 30 {
        return None;
    }
    let mask = u32::MAX << (32 - u32::from(prefix));
    let host = u32::from(host);
    let network = host & mask;
    let broadcast = network | !mask;
    if host == network || host == broadcast {
        return None;
    }
    let guest = if host + 1 < broadcast {
        host + 1
    } else {
        host - 1
    };
    (guest > network).then(|| Ipv4Addr::from(guest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_takes_the_next_free_address_of_the_taps_subnet() {
        let guest = |host: &str, prefix| guest_address(host.parse().unwrap(), prefix);
        assert_eq!(guest("10.77.0.1", 24), Some("10.77.0.2".parse().unwrap()));
        assert_eq!(
            guest("10.77.0.254", 24),
            Some("10.77.0.253".parse().unwrap())
        );
        assert_eq!(
            guest("192.168.5.1", 30),
            Some("192.168.5.2".parse().unwrap())
        );
        assert_eq!(
            guest("192.168.5.2", 30),
            Some("192.168.5.1".parse().unwrap())
        );
        assert_eq!(guest("10.77.0.0", 24), None);
        assert_eq!(guest("10.77.0.255", 24), None);
        assert_eq!(guest("10.77.0.1", 31), None);
    }
}
