//! One client connection: sniff the protocol, read the target, check it,
//! connect by address, relay.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{timeout, timeout_at, Instant};

use crate::address::is_non_public;
use crate::allowlist::Host;
use crate::http::{self, MAX_HEAD};
use crate::relay::relay;
use crate::socks::{self, reply, Parse};
use crate::{Denial, DenialReason, Proxy, Shared};

/// Time a client has to send its request head or SOCKS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// Time to resolve a name.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to connect to one address.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// After the proxy's own error response: how long, and how many bytes, to
/// drain from the client so closing does not reset the connection before
/// the client has read the response.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 1 << 20;

/// The SOCKS4 "request rejected" reply.
const SOCKS4_REJECTED: [u8; 8] = [0, 0x5B, 0, 0, 0, 0, 0, 0];

/// Serves one accepted connection to its end; holds its connection slot.
pub(crate) async fn serve(
    mut client: TcpStream,
    proxy: Proxy,
    shared: Arc<Shared>,
    _slot: OwnedSemaphorePermit,
) {
    // Latency over batching for interactive protocols; failure only costs speed.
    let _ = client.set_nodelay(true);
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut buf = Vec::with_capacity(4096);
    if !matches!(read_more(&mut client, &mut buf, deadline).await, Ok(n) if n > 0) {
        return;
    }
    let link = Link {
        proxy: &proxy,
        shared: &shared,
    };
    match buf.first() {
        Some(0x05) => link.socks5(client, buf, deadline).await,
        Some(0x04) => {
            tracing::debug!("network proxy: SOCKS4 refused");
            respond(client, &SOCKS4_REJECTED).await;
        }
        _ => link.http(client, buf, deadline).await,
    }
}

/// What a connection needs from its proxy and listener.
struct Link<'a> {
    proxy: &'a Proxy,
    shared: &'a Shared,
}

/// The outcome of the check.
enum Verdict {
    /// Allowed: these addresses, in order.
    Connect(Vec<SocketAddr>),
    Denied(Denial),
    /// The name is listed but does not resolve (not a denial).
    Unresolved(io::Error),
}

impl Link<'_> {
    async fn http(&self, mut client: TcpStream, mut buf: Vec<u8>, deadline: Instant) {
        let mut from = 0;
        let end = loop {
            if let Some(end) = http::head_end(&buf, from) {
                break end;
            }
            if buf.len() >= MAX_HEAD {
                return too_large(client).await;
            }
            from = buf.len().saturating_sub(2);
            if !matches!(read_more(&mut client, &mut buf, deadline).await, Ok(n) if n > 0) {
                return;
            }
        };
        if end > MAX_HEAD {
            return too_large(client).await;
        }
        let (head, early) = buf.split_at(end);
        let request = match http::parse_head(head) {
            Ok(r) => r,
            Err(why) => {
                let body = format!("{why}\n");
                return respond(client, &http::response(400, "Bad Request", &[], &body)).await;
            }
        };
        let (host, port) = request.target.host_port();
        let addrs = match self.check(host, port).await {
            Verdict::Connect(addrs) => addrs,
            Verdict::Denied(denial) => {
                self.proxy.deny(self.shared, &denial);
                let body = format!("{}\n", denial.explain(self.proxy.allowlist()));
                let headers = [("X-Dsh-Sandbox", "network-denied")];
                return respond(client, &http::response(403, "Forbidden", &headers, &body)).await;
            }
            Verdict::Unresolved(e) => {
                let body = format!("could not resolve {}: {e}\n", host.shown());
                return respond(client, &http::response(502, "Bad Gateway", &[], &body)).await;
            }
        };
        let mut upstream = match connect_any(&addrs).await {
            Ok(s) => s,
            Err(e) => {
                let (status, reason) = if e.kind() == io::ErrorKind::TimedOut {
                    (504, "Gateway Timeout")
                } else {
                    (502, "Bad Gateway")
                };
                let body = format!("could not connect to {}:{port}: {e}\n", host.shown());
                return respond(client, &http::response(status, reason, &[], &body)).await;
            }
        };
        let sent = match http::origin_request(&request) {
            // Absolute form: the rewritten head, then any body bytes already read.
            Some(head) => match upstream.write_all(&head).await {
                Ok(()) => upstream.write_all(early).await,
                Err(e) => Err(e),
            },
            None => match client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
            {
                Ok(()) => upstream.write_all(early).await,
                Err(e) => Err(e),
            },
        };
        if sent.is_ok() {
            relay(client, upstream).await;
        }
    }

    async fn socks5(&self, mut client: TcpStream, mut buf: Vec<u8>, deadline: Instant) {
        let (no_auth, used) = loop {
            match socks::parse_greeting(&buf) {
                Parse::Done(no_auth, used) => break (no_auth, used),
                Parse::Invalid(_) => return,
                Parse::Incomplete => {
                    if !matches!(read_more(&mut client, &mut buf, deadline).await, Ok(n) if n > 0) {
                        return;
                    }
                }
            }
        };
        if !no_auth {
            return respond(client, &socks::NO_ACCEPTABLE_METHOD).await;
        }
        if client.write_all(&socks::NO_AUTH).await.is_err() {
            return;
        }
        buf.drain(..used);
        let ((host, port), used) = loop {
            match socks::parse_request(&buf) {
                Parse::Done(target, used) => break (target, used),
                Parse::Invalid(code) => {
                    let code = code.unwrap_or(reply::GENERAL_FAILURE);
                    return respond(client, &socks::reply(code)).await;
                }
                Parse::Incomplete => {
                    if !matches!(read_more(&mut client, &mut buf, deadline).await, Ok(n) if n > 0) {
                        return;
                    }
                }
            }
        };
        buf.drain(..used);
        let addrs = match self.check(&host, port).await {
            Verdict::Connect(addrs) => addrs,
            Verdict::Denied(denial) => {
                self.proxy.deny(self.shared, &denial);
                return respond(client, &socks::reply(reply::NOT_ALLOWED)).await;
            }
            Verdict::Unresolved(e) => {
                tracing::debug!(host = %host.shown(), error = %e, "network proxy: no address");
                return respond(client, &socks::reply(reply::HOST_UNREACHABLE)).await;
            }
        };
        let mut upstream = match connect_any(&addrs).await {
            Ok(s) => s,
            Err(e) => {
                let code = if e.kind() == io::ErrorKind::ConnectionRefused {
                    reply::CONNECTION_REFUSED
                } else {
                    reply::GENERAL_FAILURE
                };
                return respond(client, &socks::reply(code)).await;
            }
        };
        if client
            .write_all(&socks::reply(reply::SUCCEEDED))
            .await
            .is_ok()
            && upstream.write_all(&buf).await.is_ok()
        {
            relay(client, upstream).await;
        }
    }

    /// The check, in its contract's order: IP literal → listed address;
    /// name → listed name, resolved here, non-public addresses dropped
    /// unless listed.
    async fn check(&self, host: &Host, port: u16) -> Verdict {
        let allow = self.proxy.allowlist();
        let denial = |reason| {
            Verdict::Denied(Denial {
                host: host.shown(),
                port,
                reason,
            })
        };
        let name = match host {
            Host::Ip(ip) if allow.lists_address(*ip) => {
                return Verdict::Connect(vec![SocketAddr::new(*ip, port)])
            }
            Host::Ip(_) => return denial(DenialReason::AddressNotListed),
            Host::Name(name) if allow.allows_name(name) => name,
            Host::Name(_) => return denial(DenialReason::NotListed),
        };
        let resolved = match timeout(RESOLVE_TIMEOUT, self.proxy.inner.resolver.resolve(name)).await
        {
            Ok(Ok(addrs)) => addrs,
            Ok(Err(e)) => return Verdict::Unresolved(e),
            Err(_) => {
                return Verdict::Unresolved(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "name resolution timed out",
                ))
            }
        };
        let mut kept: Vec<SocketAddr> = Vec::new();
        let mut dropped = None;
        for ip in resolved {
            if is_non_public(ip) && !allow.lists_address(ip) {
                dropped.get_or_insert(ip);
            } else if !kept.iter().any(|a| a.ip() == ip) {
                kept.push(SocketAddr::new(ip, port));
            }
        }
        match (kept.is_empty(), dropped) {
            (false, _) => Verdict::Connect(kept),
            (true, Some(ip)) => denial(DenialReason::NonPublicAddress(ip)),
            (true, None) => Verdict::Unresolved(io::Error::new(
                io::ErrorKind::NotFound,
                "the name has no addresses",
            )),
        }
    }
}

/// Reads what is available into `buf` (at most 16 KiB), by `deadline`.
async fn read_more(s: &mut TcpStream, buf: &mut Vec<u8>, deadline: Instant) -> io::Result<usize> {
    let mut chunk = [0u8; 16 * 1024];
    let n = timeout_at(deadline, s.read(&mut chunk))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "the client was too slow"))??;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

async fn too_large(client: TcpStream) {
    let body = format!("the request head is over {} KiB\n", MAX_HEAD / 1024);
    respond(
        client,
        &http::response(431, "Request Header Fields Too Large", &[], &body),
    )
    .await;
}

/// Sends the proxy's own answer and closes, draining the client's unread
/// bytes for a moment so the close does not reset the connection before
/// the client has read the answer.
async fn respond(mut client: TcpStream, bytes: &[u8]) {
    if client.write_all(bytes).await.is_err() || client.shutdown().await.is_err() {
        return;
    }
    let until = Instant::now() + LINGER;
    let mut sink = [0u8; 8192];
    let mut drained = 0;
    while drained < LINGER_BYTES {
        match timeout_at(until, client.read(&mut sink)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => break,
        }
    }
}

/// Connects to the first address that answers, each within
/// [`CONNECT_TIMEOUT`]; the last failure otherwise.
async fn connect_any(addrs: &[SocketAddr]) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to connect to");
    for addr in addrs {
        match timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                // Latency over batching; failure only costs speed.
                let _ = stream.set_nodelay(true);
                tracing::debug!(%addr, "network proxy connected");
                return Ok(stream);
            }
            Ok(Err(e)) => last = e,
            Err(_) => {
                last = io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connecting to {addr} timed out"),
                )
            }
        }
    }
    Err(last)
}
