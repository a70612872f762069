//! The proxy behind `[sandbox] network = ["example.org", "*.example.com", …]`.
//!
//! A command confined to "network by domain" runs in an empty network
//! namespace whose only way out is a listening socket on 127.0.0.1:3128
//! inside it, which dsh hands to [`Proxy::serve`]. The proxy accepts there
//! and makes the outbound connections from dsh's own network namespace,
//! for targets the [`Allowlist`] lets through.
//!
//! Start at [`Proxy`]. One port speaks HTTP/1 (`CONNECT host:port` tunnels
//! and absolute-form `GET http://host/path` requests) and SOCKS5 (CONNECT,
//! no authentication); the first byte tells them apart. Every target goes
//! through one check, in this order:
//!
//! 1. an IP literal is allowed only if an address or CIDR entry lists it
//!    ([`Allowlist::lists_address`]), and then connected to as is;
//! 2. a name must match a name or wildcard entry ([`Allowlist::allows_host`]);
//! 3. the proxy resolves the name itself ([`Resolve`]) and drops every
//!    address that [`is_non_public`] unless it is listed; if that drops
//!    them all, the target is denied ([`DenialReason::NonPublicAddress`]);
//! 4. it connects **by address** to the first address left (then the next,
//!    10 s each), so DNS cannot change the answer between check and connect.
//!
//! A refused target is a [`Denial`]: HTTP `403` with the header
//! `X-Dsh-Sandbox: network-denied`, or SOCKS5 reply 02; it is recorded on
//! the [`Served`] listener (for the note shown to the model,
//! [`Denial::note`]) and passed to the observer.
//!
//! What this crate does not do: create namespaces or set proxy variables
//! (the sandbox does), terminate or inspect TLS (a `CONNECT` to a listed
//! name can carry any SNI the listed server accepts), speak HTTP/2 or
//! keep-alive to the upstream (each forwarded request gets
//! `Connection: close`), UDP (SOCKS5 UDP ASSOCIATE), or authenticate
//! clients (whoever can reach the listener may use it).

#![warn(missing_docs)]

mod address;
mod allowlist;
mod conn;
mod denial;
mod http;
mod relay;
mod resolve;
mod socks;

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};

pub use address::is_non_public;
pub use allowlist::{Allowlist, AllowlistError};
pub use denial::{Denial, DenialReason};
pub use resolve::{Resolve, Resolving, StaticResolver, SystemResolver};

/// Concurrent connections per listener unless [`Proxy::with_max_connections`]
/// says otherwise; beyond it a new connection is accepted and closed at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// Denials kept per listener ([`Served::denials`]); later ones still reach
/// the observer.
pub const MAX_RECORDED_DENIALS: usize = 64;

/// Called once per denial, on the connection's task.
pub type DenialObserver = Arc<dyn Fn(&Denial) + Send + Sync>;

/// The network-by-domain proxy for one session: the allowlist, the
/// resolver and the denial observer. Cheap to clone (one `Arc`); serve it
/// on as many listeners as there are commands ([`Proxy::serve`]).
#[derive(Clone)]
pub struct Proxy {
    inner: Arc<Settings>,
}

#[derive(Clone)]
struct Settings {
    allow: Allowlist,
    resolver: Arc<dyn Resolve>,
    observer: Option<DenialObserver>,
    max_connections: usize,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("allow", &self.inner.allow.entries())
            .field("observer", &self.inner.observer.is_some())
            .field("max_connections", &self.inner.max_connections)
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// A proxy letting through what `allow` lists, resolving names with
    /// `resolver` ([`SystemResolver`] in production).
    pub fn new(allow: Allowlist, resolver: Arc<dyn Resolve>) -> Self {
        Proxy {
            inner: Arc::new(Settings {
                allow,
                resolver,
                observer: None,
                max_connections: DEFAULT_MAX_CONNECTIONS,
            }),
        }
    }

    /// This proxy with `f` called once per denial, on every listener it
    /// serves (for the log event `sandbox/network-denied`). Replaces an
    /// earlier observer.
    pub fn with_observer(self, f: DenialObserver) -> Self {
        self.with(|s| s.observer = Some(f))
    }

    /// This proxy with at most `n` connections at once per listener (at
    /// least 1); further connections are accepted and closed at once.
    pub fn with_max_connections(self, n: usize) -> Self {
        self.with(|s| s.max_connections = n.max(1))
    }

    fn with(self, change: impl FnOnce(&mut Settings)) -> Self {
        let mut settings = Arc::unwrap_or_clone(self.inner);
        change(&mut settings);
        Proxy {
            inner: Arc::new(settings),
        }
    }

    /// The allowlist this proxy checks against.
    pub fn allowlist(&self) -> &Allowlist {
        &self.inner.allow
    }

    /// Serves the connections accepted on `listener` (any listening TCP
    /// socket; it is made non-blocking here) on the current tokio runtime,
    /// until the returned [`Served`] is dropped.
    ///
    /// Errors: no current tokio runtime, or the socket cannot be made
    /// non-blocking or registered with the runtime.
    ///
    /// # Panics
    ///
    /// If the current runtime was built without I/O (`enable_io`).
    pub fn serve(&self, listener: std::net::TcpListener) -> io::Result<Served> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| io::Error::other(format!("Proxy::serve needs a tokio runtime: {e}")))?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let shared = Arc::new(Shared {
            listener: Mutex::new(Some(listener)),
            denials: Mutex::new(Vec::new()),
        });
        let task = runtime.spawn(accept_loop(self.clone(), Arc::clone(&shared)));
        tracing::debug!(%local, "network proxy serving");
        Ok(Served {
            shared,
            task,
            local,
        })
    }

    /// Records `denial` on the listener and tells the observer.
    fn deny(&self, shared: &Shared, denial: &Denial) {
        tracing::debug!(host = %denial.host, port = denial.port, reason = ?denial.reason, "network denied");
        {
            let mut list = lock(&shared.denials);
            let seen = list
                .iter()
                .any(|d| d.host == denial.host && d.port == denial.port);
            if !seen && list.len() < MAX_RECORDED_DENIALS {
                list.push(denial.clone());
            }
        }
        if let Some(observer) = &self.inner.observer {
            observer(denial);
        }
    }
}

/// One listener being served ([`Proxy::serve`]). Dropping it closes the
/// listening socket at once (before `drop` returns) and aborts the
/// connections it accepted.
#[must_use = "dropping Served stops the proxy on that listener"]
pub struct Served {
    shared: Arc<Shared>,
    task: JoinHandle<()>,
    local: SocketAddr,
}

/// What the accept task and the connections share with [`Served`].
struct Shared {
    /// `None` once [`Served`] is dropped.
    listener: Mutex<Option<tokio::net::TcpListener>>,
    denials: Mutex<Vec<Denial>>,
}

impl Shared {
    /// Polls for the next connection; `Ready(None)` once the listener is
    /// gone.
    fn poll_accept(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<(tokio::net::TcpStream, SocketAddr)>>> {
        match lock(&self.listener).as_ref() {
            Some(listener) => listener.poll_accept(cx).map(Some),
            None => Poll::Ready(None),
        }
    }
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl Served {
    /// The denials seen on this listener so far, in the order they
    /// happened; a repeat of the same host and port is folded into the
    /// first, and at most [`MAX_RECORDED_DENIALS`] are kept.
    pub fn denials(&self) -> Vec<Denial> {
        lock(&self.shared.denials).clone()
    }

    /// The local address clients connect to (as the listener had it when
    /// served).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // Dropping the tokio listener closes the socket now; aborting the
        // task drops its JoinSet, which aborts every connection task.
        drop(lock(&self.shared.listener).take());
        self.task.abort();
        tracing::debug!(local = %self.local, "network proxy stopped");
    }
}

/// Locks, ignoring poisoning: every critical section here leaves its data
/// consistent (a push, a take, a clone).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Accepts until the listener is gone, one task per connection, at most
/// `max_connections` at once.
async fn accept_loop(proxy: Proxy, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(proxy.inner.max_connections));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = poll_fn(|cx| shared.poll_accept(cx)) => match accepted {
                None => break,
                Some(Ok((stream, peer))) => match Arc::clone(&slots).try_acquire_owned() {
                    Ok(slot) => {
                        tracing::debug!(%peer, "network proxy connection");
                        connections.spawn(conn::serve(stream, proxy.clone(), Arc::clone(&shared), slot));
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "network proxy at its connection limit: closing");
                        drop(stream);
                    }
                },
                Some(Err(e)) => {
                    // Out of descriptors, a connection reset before accept:
                    // the listener itself is fine, so pause and go on.
                    tracing::debug!(error = %e, "network proxy accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}
