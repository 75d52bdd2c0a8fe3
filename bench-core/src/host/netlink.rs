//! Link attributes of one interface from rtnetlink: an `RTM_GETLINK`
//! request on a `NETLINK_ROUTE` socket, which any user may send, answered
//! with MTU, transmit queue length, root qdisc and the GSO/GRO size limits.
//! And every link's name and every interface address, from `RTM_GETLINK`
//! and `RTM_GETADDR` dumps, as getifaddrs(3) asks for them.
//!
//! Message layout follows `<linux/netlink.h>` and `<linux/rtnetlink.h>`:
//! a 16-byte `nlmsghdr`, a 16-byte `ifinfomsg`, then attributes (`rtattr`:
//! 16-bit length, 16-bit type, payload, padded to 4 bytes). Requests and
//! replies are built and parsed as plain bytes in native byte order, and
//! the socket calls are rustix's, so there is no unsafe code here.

use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType, sockopt::Timeout};
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::time::Duration;

/// `nlmsghdr.nlmsg_type` of a request for one link.
const RTM_GETLINK: u16 = 18;
/// `nlmsghdr.nlmsg_type` of the reply describing a link.
const RTM_NEWLINK: u16 = 16;
/// `nlmsghdr.nlmsg_type` of an error (or acknowledgement) reply.
const NLMSG_ERROR: u16 = 2;
/// `nlmsghdr.nlmsg_type` that ends a multi-part reply.
const NLMSG_DONE: u16 = 3;
/// `nlmsghdr.nlmsg_type` of a request for addresses.
const RTM_GETADDR: u16 = 22;
/// `nlmsghdr.nlmsg_type` of the reply describing an address.
const RTM_NEWADDR: u16 = 20;
/// `nlmsghdr.nlmsg_flags`: this is a request.
const NLM_F_REQUEST: u16 = 1;
/// `nlmsghdr.nlmsg_flags`: answer with every object (`NLM_F_ROOT |
/// NLM_F_MATCH`).
const NLM_F_DUMP: u16 = 0x300;

/// Attribute types of `enum IFLA_*` in `<linux/if_link.h>`.
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_QDISC: u16 = 6;
const IFLA_TXQLEN: u16 = 13;
const IFLA_EXT_MASK: u16 = 29;
const IFLA_GSO_MAX_SIZE: u16 = 41;
const IFLA_GRO_MAX_SIZE: u16 = 58;
/// Attribute types of `enum IFA_*` in `<linux/if_addr.h>`.
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_LABEL: u16 = 3;
/// `IFF_LOOPBACK` of `ifinfomsg.ifi_flags`.
const IFF_LOOPBACK: u32 = 0x8;
/// `RTEXT_FILTER_SKIP_STATS`: leave the counters out of the reply.
const RTEXT_FILTER_SKIP_STATS: u32 = 1 << 3;
/// Flag bits of `rtattr.rta_type` that are not part of the type.
const NLA_TYPE_MASK: u16 = !(1 << 15 | 1 << 14);

const NLMSG_HEADER_LEN: usize = 16;
const IFINFOMSG_LEN: usize = 16;
const IFADDRMSG_LEN: usize = 8;
/// Room for one link reply; a reply without statistics is a few KiB.
const RECEIVE_BUFFER_LEN: usize = 64 * 1024;
/// Replies read before giving up on finding ours.
const MAX_REPLIES: usize = 8;
/// Sequence number of the request; one request per socket.
const REQUEST_SEQUENCE: u32 = 1;
/// Datagrams of one dump read before giving up: far more than the links
/// and addresses of any host fill.
const MAX_DUMP_DATAGRAMS: usize = 4096;

/// What rtnetlink says of one link; each field absent when not reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct LinkAttributes {
    pub(super) mtu: Option<u32>,
    pub(super) tx_queue_len: Option<u32>,
    pub(super) qdisc: Option<String>,
    pub(super) gso_max_size: Option<u32>,
    pub(super) gro_max_size: Option<u32>,
}

/// A link's name and loopback flag, by index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LinkName {
    pub(super) index: u32,
    pub(super) name: String,
    pub(super) loopback: bool,
}

/// One IPv4 or IPv6 address of the link `index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AddressEntry {
    pub(super) index: u32,
    /// The address's own label (an alias such as `eth0:1`), when it has
    /// one; getifaddrs(3) names the entry by it.
    pub(super) label: Option<String>,
    pub(super) address: IpAddr,
    pub(super) prefix_len: u8,
}

/// Asks the kernel for the attributes of link `index`; `None` when the
/// socket, the request or the reply fails.
pub(super) fn link_attributes(index: u32) -> Option<LinkAttributes> {
    let socket = open_route_socket()?;
    let request = link_request(index, REQUEST_SEQUENCE)?;
    let sent = rustix::net::send(&socket, &request, SendFlags::empty()).ok()?;
    if sent != request.len() {
        return None;
    }
    let mut buffer = vec![0u8; RECEIVE_BUFFER_LEN];
    for _ in 0..MAX_REPLIES {
        let (received, datagram_len) =
            rustix::net::recv(&socket, &mut buffer[..], RecvFlags::TRUNC).ok()?;
        if datagram_len > received {
            // MSG_TRUNC reports the full length of a datagram that did not
            // fit; a cut reply cannot be parsed reliably.
            return None;
        }
        match parse_reply(&buffer[..received], REQUEST_SEQUENCE) {
            Reply::Link(attributes) => return Some(attributes),
            Reply::Failed => return None,
            Reply::NotOurs => continue,
        }
    }
    None
}

fn open_route_socket() -> Option<OwnedFd> {
    // NETLINK_ROUTE is protocol 0, the default.
    let socket = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        None,
    )
    .ok()?;
    // A reply that never comes must not hang the capture.
    rustix::net::sockopt::set_socket_timeout(&socket, Timeout::Recv, Some(Duration::from_secs(1)))
        .ok()?;
    Some(socket)
}

/// An `RTM_GETLINK` request for link `index`, asking the kernel to leave
/// the statistics out.
fn link_request(index: u32, sequence: u32) -> Option<Vec<u8>> {
    let index = i32::try_from(index).ok()?;
    let mut message = Vec::with_capacity(NLMSG_HEADER_LEN + IFINFOMSG_LEN + 8);
    // nlmsghdr; the length is filled in at the end.
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(&RTM_GETLINK.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    message.extend_from_slice(&sequence.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // ifinfomsg: family, padding, device type, index, flags, change mask.
    message.push(AddressFamily::UNSPEC.as_raw() as u8);
    message.push(0);
    message.extend_from_slice(&0u16.to_ne_bytes());
    message.extend_from_slice(&index.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // IFLA_EXT_MASK attribute.
    message.extend_from_slice(&8u16.to_ne_bytes());
    message.extend_from_slice(&IFLA_EXT_MASK.to_ne_bytes());
    message.extend_from_slice(&RTEXT_FILTER_SKIP_STATS.to_ne_bytes());
    let len = u32::try_from(message.len()).ok()?;
    message[..4].copy_from_slice(&len.to_ne_bytes());
    Some(message)
}

/// Every link's name and whether it is a loopback device, by index, from
/// an `RTM_GETLINK` dump; `None` when the socket, the request or the
/// dump fails.
pub(super) fn links() -> Option<Vec<LinkName>> {
    let request = dump_request(RTM_GETLINK, IFINFOMSG_LEN, REQUEST_SEQUENCE)?;
    let bodies = dump(&request, RTM_NEWLINK, REQUEST_SEQUENCE)?;
    Some(
        bodies
            .iter()
            .filter_map(|body| parse_link_name(body))
            .collect(),
    )
}

/// Every IPv4 and IPv6 address of every interface, in the kernel's order,
/// from an `RTM_GETADDR` dump; `None` when the socket, the request or the
/// dump fails.
pub(super) fn addresses() -> Option<Vec<AddressEntry>> {
    let request = dump_request(RTM_GETADDR, IFADDRMSG_LEN, REQUEST_SEQUENCE)?;
    let bodies = dump(&request, RTM_NEWADDR, REQUEST_SEQUENCE)?;
    Some(
        bodies
            .iter()
            .filter_map(|body| parse_address(body))
            .collect(),
    )
}

/// A request of `kind` with the `NLM_F_DUMP` flag and an all-zero family
/// header of `header_len` bytes (any family, any link).
fn dump_request(kind: u16, header_len: usize, sequence: u32) -> Option<Vec<u8>> {
    let mut message = Vec::with_capacity(NLMSG_HEADER_LEN + header_len);
    let len = u32::try_from(NLMSG_HEADER_LEN + header_len).ok()?;
    message.extend_from_slice(&len.to_ne_bytes());
    message.extend_from_slice(&kind.to_ne_bytes());
    message.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    message.extend_from_slice(&sequence.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // The family header: AF_UNSPEC (0) first, everything else zero.
    message.resize(NLMSG_HEADER_LEN + header_len, 0);
    Some(message)
}

/// Sends a dump request and collects the body of every message of
/// `reply_type` until the kernel says the dump is done.
fn dump(request: &[u8], reply_type: u16, sequence: u32) -> Option<Vec<Vec<u8>>> {
    let socket = open_route_socket()?;
    let sent = rustix::net::send(&socket, request, SendFlags::empty()).ok()?;
    if sent != request.len() {
        return None;
    }
    let mut buffer = vec![0u8; RECEIVE_BUFFER_LEN];
    let mut bodies = Vec::new();
    for _ in 0..MAX_DUMP_DATAGRAMS {
        let (received, datagram_len) =
            rustix::net::recv(&socket, &mut buffer[..], RecvFlags::TRUNC).ok()?;
        if datagram_len > received {
            return None;
        }
        match parse_dump_part(&buffer[..received], reply_type, sequence, &mut bodies) {
            DumpPart::More => continue,
            DumpPart::Done => return Some(bodies),
            DumpPart::Failed => return None,
        }
    }
    None
}

/// What one datagram of a dump says.
#[derive(Debug, PartialEq, Eq)]
enum DumpPart {
    /// More datagrams follow.
    More,
    /// The dump is complete.
    Done,
    /// The kernel refused the request, or the datagram is cut.
    Failed,
}

/// Adds the bodies of one datagram's messages of `reply_type` to `bodies`.
fn parse_dump_part(
    datagram: &[u8],
    reply_type: u16,
    sequence: u32,
    bodies: &mut Vec<Vec<u8>>,
) -> DumpPart {
    let mut rest = datagram;
    while rest.len() >= NLMSG_HEADER_LEN {
        let len = read_u32(rest, 0).unwrap_or(0) as usize;
        if len < NLMSG_HEADER_LEN || len > rest.len() {
            return DumpPart::Failed;
        }
        let kind = read_u16(rest, 4).unwrap_or(0);
        let message_sequence = read_u32(rest, 8).unwrap_or(0);
        if message_sequence == sequence {
            match kind {
                NLMSG_DONE => return DumpPart::Done,
                NLMSG_ERROR => return DumpPart::Failed,
                kind if kind == reply_type => bodies.push(rest[NLMSG_HEADER_LEN..len].to_vec()),
                _ => {}
            }
        }
        rest = &rest[align4(len).min(rest.len())..];
    }
    DumpPart::More
}

/// The attributes after a family header of `header_len` bytes, as
/// (type, payload) pairs; a cut attribute ends the walk.
fn attributes(body: &[u8], header_len: usize) -> Vec<(u16, &[u8])> {
    let mut found = Vec::new();
    let mut rest = body.get(header_len..).unwrap_or(&[]);
    while rest.len() >= 4 {
        let len = usize::from(read_u16(rest, 0).unwrap_or(0));
        if len < 4 || len > rest.len() {
            break;
        }
        let kind = read_u16(rest, 2).unwrap_or(0) & NLA_TYPE_MASK;
        found.push((kind, &rest[4..len]));
        rest = &rest[align4(len).min(rest.len())..];
    }
    found
}

/// A link's index, name and loopback flag from an `RTM_NEWLINK` body.
fn parse_link_name(body: &[u8]) -> Option<LinkName> {
    // ifinfomsg: family, padding, device type, index (at 4), flags (at 8).
    let index = read_u32(body, 4)?;
    let flags = read_u32(body, 8)?;
    let name = attributes(body, IFINFOMSG_LEN)
        .into_iter()
        .find(|(kind, _)| *kind == IFLA_IFNAME)
        .and_then(|(_, payload)| c_string(payload))?;
    Some(LinkName {
        index,
        name,
        loopback: flags & IFF_LOOPBACK != 0,
    })
}

/// An IPv4 or IPv6 address from an `RTM_NEWADDR` body: the local address
/// where the kernel gives one (the other end of a point-to-point link is
/// `IFA_ADDRESS` then), as getifaddrs(3) reports it.
fn parse_address(body: &[u8]) -> Option<AddressEntry> {
    // ifaddrmsg: family, prefix length, flags, scope, index (at 4).
    let family = *body.first()?;
    let prefix_len = *body.get(1)?;
    let index = read_u32(body, 4)?;
    let mut local = None;
    let mut address = None;
    let mut label = None;
    for (kind, payload) in attributes(body, IFADDRMSG_LEN) {
        match kind {
            IFA_LOCAL => local = ip_address(family, payload),
            IFA_ADDRESS => address = ip_address(family, payload),
            IFA_LABEL => label = c_string(payload),
            _ => {}
        }
    }
    Some(AddressEntry {
        index,
        label,
        address: local.or(address)?,
        prefix_len,
    })
}

/// The address in `payload` when `family` is IPv4 or IPv6 and its length
/// fits.
fn ip_address(family: u8, payload: &[u8]) -> Option<IpAddr> {
    if u16::from(family) == AddressFamily::INET.as_raw() {
        let octets: [u8; 4] = payload.try_into().ok()?;
        Some(IpAddr::from(octets))
    } else if u16::from(family) == AddressFamily::INET6.as_raw() {
        let octets: [u8; 16] = payload.try_into().ok()?;
        Some(IpAddr::from(octets))
    } else {
        None
    }
}

/// What one datagram from the kernel says about our request.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    /// The link's attributes.
    Link(LinkAttributes),
    /// The kernel refused the request (no such device, for example).
    Failed,
    /// Nothing addressed to our request.
    NotOurs,
}

/// Parses one datagram of netlink messages.
fn parse_reply(datagram: &[u8], sequence: u32) -> Reply {
    let mut rest = datagram;
    while rest.len() >= NLMSG_HEADER_LEN {
        let len = read_u32(rest, 0).unwrap_or(0) as usize;
        if len < NLMSG_HEADER_LEN || len > rest.len() {
            return Reply::Failed;
        }
        let kind = read_u16(rest, 4).unwrap_or(0);
        let message_sequence = read_u32(rest, 8).unwrap_or(0);
        if message_sequence == sequence {
            let body = &rest[NLMSG_HEADER_LEN..len];
            match kind {
                RTM_NEWLINK => return Reply::Link(parse_link(body)),
                NLMSG_ERROR | NLMSG_DONE => return Reply::Failed,
                _ => {}
            }
        }
        rest = &rest[align4(len).min(rest.len())..];
    }
    Reply::NotOurs
}

/// Reads the attributes after the `ifinfomsg` of an `RTM_NEWLINK` body.
fn parse_link(body: &[u8]) -> LinkAttributes {
    let mut attributes = LinkAttributes::default();
    let mut rest = body.get(IFINFOMSG_LEN..).unwrap_or(&[]);
    while rest.len() >= 4 {
        let len = usize::from(read_u16(rest, 0).unwrap_or(0));
        if len < 4 || len > rest.len() {
            break;
        }
        let kind = read_u16(rest, 2).unwrap_or(0) & NLA_TYPE_MASK;
        let payload = &rest[4..len];
        let as_u32 = || (payload.len() == 4).then(|| read_u32(payload, 0)).flatten();
        match kind {
            IFLA_MTU => attributes.mtu = as_u32(),
            IFLA_TXQLEN => attributes.tx_queue_len = as_u32(),
            IFLA_GSO_MAX_SIZE => attributes.gso_max_size = as_u32(),
            IFLA_GRO_MAX_SIZE => attributes.gro_max_size = as_u32(),
            IFLA_QDISC => attributes.qdisc = c_string(payload),
            _ => {}
        }
        rest = &rest[align4(len).min(rest.len())..];
    }
    attributes
}

/// The text of a NUL-terminated attribute, when it is non-empty UTF-8.
fn c_string(payload: &[u8]) -> Option<String> {
    let end = payload
        .iter()
        .position(|&byte| byte == 0)
        .unwrap_or(payload.len());
    let text = std::str::from_utf8(&payload[..end]).ok()?;
    (!text.is_empty()).then(|| text.to_string())
}

fn align4(len: usize) -> usize {
    len.saturating_add(3) & !3
}

fn read_u16(bytes: &[u8], offset: usize) -> Option<u16> {
    let field = bytes.get(offset..offset.checked_add(2)?)?;
    Some(u16::from_ne_bytes(field.try_into().ok()?))
}

fn read_u32(bytes: &[u8], offset: usize) -> Option<u32> {
    let field = bytes.get(offset..offset.checked_add(4)?)?;
    Some(u32::from_ne_bytes(field.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attribute(kind: u16, payload: &[u8]) -> Vec<u8> {
        let len = u16::try_from(4 + payload.len()).unwrap();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&len.to_ne_bytes());
        bytes.extend_from_slice(&kind.to_ne_bytes());
        bytes.extend_from_slice(payload);
        bytes.resize(align4(bytes.len()), 0);
        bytes
    }

    fn message(kind: u16, sequence: u32, body: &[u8]) -> Vec<u8> {
        let len = u32::try_from(NLMSG_HEADER_LEN + body.len()).unwrap();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&len.to_ne_bytes());
        bytes.extend_from_slice(&kind.to_ne_bytes());
        bytes.extend_from_slice(&0u16.to_ne_bytes());
        bytes.extend_from_slice(&sequence.to_ne_bytes());
        bytes.extend_from_slice(&4242u32.to_ne_bytes());
        bytes.extend_from_slice(body);
        bytes
    }

    fn link_body() -> Vec<u8> {
        let mut body = vec![0u8; IFINFOMSG_LEN];
        body.extend(attribute(3, b"eth7\0"));
        body.extend(attribute(IFLA_MTU, &9000u32.to_ne_bytes()));
        body.extend(attribute(IFLA_QDISC, b"fq_codel\0"));
        body.extend(attribute(IFLA_TXQLEN, &1000u32.to_ne_bytes()));
        // A nested attribute flag must not hide the type.
        body.extend(attribute(18 | 1 << 15, &[0; 8]));
        body.extend(attribute(IFLA_GSO_MAX_SIZE, &65536u32.to_ne_bytes()));
        body.extend(attribute(IFLA_GRO_MAX_SIZE, &131072u32.to_ne_bytes()));
        body
    }

    #[test]
    fn request_is_a_well_formed_getlink() {
        let request = link_request(7, 3).unwrap();
        assert_eq!(request.len(), 40);
        assert_eq!(read_u32(&request, 0), Some(40));
        assert_eq!(read_u16(&request, 4), Some(RTM_GETLINK));
        assert_eq!(read_u16(&request, 6), Some(NLM_F_REQUEST));
        assert_eq!(read_u32(&request, 8), Some(3));
        assert_eq!(read_u32(&request, 20), Some(7));
        assert_eq!(read_u16(&request, 34), Some(IFLA_EXT_MASK));
        assert_eq!(link_request(u32::MAX, 1), None);
    }

    #[test]
    fn parses_a_link_reply() {
        let reply = message(RTM_NEWLINK, 5, &link_body());
        assert_eq!(
            parse_reply(&reply, 5),
            Reply::Link(LinkAttributes {
                mtu: Some(9000),
                tx_queue_len: Some(1000),
                qdisc: Some("fq_codel".into()),
                gso_max_size: Some(65536),
                gro_max_size: Some(131072),
            })
        );
    }

    #[test]
    fn skips_messages_of_other_requests() {
        let mut datagram = message(RTM_NEWLINK, 4, &link_body());
        assert_eq!(parse_reply(&datagram, 5), Reply::NotOurs);
        datagram.extend(message(RTM_NEWLINK, 5, &link_body()));
        assert!(matches!(parse_reply(&datagram, 5), Reply::Link(_)));
    }

    #[test]
    fn an_error_reply_is_a_failure() {
        let mut body = (-19i32).to_ne_bytes().to_vec();
        body.extend(message(RTM_GETLINK, 5, &[0; IFINFOMSG_LEN]));
        assert_eq!(
            parse_reply(&message(NLMSG_ERROR, 5, &body), 5),
            Reply::Failed
        );
    }

    #[test]
    fn cut_or_odd_replies_leave_fields_absent() {
        let reply = message(RTM_NEWLINK, 5, &link_body());
        // A header whose length runs past the datagram.
        assert_eq!(parse_reply(&reply[..reply.len() - 4], 5), Reply::Failed);
        // An attribute cut in the middle ends the walk, keeping what came
        // before it.
        let body = link_body();
        let cut = IFINFOMSG_LEN + 12 + 8 + 6;
        let attributes = parse_link(&body[..cut]);
        assert_eq!(attributes.mtu, Some(9000));
        assert_eq!(attributes.qdisc, None);
        // A u32 attribute of the wrong size is not read.
        let mut body = vec![0u8; IFINFOMSG_LEN];
        body.extend(attribute(IFLA_MTU, &[1, 2]));
        assert_eq!(parse_link(&body).mtu, None);
        assert_eq!(parse_link(&[]), LinkAttributes::default());
    }

    #[test]
    fn reads_the_loopback_link() {
        let index = super::super::interface_index("lo").unwrap();
        let attributes = link_attributes(index).unwrap();
        assert!(attributes.mtu.is_some_and(|mtu| mtu > 0));
        assert!(attributes.qdisc.is_some());
        assert_eq!(link_attributes(u32::MAX - 1), None);
    }

    fn address_body(family: u8, prefix_len: u8, index: u32, attributes: &[Vec<u8>]) -> Vec<u8> {
        let mut body = vec![family, prefix_len, 0, 0];
        body.extend_from_slice(&index.to_ne_bytes());
        for attribute in attributes {
            body.extend_from_slice(attribute);
        }
        body
    }

    #[test]
    fn dump_requests_ask_for_everything() {
        let request = dump_request(RTM_GETADDR, IFADDRMSG_LEN, 9).unwrap();
        assert_eq!(request.len(), NLMSG_HEADER_LEN + IFADDRMSG_LEN);
        assert_eq!(read_u32(&request, 0), Some(24));
        assert_eq!(read_u16(&request, 4), Some(RTM_GETADDR));
        assert_eq!(read_u16(&request, 6), Some(NLM_F_REQUEST | NLM_F_DUMP));
        assert_eq!(read_u32(&request, 8), Some(9));
        assert!(request[NLMSG_HEADER_LEN..].iter().all(|&byte| byte == 0));
    }

    #[test]
    fn dumps_collect_their_messages_until_done() {
        let mut bodies = Vec::new();
        let mut datagram = message(RTM_NEWADDR, 5, b"one.");
        datagram.extend(message(RTM_NEWADDR, 4, b"not ours"));
        datagram.extend(message(RTM_NEWLINK, 5, b"another."));
        datagram.extend(message(RTM_NEWADDR, 5, b"two."));
        assert_eq!(
            parse_dump_part(&datagram, RTM_NEWADDR, 5, &mut bodies),
            DumpPart::More
        );
        assert_eq!(bodies, vec![b"one.".to_vec(), b"two.".to_vec()]);
        let done = message(NLMSG_DONE, 5, &0u32.to_ne_bytes());
        assert_eq!(
            parse_dump_part(&done, RTM_NEWADDR, 5, &mut bodies),
            DumpPart::Done
        );
        let error = message(NLMSG_ERROR, 5, &(-1i32).to_ne_bytes());
        assert_eq!(
            parse_dump_part(&error, RTM_NEWADDR, 5, &mut bodies),
            DumpPart::Failed
        );
        let cut = message(RTM_NEWADDR, 5, b"three");
        assert_eq!(
            parse_dump_part(&cut[..cut.len() - 2], RTM_NEWADDR, 5, &mut bodies),
            DumpPart::Failed
        );
        assert_eq!(bodies.len(), 2);
    }

    #[test]
    fn parses_link_names_and_the_loopback_flag() {
        let mut body = vec![0u8; IFINFOMSG_LEN];
        body[4..8].copy_from_slice(&1u32.to_ne_bytes());
        body[8..12].copy_from_slice(&(IFF_LOOPBACK | 1).to_ne_bytes());
        body.extend(attribute(IFLA_MTU, &65536u32.to_ne_bytes()));
        body.extend(attribute(IFLA_IFNAME, b"lo\0"));
        assert_eq!(
            parse_link_name(&body),
            Some(LinkName {
                index: 1,
                name: "lo".into(),
                loopback: true,
            })
        );
        body[8..12].copy_from_slice(&1u32.to_ne_bytes());
        assert_eq!(
            parse_link_name(&body).map(|link| link.loopback),
            Some(false)
        );
        // A link without a name is left out.
        assert_eq!(parse_link_name(&body[..IFINFOMSG_LEN + 8]), None);
    }

    #[test]
    fn parses_addresses_as_getifaddrs_reports_them() {
        let inet = AddressFamily::INET.as_raw() as u8;
        let inet6 = AddressFamily::INET6.as_raw() as u8;
        // The local address wins over the peer of a point-to-point link,
        // whichever comes first.
        let body = address_body(
            inet,
            32,
            3,
            &[
                attribute(IFA_ADDRESS, &[10, 0, 0, 2]),
                attribute(IFA_LOCAL, &[10, 0, 0, 1]),
                attribute(IFA_LABEL, b"tun0\0"),
            ],
        );
        assert_eq!(
            parse_address(&body),
            Some(AddressEntry {
                index: 3,
                label: Some("tun0".into()),
                address: "10.0.0.1".parse().unwrap(),
                prefix_len: 32,
            })
        );
        let body = address_body(
            inet6,
            64,
            2,
            &[attribute(
                IFA_ADDRESS,
                &"2001:db8::7"
                    .parse::<std::net::Ipv6Addr>()
                    .unwrap()
                    .octets(),
            )],
        );
        assert_eq!(
            parse_address(&body),
            Some(AddressEntry {
                index: 2,
                label: None,
                address: "2001:db8::7".parse().unwrap(),
                prefix_len: 64,
            })
        );
        // Another family, or an address of the wrong length, is no entry.
        let body = address_body(17, 0, 2, &[attribute(IFA_ADDRESS, &[0; 6])]);
        assert_eq!(parse_address(&body), None);
        let body = address_body(inet, 24, 2, &[attribute(IFA_ADDRESS, &[10, 0, 0])]);
        assert_eq!(parse_address(&body), None);
        assert_eq!(parse_address(&[inet, 24]), None);
    }

    #[test]
    fn dumps_the_loopback_link_and_its_address() {
        let links = links().unwrap();
        let lo = links.iter().find(|link| link.name == "lo").unwrap();
        assert!(lo.loopback);
        assert_eq!(Some(lo.index), super::super::interface_index("lo"));
        let addresses = addresses().unwrap();
        assert!(addresses.iter().any(|entry| entry.index == lo.index
            && entry.address == IpAddr::from([127, 0, 0, 1])
            && entry.prefix_len == 8));
    }
}
