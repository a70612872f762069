//! The network guard of `web_fetch`: which URLs may be fetched and which
//! addresses connected to, and the resolver that makes reqwest connect only
//! to addresses this guard checked (no DNS rebinding between check and
//! connect).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use dsh_netproxy::Allowlist;
use dsh_protocol::codes;
use dsh_tools::ToolError;
use reqwest::Url;

use crate::address::blocked_class;

/// Where the network may go, from `[sandbox] network`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NetworkAccess {
    /// `true` (the default): any public host.
    #[default]
    Open,
    /// `false`: no network; every fetch and search is refused.
    Off,
    /// A list: only the hosts it allows (name entries match the URL's host
    /// name, address and CIDR entries an IP literal, and they also admit
    /// the non-public addresses they list, as the sandbox's proxy does).
    Hosts(Allowlist),
}

/// The checks of one fetch configuration.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    pub(crate) allow_private: bool,
    pub(crate) network: NetworkAccess,
    pub(crate) exempt: Vec<SocketAddr>,
}

/// The message for `network = false`.
pub(crate) const NETWORK_OFF: &str =
    "network access is off in [sandbox] network (dsh.toml); web tools cannot reach any host";

impl Guard {
    /// Checks a URL before anything is sent to it (every redirect hop
    /// too): http or https, no credentials, a host the network setting
    /// allows, and an IP literal that is public (or allowed).
    ///
    /// # Errors
    /// `WEB_BLOCKED` naming the rule.
    pub(crate) fn check_url(&self, url: &Url) -> Result<(), ToolError> {
        let blocked = |msg: String| Err(ToolError::new(codes::WEB_BLOCKED, msg));
        if let NetworkAccess::Off = self.network {
            return blocked(NETWORK_OFF.to_string());
        }
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return blocked(format!(
                    "only http and https URLs can be fetched, not {other}: ({url})"
                ))
            }
        }
        if !url.username().is_empty() || url.password().is_some() {
            return blocked(
                "URLs with credentials (user:password@host) are refused: dsh does not send credentials to web pages; remove them from the URL".to_string(),
            );
        }
        let Some(host) = url.host_str() else {
            return blocked(format!("the URL {url} has no host"));
        };
        // The URL parser already normalised the host: IPv4 in any notation
        // (`2130706433`, `0x7f.1`) is dotted decimal, IPv6 is bracketed.
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let NetworkAccess::Hosts(list) = &self.network {
            if !list.allows_host(bare) {
                return blocked(format!(
                    "{bare} is not in the hosts [sandbox] network allows ({}); ask the user to add it to dsh.toml",
                    shown(list)
                ));
            }
        }
        let Ok(ip) = bare.parse::<IpAddr>() else {
            // A name: its addresses are checked when it is resolved.
            return Ok(());
        };
        let port = url.port_or_known_default().unwrap_or(0);
        if self.exempt.contains(&SocketAddr::new(ip, port)) {
            return Ok(());
        }
        match self.address_refusal(ip) {
            None => Ok(()),
            Some(class) => blocked(format!(
                "{url} is {class} ({ip}); web_fetch does not connect to the local machine or private networks (set [web] allow_private = true in dsh.toml to allow it)"
            )),
        }
    }

    /// Why connecting to `ip` is refused, or `None` when it is allowed: a
    /// public address, `allow_private`, or an address the `[sandbox]
    /// network` list names.
    pub(crate) fn address_refusal(&self, ip: IpAddr) -> Option<&'static str> {
        if self.allow_private {
            return None;
        }
        if let NetworkAccess::Hosts(list) = &self.network {
            if list.lists_address(ip) {
                return None;
            }
        }
        blocked_class(ip)
    }
}

/// The entries of a list, for messages.
fn shown(list: &Allowlist) -> String {
    match list.entries() {
        [] => "none".to_string(),
        e => e.join(", "),
    }
}

/// A name whose every address the guard refused: the error the resolver
/// returns, found again in reqwest's error chain by [`find_blocked`].
#[derive(Debug)]
pub(crate) struct Blocked(pub(crate) String);

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Blocked {}

/// The [`Blocked`] refusal somewhere in `err`'s source chain.
pub(crate) fn find_blocked<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a Blocked> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(b) = e.downcast_ref::<Blocked>() {
            return Some(b);
        }
        cur = e.source();
    }
    None
}

/// reqwest's resolver for a guarded client: resolves with `inner` and
/// keeps only the addresses the guard allows, so the connection goes to an
/// address that was checked (a name cannot resolve to a public address
/// for the check and a private one for the connect). A name with no
/// allowed address fails with [`Blocked`].
pub(crate) struct GuardedResolver {
    pub(crate) inner: Arc<dyn dsh_netproxy::Resolve>,
    pub(crate) guard: Arc<Guard>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let inner = self.inner.clone();
        let guard = self.guard.clone();
        let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        Box::pin(async move {
            let addrs = inner.resolve(&host).await?;
            if addrs.is_empty() {
                return Err(format!("{host} has no address").into());
            }
            let mut refused = None;
            let allowed: Vec<SocketAddr> = addrs
                .iter()
                .filter(|ip| match guard.address_refusal(**ip) {
                    None => true,
                    Some(class) => {
                        refused.get_or_insert((**ip, class));
                        false
                    }
                })
                .map(|ip| SocketAddr::new(*ip, 0))
                .collect();
            if allowed.is_empty() {
                let (ip, class) = refused.unwrap_or((addrs[0], "not allowed"));
                return Err(Box::new(Blocked(format!(
                    "{host} resolves to {class} ({ip}); web_fetch does not connect to the local machine or private networks (set [web] allow_private = true in dsh.toml to allow it)"
                ))) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}
