//! What the proxy refused, and the words for it.

use std::net::IpAddr;

use crate::address::non_public_class;
use crate::allowlist::Allowlist;

/// One refused connection: the target the client asked for and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The host as the client named it, normalised: a lower-case name
    /// without a trailing dot, or an IP address without brackets.
    pub host: String,
    /// The port the client asked for.
    pub port: u16,
    /// Why it was refused.
    pub reason: DenialReason,
}

/// Why a target was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenialReason {
    /// The name matches no name or wildcard entry.
    NotListed,
    /// The host is an IP literal that no address or CIDR entry covers.
    AddressNotListed,
    /// The name is listed, but every address it resolved to is non-public
    /// ([`crate::is_non_public`]) and not listed; this is the first of them.
    NonPublicAddress(IpAddr),
}

impl Denial {
    /// The note shown to the model, exactly
    /// `[sandbox: network to <host> denied; allowed: <entries joined by ", ">]`
    /// (`allowed: nothing` for an empty list).
    pub fn note(&self, allow: &Allowlist) -> String {
        format!(
            "[sandbox: network to {} denied; allowed: {}]",
            self.host,
            allow.shown()
        )
    }

    /// One sentence with the reason, for the 403 body and logs, e.g.
    /// `network to evil.test:443 denied: evil.test is not in [sandbox] network (allowed: a, b)`.
    pub fn explain(&self, allow: &Allowlist) -> String {
        let target = self.target();
        match self.reason {
            DenialReason::NotListed => format!(
                "network to {target} denied: {} is not in [sandbox] network (allowed: {})",
                self.host,
                allow.shown()
            ),
            DenialReason::AddressNotListed => format!(
                "network to {target} denied: the address {} is not in [sandbox] network (allowed: {})",
                self.host,
                allow.shown()
            ),
            DenialReason::NonPublicAddress(ip) => format!(
                "network to {target} denied: it resolves to {ip}, {}, which is not listed",
                non_public_class(ip).unwrap_or("a non-public address")
            ),
        }
    }

    /// `host:port`, IPv6 addresses in brackets.
    fn target(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn denial(host: &str, port: u16, reason: DenialReason) -> Denial {
        Denial {
            host: host.into(),
            port,
            reason,
        }
    }

    #[test]
    fn note_is_the_contract_text() {
        let allow = Allowlist::parse(&["a.test", "*.b.test", "10.0.0.0/8"]).unwrap();
        let d = denial("evil.test", 443, DenialReason::NotListed);
        assert_eq!(
            d.note(&allow),
            "[sandbox: network to evil.test denied; allowed: a.test, *.b.test, 10.0.0.0/8]"
        );
        assert_eq!(
            d.note(&Allowlist::default()),
            "[sandbox: network to evil.test denied; allowed: nothing]"
        );
    }

    #[test]
    fn explain_says_why() {
        let allow = Allowlist::parse(&["a", "b"]).unwrap();
        assert_eq!(
            denial("evil.test", 443, DenialReason::NotListed).explain(&allow),
            "network to evil.test:443 denied: evil.test is not in [sandbox] network (allowed: a, b)"
        );
        assert_eq!(
            denial("rebind.test", 80, DenialReason::NonPublicAddress("127.0.0.1".parse().unwrap())).explain(&allow),
            "network to rebind.test:80 denied: it resolves to 127.0.0.1, a loopback address, which is not listed"
        );
        assert_eq!(
            denial("::1", 8080, DenialReason::AddressNotListed).explain(&Allowlist::default()),
            "network to [::1]:8080 denied: the address ::1 is not in [sandbox] network (allowed: nothing)"
        );
    }
}
