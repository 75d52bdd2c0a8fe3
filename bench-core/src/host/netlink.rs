//! Link attributes of one interface from rtnetlink: an `RTM_GETLINK`
//! request on a `NETLINK_ROUTE` socket, which any user may send, answered
//! with MTU, transmit queue length, root qdisc and the GSO/GRO size limits.
//! And every link's name and every interface address, from `RTM_GETLINK`
//! and `RTM_GETADDR` dumps, as getifaddrs(3) asks for them. And one
//! change, which needs `CAP_NET_ADMIN`: a link's MTU or transmit queue
//! length, by an `RTM_NEWLINK` request the kernel acknowledges
//! ([`set_link_value`]).
//!
//! Message layout follows `<linux/netlink.h>` and `<linux/rtnetlink.h>`:
//! a 16-byte `nlmsghdr`, a 16-byte `ifinfomsg`, then attributes (`rtattr`:
//! 16-bit length, 16-bit type, payload, padded to 4 bytes). Requests and
//! replies are built and parsed as plain bytes in native byte order, and
//! the socket calls are rustix's, so there is no unsafe code here.

use rustix::io::Errno;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType, sockopt::Timeout};
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, Ordering};
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
/// `nlmsghdr.nlmsg_flags`: acknowledge the request, success or not.
const NLM_F_ACK: u16 = 4;

/// Attribute types of `enum IFLA_*` in `<linux/if_link.h>`.
const IFLA_IFNAME: u16 = 3;
pub(super) const IFLA_MTU: u16 = 4;
const IFLA_QDISC: u16 = 6;
pub(super) const IFLA_TXQLEN: u16 = 13;
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
/// The sequence number of the next link change; the read requests keep
/// [`REQUEST_SEQUENCE`], one request per socket.
static NEXT_SET_SEQUENCE: AtomicU32 = AtomicU32::new(REQUEST_SEQUENCE + 1);

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

/// A `NETLINK_ROUTE` socket of the calling thread's network namespace,
/// whose receives give up after a second.
pub(super) fn open_route_socket() -> Option<OwnedFd> {
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
    for message in messages(datagram) {
        let Some((kind, message_sequence, body)) = message else {
            return DumpPart::Failed;
        };
        if message_sequence == sequence {
            match kind {
                NLMSG_DONE => return DumpPart::Done,
                NLMSG_ERROR => return DumpPart::Failed,
                kind if kind == reply_type => bodies.push(body.to_vec()),
                _ => {}
            }
        }
    }
    DumpPart::More
}

/// The messages of one datagram, in order, as (type, sequence, body); a
/// cut message is `None`, and ends the walk.
fn messages(datagram: &[u8]) -> impl Iterator<Item = Option<(u16, u32, &[u8])>> {
    let mut rest = datagram;
    std::iter::from_fn(move || {
        if rest.len() < NLMSG_HEADER_LEN {
            return None;
        }
        let len = read_u32(rest, 0).unwrap_or(0) as usize;
        if len < NLMSG_HEADER_LEN || len > rest.len() {
            rest = &[];
            return Some(None);
        }
        let kind = read_u16(rest, 4).unwrap_or(0);
        let sequence = read_u32(rest, 8).unwrap_or(0);
        let body = &rest[NLMSG_HEADER_LEN..len];
        rest = &rest[align4(len).min(rest.len())..];
        Some(Some((kind, sequence, body)))
    })
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
    for message in messages(datagram) {
        let Some((kind, message_sequence, body)) = message else {
            return Reply::Failed;
        };
        if message_sequence == sequence {
            match kind {
                RTM_NEWLINK => return Reply::Link(parse_link(body)),
                NLMSG_ERROR | NLMSG_DONE => return Reply::Failed,
                _ => {}
            }
        }
    }
    Reply::NotOurs
}

/// Reads the attributes after the `ifinfomsg` of an `RTM_NEWLINK` body.
fn parse_link(body: &[u8]) -> LinkAttributes {
    let mut attributes = LinkAttributes::default();
    for (kind, payload) in self::attributes(body, IFINFOMSG_LEN) {
        let as_u32 = || (payload.len() == 4).then(|| read_u32(payload, 0)).flatten();
        match kind {
            IFLA_MTU => attributes.mtu = as_u32(),
            IFLA_TXQLEN => attributes.tx_queue_len = as_u32(),
            IFLA_GSO_MAX_SIZE => attributes.gso_max_size = as_u32(),
            IFLA_GRO_MAX_SIZE => attributes.gro_max_size = as_u32(),
            IFLA_QDISC => attributes.qdisc = c_string(payload),
            _ => {}
        }
    }
    attributes
}

/// Sets, on `socket` (of [`open_route_socket`]), the 32-bit link
/// attribute `attribute` (`IFLA_MTU` or `IFLA_TXQLEN`) of link `index` to
/// `value`, as `ip link set` does, and waits for the kernel's
/// acknowledgement: `Err` holds the error the kernel answered (`EPERM`
/// without `CAP_NET_ADMIN`, `EINVAL` for an MTU outside the device's
/// range, `ENODEV`), or the socket's. Each request has a sequence number
/// of its own, so that a late answer to an earlier one on the same socket
/// is not taken for this one's.
pub(super) fn set_link_value(
    socket: &OwnedFd,
    index: u32,
    attribute: u16,
    value: u32,
) -> Result<(), Errno> {
    let sequence = NEXT_SET_SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let request = set_link_request(index, attribute, value, sequence).ok_or(Errno::INVAL)?;
    let sent = rustix::net::send(socket, &request, SendFlags::empty())?;
    if sent != request.len() {
        return Err(Errno::MSGSIZE);
    }
    let mut buffer = vec![0u8; RECEIVE_BUFFER_LEN];
    for _ in 0..MAX_REPLIES {
        let (received, datagram_len) =
            rustix::net::recv(socket, &mut buffer[..], RecvFlags::TRUNC)?;
        if datagram_len > received {
            return Err(Errno::MSGSIZE);
        }
        if let Some(answer) = parse_ack(&buffer[..received], sequence) {
            return answer;
        }
    }
    Err(Errno::TIMEDOUT)
}

/// An `RTM_NEWLINK` request that sets one 32-bit attribute of link
/// `index` and asks for an acknowledgement.
fn set_link_request(index: u32, attribute: u16, value: u32, sequence: u32) -> Option<Vec<u8>> {
    let index = i32::try_from(index).ok()?;
    let mut message = Vec::with_capacity(NLMSG_HEADER_LEN + IFINFOMSG_LEN + 8);
    // nlmsghdr; the length is filled in at the end.
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    message.extend_from_slice(&sequence.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // ifinfomsg: family, padding, device type, index, flags, change mask
    // (no flag changes).
    message.push(AddressFamily::UNSPEC.as_raw() as u8);
    message.push(0);
    message.extend_from_slice(&0u16.to_ne_bytes());
    message.extend_from_slice(&index.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(&8u16.to_ne_bytes());
    message.extend_from_slice(&attribute.to_ne_bytes());
    message.extend_from_slice(&value.to_ne_bytes());
    let len = u32::try_from(message.len()).ok()?;
    message[..4].copy_from_slice(&len.to_ne_bytes());
    Some(message)
}

/// The acknowledgement of request `sequence` in one datagram: `Ok` for
/// an error code of 0, the error otherwise, a cut message as `EPROTO`;
/// `None` when the datagram holds none.
fn parse_ack(datagram: &[u8], sequence: u32) -> Option<Result<(), Errno>> {
    for message in messages(datagram) {
        let Some((kind, message_sequence, body)) = message else {
            return Some(Err(Errno::PROTO));
        };
        if message_sequence == sequence && kind == NLMSG_ERROR {
            // struct nlmsgerr: a negative errno (0 for success), then the
            // request's header.
            let Some(code) = read_u32(body, 0) else {
                return Some(Err(Errno::PROTO));
            };
            let code = code as i32;
            return Some(if code == 0 {
                Ok(())
            } else {
                Err(Errno::from_raw_os_error(code.saturating_neg()))
            });
        }
    }
    None
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
mod tests;
