//! `web_search` against a fake API per provider started here: the request
//! each provider gets, the parsing of its answer, the domain filters, and
//! the failures (missing key, timeout, rejected key, network off).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{call, Reply, Server};
use dsh_protocol::ErrorCode;
use dsh_tool_web::{NetworkAccess, SearchConfig, SearchProvider, WebSearcher};
use dsh_tools::ToolRegistry;
use serde_json::{json, Value};

fn answer(provider: SearchProvider) -> Value {
    let hits = json!([
        {"title": "Tokio <b>docs</b>", "url": "https://docs.rs/tokio", "snippet": "A runtime"},
        {"title": "Tokio site", "url": "https://tokio.rs/", "snippet": "Async Rust"},
        {"title": "Spam", "url": "https://spam.docs.rs/x", "snippet": "buy"},
    ]);
    let items: Vec<Value> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let (t, u, s) = (&h["title"], &h["url"], &h["snippet"]);
            match provider {
                SearchProvider::Brave => json!({"title": t, "url": u, "description": s}),
                SearchProvider::Tavily | SearchProvider::Searxng => {
                    json!({"title": t, "url": u, "content": s, "score": 0.5})
                }
                SearchProvider::Exa => json!({"title": t, "url": u, "highlights": [s], "id": u}),
            }
        })
        .collect();
    match provider {
        SearchProvider::Brave => json!({"type": "search", "web": {"results": items}}),
        _ => json!({"results": items}),
    }
}

async fn fake(provider: SearchProvider) -> Server {
    let body = answer(provider).to_string();
    Server::start(move |_| Reply::ok("application/json", body.clone())).await
}

fn config(provider: SearchProvider, server: &Server) -> SearchConfig {
    SearchConfig {
        api_key: provider.default_key_env().map(|_| "k-123".to_string()),
        url: Some(format!("http://{}/base/", server.addr)),
        ..SearchConfig::new(provider)
    }
}

#[tokio::test]
async fn every_provider_gets_its_request_shape_and_its_answer_is_parsed() {
    for provider in SearchProvider::ALL {
        let s = fake(provider).await;
        let registry = ToolRegistry::new();
        let _reg = dsh_tool_web::install(&registry, None, Some(config(provider, &s))).unwrap();
        let r = call(
            &registry,
            "web_search",
            json!({"query": "tokio runtime", "allowed_domains": ["docs.rs", "tokio.rs"], "blocked_domains": ["spam.docs.rs"]}),
        )
        .await;
        assert!(!r.is_error, "{provider}: {}", r.text());
        assert_eq!(
            r.text(),
            format!(
                "Results for \"tokio runtime\" ({provider}, 2 results):\n\n\
                 1. Tokio docs\n   https://docs.rs/tokio\n   A runtime\n\n\
                 2. Tokio site\n   https://tokio.rs/\n   Async Rust\n\n\
                 (1 result outside the domain filters left out)"
            )
        );
        let reqs = s.requests();
        assert_eq!(reqs.len(), 1);
        let req = &reqs[0];
        assert_eq!(req.headers["accept"], "application/json", "{provider}");
        match provider {
            SearchProvider::Brave => {
                assert_eq!(
                    (req.method.as_str(), req.path()),
                    ("GET", "/base/res/v1/web/search")
                );
                let q = req.query();
                assert_eq!(q["q"], "tokio runtime -site:spam.docs.rs");
                assert_eq!(q["count"], "10");
                assert_eq!(req.headers["x-subscription-token"], "k-123");
            }
            SearchProvider::Searxng => {
                assert_eq!((req.method.as_str(), req.path()), ("GET", "/base/search"));
                let q = req.query();
                assert_eq!(q["q"], "tokio runtime -site:spam.docs.rs");
                assert_eq!(q["format"], "json");
                assert!(!req.headers.contains_key("authorization"));
            }
            SearchProvider::Tavily => {
                assert_eq!((req.method.as_str(), req.path()), ("POST", "/base/search"));
                assert_eq!(req.headers["authorization"], "Bearer k-123");
                assert_eq!(
                    req.json(),
                    json!({"query": "tokio runtime", "max_results": 10,
                           "include_domains": ["docs.rs", "tokio.rs"],
                           "exclude_domains": ["spam.docs.rs"]})
                );
            }
            SearchProvider::Exa => {
                assert_eq!((req.method.as_str(), req.path()), ("POST", "/base/search"));
                assert_eq!(req.headers["x-api-key"], "k-123");
                let body = req.json();
                assert_eq!(body["query"], "tokio runtime");
                assert_eq!(body["numResults"], 10);
                assert_eq!(body["includeDomains"], json!(["docs.rs", "tokio.rs"]));
                assert_eq!(body["excludeDomains"], json!(["spam.docs.rs"]));
            }
        }
    }
}

#[tokio::test]
async fn a_missing_key_names_its_variable_and_sends_nothing() {
    let s = fake(SearchProvider::Brave).await;
    let cfg = SearchConfig {
        api_key: None,
        ..config(SearchProvider::Brave, &s)
    };
    let e = WebSearcher::new(cfg)
        .unwrap()
        .search("q", &[], &[])
        .await
        .unwrap_err();
    assert_eq!(e.code(), "WEB_SEARCH_KEY_MISSING");
    assert!(e.message().contains("BRAVE_API_KEY"), "{}", e.message());
    let cfg = SearchConfig {
        api_key: None,
        api_key_env: Some("MY_EXA".into()),
        ..config(SearchProvider::Exa, &s)
    };
    let e = WebSearcher::new(cfg)
        .unwrap()
        .search("q", &[], &[])
        .await
        .unwrap_err();
    assert!(e.message().contains("MY_EXA"), "{}", e.message());
    assert_eq!(s.hits(), 0);
}

#[tokio::test]
async fn a_search_api_that_does_not_answer_times_out() {
    let s = Server::start(|_| {
        Reply::Delay(
            Duration::from_secs(10),
            Box::new(Reply::ok("application/json", "{}")),
        )
    })
    .await;
    let cfg = SearchConfig {
        timeout: Duration::from_millis(300),
        ..config(SearchProvider::Tavily, &s)
    };
    let started = Instant::now();
    let e = WebSearcher::new(cfg)
        .unwrap()
        .search("q", &[], &[])
        .await
        .unwrap_err();
    assert_eq!(e.code(), "WEB_TIMEOUT");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn rejected_keys_rate_limits_and_garbage_are_search_failures() {
    for (reply, words) in [
        (
            Reply::status(401, "bad token"),
            "refused the API key from TAVILY_API_KEY (HTTP 401)",
        ),
        (Reply::status(429, "slow down"), "rate-limited"),
        (Reply::status(500, "boom"), "HTTP 500: boom"),
        (
            Reply::ok("text/html", "<html>not json</html>"),
            "not its JSON search format",
        ),
    ] {
        let reply = Arc::new(std::sync::Mutex::new(Some(reply)));
        let s = Server::start(move |_| reply.lock().unwrap().take().unwrap()).await;
        let e = WebSearcher::new(config(SearchProvider::Tavily, &s))
            .unwrap()
            .search("q", &[], &[])
            .await
            .unwrap_err();
        assert_eq!(e.code(), "WEB_SEARCH_FAILED", "{}", e.message());
        assert!(e.message().contains(words), "{}", e.message());
        assert!(
            !e.message().contains("k-123"),
            "the key leaked: {}",
            e.message()
        );
    }
}

#[tokio::test]
async fn network_off_refuses_and_searxng_needs_a_url() {
    let s = fake(SearchProvider::Searxng).await;
    let cfg = SearchConfig {
        network: NetworkAccess::Off,
        ..config(SearchProvider::Searxng, &s)
    };
    let e = WebSearcher::new(cfg)
        .unwrap()
        .search("q", &[], &[])
        .await
        .unwrap_err();
    assert_eq!(e.code(), "WEB_BLOCKED");
    assert_eq!(s.hits(), 0);
    let e = WebSearcher::new(SearchConfig::new(SearchProvider::Searxng)).unwrap_err();
    assert_eq!(e.code(), "INVALID_CONFIG");
    assert!(
        e.message().contains("[web.search] url is required"),
        "{}",
        e.message()
    );
    let e = WebSearcher::new(SearchConfig {
        url: Some("ftp://x".into()),
        ..SearchConfig::new(SearchProvider::Brave)
    })
    .unwrap_err();
    assert_eq!(e.code(), "INVALID_CONFIG");
}

/// Without a configured `url`, the provider's public host is checked like a
/// fetch: a DNS answer pointing it at loopback is refused.
#[tokio::test]
async fn the_default_endpoint_is_subject_to_the_private_address_rule() {
    let resolver = dsh_netproxy::StaticResolver::new()
        .with("api.search.brave.com", [IpAddr::from([127, 0, 0, 1])]);
    let cfg = SearchConfig {
        api_key: Some("k".into()),
        resolver: Arc::new(resolver),
        ..SearchConfig::new(SearchProvider::Brave)
    };
    let e = WebSearcher::new(cfg)
        .unwrap()
        .search("q", &[], &[])
        .await
        .unwrap_err();
    assert_eq!(e.code(), "WEB_BLOCKED", "{}", e.message());
}

#[tokio::test]
async fn bad_domains_are_invalid_args() {
    let s = fake(SearchProvider::Exa).await;
    let registry = ToolRegistry::new();
    let _reg =
        dsh_tool_web::install(&registry, None, Some(config(SearchProvider::Exa, &s))).unwrap();
    let r = call(
        &registry,
        "web_search",
        json!({"query": "q", "allowed_domains": ["not a domain"]}),
    )
    .await;
    assert_eq!(r.code(), Some("INVALID_ARGS"), "{}", r.text());
    assert_eq!(s.hits(), 0);
}
