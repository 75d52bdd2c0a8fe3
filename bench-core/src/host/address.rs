//! Which interface a local address belongs to, and which local address
//! the kernel would send from to reach a host.
//!
//! The addresses are read as getifaddrs(3) reads them, from rtnetlink
//! dumps of the links and the addresses ([`super::netlink`]), which keeps
//! this free of the C library's linked list of raw socket addresses.

use super::netlink;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// One address of one interface.
#[derive(Clone, Debug, PartialEq, Eq)]
struct InterfaceAddress {
    interface: String,
    address: IpAddr,
    prefix_len: u8,
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

/// Every IPv4 and IPv6 address of every interface, each named as
/// getifaddrs(3) names it: by the address's label when it has one, else
/// by its link's name; `None` when either dump fails.
fn interface_addresses() -> Option<Vec<InterfaceAddress>> {
    let links = netlink::links()?;
    let addresses = netlink::addresses()?;
    Some(
        addresses
            .into_iter()
            .filter_map(|entry| {
                let link = links.iter().find(|link| link.index == entry.index)?;
                Some(InterfaceAddress {
                    interface: entry.label.unwrap_or_else(|| link.name.clone()),
                    address: entry.address,
                    prefix_len: entry.prefix_len,
                    loopback: link.loopback,
                })
            })
            .collect(),
    )
}

/// The first IPv4 address of `interface` with the length of its prefix;
/// `None` when the interface has none (or does not exist).
pub fn interface_ipv4(interface: &str) -> Option<(Ipv4Addr, u8)> {
    interface_addresses()?
        .into_iter()
        .find_map(|entry| match entry.address {
            IpAddr::V4(address) if entry.interface == interface => {
                Some((address, entry.prefix_len))
            }
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(interface: &str, address: &str, loopback: bool) -> InterfaceAddress {
        InterfaceAddress {
            interface: interface.into(),
            address: address.parse().unwrap(),
            prefix_len: 24,
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
