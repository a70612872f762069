//! Name resolution, behind a trait so tests can pin names to addresses.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;

/// The future a [`Resolve`] returns.
pub type Resolving<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// Turns a host name into addresses. The proxy resolves every listed name
/// itself, filters the addresses, and connects by address, so what it checked
/// is what it connects to.
pub trait Resolve: Send + Sync + 'static {
    /// The addresses of `host` (a valid, lower-case name without a trailing
    /// dot), in the order to try them. An error, or an empty list, is a
    /// resolution failure (HTTP 502, SOCKS5 reply 04), not a denial.
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a>;
}

/// The system resolver (`getaddrinfo` through [`tokio::net::lookup_host`]):
/// addresses in the order the system gives them, duplicates removed.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a> {
        Box::pin(async move {
            let mut out: Vec<IpAddr> = Vec::new();
            for addr in tokio::net::lookup_host((host, 0)).await? {
                if !out.contains(&addr.ip()) {
                    out.push(addr.ip());
                }
            }
            Ok(out)
        })
    }
}

/// A fixed name → addresses map, **for tests**: it never asks DNS. Names are
/// matched case-insensitively, a trailing dot ignored; an unknown name fails
/// with [`io::ErrorKind::NotFound`].
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    names: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    /// An empty map: every name fails to resolve.
    pub fn new() -> Self {
        StaticResolver::default()
    }

    /// This map with `name` resolving to `addrs` (replacing an earlier entry).
    pub fn with(mut self, name: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        self.insert(name, addrs);
        self
    }

    /// Makes `name` resolve to `addrs` (replacing an earlier entry).
    pub fn insert(&mut self, name: &str, addrs: impl IntoIterator<Item = IpAddr>) {
        self.names.insert(key(name), addrs.into_iter().collect());
    }
}

fn key(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

impl Resolve for StaticResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a> {
        let found = self.names.get(&key(host)).cloned();
        Box::pin(async move {
            found.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no address for {host} (static resolver)"),
                )
            })
        })
    }
}
