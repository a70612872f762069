//! Which addresses are not on the public internet.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The IPv4 netmask of a prefix length (clamped to 32).
pub(crate) fn mask32(prefix: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix.min(32)))
        .unwrap_or(0)
}

/// The IPv6 netmask of a prefix length (clamped to 128).
pub(crate) fn mask128(prefix: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(prefix.min(128)))
        .unwrap_or(0)
}

/// Whether `ip` is not a public internet address: loopback, link-local,
/// private (RFC 1918), carrier-grade NAT (100.64.0.0/10), "this network"
/// (0.0.0.0/8, which holds the unspecified address), multicast, broadcast,
/// reserved (240.0.0.0/4), IETF protocol assignments (192.0.0.0/24),
/// benchmarking (198.18.0.0/15); IPv6 `::1`, `::`, link-local `fe80::/10`,
/// site-local `fec0::/10`, unique-local `fc00::/7`, multicast `ff00::/8`,
/// and IPv4-mapped (`::ffff:0:0/96`), IPv4-compatible (`::/96`) and NAT64
/// (`64:ff9b::/96`) addresses whose embedded IPv4 address is one of those.
///
/// The proxy refuses to connect to such an address unless an address or
/// CIDR entry lists it, so a listed name cannot be pointed (by DNS) at the
/// host itself or its local network.
pub fn is_non_public(ip: IpAddr) -> bool {
    non_public_class(ip).is_some()
}

/// The class of a non-public address, as a phrase for messages
/// ("a loopback address"); `None` for a public one.
pub(crate) fn non_public_class(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => v6_class(v6),
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let n = u32::from(ip);
    let within = |net: [u8; 4], prefix: u8| n & mask32(prefix) == u32::from(Ipv4Addr::from(net));
    if within([127, 0, 0, 0], 8) {
        Some("a loopback address")
    } else if n == 0 {
        Some("the unspecified address")
    } else if within([0, 0, 0, 0], 8) {
        Some("a \"this network\" address")
    } else if within([10, 0, 0, 0], 8)
        || within([172, 16, 0, 0], 12)
        || within([192, 168, 0, 0], 16)
    {
        Some("a private address")
    } else if within([169, 254, 0, 0], 16) {
        Some("a link-local address")
    } else if within([100, 64, 0, 0], 10) {
        Some("a carrier-grade NAT address")
    } else if within([224, 0, 0, 0], 4) {
        Some("a multicast address")
    } else if n == u32::MAX {
        Some("the broadcast address")
    } else if within([240, 0, 0, 0], 4) {
        Some("a reserved address")
    } else if within([192, 0, 0, 0], 24) {
        Some("an IETF protocol assignment address")
    } else if within([198, 18, 0, 0], 15) {
        Some("a benchmarking address")
    } else {
        None
    }
}

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let n = u128::from(ip);
    let within = |net: u128, prefix: u8| n & mask128(prefix) == net;
    let embedded = || Ipv4Addr::from((n & 0xffff_ffff) as u32);
    if ip == Ipv6Addr::LOCALHOST {
        Some("a loopback address")
    } else if ip == Ipv6Addr::UNSPECIFIED {
        Some("the unspecified address")
    } else if within(0xfe80 << 112, 10) {
        Some("a link-local address")
    } else if within(0xfec0 << 112, 10) {
        Some("a site-local address")
    } else if within(0xfc00 << 112, 7) {
        Some("a unique-local address")
    } else if within(0xff00 << 112, 8) {
        Some("a multicast address")
    } else if within(0xffff << 32, 96) || within(0, 96) || within(0x0064_ff9b << 96, 96) {
        v4_class(embedded())
    } else {
        None
    }
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
    fn non_public_ranges_and_their_boundaries() {
        let non_public = [
            "127.0.0.0",
            "127.255.255.255",
            "0.0.0.0",
            "0.255.255.255",
            "10.0.0.0",
            "10.255.255.255",
            "172.16.0.0",
            "172.31.255.255",
            "192.168.0.0",
            "192.168.255.255",
            "169.254.0.0",
            "169.254.255.255",
            "100.64.0.0",
            "100.127.255.255",
            "224.0.0.0",
            "239.255.255.255",
            "240.0.0.0",
            "255.255.255.254",
            "255.255.255.255",
            "192.0.0.0",
            "192.0.0.255",
            "198.18.0.0",
            "198.19.255.255",
            "::1",
            "::",
            "fe80::",
            "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "fec0::1",
            "fc00::",
            "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "ff00::",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "64:ff9b::7f00:1",
            "64:ff9b::192.168.0.1",
            "::127.0.0.1",
        ];
        for a in non_public {
            assert!(is_non_public(ip(a)), "{a} should be non-public");
        }
        let public = [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "223.255.255.255",
            "191.255.255.255",
            "192.0.1.0",
            "198.17.255.255",
            "198.20.0.0",
            "2001:4860:4860::8888",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "fe7f:ffff::",
            "fbff::",
            "fe00::1",
            "::2:0:0:1",
            "::ffff:0:0:1",
        ];
        for a in public {
            assert!(!is_non_public(ip(a)), "{a} should be public");
        }
        assert_eq!(
            non_public_class(ip("127.0.0.1")),
            Some("a loopback address")
        );
        assert_eq!(
            non_public_class(ip("::ffff:192.168.1.1")),
            Some("a private address")
        );
        assert_eq!(
            non_public_class(ip("255.255.255.255")),
            Some("the broadcast address")
        );
    }

    fn v4_in(net: [u8; 4], prefix: u8) -> impl Strategy<Value = Ipv4Addr> {
        let base = u32::from(Ipv4Addr::from(net));
        any::<u32>().prop_map(move |r| Ipv4Addr::from(base | (r & !mask32(prefix))))
    }

    proptest! {
        #[test]
        fn any_address_in_the_private_v4_ranges_is_non_public(
            a in prop_oneof![
                v4_in([10, 0, 0, 0], 8),
                v4_in([127, 0, 0, 0], 8),
                v4_in([169, 254, 0, 0], 16),
                v4_in([172, 16, 0, 0], 12),
                v4_in([192, 168, 0, 0], 16),
            ]
        ) {
            prop_assert!(is_non_public(IpAddr::V4(a)));
            prop_assert!(is_non_public(IpAddr::V6(a.to_ipv6_mapped())));
        }

    }
}
