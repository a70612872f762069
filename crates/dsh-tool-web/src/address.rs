//! Which addresses `web_fetch` refuses to connect to: everything that is not
//! on the public internet, so a model cannot reach the user's machine or
//! network (SSRF).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is refused, as a phrase for messages ("a loopback address"), or
/// `None` for a public address.
///
/// Refused: loopback (127/8, `::1`), link-local (169.254/16, `fe80::/10`,
/// which holds the cloud metadata address 169.254.169.254), private
/// (10/8, 172.16/12, 192.168/16, unique-local `fc00::/7`), carrier-grade
/// NAT (100.64/10), unspecified and "this network" (0/8, `::`), multicast
/// (224/4, `ff00::/8`), broadcast, reserved (240/4), site-local
/// (`fec0::/10`), and IPv4-mapped, IPv4-compatible and NAT64 IPv6 forms of
/// any of those. The decision is [`dsh_netproxy::is_non_public`]'s, the one
/// classifier the sandbox's network proxy uses too; this adds the phrase.
pub fn blocked_class(ip: IpAddr) -> Option<&'static str> {
    if !dsh_netproxy::is_non_public(ip) {
        return None;
    }
    Some(match ip {
        IpAddr::V4(v4) => v4_phrase(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => v4_phrase(v4),
            None => v6_phrase(v6),
        },
    })
}

/// Whether `ip` is refused (see [`blocked_class`]).
pub fn is_blocked(ip: IpAddr) -> bool {
    blocked_class(ip).is_some()
}

fn v4_phrase(ip: Ipv4Addr) -> &'static str {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_unspecified() || a == 0 {
        "an unspecified (\"this network\") address"
    } else if ip.is_private() {
        "a private address"
    } else if ip.is_link_local() {
        "a link-local address (the cloud metadata service lives there)"
    } else if a == 100 && (64..128).contains(&b) {
        "a carrier-grade NAT address"
    } else if ip.is_multicast() {
        "a multicast address"
    } else if ip.is_broadcast() {
        "the broadcast address"
    } else {
        "a reserved address"
    }
}

fn v6_phrase(ip: Ipv6Addr) -> &'static str {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_unspecified() {
        "an unspecified address"
    } else if first & 0xffc0 == 0xfe80 {
        "a link-local address"
    } else if first & 0xfe00 == 0xfc00 {
        "a unique-local (private) address"
    } else if first & 0xff00 == 0xff00 {
        "a multicast address"
    } else {
        "a reserved address"
    }
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`) address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let mapped = s[..5] == [0; 5] && s[5] == 0xffff;
    let compatible = s[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified();
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4];
    (mapped || compatible || nat64).then_some(tail)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use proptest::prelude::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_ranges_of_the_brief_are_refused_with_their_names() {
        for (a, phrase) in [
            ("127.0.0.1", "loopback"),
            ("::1", "loopback"),
            ("169.254.169.254", "link-local"),
            ("fe80::1", "link-local"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("fd12::1", "unique-local"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("0.0.0.0", "unspecified"),
            ("::", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("ff02::1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::ffff:10.0.0.1", "private"),
            ("64:ff9b::7f00:1", "loopback"),
        ] {
            let class = blocked_class(ip(a)).unwrap_or_else(|| panic!("{a} allowed"));
            assert!(class.contains(phrase), "{a}: {class}");
        }
        for a in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(blocked_class(ip(a)), None, "{a}");
        }
    }

    fn v4_in(net: [u8; 4], prefix: u32) -> impl Strategy<Value = Ipv4Addr> {
        let base = u32::from(Ipv4Addr::from(net));
        let host_mask = u32::MAX.checked_shr(prefix).unwrap_or(0);
        any::<u32>().prop_map(move |r| Ipv4Addr::from(base | (r & host_mask)))
    }

    fn v6_in(first: u16, prefix: u32) -> impl Strategy<Value = Ipv6Addr> {
        let base = u128::from(first) << 112;
        let host_mask = u128::MAX.checked_shr(prefix).unwrap_or(0);
        any::<u128>().prop_map(move |r| Ipv6Addr::from(base | (r & host_mask)))
    }

    proptest! {
        /// Every address of every refused IPv4 range is refused, and so are
        /// its IPv4-mapped and NAT64 forms.
        #[test]
        fn refused_v4_ranges_are_refused_in_every_form(
            a in prop_oneof![
                v4_in([127, 0, 0, 0], 8),
                v4_in([169, 254, 0, 0], 16),
                v4_in([10, 0, 0, 0], 8),
                v4_in([172, 16, 0, 0], 12),
                v4_in([192, 168, 0, 0], 16),
                v4_in([100, 64, 0, 0], 10),
                v4_in([0, 0, 0, 0], 8),
                v4_in([224, 0, 0, 0], 4),
            ]
        ) {
            prop_assert!(is_blocked(IpAddr::V4(a)));
            prop_assert!(is_blocked(IpAddr::V6(a.to_ipv6_mapped())));
            let nat64 = Ipv6Addr::from((0x64_ff9bu128 << 96) | u128::from(u32::from(a)));
            prop_assert!(is_blocked(IpAddr::V6(nat64)));
        }

        /// Every address of the refused IPv6 ranges is refused.
        #[test]
        fn refused_v6_ranges_are_refused(
            a in prop_oneof![v6_in(0xfe80, 10), v6_in(0xfc00, 7), v6_in(0xff00, 8)]
        ) {
            prop_assert!(is_blocked(IpAddr::V6(a)));
        }

        /// The phrase and the decision never disagree, for any address:
        /// a refused address always has a phrase, a public one none, and
        /// a mapped address is judged like the IPv4 address inside it.
        #[test]
        fn the_class_agrees_with_the_proxy_classifier(v4 in any::<u32>(), v6 in any::<u128>()) {
            let v4 = Ipv4Addr::from(v4);
            for ip in [IpAddr::V4(v4), IpAddr::V6(Ipv6Addr::from(v6))] {
                prop_assert_eq!(blocked_class(ip).is_some(), dsh_netproxy::is_non_public(ip));
            }
            prop_assert_eq!(
                blocked_class(IpAddr::V4(v4)),
                blocked_class(IpAddr::V6(v4.to_ipv6_mapped()))
            );
        }
    }
}
