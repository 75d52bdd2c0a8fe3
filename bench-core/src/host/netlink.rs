//! Link attributes of one interface from rtnetlink: an `RTM_GETLINK`
//! request on a `NETLINK_ROUTE` socket, which any user may send, answered
//! with MTU, transmit queue length, root qdisc and the GSO/GRO size limits.
//!
//! Message layout follows `<linux/netlink.h>` and `<linux/rtnetlink.h>`:
//! a 16-byte `nlmsghdr`, a 16-byte `ifinfomsg`, then attributes (`rtattr`:
//! 16-bit length, 16-bit type, payload, padded to 4 bytes). Requests and
//! replies are built and parsed as plain bytes in native byte order, and
//! the socket calls are rustix's, so there is no unsafe code here.

use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType, sockopt::Timeout};
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
/// `nlmsghdr.nlmsg_flags`: this is a request.
const NLM_F_REQUEST: u16 = 1;

/// Attribute types of `enum IFLA_*` in `<linux/if_link.h>`.
const IFLA_MTU: u16 = 4;
const IFLA_QDISC: u16 = 6;
const IFLA_TXQLEN: u16 = 13;
const IFLA_EXT_MASK: u16 = 29;
const IFLA_GSO_MAX_SIZE: u16 = 41;
const IFLA_GRO_MAX_SIZE: u16 = 58;
/// `RTEXT_FILTER_SKIP_STATS`: leave the counters out of the reply.
const RTEXT_FILTER_SKIP_STATS: u32 = 1 << 3;
/// Flag bits of `rtattr.rta_type` that are not part of the type.
const NLA_TYPE_MASK: u16 = !(1 << 15 | 1 << 14);

const NLMSG_HEADER_LEN: usize = 16;
const IFINFOMSG_LEN: usize = 16;
/// Room for one link reply; a reply without statistics is a few KiB.
const RECEIVE_BUFFER_LEN: usize = 64 * 1024;
/// Replies read before giving up on finding ours.
const MAX_REPLIES: usize = 8;
/// Sequence number of the request; one request per socket.
const REQUEST_SEQUENCE: u32 = 1;

/// What rtnetlink says of one link; each field absent when not reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct LinkAttributes {
    pub(super) mtu: Option<u32>,
    pub(super) tx_queue_len: Option<u32>,
    pub(super) qdisc: Option<String>,
    pub(super) gso_max_size: Option<u32>,
    pub(super) gro_max_size: Option<u32>,
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
}
