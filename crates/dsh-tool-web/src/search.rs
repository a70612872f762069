//! `web_search`: one query to the configured provider (Brave, Tavily,
//! SearXNG or Exa), its answer parsed into title, URL and snippet, the
//! domain filters applied (sent to the API where it has them, and always
//! again on the results).

use std::sync::Arc;
use std::time::Duration;

use dsh_protocol::codes;
use dsh_tools::ToolError;
use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, USER_AGENT};
use reqwest::Url;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::guard::{find_blocked, Guard, GuardedResolver, NetworkAccess, NETWORK_OFF};
use crate::{error_chain, markdown};

/// Default of [`SearchConfig::timeout`]: 15 s.
pub const SEARCH_TIMEOUT: Duration = Duration::from_secs(15);

/// Results asked for and shown at most.
pub const MAX_RESULTS: usize = 10;

/// The largest provider answer read, in bytes.
pub const MAX_SEARCH_RESPONSE_BYTES: usize = 4 << 20;

/// Longest snippet shown, in characters (then `…`).
const MAX_SNIPPET_CHARS: usize = 400;

/// Longest title shown, in characters (then `…`).
const MAX_TITLE_CHARS: usize = 200;

/// `[web.search] provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchProvider {
    /// Brave Search API: `GET {url}/res/v1/web/search?q=…&count=10`, key in
    /// `X-Subscription-Token`.
    Brave,
    /// Tavily: `POST {url}/search` with a JSON body, key as a bearer token;
    /// takes `include_domains`/`exclude_domains`.
    Tavily,
    /// A SearXNG instance: `GET {url}/search?q=…&format=json`, no key (the
    /// instance must enable the JSON format).
    Searxng,
    /// Exa: `POST {url}/search` with a JSON body, key in `x-api-key`; takes
    /// `includeDomains`/`excludeDomains`.
    Exa,
}

impl SearchProvider {
    /// Every provider, in documentation order.
    pub const ALL: [SearchProvider; 4] = [
        SearchProvider::Brave,
        SearchProvider::Tavily,
        SearchProvider::Searxng,
        SearchProvider::Exa,
    ];

    /// The name as written in `dsh.toml`.
    pub fn name(self) -> &'static str {
        match self {
            SearchProvider::Brave => "brave",
            SearchProvider::Tavily => "tavily",
            SearchProvider::Searxng => "searxng",
            SearchProvider::Exa => "exa",
        }
    }

    /// The environment variable holding the key unless `api_key_env` names
    /// another; `None` for SearXNG, which needs none.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            SearchProvider::Brave => Some("BRAVE_API_KEY"),
            SearchProvider::Tavily => Some("TAVILY_API_KEY"),
            SearchProvider::Exa => Some("EXA_API_KEY"),
            SearchProvider::Searxng => None,
        }
    }

    /// The base URL unless `url` names another; `None` for SearXNG, whose
    /// `url` is required.
    pub fn default_url(self) -> Option<&'static str> {
        match self {
            SearchProvider::Brave => Some("https://api.search.brave.com"),
            SearchProvider::Tavily => Some("https://api.tavily.com"),
            SearchProvider::Exa => Some("https://api.exa.ai"),
            SearchProvider::Searxng => None,
        }
    }
}

impl std::fmt::Display for SearchProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How `web_search` reaches its provider.
#[derive(Clone)]
pub struct SearchConfig {
    /// The provider.
    pub provider: SearchProvider,
    /// The key (read from [`SearchConfig::api_key_env`] by whoever builds
    /// this); `None` when the variable is unset or empty.
    pub api_key: Option<String>,
    /// The variable the key comes from, for messages (`None`: the
    /// provider needs no key).
    pub api_key_env: Option<String>,
    /// `[web.search] url`: the base URL the user configured. Requests to it
    /// are not subject to the private-address rule (the user chose it: a
    /// SearXNG on the LAN works); without it the provider's public default
    /// is used and its addresses are checked like `web_fetch`'s.
    pub url: Option<String>,
    /// The whole call.
    pub timeout: Duration,
    /// `[sandbox] network = false` refuses every search; a host list does
    /// not apply to the configured provider.
    pub network: NetworkAccess,
    /// Resolves the default provider's host (checked addresses only).
    pub resolver: Arc<dyn dsh_netproxy::Resolve>,
}

impl SearchConfig {
    /// `provider` with its default key variable (and no key yet), its
    /// default URL, [`SEARCH_TIMEOUT`], open network, the system resolver.
    pub fn new(provider: SearchProvider) -> Self {
        SearchConfig {
            provider,
            api_key: None,
            api_key_env: provider.default_key_env().map(str::to_string),
            url: None,
            timeout: SEARCH_TIMEOUT,
            network: NetworkAccess::Open,
            resolver: Arc::new(dsh_netproxy::SystemResolver),
        }
    }

    /// The base URL requests go to: [`SearchConfig::url`], else the
    /// provider's default.
    ///
    /// # Errors
    /// A message naming `[web.search] url` when it is missing (SearXNG),
    /// does not parse, or is not http/https.
    pub fn base_url(&self) -> Result<Url, String> {
        let text = match (&self.url, self.provider.default_url()) {
            (Some(u), _) => u.as_str(),
            (None, Some(d)) => d,
            (None, None) => {
                return Err(format!(
                    "[web.search] url is required for provider = \"{}\": the base URL of the instance, e.g. \"http://127.0.0.1:8888\"",
                    self.provider
                ))
            }
        };
        let url = Url::parse(text)
            .map_err(|e| format!("[web.search] url = {text:?} is not a valid URL ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "[web.search] url = {text:?} must be an http or https URL with a host"
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "[web.search] url must not hold credentials; the key comes from {}",
                self.api_key_env.as_deref().unwrap_or("api_key_env")
            ));
        }
        Ok(url)
    }
}

impl std::fmt::Debug for SearchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchConfig")
            .field("provider", &self.provider)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("api_key_env", &self.api_key_env)
            .field("url", &self.url)
            .field("timeout", &self.timeout)
            .field("network", &self.network)
            .finish_non_exhaustive()
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The page title (tags stripped, whitespace collapsed).
    pub title: String,
    /// The page URL.
    pub url: String,
    /// The provider's excerpt (tags stripped, whitespace collapsed).
    pub snippet: String,
}

/// The searcher behind the `web_search` tool. Cheap to clone.
#[derive(Clone)]
pub struct WebSearcher {
    client: reqwest::Client,
    base: Url,
    config: Arc<SearchConfig>,
}

impl std::fmt::Debug for WebSearcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSearcher")
            .field("base", &self.base.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl WebSearcher {
    /// A searcher for `config`.
    ///
    /// # Errors
    /// `INVALID_CONFIG` for an unusable base URL ([`SearchConfig::base_url`]);
    /// `WEB_SEARCH_FAILED` when the HTTP client cannot be built.
    pub fn new(config: SearchConfig) -> Result<Self, ToolError> {
        let base = config
            .base_url()
            .map_err(|m| ToolError::new(codes::INVALID_CONFIG, m))?;
        let mut builder = crate::client_builder();
        if config.url.is_none() {
            // The public default: its addresses are checked like a fetch's.
            builder = builder.dns_resolver(GuardedResolver {
                inner: config.resolver.clone(),
                guard: Arc::new(Guard {
                    allow_private: false,
                    network: NetworkAccess::Open,
                    exempt: Vec::new(),
                }),
            });
        }
        let client = builder.build().map_err(|e| {
            ToolError::new(
                codes::WEB_SEARCH_FAILED,
                format!("cannot build the HTTP client: {}", error_chain(&e)),
            )
        })?;
        Ok(WebSearcher {
            client,
            base,
            config: Arc::new(config),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// Runs `query`; returns at most [`MAX_RESULTS`] hits, those outside
    /// `allowed` (when not empty) or inside `blocked` dropped, and how many
    /// were dropped.
    ///
    /// # Errors
    /// `INVALID_ARGS` for a domain that is not a host name; `WEB_BLOCKED`
    /// when `[sandbox] network = false` (or the default provider's host
    /// resolves to a non-public address); `WEB_SEARCH_KEY_MISSING` naming
    /// the variable when the provider needs a key and there is none;
    /// `WEB_TIMEOUT` after [`SearchConfig::timeout`]; `WEB_SEARCH_FAILED`
    /// for a connection failure, an error status (a rejected key, a rate
    /// limit) or an answer that is not the provider's JSON.
    pub async fn search(
        &self,
        query: &str,
        allowed: &[String],
        blocked: &[String],
    ) -> Result<(Vec<SearchHit>, usize), ToolError> {
        let allowed = domains("allowed_domains", allowed)?;
        let blocked = domains("blocked_domains", blocked)?;
        if self.config.network == NetworkAccess::Off {
            return Err(ToolError::new(codes::WEB_BLOCKED, NETWORK_OFF));
        }
        let key = match (&self.config.api_key_env, &self.config.api_key) {
            (_, Some(k)) if !k.is_empty() => Some(k.clone()),
            (Some(var), _) => {
                return Err(ToolError::new(
                    codes::WEB_SEARCH_KEY_MISSING,
                    format!(
                        "web_search with provider {} needs an API key: the environment variable {var} is not set; ask the user to set it (or to name another variable with [web.search] api_key_env)",
                        self.config.provider
                    ),
                ))
            }
            (None, _) => None,
        };
        let request = self.request(query, key.as_deref(), &allowed, &blocked);
        let limit = self.config.timeout;
        let body = match tokio::time::timeout(limit, self.send(request)).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(ToolError::new(
                    codes::WEB_TIMEOUT,
                    format!(
                        "the search provider {} ({}) did not answer within {} s; try again later",
                        self.config.provider,
                        self.base,
                        limit.as_secs_f64()
                    ),
                ))
            }
        };
        let hits = parse(self.config.provider, &body).map_err(|e| {
            ToolError::new(
                codes::WEB_SEARCH_FAILED,
                format!(
                    "the answer of {} is not its JSON search format: {e}",
                    self.config.provider
                ),
            )
        })?;
        let before = hits.len();
        let kept: Vec<SearchHit> = hits
            .into_iter()
            .filter(|h| keep(&h.url, &allowed, &blocked))
            .collect();
        let dropped = before - kept.len();
        Ok((kept.into_iter().take(MAX_RESULTS).collect(), dropped))
    }

    /// The provider's request for `query`.
    fn request(
        &self,
        query: &str,
        key: Option<&str>,
        allowed: &[String],
        blocked: &[String],
    ) -> reqwest::RequestBuilder {
        let endpoint = |path: &str| {
            let mut url = self.base.clone();
            let joined = format!("{}{path}", url.path().trim_end_matches('/'));
            url.set_path(&joined);
            url
        };
        let client = &self.client;
        let builder = match self.config.provider {
            SearchProvider::Brave => {
                let mut url = endpoint("/res/v1/web/search");
                url.query_pairs_mut()
                    .append_pair("q", &with_site_operators(query, allowed, blocked))
                    .append_pair("count", &MAX_RESULTS.to_string());
                client
                    .get(url)
                    .header("X-Subscription-Token", key.unwrap_or_default())
            }
            SearchProvider::Searxng => {
                let mut url = endpoint("/search");
                url.query_pairs_mut()
                    .append_pair("q", &with_site_operators(query, allowed, blocked))
                    .append_pair("format", "json");
                client.get(url)
            }
            SearchProvider::Tavily => {
                let mut body = json!({"query": query, "max_results": MAX_RESULTS});
                if !allowed.is_empty() {
                    body["include_domains"] = json!(allowed);
                }
                if !blocked.is_empty() {
                    body["exclude_domains"] = json!(blocked);
                }
                client
                    .post(endpoint("/search"))
                    .header(AUTHORIZATION, format!("Bearer {}", key.unwrap_or_default()))
                    .json(&body)
            }
            SearchProvider::Exa => {
                let mut body = json!({
                    "query": query,
                    "numResults": MAX_RESULTS,
                    "contents": {"text": {"maxCharacters": MAX_SNIPPET_CHARS}},
                });
                if !allowed.is_empty() {
                    body["includeDomains"] = json!(allowed);
                }
                if !blocked.is_empty() {
                    body["excludeDomains"] = json!(blocked);
                }
                client
                    .post(endpoint("/search"))
                    .header("x-api-key", key.unwrap_or_default())
                    .json(&body)
            }
        };
        builder
            .header(USER_AGENT, HeaderValue::from_static(crate::USER_AGENT))
            .header(ACCEPT, HeaderValue::from_static("application/json"))
    }

    /// Sends the request; the body of a 2xx answer, read up to
    /// [`MAX_SEARCH_RESPONSE_BYTES`].
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Vec<u8>, ToolError> {
        let provider = self.config.provider;
        let failed = |m: String| ToolError::new(codes::WEB_SEARCH_FAILED, m);
        let mut response = request.send().await.map_err(|e| match find_blocked(&e) {
            Some(b) => ToolError::new(codes::WEB_BLOCKED, b.0.clone()),
            None => failed(format!(
                "cannot reach the search provider {provider} ({}): {}",
                self.base,
                error_chain(&e)
            )),
        })?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            failed(format!(
                "reading the answer of {provider} failed: {}",
                error_chain(&e)
            ))
        })? {
            if body.len() + chunk.len() > MAX_SEARCH_RESPONSE_BYTES {
                return Err(failed(format!(
                    "the answer of {provider} is larger than {MAX_SEARCH_RESPONSE_BYTES} bytes; it was not read"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        if status.is_success() {
            return Ok(body);
        }
        let detail: String = String::from_utf8_lossy(&body).chars().take(300).collect();
        let detail = detail.split_whitespace().collect::<Vec<_>>().join(" ");
        let var = self.config.api_key_env.as_deref().unwrap_or("the key");
        Err(failed(match status.as_u16() {
            401 | 403 => format!(
                "{provider} refused the API key from {var} (HTTP {}): ask the user to check it; {detail}",
                status.as_u16()
            ),
            429 => format!("{provider} rate-limited the search (HTTP 429); try again later"),
            code => format!("{provider} answered HTTP {code}: {detail}"),
        }))
    }
}

/// The query with `site:` operators for providers without domain
/// parameters (Brave, SearXNG): `site:d` when exactly one domain is
/// allowed, `-site:d` per blocked domain. The results are filtered again
/// either way.
fn with_site_operators(query: &str, allowed: &[String], blocked: &[String]) -> String {
    let mut q = query.to_string();
    if let [only] = allowed {
        q.push_str(&format!(" site:{only}"));
    }
    for d in blocked {
        q.push_str(&format!(" -site:{d}"));
    }
    q
}

/// The domains of a filter argument, normalised: lower-case, without a
/// scheme, path, port, `*.` or trailing dot.
///
/// # Errors
/// `INVALID_ARGS` naming the field for an entry that is not a host name.
fn domains(field: &str, raw: &[String]) -> Result<Vec<String>, ToolError> {
    let mut out = Vec::new();
    for entry in raw {
        let mut d = entry.trim().to_ascii_lowercase();
        if let Some(i) = d.find("://") {
            d = d[i + 3..].to_string();
        }
        if let Some(i) = d.find(['/', '?', '#']) {
            d.truncate(i);
        }
        if let Some(i) = d.rfind(':') {
            d.truncate(i);
        }
        let d = d
            .trim_start_matches("*.")
            .trim_start_matches('.')
            .trim_end_matches('.');
        let valid = !d.is_empty()
            && d.len() <= 253
            && d.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
            && !d.split('.').any(str::is_empty);
        if !valid {
            return Err(ToolError::invalid_args(vec![format!(
                "\"{field}\" entry {entry:?} is not a domain: write a host name such as \"docs.rs\" (its subdomains are included)"
            )]));
        }
        if !out.iter().any(|o| o == d) {
            out.push(d.to_string());
        }
    }
    Ok(out)
}

/// Whether a result at `url` passes the filters: its host is `allowed` (or
/// a subdomain of one) when any are given, and not `blocked`. A result
/// whose URL has no host passes only when no filter is given.
fn keep(url: &str, allowed: &[String], blocked: &[String]) -> bool {
    if allowed.is_empty() && blocked.is_empty() {
        return true;
    }
    let Some(host) = Url::parse(url).ok().and_then(|u| {
        u.host_str()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
    }) else {
        return false;
    };
    let within = |d: &String| host == *d || host.ends_with(&format!(".{d}"));
    (allowed.is_empty() || allowed.iter().any(within)) && !blocked.iter().any(within)
}

/// The hits of a provider's answer.
///
/// # Errors
/// serde's message when the body is not the provider's JSON shape.
fn parse(provider: SearchProvider, body: &[u8]) -> Result<Vec<SearchHit>, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let list = match provider {
        SearchProvider::Brave => v.get("web").and_then(|w| w.get("results")),
        _ => v.get("results"),
    };
    let Some(list) = list else {
        // Brave leaves `web` out when nothing matched.
        return match (provider, v.is_object()) {
            (SearchProvider::Brave, true) => Ok(Vec::new()),
            _ => Err("it has no \"results\" list".to_string()),
        };
    };
    let items = list
        .as_array()
        .ok_or_else(|| "\"results\" is not a list".to_string())?;
    let text = |item: &Value, keys: &[&str]| -> String {
        keys.iter()
            .find_map(|k| match item.get(*k) {
                Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
                Some(Value::Array(a)) => a.iter().find_map(|x| x.as_str().map(str::to_string)),
                _ => None,
            })
            .unwrap_or_default()
    };
    let snippet_keys: &[&str] = match provider {
        SearchProvider::Brave => &["description"],
        SearchProvider::Tavily | SearchProvider::Searxng => &["content"],
        SearchProvider::Exa => &["highlights", "summary", "text"],
    };
    Ok(items
        .iter()
        .filter_map(|item| {
            let url = text(item, &["url"]);
            if url.is_empty() {
                return None;
            }
            Some(SearchHit {
                title: clean(&text(item, &["title"]), MAX_TITLE_CHARS),
                url: url.trim().to_string(),
                snippet: clean(&text(item, snippet_keys), MAX_SNIPPET_CHARS),
            })
        })
        .collect())
}

/// `s` with tags stripped, entities decoded, whitespace collapsed to single
/// spaces, cut at `max` characters with `…`.
fn clean(s: &str, max: usize) -> String {
    let text = if s.contains('<') || s.contains('&') {
        markdown::strip_tags(s)
    } else {
        s.to_string()
    };
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &joined[..i]),
        None => joined,
    }
}

/// The tool result: a numbered list of title, URL and snippet.
pub fn render(provider: SearchProvider, query: &str, hits: &[SearchHit], dropped: usize) -> String {
    let q = query.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = if hits.is_empty() {
        format!("No results for \"{q}\" ({provider}).")
    } else {
        format!(
            "Results for \"{q}\" ({provider}, {} result{}):",
            hits.len(),
            if hits.len() == 1 { "" } else { "s" }
        )
    };
    for (i, h) in hits.iter().enumerate() {
        let title = if h.title.is_empty() {
            "(no title)"
        } else {
            &h.title
        };
        out.push_str(&format!("\n\n{}. {title}\n   {}", i + 1, h.url));
        if !h.snippet.is_empty() {
            out.push_str(&format!("\n   {}", h.snippet));
        }
    }
    if dropped > 0 {
        out.push_str(&format!(
            "\n\n({dropped} result{} outside the domain filters left out)",
            if dropped == 1 { "" } else { "s" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use dsh_protocol::ErrorCode;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn domains_are_normalised_and_bad_ones_refused() {
        assert_eq!(
            domains(
                "allowed_domains",
                &s(&["https://Docs.rs/x", "*.example.com", "a.org:443", "docs.rs"])
            )
            .unwrap(),
            s(&["docs.rs", "example.com", "a.org"])
        );
        for bad in ["", "a b", "a..b", "héllo.org"] {
            let e = domains("blocked_domains", &s(&[bad])).unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGS", "{bad}");
            assert!(e.violations()[0].contains("blocked_domains"));
        }
    }

    #[test]
    fn filters_keep_subdomains_and_drop_blocked_ones() {
        let (a, b) = (s(&["docs.rs"]), s(&["bad.docs.rs"]));
        assert!(keep("https://docs.rs/x", &a, &[]));
        assert!(keep("https://www.docs.rs/x", &a, &[]));
        assert!(!keep("https://notdocs.rs/x", &a, &[]));
        assert!(!keep("https://bad.docs.rs/x", &a, &b));
        assert!(!keep("not a url", &a, &[]));
        assert!(keep("not a url", &[], &[]));
    }

    #[test]
    fn site_operators_only_where_they_are_unambiguous() {
        assert_eq!(
            with_site_operators("q", &s(&["a.org"]), &s(&["b.org"])),
            "q site:a.org -site:b.org"
        );
        assert_eq!(with_site_operators("q", &s(&["a.org", "c.org"]), &[]), "q");
    }

    #[test]
    fn each_provider_answer_parses_and_bad_ones_are_errors() {
        let brave = br#"{"web":{"results":[{"title":"A <strong>b</strong>","url":"https://a.org","description":"x &amp; y"}]}}"#;
        assert_eq!(
            parse(SearchProvider::Brave, brave).unwrap(),
            vec![SearchHit {
                title: "A b".into(),
                url: "https://a.org".into(),
                snippet: "x & y".into()
            }]
        );
        assert_eq!(
            parse(SearchProvider::Brave, br#"{"query":{}}"#).unwrap(),
            vec![]
        );
        let exa = br#"{"results":[{"title":"T","url":"https://e.org","highlights":["hi"],"text":"long"}]}"#;
        assert_eq!(parse(SearchProvider::Exa, exa).unwrap()[0].snippet, "hi");
        assert!(parse(SearchProvider::Tavily, b"<html>").is_err());
        assert!(parse(SearchProvider::Searxng, br#"{"results":3}"#).is_err());
        assert!(parse(SearchProvider::Searxng, br#"{"nothing":[]}"#).is_err());
        let long = "w ".repeat(1000);
        let hit = &parse(
            SearchProvider::Searxng,
            json!({"results":[{"url":"https://x.org","content":long}]})
                .to_string()
                .as_bytes(),
        )
        .unwrap()[0];
        assert!(hit.snippet.ends_with('…') && hit.snippet.chars().count() == MAX_SNIPPET_CHARS + 1);
    }
}
