//! Cost of the network-by-domain proxy: `curl -s -o /dev/null` of a 10 MB
//! body from a loopback HTTP server, through a `dsh_netproxy::Proxy`
//! (served on a host-namespace 127.0.0.1 listener, 127.0.0.1 listed) versus
//! direct. Prints the ratio proxied / direct of the medians of interleaved
//! single runs (robust to load drifting between criterion runs), then runs a
//! criterion group of both.
//!
//! A module of the `sandbox` bench: `proxy::proxy(c)`.

// A benchmark panics on a broken set-up; that is its failure report. The
// entry point is `pub` for the bench root that includes this file with
// `#[path]`, where nothing outside the crate can see it.
#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use dsh_netproxy::{Allowlist, Proxy, SystemResolver};

/// The body size fetched.
const BODY: usize = 10 * 1024 * 1024;
/// Interleaved single runs per side for the median ratio.
const INTERLEAVED: usize = 30;

/// A loopback HTTP/1 server on plain threads: every request gets the
/// [`BODY`]-byte body, then the connection closes.
fn upstream() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the upstream");
    let addr = listener.local_addr().expect("upstream address");
    let mut response =
        format!("HTTP/1.1 200 OK\r\nContent-Length: {BODY}\r\nConnection: close\r\n\r\n")
            .into_bytes();
    response.extend((0..BODY).map(|i| (i % 251) as u8));
    let response = Arc::new(response);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let response = Arc::clone(&response);
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut chunk = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&chunk[..n]),
                    }
                }
                // The client may hang up early; nothing to report in a bench.
                let _ = stream.write_all(&response);
            });
        }
    });
    addr
}

/// One `curl -s -o /dev/null` of `url`, through `proxy` if given; returns
/// the wall time and `<http code> <bytes downloaded>`.
fn fetch(url: &str, proxy: Option<SocketAddr>) -> (Duration, String) {
    let mut cmd = Command::new("curl");
    cmd.args([
        "-q",
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{size_download}",
    ]);
    match proxy {
        Some(p) => cmd.args(["-x", &format!("http://{p}")]),
        None => cmd.args(["--noproxy", "*"]),
    };
    cmd.arg(url);
    for var in [
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
    ] {
        cmd.env_remove(var);
    }
    let start = Instant::now();
    let out = cmd
        .output()
        .expect("the proxy bench runs curl: install curl");
    let took = start.elapsed();
    (took, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The proxy bench: median ratio to stderr, then the criterion group
/// `sandbox_proxy_curl_10mb` (`direct`, `proxied`).
pub fn proxy(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let up = upstream();
    let allow = Allowlist::parse(&["127.0.0.1"]).expect("allowlist");
    let proxy = Proxy::new(allow, Arc::new(SystemResolver));
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy");
    let served = {
        let _runtime = rt.enter();
        proxy.serve(listener).expect("serve the proxy")
    };
    let via = Some(served.local_addr().expect("proxy address"));
    let url = format!("http://127.0.0.1:{}/", up.port());

    // Both sides fetch the whole body, and the proxied side really goes
    // through the proxy: it refuses an unlisted host.
    let whole = format!("200 {BODY}");
    assert_eq!(fetch(&url, None).1, whole);
    assert_eq!(fetch(&url, via).1, whole);
    let denied = format!("http://denied.invalid:{}/", up.port());
    assert!(fetch(&denied, via).1.starts_with("403 "));
    assert_eq!(served.denials().len(), 1);

    let mut direct = Vec::with_capacity(INTERLEAVED);
    let mut proxied = Vec::with_capacity(INTERLEAVED);
    for _ in 0..INTERLEAVED {
        direct.push(fetch(&url, None).0);
        proxied.push(fetch(&url, via).0);
    }
    let (d, p) = (median(direct), median(proxied));
    eprintln!(
        "proxied/direct median ratio: {:.2} (proxied {p:?}, direct {d:?}; {} MB body, {INTERLEAVED} interleaved runs each)",
        p.as_secs_f64() / d.as_secs_f64(),
        BODY / (1024 * 1024)
    );

    let mut g = c.benchmark_group("sandbox_proxy_curl_10mb");
    g.sample_size(10);
    g.bench_function("direct", |b| b.iter(|| fetch(&url, None)));
    g.bench_function("proxied", |b| b.iter(|| fetch(&url, via)));
    g.finish();
    drop(served);
}
