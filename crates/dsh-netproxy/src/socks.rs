//! The SOCKS5 side (RFC 1928): the method greeting and the CONNECT request,
//! parsed from whatever bytes have arrived, never panicking.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::allowlist::Host;

/// Reply codes (RFC 1928 §6) the proxy sends.
pub(crate) mod reply {
    pub(crate) const SUCCEEDED: u8 = 0x00;
    pub(crate) const GENERAL_FAILURE: u8 = 0x01;
    pub(crate) const NOT_ALLOWED: u8 = 0x02;
    pub(crate) const HOST_UNREACHABLE: u8 = 0x04;
    pub(crate) const CONNECTION_REFUSED: u8 = 0x05;
    pub(crate) const COMMAND_NOT_SUPPORTED: u8 = 0x07;
    pub(crate) const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 0x08;
}

/// The method-selection answer when the client offers "no authentication".
pub(crate) const NO_AUTH: [u8; 2] = [5, 0x00];
/// The method-selection answer when it does not.
pub(crate) const NO_ACCEPTABLE_METHOD: [u8; 2] = [5, 0xFF];

/// The result of parsing a prefix of the client's bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parse<T> {
    /// More bytes are needed.
    Incomplete,
    /// A complete message and how many bytes it took.
    Done(T, usize),
    /// Malformed or unsupported: send this reply code (if any) and close.
    Invalid(Option<u8>),
}

/// The greeting `05 NMETHODS METHODS…`: whether "no authentication" (00)
/// is among the methods.
pub(crate) fn parse_greeting(buf: &[u8]) -> Parse<bool> {
    match buf {
        [] | [5] => Parse::Incomplete,
        [5, n, methods @ ..] => {
            let n = usize::from(*n);
            match methods.get(..n) {
                Some(m) => Parse::Done(m.contains(&0), 2 + n),
                None => Parse::Incomplete,
            }
        }
        _ => Parse::Invalid(None),
    }
}

/// The request `05 CMD 00 ATYP DST.ADDR DST.PORT`: the CONNECT target.
pub(crate) fn parse_request(buf: &[u8]) -> Parse<(Host, u16)> {
    let [ver, rest @ ..] = buf else {
        return Parse::Incomplete;
    };
    if *ver != 5 {
        return Parse::Invalid(Some(reply::GENERAL_FAILURE));
    }
    let [cmd, ..] = rest else {
        return Parse::Incomplete;
    };
    if *cmd != 1 {
        return Parse::Invalid(Some(reply::COMMAND_NOT_SUPPORTED));
    }
    let Some(&atyp) = buf.get(3) else {
        return Parse::Incomplete;
    };
    let (host, addr_end) = match atyp {
        1 => match buf.get(4..8).and_then(|b| <[u8; 4]>::try_from(b).ok()) {
            Some(a) => (Host::Ip(IpAddr::V4(Ipv4Addr::from(a))), 8),
            None => return Parse::Incomplete,
        },
        4 => match buf.get(4..20).and_then(|b| <[u8; 16]>::try_from(b).ok()) {
            Some(a) => (Host::Ip(IpAddr::V6(Ipv6Addr::from(a))), 20),
            None => return Parse::Incomplete,
        },
        3 => {
            let Some(&len) = buf.get(4) else {
                return Parse::Incomplete;
            };
            let end = 5 + usize::from(len);
            let Some(name) = buf.get(5..end) else {
                return Parse::Incomplete;
            };
            match std::str::from_utf8(name).ok().and_then(Host::parse) {
                Some(host) => (host, end),
                None => return Parse::Invalid(Some(reply::GENERAL_FAILURE)),
            }
        }
        _ => return Parse::Invalid(Some(reply::ADDRESS_TYPE_NOT_SUPPORTED)),
    };
    let Some(port) = buf.get(addr_end..addr_end + 2) else {
        return Parse::Incomplete;
    };
    match u16::from_be_bytes([port[0], port[1]]) {
        0 => Parse::Invalid(Some(reply::GENERAL_FAILURE)),
        port => Parse::Done((host, port), addr_end + 2),
    }
}

/// A reply with bound address 0.0.0.0:0.
pub(crate) fn reply(code: u8) -> [u8; 10] {
    [5, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn greeting() {
        assert_eq!(parse_greeting(&[]), Parse::Incomplete);
        assert_eq!(parse_greeting(&[5]), Parse::Incomplete);
        assert_eq!(parse_greeting(&[5, 2, 0]), Parse::Incomplete);
        assert_eq!(parse_greeting(&[5, 2, 2, 0]), Parse::Done(true, 4));
        assert_eq!(parse_greeting(&[5, 1, 2, 9]), Parse::Done(false, 3));
        assert_eq!(parse_greeting(&[5, 0]), Parse::Done(false, 2));
        assert_eq!(parse_greeting(&[4, 1, 0]), Parse::Invalid(None));
    }

    #[test]
    fn request() {
        let mut r = vec![5, 1, 0, 3, 12];
        r.extend_from_slice(b"Allowed.TEST");
        assert_eq!(parse_request(&r), Parse::Incomplete);
        r.extend_from_slice(&[0x1f, 0x90, 0xAA]);
        assert_eq!(
            parse_request(&r),
            Parse::Done((Host::Name("allowed.test".into()), 8080), 19)
        );
        assert_eq!(
            parse_request(&[5, 1, 0, 1, 10, 0, 0, 5, 0, 80]),
            Parse::Done((Host::Ip("10.0.0.5".parse().unwrap()), 80), 10)
        );
        let mut v6 = vec![5, 1, 0, 4];
        v6.extend_from_slice(&"::1".parse::<Ipv6Addr>().unwrap().octets());
        v6.extend_from_slice(&[1, 187]);
        assert_eq!(
            parse_request(&v6),
            Parse::Done((Host::Ip("::1".parse().unwrap()), 443), 22)
        );
        assert_eq!(
            parse_request(&[5, 2]),
            Parse::Invalid(Some(reply::COMMAND_NOT_SUPPORTED))
        );
        assert_eq!(
            parse_request(&[5, 3, 0, 1]),
            Parse::Invalid(Some(reply::COMMAND_NOT_SUPPORTED))
        );
        assert_eq!(
            parse_request(&[5, 1, 0, 9]),
            Parse::Invalid(Some(reply::ADDRESS_TYPE_NOT_SUPPORTED))
        );
        assert_eq!(
            parse_request(&[4, 1, 0, 1]),
            Parse::Invalid(Some(reply::GENERAL_FAILURE))
        );
        assert_eq!(
            parse_request(&[5, 1, 0, 3, 0, 0, 80]),
            Parse::Invalid(Some(reply::GENERAL_FAILURE))
        );
        assert_eq!(
            parse_request(&[5, 1, 0, 3, 3, b'a', b' ', b'b', 0, 80]),
            Parse::Invalid(Some(reply::GENERAL_FAILURE))
        );
        assert_eq!(
            parse_request(&[5, 1, 0, 1, 1, 2, 3, 4, 0, 0]),
            Parse::Invalid(Some(reply::GENERAL_FAILURE))
        );
        assert_eq!(reply(2), [5, 2, 0, 1, 0, 0, 0, 0, 0, 0]);
    }

    proptest! {
        #[test]
        fn the_socks_parsers_never_panic_and_stay_in_bounds(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Parse::Done(_, n) = parse_greeting(&bytes) {
                prop_assert!(n <= bytes.len());
            }
            if let Parse::Done(_, n) = parse_request(&bytes) {
                prop_assert!(n <= bytes.len());
            }
        }

        #[test]
        fn a_request_prefix_is_incomplete_until_whole(name in "[a-z]{1,20}\\.test", port in 1u16..) {
            let mut r = vec![5, 1, 0, 3, name.len() as u8];
            r.extend_from_slice(name.as_bytes());
            r.extend_from_slice(&port.to_be_bytes());
            for cut in 0..r.len() {
                prop_assert_eq!(parse_request(&r[..cut]), Parse::Incomplete);
            }
            prop_assert_eq!(parse_request(&r), Parse::Done((Host::Name(name.clone()), port), r.len()));
        }
    }
}
