//! Which interface a local address belongs to, from getifaddrs(3), and
//! which local address the kernel would send from to reach a host.

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// One address of one interface.
#[derive(Clone, Debug, PartialEq, Eq)]
struct InterfaceAddress {
    interface: String,
    address: IpAddr,
    loopback: bool,
}

/// The name of the interface that owns `address`, such as `lo` for
/// `127.0.0.1` or `::1`; `None` when no interface has it.
///
/// An address of 127.0.0.0/8 that is not configured anywhere still
/// belongs to the loopback device, where the kernel delivers it.
pub fn interface_for_address(address: IpAddr) -> Option<String> {
    pick_interface(&interface_addresses()?, address)
}

/// The interface the kernel would send from to reach `remote`, found by
/// connecting a UDP socket (which sends nothing) and asking for its local
/// address; `None` when there is no route.
pub fn egress_interface(remote: IpAddr) -> Option<String> {
    let unspecified: IpAddr = match remote {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let socket = UdpSocket::bind(SocketAddr::new(unspecified, 0)).ok()?;
    // The discard port; no datagram is sent, connect only picks a route.
    socket.connect(SocketAddr::new(remote, 9)).ok()?;
    interface_for_address(socket.local_addr().ok()?.ip())
}

fn pick_interface(addresses: &[InterfaceAddress], address: IpAddr) -> Option<String> {
    let address = address.to_canonical();
    addresses
        .iter()
        .find(|entry| entry.address == address)
        .or_else(|| {
            address
                .is_loopback()
                .then(|| addresses.iter().find(|entry| entry.loopback))
                .flatten()
        })
        .map(|entry| entry.interface.clone())
}

/// Frees the list getifaddrs(3) returned when dropped.
struct AddressList(*mut libc::ifaddrs);

impl Drop for AddressList {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a successful getifaddrs(3) and is
        // freed exactly once, here.
        unsafe { libc::freeifaddrs(self.0) }
    }
}

impl AddressList {
    /// The list of this host's interface addresses, `None` when
    /// getifaddrs(3) fails.
    fn read() -> Option<AddressList> {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        // SAFETY: `head` is a live out-pointer; on success getifaddrs(3)
        // stores a list that AddressList frees.
        if unsafe { libc::getifaddrs(&raw mut head) } != 0 {
            return None;
        }
        Some(AddressList(head))
    }

    /// The nodes of the list, which live as long as it does.
    fn entries(&self) -> impl Iterator<Item = &libc::ifaddrs> {
        // SAFETY: every node pointer is null or a node of the list, which
        // outlives the borrow of `self`.
        std::iter::successors(unsafe { self.0.as_ref() }, |entry| unsafe {
            entry.ifa_next.as_ref()
        })
    }
}

/// Every IPv4 and IPv6 address of every interface.
fn interface_addresses() -> Option<Vec<InterfaceAddress>> {
    Some(
        AddressList::read()?
            .entries()
            .filter_map(entry_address)
            .collect(),
    )
}

/// The first IPv4 address of `interface` with the length of its prefix;
/// `None` when the interface has none (or does not exist).
pub fn interface_ipv4(interface: &str) -> Option<(Ipv4Addr, u8)> {
    let list = AddressList::read()?;
    list.entries().find_map(|entry| {
        let found = entry_address(entry)?;
        let IpAddr::V4(address) = found.address else {
            return None;
        };
        if found.interface != interface || entry.ifa_netmask.is_null() {
            return None;
        }
        // SAFETY: the node holds an AF_INET address, so its non-null
        // netmask is a sockaddr_in too.
        let mask = unsafe { &*entry.ifa_netmask.cast::<libc::sockaddr_in>() };
        let prefix = u32::from_be_bytes(mask.sin_addr.s_addr.to_ne_bytes()).count_ones();
        Some((address, u8::try_from(prefix).ok()?))
    })
}

fn entry_address(entry: &libc::ifaddrs) -> Option<InterfaceAddress> {
    if entry.ifa_addr.is_null() || entry.ifa_name.is_null() {
        return None;
    }
    // SAFETY: getifaddrs(3) gives each node a NUL-terminated name.
    let interface = unsafe { CStr::from_ptr(entry.ifa_name) }
        .to_str()
        .ok()?
        .to_string();
    // SAFETY: `ifa_addr` is non-null and points at a socket address at
    // least as large as `sockaddr`, whose family says the real type.
    let family = i32::from(unsafe { (*entry.ifa_addr).sa_family });
    let address = match family {
        libc::AF_INET => {
            // SAFETY: the family is AF_INET, so the address is a
            // sockaddr_in.
            let inet = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in>() };
            IpAddr::from(inet.sin_addr.s_addr.to_ne_bytes())
        }
        libc::AF_INET6 => {
            // SAFETY: the family is AF_INET6, so the address is a
            // sockaddr_in6.
            let inet6 = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in6>() };
            IpAddr::from(inet6.sin6_addr.s6_addr)
        }
        _ => return None,
    };
    Some(InterfaceAddress {
        interface,
        address,
        loopback: entry.ifa_flags & libc::IFF_LOOPBACK as libc::c_uint != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(interface: &str, address: &str, loopback: bool) -> InterfaceAddress {
        InterfaceAddress {
            interface: interface.into(),
            address: address.parse().unwrap(),
            loopback,
        }
    }

    #[test]
    fn picks_the_owner_of_an_address() {
        let addresses = [
            entry("lo", "127.0.0.1", true),
            entry("lo", "::1", true),
            entry("eth0", "192.0.2.7", false),
            entry("eth0", "2001:db8::7", false),
        ];
        let pick = |text: &str| pick_interface(&addresses, text.parse().unwrap());
        assert_eq!(pick("192.0.2.7").as_deref(), Some("eth0"));
        assert_eq!(pick("2001:db8::7").as_deref(), Some("eth0"));
        assert_eq!(pick("::ffff:192.0.2.7").as_deref(), Some("eth0"));
        assert_eq!(pick("127.0.0.1").as_deref(), Some("lo"));
        assert_eq!(pick("127.0.0.9").as_deref(), Some("lo"));
        assert_eq!(pick("::1").as_deref(), Some("lo"));
        assert_eq!(pick("192.0.2.8"), None);
    }

    #[test]
    fn loopback_addresses_belong_to_lo() {
        assert_eq!(
            interface_for_address("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
        assert_eq!(
            egress_interface("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
        // 192.0.2.0/24 is reserved for documentation and never assigned.
        assert_eq!(interface_for_address("192.0.2.1".parse().unwrap()), None);
    }

    #[test]
    fn the_loopback_device_has_127_0_0_1_of_a_slash_8() {
        assert_eq!(interface_ipv4("lo"), Some((Ipv4Addr::LOCALHOST, 8)));
        assert_eq!(interface_ipv4("no-such-device"), None);
    }

    #[test]
    fn ipv6_loopback_belongs_to_lo() {
        assert_eq!(
            interface_for_address(IpAddr::V6(Ipv6Addr::LOCALHOST)).as_deref(),
            Some("lo")
        );
    }
}
