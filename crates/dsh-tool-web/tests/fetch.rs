//! `web_fetch` against loopback servers started here: redirects, limits,
//! time, content types, and the SSRF and network rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{call, Reply, Server};
use dsh_netproxy::{Allowlist, StaticResolver};
use dsh_protocol::ErrorCode;
use dsh_tool_web::{FetchConfig, NetworkAccess, WebFetcher};
use dsh_tools::ToolRegistry;
use serde_json::json;

const PAGE: &str = "<html><head><title>Docs</title></head><body><h1>Guide</h1><p>Read <a href=\"/next\">next</a>.</p></body></html>";

/// A site: `/r/N` redirects to `/r/N-1` (relative), `/r/0` is the page,
/// `/to?u=URL` redirects to URL, `/json`, `/png`, `/404`, `/slow` (5 s),
/// `/huge` (1 GiB streamed).
async fn site() -> Server {
    Server::start(|req| {
        let path = req.path().to_string();
        if let Some(n) = path.strip_prefix("/r/") {
            let n: u32 = n.parse().unwrap();
            return if n == 0 {
                Reply::ok("text/html; charset=utf-8", PAGE)
            } else {
                Reply::redirect(&format!("/r/{}", n - 1))
            };
        }
        match path.as_str() {
            "/to" => Reply::redirect(&req.query()["u"]),
            "/json" => Reply::ok("application/json", r#"{"a": [1, 2]}"#),
            "/text" => Reply::ok("text/plain", "just text\n"),
            "/untyped" => Reply::Full {
                status: 200,
                headers: vec![],
                body: b"<p>sniffed <b>html</b></p>".to_vec(),
            },
            "/png" => Reply::ok("image/png", b"\x89PNG\r\n\x1a\n".to_vec()),
            "/slow" => Reply::Delay(
                Duration::from_secs(5),
                Box::new(Reply::ok("text/plain", "late")),
            ),
            "/huge" => Reply::Stream {
                content_type: "text/plain".into(),
                total: 1 << 30,
            },
            _ => Reply::status(404, "no such page"),
        }
    })
    .await
}

/// The default configuration, with `server`'s exact address exempt from the
/// private-address rule (so it can be fetched by IP literal) and nothing
/// else.
fn exempting(server: &Server) -> FetchConfig {
    FetchConfig {
        exempt: vec![server.addr],
        ..FetchConfig::default()
    }
}

async fn fetch_err(cfg: FetchConfig, url: &str) -> dsh_tools::ToolError {
    WebFetcher::new(cfg).unwrap().fetch(url).await.unwrap_err()
}

#[tokio::test]
async fn ten_redirects_are_followed_and_the_eleventh_is_refused() {
    let s = site().await;
    let f = WebFetcher::new(exempting(&s)).unwrap();
    let page = f.fetch(&s.url("/r/10")).await.unwrap();
    assert_eq!(page.url, s.url("/r/0"));
    assert_eq!(page.redirects.len(), 10);
    assert!(page.text.contains("# Guide"), "{}", page.text);
    assert!(page.text.contains("[next](/next)"), "{}", page.text);
    let e = f.fetch(&s.url("/r/11")).await.unwrap_err();
    assert_eq!(e.code(), "WEB_FETCH_FAILED");
    assert!(e.message().contains("more than 10"), "{}", e.message());
    // 11 + 12 requests: the 12th hop of /r/11 was never requested.
    assert_eq!(s.hits(), 11 + 11);
}

#[tokio::test]
async fn the_tool_echoes_the_prompt_and_names_the_redirects() {
    let s = site().await;
    let registry = ToolRegistry::new();
    let _reg = dsh_tool_web::install(&registry, Some(exempting(&s)), None).unwrap();
    let r = call(
        &registry,
        "web_fetch",
        json!({"url": s.url("/r/2"), "prompt": "what does the guide say?"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    let text = r.text();
    assert!(text.starts_with(&format!(
        "URL: {}\nRedirected from: {} (2 redirects)\nContent-Type: text/html; charset=utf-8\nAsked: what does the guide say?\n\n# Guide",
        s.url("/r/0"),
        s.url("/r/2")
    )), "{text}");
    // The schema is what the model sees.
    let schema = &registry.schemas()[0];
    assert_eq!(schema.name, "web_fetch");
    assert_eq!(schema.parameters["required"], json!(["url"]));
    let bad = call(&registry, "web_fetch", json!({"url": 3})).await;
    assert_eq!(bad.code(), Some("INVALID_ARGS"));
}

#[tokio::test]
async fn text_json_and_untyped_html_are_read_and_other_types_refused() {
    let s = site().await;
    let f = WebFetcher::new(exempting(&s)).unwrap();
    assert_eq!(
        f.fetch(&s.url("/json")).await.unwrap().text,
        r#"{"a": [1, 2]}"#
    );
    assert_eq!(f.fetch(&s.url("/text")).await.unwrap().text, "just text\n");
    assert_eq!(
        f.fetch(&s.url("/untyped")).await.unwrap().text,
        "sniffed **html**"
    );
    let e = f.fetch(&s.url("/png")).await.unwrap_err();
    assert_eq!(e.code(), "WEB_UNSUPPORTED_CONTENT");
    assert!(e.message().contains("image/png"), "{}", e.message());
    let e = f.fetch(&s.url("/missing")).await.unwrap_err();
    assert_eq!(e.code(), "WEB_FETCH_FAILED");
    assert!(e.message().contains("404 Not Found"), "{}", e.message());
}

#[tokio::test]
async fn a_slow_page_times_out_within_the_limit() {
    let s = site().await;
    let cfg = FetchConfig {
        timeout: Duration::from_millis(300),
        ..exempting(&s)
    };
    let started = Instant::now();
    let e = fetch_err(cfg, &s.url("/slow")).await;
    assert_eq!(e.code(), "WEB_TIMEOUT");
    assert!(e.message().contains("0.3 s"), "{}", e.message());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_one_gib_page_is_cut_at_five_mib_without_downloading_the_rest() {
    let s = site().await;
    let f = WebFetcher::new(exempting(&s)).unwrap();
    let page = f.fetch(&s.url("/huge")).await.unwrap();
    assert!(page.cut);
    assert_eq!(page.bytes, 5 << 20);
    assert_eq!(page.text.len(), 5 << 20);
    let text = dsh_tool_web::render_page(&page, None, dsh_tool_web::MAX_OUTPUT_BYTES);
    assert!(
        text.contains("Note: the page is larger than 5 MiB"),
        "{}",
        &text[..300]
    );
    assert!(text.len() < dsh_tool_web::MAX_OUTPUT_BYTES + 200);
    assert!(
        text.ends_with("only the first 1048286 are shown)")
            || text.contains("(cut: the page's text is 5242880 bytes")
    );
    // The server stops once the client has gone: far less than 1 GiB was
    // ever written (socket buffers hold a few MiB at most).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let written = s.streamed.load(Ordering::Relaxed);
    assert!(written < 64 << 20, "the server wrote {written} bytes");
}

#[tokio::test]
async fn a_redirect_to_loopback_is_refused_before_connecting() {
    let s = site().await;
    let other = site().await; // loopback, not exempt
    let f = WebFetcher::new(exempting(&s)).unwrap();
    for target in [
        other.url("/text"),
        format!("http://localhost:{}/text", other.addr.port()),
        format!("http://[::ffff:127.0.0.1]:{}/text", other.addr.port()),
        format!("http://2130706433:{}/text", other.addr.port()),
    ] {
        let url = format!(
            "{}?u={}",
            s.url("/to"),
            target.replace(':', "%3A").replace('/', "%2F")
        );
        let e = f.fetch(&url).await.unwrap_err();
        assert_eq!(e.code(), "WEB_BLOCKED", "{target}: {}", e.message());
        assert!(e.message().contains("loopback"), "{}", e.message());
    }
    assert_eq!(other.hits(), 0, "the loopback server was reached");
}

#[tokio::test]
async fn a_name_resolving_to_a_private_address_is_refused_and_a_listed_one_reached() {
    let s = site().await;
    let resolver = StaticResolver::new()
        .with("public.test", [IpAddr::from([127, 0, 0, 1])])
        .with("metadata.test", [IpAddr::from([169, 254, 169, 254])]);
    let cfg = FetchConfig {
        resolver: Arc::new(resolver.clone()),
        ..FetchConfig::default()
    };
    for name in ["public.test", "metadata.test"] {
        let e = fetch_err(
            cfg.clone(),
            &format!("http://{name}:{}/text", s.addr.port()),
        )
        .await;
        assert_eq!(e.code(), "WEB_BLOCKED", "{}", e.message());
        assert!(e.message().contains(name), "{}", e.message());
    }
    assert_eq!(s.hits(), 0);
    // A [sandbox] network list admits the names it lists, and the
    // addresses it lists (as the sandbox's proxy does); nothing else.
    let listed = FetchConfig {
        network: NetworkAccess::Hosts(Allowlist::parse(&["public.test", "127.0.0.1"]).unwrap()),
        ..cfg.clone()
    };
    let f = WebFetcher::new(listed).unwrap();
    let ok = f
        .fetch(&format!("http://public.test:{}/text", s.addr.port()))
        .await
        .unwrap();
    assert_eq!(ok.text, "just text\n");
    let e = f
        .fetch(&format!("http://metadata.test:{}/text", s.addr.port()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "WEB_BLOCKED");
    assert!(
        e.message()
            .contains("not in the hosts [sandbox] network allows (public.test, 127.0.0.1)"),
        "{}",
        e.message()
    );
    // A listed site redirecting to an unlisted host is refused at that hop.
    let hop = format!(
        "http://public.test:{}/to?u=http%3A%2F%2Fexample.org%2F",
        s.addr.port()
    );
    let e = f.fetch(&hop).await.unwrap_err();
    assert_eq!(e.code(), "WEB_BLOCKED");
    assert!(e.message().contains("example.org"), "{}", e.message());
}

#[tokio::test]
async fn metadata_credentials_schemes_and_network_off_are_refused_at_once() {
    let started = Instant::now();
    for (url, words) in [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fd00::1]/", "unique-local"),
        ("http://10.0.0.1/", "private"),
        ("http://user:pw@example.org/", "credentials"),
        ("http://user@example.org/", "credentials"),
        ("ftp://example.org/file", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
    ] {
        let e = fetch_err(FetchConfig::default(), url).await;
        assert_eq!(e.code(), "WEB_BLOCKED", "{url}");
        assert!(e.message().contains(words), "{url}: {}", e.message());
    }
    // No connection was attempted: a connect to 169.254.169.254 or 10.0.0.1
    // from here would hang or fail slowly.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let off = FetchConfig {
        network: NetworkAccess::Off,
        ..FetchConfig::default()
    };
    let e = fetch_err(off, "https://example.org/").await;
    assert_eq!(e.code(), "WEB_BLOCKED");
    assert!(
        e.message()
            .contains("network access is off in [sandbox] network"),
        "{}",
        e.message()
    );
    let e = fetch_err(FetchConfig::default(), "not a url").await;
    assert_eq!(e.code(), "INVALID_ARGS");
}

#[tokio::test]
async fn allow_private_reaches_loopback() {
    let s = site().await;
    let cfg = FetchConfig {
        allow_private: true,
        ..FetchConfig::default()
    };
    let page = WebFetcher::new(cfg)
        .unwrap()
        .fetch(&format!("http://localhost:{}/r/1", s.addr.port()))
        .await
        .unwrap();
    assert!(page.text.contains("# Guide"));
}

#[tokio::test]
async fn a_cancelled_call_is_aborted() {
    let s = site().await;
    let registry = ToolRegistry::new();
    let _reg = dsh_tool_web::install(&registry, Some(exempting(&s)), None).unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let env = dsh_tools::CallEnv {
        cancel: token.clone(),
        ..Default::default()
    };
    let call =
        dsh_tools::ToolCall::new("c", "web_fetch", json!({"url": s.url("/slow")}).to_string());
    let pending = registry.execute(&call, env);
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    };
    let (r, ()) = tokio::join!(pending, canceller);
    assert_eq!(r.code(), Some("ABORTED"), "{}", r.text());
}
