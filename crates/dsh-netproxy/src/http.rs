//! The HTTP/1 side: finding and parsing a proxy request head, rewriting an
//! absolute-form request to origin-form, and the proxy's own responses.
//!
//! Everything here works on bytes from the client and never panics.

use crate::allowlist::Host;

/// The longest request head accepted (431 beyond).
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// Headers not forwarded upstream (lower-case): hop-by-hop ones, the
/// proxy's own, and `Host`, which is rewritten from the request target.
const DROPPED: [&str; 5] = [
    "host",
    "proxy-connection",
    "proxy-authorization",
    "connection",
    "keep-alive",
];

/// A parsed proxy request head; header lines borrow the client's bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) version: &'a str,
    pub(crate) target: Target,
    /// Header lines as sent, without their line end.
    pub(crate) headers: Vec<&'a [u8]>,
}

/// Where the client wants to go.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// `CONNECT host:port`: a tunnel.
    Connect { host: Host, port: u16 },
    /// `GET http://authority/path`: one request to forward in origin-form.
    Absolute {
        host: Host,
        port: u16,
        /// `host[:port]` as written in the URL (the `Host` header upstream).
        authority: String,
        /// The origin-form target: `/path?query`, at least `/`.
        path: String,
    },
}

impl Target {
    pub(crate) fn host_port(&self) -> (&Host, u16) {
        match self {
            Target::Connect { host, port } | Target::Absolute { host, port, .. } => (host, *port),
        }
    }
}

/// The offset just past the blank line ending the head (`\r\n\r\n`, or bare
/// `\n\n`), looking for it from `from` on; `None` while incomplete.
pub(crate) fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < buf.len() {
        if buf[i] == b'\n' {
            match (buf.get(i + 1), buf.get(i + 2)) {
                (Some(b'\n'), _) => return Some(i + 2),
                (Some(b'\r'), Some(b'\n')) => return Some(i + 3),
                _ => {}
            }
        }
        i += 1;
    }
    None
}

/// Parses a complete request head (up to and including its blank line).
/// The error is the reason for a `400 Bad Request`, one short sentence.
pub(crate) fn parse_head(head: &[u8]) -> Result<Request<'_>, &'static str> {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let line = lines.next().unwrap_or_default();
    if line.is_empty() || !line.iter().all(|b| (0x20..0x7f).contains(b)) {
        return Err("the request line is empty or has control or non-ASCII bytes");
    }
    let line = std::str::from_utf8(line).map_err(|_| "the request line is not ASCII")?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("the request line is not `METHOD target HTTP/1.x`");
    };
    if method.is_empty() || !method.bytes().all(is_token) {
        return Err("the method is not a token");
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err("only HTTP/1.0 and HTTP/1.1 are spoken here");
    }
    let target = if method == "CONNECT" {
        let (host, port) = parse_authority(target, None)?;
        Target::Connect { host, port }
    } else {
        parse_absolute(target)?
    };
    let mut headers = Vec::new();
    for line in lines {
        if line.is_empty() {
            break;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            return Err("obsolete header line folding is not accepted");
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err("a header line has no ':'");
        };
        if colon == 0 || !line[..colon].iter().all(|&b| is_token(b)) {
            return Err("a header name is not a token");
        }
        if line[colon + 1..]
            .iter()
            .any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
        {
            return Err("a header value has control characters");
        }
        headers.push(line);
    }
    Ok(Request {
        method,
        version,
        target,
        headers,
    })
}

/// `http://authority[/path]` → [`Target::Absolute`].
fn parse_absolute(target: &str) -> Result<Target, &'static str> {
    let scheme_end = target.find("://").ok_or(
        "this is a proxy: send absolute-form requests (GET http://host/path) or CONNECT host:port",
    )?;
    let scheme = &target[..scheme_end];
    if scheme.eq_ignore_ascii_case("https") {
        return Err("https:// cannot be proxied in absolute form: use CONNECT (curl --proxytunnel, or just an https URL)");
    }
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(
            "only http:// URLs are proxied in absolute form; use CONNECT for other protocols",
        );
    }
    let rest = &target[scheme_end + 3..];
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    let (host, port) = parse_authority(authority, Some(80))?;
    let path = path.split('#').next().unwrap_or_default();
    let path = if path.is_empty() {
        "/".to_owned()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    Ok(Target::Absolute {
        host,
        port,
        authority: authority.to_owned(),
        path,
    })
}

/// `host:port`, `[v6]:port`; the port may be left out only with a default.
fn parse_authority(
    authority: &str,
    default_port: Option<u16>,
) -> Result<(Host, u16), &'static str> {
    if authority.contains('@') {
        return Err("credentials in the URL are not accepted by this proxy");
    }
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']').ok_or("an IPv6 address lacks its ']'")?;
        let (host, rest) = authority.split_at(close + 1);
        match rest.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if rest.is_empty() => (host, None),
            None => return Err("junk after the IPv6 address"),
        }
    } else {
        match authority.split_once(':') {
            Some((_, port)) if port.contains(':') => {
                return Err("an IPv6 address must be in brackets")
            }
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() => {
            if p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err("the port is not a number");
            }
            match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err("the port is not in 1-65535"),
                Ok(n) => n,
            }
        }
        _ => default_port.ok_or("CONNECT needs host:port")?,
    };
    let host = Host::parse(host).ok_or("the host is not a valid name or IP address")?;
    Ok((host, port))
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The request to send upstream for an absolute-form request: origin-form
/// request line, `Host` from the URL, the client's headers minus
/// [`DROPPED`] and minus those its `Connection` or `Proxy-Connection`
/// headers name (hop-by-hop, RFC 9110 §7.6.1: curl names `Upgrade` and
/// `HTTP2-Settings` there), then `Connection: close`. The body's framing
/// (`Content-Length`, `Transfer-Encoding`) is always kept: the body is
/// relayed as sent. `None` for a CONNECT.
pub(crate) fn origin_request(req: &Request<'_>) -> Option<Vec<u8>> {
    let Target::Absolute {
        authority, path, ..
    } = &req.target
    else {
        return None;
    };
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(
        format!(
            "{} {} {}\r\nHost: {}\r\n",
            req.method, path, req.version, authority
        )
        .as_bytes(),
    );
    let name_of = |line: &'_ [u8]| -> Vec<u8> {
        let name = line.split(|&b| b == b':').next().unwrap_or_default();
        name.trim_ascii().to_ascii_lowercase()
    };
    let mut named: Vec<Vec<u8>> = Vec::new();
    for line in &req.headers {
        let name = name_of(line);
        if name == b"connection" || name == b"proxy-connection" {
            let value = line.splitn(2, |&b| b == b':').nth(1).unwrap_or_default();
            named.extend(
                value
                    .split(|&b| b == b',')
                    .map(|t| t.trim_ascii().to_ascii_lowercase())
                    .filter(|t| {
                        !t.is_empty()
                            && t.as_slice() != b"content-length"
                            && t.as_slice() != b"transfer-encoding"
                    }),
            );
        }
    }
    for line in &req.headers {
        let name = name_of(line);
        if DROPPED.iter().any(|d| name == d.as_bytes()) || named.contains(&name) {
            continue;
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Some(out)
}

/// A complete response from the proxy itself: plain-text body, closed
/// connection.
pub(crate) fn response(
    status: u16,
    reason: &str,
    extra_headers: &[(&str, &str)],
    body: &str,
) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in extra_headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("Connection: close\r\n\r\n");
    out.push_str(body);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use proptest::prelude::*;

    fn name(n: &str) -> Host {
        Host::Name(n.into())
    }

    #[test]
    fn finds_the_end_of_the_head() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nbody", 0), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nbody", 0), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n", 0), None);
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r", 0), None);
        assert_eq!(head_end(b"", 0), None);
        assert_eq!(head_end(b"\n\n", 5), None);
    }

    #[test]
    fn parses_connect() {
        let r = parse_head(b"CONNECT Example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n")
            .unwrap();
        assert_eq!(
            r.target,
            Target::Connect {
                host: name("example.org"),
                port: 443
            }
        );
        let r = parse_head(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            r.target,
            Target::Connect {
                host: Host::Ip("::1".parse().unwrap()),
                port: 8443
            }
        );
        for bad in [
            "CONNECT example.org HTTP/1.1",
            "CONNECT example.org: HTTP/1.1",
            "CONNECT example.org:0 HTTP/1.1",
            "CONNECT example.org:65536 HTTP/1.1",
            "CONNECT example.org:+80 HTTP/1.1",
            "CONNECT ::1:80 HTTP/1.1",
            "CONNECT [::1:80 HTTP/1.1",
            "CONNECT [::1]x:80 HTTP/1.1",
            "CONNECT user@example.org:443 HTTP/1.1",
            "CONNECT exa_mple..org:443 HTTP/1.1",
            "CONNECT 1.2.3.4.5:443 HTTP/1.1",
            "CONNECT example.org:443 HTTP/2.0",
            "CONNECT  example.org:443 HTTP/1.1",
            "CONNECT example.org:443 HTTP/1.1 x",
        ] {
            assert!(
                parse_head(format!("{bad}\r\n\r\n").as_bytes()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn parses_absolute_form_and_rewrites_it() {
        let head = b"POST http://Allowed.test:8080/a/b?c=d#frag HTTP/1.1\r\nHost: evil.test\r\nProxy-Connection: Keep-Alive\r\nproxy-authorization: Basic x\r\nCONNECTION: keep-alive\r\nKeep-Alive: 5\r\nX-Keep: 1\r\nContent-Length: 3\r\n\r\n";
        let r = parse_head(head).unwrap();
        assert_eq!(
            r.target,
            Target::Absolute {
                host: name("allowed.test"),
                port: 8080,
                authority: "Allowed.test:8080".into(),
                path: "/a/b?c=d".into()
            }
        );
        let out = String::from_utf8(origin_request(&r).unwrap()).unwrap();
        assert_eq!(
            out,
            "POST /a/b?c=d HTTP/1.1\r\nHost: Allowed.test:8080\r\nX-Keep: 1\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
        );
        let r = parse_head(b"GET http://a.test HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!(
            r.target,
            Target::Absolute {
                host: name("a.test"),
                port: 80,
                authority: "a.test".into(),
                path: "/".into()
            }
        );
        let r = parse_head(b"GET HTTP://a.test:?x HTTP/1.1\n\n").unwrap();
        assert_eq!(
            r.target,
            Target::Absolute {
                host: name("a.test"),
                port: 80,
                authority: "a.test:".into(),
                path: "/?x".into()
            }
        );
        let r = parse_head(b"GET http://[::1]:81/ HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            r.target.host_port(),
            (&Host::Ip("::1".parse().unwrap()), 81)
        );
        assert!(origin_request(&parse_head(b"CONNECT a.b:1 HTTP/1.1\r\n\r\n").unwrap()).is_none());
    }

    #[test]
    fn headers_named_in_connection_are_hop_by_hop_but_framing_stays() {
        let head = b"GET http://a.test/ HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings, transfer-encoding\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAQAAAAIAAAAA\r\nProxy-Connection: x-private\r\nX-Private: 1\r\nTransfer-Encoding: chunked\r\nAccept: */*\r\n\r\n";
        let out = String::from_utf8(origin_request(&parse_head(head).unwrap()).unwrap()).unwrap();
        assert_eq!(
            out,
            "GET / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn refuses_what_it_cannot_proxy() {
        let https = parse_head(b"GET https://a.test/ HTTP/1.1\r\n\r\n").unwrap_err();
        assert!(https.contains("CONNECT"), "{https}");
        for bad in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"GET ftp://a.test/ HTTP/1.1\r\n\r\n",
            b"GET http://user:pw@a.test/ HTTP/1.1\r\n\r\n",
            b"GET http:///x HTTP/1.1\r\n\r\n",
            b"GET http://a.test/ HTTP/1.1\r\n folded\r\n\r\n",
            b"GET http://a.test/ HTTP/1.1\r\nNoColon\r\n\r\n",
            b"GET http://a.test/ HTTP/1.1\r\n: empty\r\n\r\n",
            b"GET http://a.test/ HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"GET http://a.test/ HTTP/1.1\r\nX: a\x00b\r\n\r\n",
            b"G(T http://a.test/ HTTP/1.1\r\n\r\n",
            b"GET http://a.test/\xff HTTP/1.1\r\n\r\n",
            b"\r\n\r\n",
        ] {
            assert!(
                parse_head(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn responses_are_complete() {
        let r = String::from_utf8(response(
            403,
            "Forbidden",
            &[("X-Dsh-Sandbox", "network-denied")],
            "no\n",
        ))
        .unwrap();
        assert_eq!(
            r,
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\nX-Dsh-Sandbox: network-denied\r\nConnection: close\r\n\r\nno\n"
        );
    }

    proptest! {
        #[test]
        fn the_head_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512), from in 0usize..600) {
            let _ = head_end(&bytes, from);
            if let Ok(r) = parse_head(&bytes) {
                let _ = origin_request(&r);
            }
        }

        #[test]
        fn the_head_parser_never_panics_on_near_requests(
            method in "(GET|CONNECT|[A-Z]{1,3})",
            target in "(http://|https://|\\[)?[a-z0-9.:\\[\\]@/?#%-]{0,30}",
            tail in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut head = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
            head.extend_from_slice(&tail);
            head.extend_from_slice(b"\r\n\r\n");
            if let Ok(r) = parse_head(&head) {
                let _ = origin_request(&r);
            }
        }
    }
}
