//! The `[sandbox] network` list: parsing and matching.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::address::{mask128, mask32};

/// The `[sandbox] network` list, parsed: which hosts a command may reach
/// through the proxy.
///
/// Immutable once parsed; cheap to clone (a few strings).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Allowlist {
    entries: Vec<String>,
    rules: Vec<Rule>,
}

/// One parsed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    /// A host name, lower-case, without a trailing dot.
    Exact(String),
    /// `*.example.com`, stored as `.example.com`: any name ending with it
    /// and at least one label longer.
    Subdomains(String),
    /// An address or a CIDR block (host bits cleared).
    Net(Net),
}

/// An IP network: an address with the bits past `prefix` cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl Net {
    /// The network; an IPv4-mapped one (`::ffff:a.b.c.d/96..=128`) becomes
    /// its IPv4 network.
    fn new(addr: IpAddr, prefix: u8) -> Self {
        let (addr, prefix) = match addr {
            IpAddr::V6(v6) if prefix >= 96 => match v6.to_ipv4_mapped() {
                Some(v4) => (IpAddr::V4(v4), prefix - 96),
                None => (addr, prefix),
            },
            _ => (addr, prefix),
        };
        let addr = match addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask32(prefix))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask128(prefix))),
        };
        Net { addr, prefix }
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                u32::from(ip) & mask32(self.prefix) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                u128::from(ip) & mask128(self.prefix) == u128::from(net)
            }
            _ => false,
        }
    }
}

/// Why a `[sandbox] network` entry was refused. Every variant names the
/// entry as written; [`AllowlistError::kind`] is a stable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllowlistError {
    /// An empty (or blank) entry. Code `NETWORK_ENTRY_EMPTY`.
    #[error("[sandbox] network entry {position} is empty: write a host name (example.org), a wildcard (*.example.com), an IP address or a CIDR block")]
    Empty {
        /// 1-based position of the entry in the list.
        position: usize,
    },
    /// A URL instead of a host. Code `NETWORK_ENTRY_URL`.
    #[error("[sandbox] network entry {entry:?} is a URL: write the host name only, e.g. \"example.org\" (every scheme and port of it is allowed)")]
    Url {
        /// The entry as written.
        entry: String,
    },
    /// `host:port`: entries cannot restrict ports. Code `NETWORK_ENTRY_PORT`.
    #[error("[sandbox] network entry {entry:?} has a port: ports cannot be listed, write the host alone (it allows every port)")]
    Port {
        /// The entry as written.
        entry: String,
    },
    /// A character no host name has (space, `/` outside a CIDR, non-ASCII…).
    /// Code `NETWORK_ENTRY_BAD_CHARACTER`.
    #[error("[sandbox] network entry {entry:?} has the character {character:?}: host names are ASCII letters, digits, '-', '_' and '.' (write internationalised names in punycode, xn--...)")]
    BadCharacter {
        /// The entry as written.
        entry: String,
        /// The first offending character.
        character: char,
    },
    /// `*` alone. Code `NETWORK_ENTRY_BARE_WILDCARD`.
    #[error("[sandbox] network entry {entry:?} would allow every host: list the domains a command needs (e.g. *.example.com), or use danger-full-access for unrestricted network")]
    BareWildcard {
        /// The entry as written.
        entry: String,
    },
    /// `*.com`: a wildcard over a single label. Code
    /// `NETWORK_ENTRY_WILDCARD_TOO_BROAD`.
    #[error("[sandbox] network entry {entry:?} covers a whole top-level domain: put at least two labels after \"*.\", e.g. *.example.com")]
    WildcardTooBroad {
        /// The entry as written.
        entry: String,
    },
    /// `*` anywhere but as the whole first label. Code
    /// `NETWORK_ENTRY_BAD_WILDCARD`.
    #[error("[sandbox] network entry {entry:?}: '*' may only stand as the whole first label, as in *.example.com")]
    BadWildcard {
        /// The entry as written.
        entry: String,
    },
    /// A malformed host name (empty label, label over 63 or name over 253
    /// characters, a label starting or ending with '-', an all-digit last
    /// label). Code `NETWORK_ENTRY_BAD_NAME`.
    #[error("[sandbox] network entry {entry:?} is not a valid host name: {why}")]
    BadName {
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Brackets or a CIDR whose address part is not an IP address. Code
    /// `NETWORK_ENTRY_BAD_ADDRESS`.
    #[error("[sandbox] network entry {entry:?} is not a valid IP address or CIDR block (e.g. 10.0.0.5, ::1, [::1], 10.0.0.0/8, fd00::/8)")]
    BadAddress {
        /// The entry as written.
        entry: String,
    },
    /// A CIDR prefix length that is not a number from 0 to 32 (IPv4) or 128
    /// (IPv6). Code `NETWORK_ENTRY_BAD_PREFIX`.
    #[error("[sandbox] network entry {entry:?} has a bad prefix length: write a number from 0 to {max} after '/'")]
    BadPrefix {
        /// The entry as written.
        entry: String,
        /// The largest prefix length for the address family.
        max: u8,
    },
}

impl AllowlistError {
    /// A stable code for the failure, independent of the message wording.
    pub fn kind(&self) -> &'static str {
        match self {
            AllowlistError::Empty { .. } => "NETWORK_ENTRY_EMPTY",
            AllowlistError::Url { .. } => "NETWORK_ENTRY_URL",
            AllowlistError::Port { .. } => "NETWORK_ENTRY_PORT",
            AllowlistError::BadCharacter { .. } => "NETWORK_ENTRY_BAD_CHARACTER",
            AllowlistError::BareWildcard { .. } => "NETWORK_ENTRY_BARE_WILDCARD",
            AllowlistError::WildcardTooBroad { .. } => "NETWORK_ENTRY_WILDCARD_TOO_BROAD",
            AllowlistError::BadWildcard { .. } => "NETWORK_ENTRY_BAD_WILDCARD",
            AllowlistError::BadName { .. } => "NETWORK_ENTRY_BAD_NAME",
            AllowlistError::BadAddress { .. } => "NETWORK_ENTRY_BAD_ADDRESS",
            AllowlistError::BadPrefix { .. } => "NETWORK_ENTRY_BAD_PREFIX",
        }
    }
}

impl Allowlist {
    /// Parses the `[sandbox] network` entries, in order.
    ///
    /// An entry is a host name (`example.org`; case-insensitive, a trailing
    /// dot ignored), a wildcard `*.example.com` (any subdomain, at any depth,
    /// but **not** `example.com` itself), an IPv4 or IPv6 address
    /// (`10.0.0.5`, `::1`, `[::1]`) or a CIDR block (`10.0.0.0/8`,
    /// `fd00::/8`; host bits are cleared). Blanks around an entry are
    /// ignored. The first bad entry fails the whole list with an
    /// [`AllowlistError`] naming it.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, AllowlistError> {
        let mut list = Allowlist::default();
        for (i, raw) in entries.iter().enumerate() {
            let (shown, rule) = parse_entry(raw.as_ref(), i + 1)?;
            list.entries.push(shown);
            list.rules.push(rule);
        }
        Ok(list)
    }

    /// Whether `host` — a name or an IP literal as the client gave it
    /// (`[::1]` brackets allowed, case and a trailing dot ignored) — is
    /// listed: a name matches an equal name entry or a wildcard over one of
    /// its parent domains; an IP literal must be covered by an address or
    /// CIDR entry ([`Allowlist::lists_address`]). Malformed names are never
    /// allowed.
    pub fn allows_host(&self, host: &str) -> bool {
        match Host::parse(host) {
            Some(Host::Ip(ip)) => self.lists_address(ip),
            Some(Host::Name(name)) => self.allows_name(&name),
            None => false,
        }
    }

    /// Whether an address or CIDR entry covers `ip`. An IPv4-mapped IPv6
    /// address (`::ffff:a.b.c.d`, in a query or an entry) is its IPv4
    /// address here, so `::/0` does not cover IPv4.
    pub fn lists_address(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.rules.iter().any(|rule| match rule {
            Rule::Net(net) => net.contains(ip),
            Rule::Exact(_) | Rule::Subdomains(_) => false,
        })
    }

    /// The entries, normalised (lower-case, no trailing dot, no brackets,
    /// CIDR host bits cleared), in the order the user wrote them; for
    /// messages.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Whether the list is empty (every host is denied).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `a, b, c`, or `nothing` for an empty list.
    pub(crate) fn shown(&self) -> String {
        if self.entries.is_empty() {
            "nothing".to_owned()
        } else {
            self.entries.join(", ")
        }
    }

    /// Name matching; `name` is already normalised.
    pub(crate) fn allows_name(&self, name: &str) -> bool {
        self.rules.iter().any(|rule| match rule {
            Rule::Exact(n) => n == name,
            Rule::Subdomains(suffix) => {
                name.len() > suffix.len() && name.ends_with(suffix.as_str())
            }
            Rule::Net(_) => false,
        })
    }
}

/// A target host as a client named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// A valid host name, lower-case, without a trailing dot.
    Name(String),
    /// An IP literal.
    Ip(IpAddr),
}

impl Host {
    /// Parses a client's host: `[v6]`, an IPv4 or IPv6 literal, or a
    /// syntactically valid host name. `None` for anything else.
    pub(crate) fn parse(host: &str) -> Option<Host> {
        if let Some(inner) = host.strip_prefix('[') {
            let inner = inner.strip_suffix(']')?;
            return inner
                .parse::<Ipv6Addr>()
                .ok()
                .map(|ip| Host::Ip(IpAddr::V6(ip)));
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Some(Host::Ip(ip));
        }
        normalise_name(host).ok().map(Host::Name)
    }

    /// The host for messages: the name, or the address without brackets.
    pub(crate) fn shown(&self) -> String {
        match self {
            Host::Name(n) => n.clone(),
            Host::Ip(ip) => ip.to_string(),
        }
    }
}

/// One entry → (normalised text, rule).
fn parse_entry(raw: &str, position: usize) -> Result<(String, Rule), AllowlistError> {
    let entry = raw.trim();
    let owned = || entry.to_owned();
    if entry.is_empty() {
        return Err(AllowlistError::Empty { position });
    }
    if entry.contains("://") {
        return Err(AllowlistError::Url { entry: owned() });
    }
    // `[v6]` and `[v6]:port`.
    if let Some(inner) = entry.strip_prefix('[') {
        if let Some((addr, rest)) = inner.split_once(']') {
            if !rest.is_empty() {
                return Err(if rest.starts_with(':') {
                    AllowlistError::Port { entry: owned() }
                } else {
                    AllowlistError::BadAddress { entry: owned() }
                });
            }
            return match addr.parse::<Ipv6Addr>() {
                Ok(ip) => {
                    let net = Net::new(IpAddr::V6(ip), 128);
                    Ok((net.addr.to_string(), Rule::Net(net)))
                }
                Err(_) => Err(AllowlistError::BadAddress { entry: owned() }),
            };
        }
        return Err(AllowlistError::BadAddress { entry: owned() });
    }
    if let Some((addr, prefix)) = entry.split_once('/') {
        let Ok(addr) = addr.parse::<IpAddr>() else {
            return Err(AllowlistError::BadAddress { entry: owned() });
        };
        let max: u8 = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix.parse::<u8>() {
            Ok(p) if p <= max && !prefix.starts_with('+') => p,
            _ => {
                return Err(AllowlistError::BadPrefix {
                    entry: owned(),
                    max,
                })
            }
        };
        let net = Net::new(addr, prefix);
        return Ok((format!("{}/{}", net.addr, net.prefix), Rule::Net(net)));
    }
    if let Ok(ip) = entry.parse::<IpAddr>() {
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        let net = Net::new(ip, bits);
        return Ok((net.addr.to_string(), Rule::Net(net)));
    }
    // A name with a port: exactly one ':' and digits after it.
    if let Some((_, port)) = entry.split_once(':') {
        if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AllowlistError::Port { entry: owned() });
        }
    }
    if entry == "*" || entry == "*." {
        return Err(AllowlistError::BareWildcard { entry: owned() });
    }
    if let Some(suffix) = entry.strip_prefix("*.") {
        if suffix.contains('*') {
            return Err(AllowlistError::BadWildcard { entry: owned() });
        }
        let suffix = normalise_name(suffix).map_err(|e| e.into_error(entry))?;
        if !suffix.contains('.') {
            return Err(AllowlistError::WildcardTooBroad { entry: owned() });
        }
        return Ok((
            format!("*.{suffix}"),
            Rule::Subdomains(format!(".{suffix}")),
        ));
    }
    if entry.contains('*') {
        return Err(AllowlistError::BadWildcard { entry: owned() });
    }
    let name = normalise_name(entry).map_err(|e| e.into_error(entry))?;
    Ok((name.clone(), Rule::Exact(name)))
}

/// Why a string is not a host name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameError {
    Character(char),
    Invalid(&'static str),
}

impl NameError {
    fn into_error(self, entry: &str) -> AllowlistError {
        match self {
            NameError::Character(character) => AllowlistError::BadCharacter {
                entry: entry.to_owned(),
                character,
            },
            NameError::Invalid(why) => AllowlistError::BadName {
                entry: entry.to_owned(),
                why,
            },
        }
    }
}

/// Validates a host name and returns it lower-case without a trailing dot.
///
/// Letters, digits, '-' and '_' in labels of 1..=63 characters, 253 in all;
/// no label starts or ends with '-'; the last label is not all digits (that
/// is an IPv4 address in some resolver's eyes, never a name).
pub(crate) fn normalise_name(name: &str) -> Result<String, NameError> {
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(NameError::Character(c));
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() {
        return Err(NameError::Invalid("it is empty"));
    }
    if name.len() > 253 {
        return Err(NameError::Invalid("it is longer than 253 characters"));
    }
    let mut last = "";
    for label in name.split('.') {
        if label.is_empty() {
            return Err(NameError::Invalid(
                "it has an empty label (\"..\" or a leading dot)",
            ));
        }
        if label.len() > 63 {
            return Err(NameError::Invalid("a label is longer than 63 characters"));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(NameError::Invalid("a label starts or ends with '-'"));
        }
        last = label;
    }
    if last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NameError::Invalid(
            "its last label is all digits (an IP address is written as four numbers 0-255, e.g. 10.0.0.5)",
        ));
    }
    Ok(name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use proptest::prelude::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn err(entry: &str) -> AllowlistError {
        Allowlist::parse(&[entry]).expect_err(entry)
    }

    #[test]
    fn parse_errors_name_the_entry_and_kind() {
        let cases = [
            ("", "NETWORK_ENTRY_EMPTY"),
            ("   ", "NETWORK_ENTRY_EMPTY"),
            ("https://example.org", "NETWORK_ENTRY_URL"),
            ("example.org:443", "NETWORK_ENTRY_PORT"),
            ("[::1]:443", "NETWORK_ENTRY_PORT"),
            ("exa mple.org", "NETWORK_ENTRY_BAD_CHARACTER"),
            ("bücher.de", "NETWORK_ENTRY_BAD_CHARACTER"),
            ("example.org/path", "NETWORK_ENTRY_BAD_ADDRESS"),
            ("*", "NETWORK_ENTRY_BARE_WILDCARD"),
            ("*.", "NETWORK_ENTRY_BARE_WILDCARD"),
            ("*.com", "NETWORK_ENTRY_WILDCARD_TOO_BROAD"),
            ("*.com.", "NETWORK_ENTRY_WILDCARD_TOO_BROAD"),
            ("*.*.example.com", "NETWORK_ENTRY_BAD_WILDCARD"),
            ("a*.example.com", "NETWORK_ENTRY_BAD_WILDCARD"),
            ("example.*", "NETWORK_ENTRY_BAD_WILDCARD"),
            ("a..b", "NETWORK_ENTRY_BAD_NAME"),
            (".example.org", "NETWORK_ENTRY_BAD_NAME"),
            ("-a.example.org", "NETWORK_ENTRY_BAD_NAME"),
            ("1.2.3.4.5", "NETWORK_ENTRY_BAD_NAME"),
            ("010.0.0.1", "NETWORK_ENTRY_BAD_NAME"),
            ("[zz]", "NETWORK_ENTRY_BAD_ADDRESS"),
            ("[10.0.0.1]", "NETWORK_ENTRY_BAD_ADDRESS"),
            ("[::1", "NETWORK_ENTRY_BAD_ADDRESS"),
            ("10.0.0.0/33", "NETWORK_ENTRY_BAD_PREFIX"),
            ("10.0.0.0/", "NETWORK_ENTRY_BAD_PREFIX"),
            ("10.0.0.0/+8", "NETWORK_ENTRY_BAD_PREFIX"),
            ("10.0.0.0/-1", "NETWORK_ENTRY_BAD_PREFIX"),
            ("fd00::/129", "NETWORK_ENTRY_BAD_PREFIX"),
        ];
        for (entry, kind) in cases {
            let e = err(entry);
            assert_eq!(e.kind(), kind, "{entry:?}: {e}");
            if !entry.trim().is_empty() {
                assert!(
                    e.to_string().contains(&format!("{:?}", entry.trim())),
                    "{e}"
                );
            }
        }
        let long_label = format!("{}.org", "a".repeat(64));
        assert_eq!(err(&long_label).kind(), "NETWORK_ENTRY_BAD_NAME");
        let long_name = format!("{}org", "abcdefghi.".repeat(26));
        assert_eq!(err(&long_name).kind(), "NETWORK_ENTRY_BAD_NAME");
        // Position of an empty entry is 1-based.
        let e = Allowlist::parse(&["a.org", " "]).unwrap_err();
        assert_eq!(e, AllowlistError::Empty { position: 2 });
        assert!(e.to_string().contains("entry 2 is empty"), "{e}");
        assert_eq!(
            err("bücher.de"),
            AllowlistError::BadCharacter {
                entry: "bücher.de".into(),
                character: 'ü'
            }
        );
    }

    #[test]
    fn entries_are_normalised_in_order() {
        let a = Allowlist::parse(&[
            " Example.ORG. ",
            "*.Example.com",
            "[::1]",
            "10.1.2.3/8",
            "FD00::1/8",
            "10.0.0.5",
            "a_b.example.net",
            "0:0::1:2",
        ])
        .unwrap();
        assert_eq!(
            a.entries(),
            [
                "example.org",
                "*.example.com",
                "::1",
                "10.0.0.0/8",
                "fd00::/8",
                "10.0.0.5",
                "a_b.example.net",
                "::1:2"
            ]
        );
        assert!(Allowlist::parse::<&str>(&[]).unwrap().is_empty());
        assert_eq!(Allowlist::default().shown(), "nothing");
        assert_eq!(a.shown().split(", ").count(), 8);
    }

    #[test]
    fn names_match_exactly_case_insensitively_and_ignore_a_trailing_dot() {
        let a = Allowlist::parse(&["example.org"]).unwrap();
        for host in ["example.org", "EXAMPLE.org", "example.org.", "Example.Org."] {
            assert!(a.allows_host(host), "{host}");
        }
        for host in [
            "www.example.org",
            "example.org.evil",
            "xexample.org",
            "example.or",
            "example.org..",
            "",
            ".",
            "exam ple.org",
        ] {
            assert!(!a.allows_host(host), "{host}");
        }
    }

    #[test]
    fn wildcards_match_subdomains_but_never_the_bare_suffix() {
        let a = Allowlist::parse(&["*.example.com"]).unwrap();
        for host in [
            "a.example.com",
            "A.B.Example.COM.",
            "x-y.example.com",
            "_srv.example.com",
        ] {
            assert!(a.allows_host(host), "{host}");
        }
        for host in [
            "example.com",
            "example.com.",
            "EXAMPLE.COM",
            ".example.com",
            "badexample.com",
            "a.example.com.evil",
            "a.example.co",
            "evil\0.example.com",
            "evil/.example.com",
        ] {
            assert!(!a.allows_host(host), "{host:?}");
        }
    }

    #[test]
    fn ip_literals_need_an_address_entry() {
        let a = Allowlist::parse(&["10.0.0.5", "::1", "example.org"]).unwrap();
        assert!(a.allows_host("10.0.0.5"));
        assert!(a.allows_host("::1"));
        assert!(a.allows_host("[::1]"));
        assert!(a.allows_host("::ffff:10.0.0.5"));
        assert!(!a.allows_host("10.0.0.6"));
        assert!(!a.allows_host("[10.0.0.5]"));
        assert!(!a.allows_host("::2"));
        assert!(!a.lists_address(ip("93.184.216.34")));
        // A name entry never lists an address.
        let names = Allowlist::parse(&["example.org", "*.example.com"]).unwrap();
        assert!(!names.lists_address(ip("127.0.0.1")));
    }

    #[test]
    fn cidr_edges() {
        let a = Allowlist::parse(&["10.0.0.0/8", "fd00::/8", "192.168.1.7/32", "172.16.0.0/12"])
            .unwrap();
        for yes in [
            "10.0.0.0",
            "10.255.255.255",
            "fd00::",
            "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "192.168.1.7",
            "172.16.0.0",
            "172.31.255.255",
            "::ffff:10.1.1.1",
        ] {
            assert!(a.lists_address(ip(yes)), "{yes}");
        }
        for no in [
            "9.255.255.255",
            "11.0.0.0",
            "fc00::",
            "fe00::",
            "192.168.1.6",
            "192.168.1.8",
            "172.15.255.255",
            "172.32.0.0",
            "::a00:1",
        ] {
            assert!(!a.lists_address(ip(no)), "{no}");
        }
        let all = Allowlist::parse(&["0.0.0.0/0"]).unwrap();
        assert!(all.lists_address(ip("1.2.3.4")) && all.lists_address(ip("255.255.255.255")));
        assert!(!all.lists_address(ip("2001:db8::1")));
        let all6 = Allowlist::parse(&["::/0"]).unwrap();
        assert!(all6.lists_address(ip("2001:db8::1")));
        assert!(!all6.lists_address(ip("1.2.3.4")));
        assert!(!all6.lists_address(ip("::ffff:1.2.3.4")));
        let mapped = Allowlist::parse(&["::ffff:10.0.0.0/104", "::ffff:192.168.0.1"]).unwrap();
        assert_eq!(mapped.entries(), ["10.0.0.0/8", "192.168.0.1"]);
        assert!(mapped.lists_address(ip("10.9.9.9")));
        assert!(mapped.lists_address(ip("::ffff:10.9.9.9")));
        assert!(mapped.lists_address(ip("192.168.0.1")));
        assert!(!mapped.lists_address(ip("11.0.0.0")));
    }

    proptest! {
        #[test]
        fn parse_and_match_never_panic(entries in proptest::collection::vec(".{0,40}", 0..4), host in ".{0,60}") {
            if let Ok(a) = Allowlist::parse(&entries) {
                let _ = a.allows_host(&host);
                prop_assert_eq!(a.entries().len(), entries.len());
            }
        }

        #[test]
        fn a_cidr_lists_exactly_its_addresses(addr in any::<u32>(), prefix in 0u8..=32, probe in any::<u32>()) {
            let net = Ipv4Addr::from(addr);
            let a = Allowlist::parse(&[format!("{net}/{prefix}")]).unwrap();
            let inside = prefix == 0 || (addr ^ probe) >> (32 - u32::from(prefix)) == 0;
            prop_assert_eq!(a.lists_address(IpAddr::V4(Ipv4Addr::from(probe))), inside);
            prop_assert!(a.lists_address(IpAddr::V4(net)));
        }
    }
}
