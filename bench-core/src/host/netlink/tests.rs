//! Requests built and replies parsed as bytes, and a live dump of this
//! host's links and addresses.

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

#[test]
fn set_link_requests_carry_one_attribute_and_ask_for_an_ack() {
    let request = set_link_request(7, IFLA_MTU, 9000, 3).unwrap();
    assert_eq!(request.len(), 40);
    assert_eq!(read_u32(&request, 0), Some(40));
    assert_eq!(read_u16(&request, 4), Some(RTM_NEWLINK));
    assert_eq!(read_u16(&request, 6), Some(NLM_F_REQUEST | NLM_F_ACK));
    assert_eq!(read_u32(&request, 8), Some(3));
    assert_eq!(read_u32(&request, 20), Some(7));
    // No flag is changed.
    assert_eq!(read_u32(&request, 24), Some(0));
    assert_eq!(read_u32(&request, 28), Some(0));
    assert_eq!(read_u16(&request, 32), Some(8));
    assert_eq!(read_u16(&request, 34), Some(IFLA_MTU));
    assert_eq!(read_u32(&request, 36), Some(9000));
    assert_eq!(set_link_request(u32::MAX, IFLA_TXQLEN, 1, 1), None);
}

#[test]
fn acks_say_success_or_the_kernels_error() {
    let ack = |code: i32, sequence: u32| {
        let mut body = code.to_ne_bytes().to_vec();
        body.extend(message(RTM_NEWLINK, sequence, &[0; IFINFOMSG_LEN]));
        message(NLMSG_ERROR, sequence, &body)
    };
    assert_eq!(parse_ack(&ack(0, 5), 5), Some(Ok(())));
    assert_eq!(parse_ack(&ack(-22, 5), 5), Some(Err(Errno::INVAL)));
    assert_eq!(parse_ack(&ack(-1, 5), 5), Some(Err(Errno::PERM)));
    // Another request's answer, or no answer at all, is not ours.
    assert_eq!(parse_ack(&ack(0, 4), 5), None);
    assert_eq!(parse_ack(&[], 5), None);
    // A cut answer is an error, not a success.
    let cut = ack(0, 5);
    assert_eq!(parse_ack(&cut[..cut.len() - 4], 5), Some(Err(Errno::PROTO)));
    assert_eq!(
        parse_ack(&message(NLMSG_ERROR, 5, &[0, 0]), 5),
        Some(Err(Errno::PROTO))
    );
}

#[test]
fn setting_a_link_of_no_device_is_refused() {
    // No host has this many links; an unprivileged user is refused
    // before the kernel looks.
    let socket = open_route_socket().unwrap();
    let refused = set_link_value(&socket, 0x7fff_fff0, IFLA_MTU, 1500).unwrap_err();
    assert!(
        [Errno::NODEV, Errno::PERM].contains(&refused),
        "{refused:?}"
    );
}
