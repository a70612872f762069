//! `web_fetch`: one page, guarded hop by hop, read streaming up to a byte
//! limit, converted to markdown when it is HTML.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use dsh_protocol::codes;
use dsh_tools::ToolError;
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE, LOCATION, USER_AGENT};
use reqwest::{StatusCode, Url};
use tokio::time::Instant;

use crate::guard::{find_blocked, Guard, GuardedResolver, NetworkAccess};
use crate::{error_chain, markdown};

/// Default of [`FetchConfig::timeout`]: 30 s for the whole call.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Default of [`FetchConfig::max_bytes`]: 5 MiB downloaded at most.
pub const MAX_DOWNLOAD_BYTES: usize = 5 << 20;

/// Default of [`FetchConfig::max_redirects`].
pub const MAX_REDIRECTS: usize = 10;

/// Default of [`FetchConfig::max_output_bytes`]: the most text a call
/// returns (the stack then applies `max_result_bytes`, spilling the rest).
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// How `web_fetch` may use the network. [`FetchConfig::default`] is the
/// safe default: public hosts only, the limits above, the system resolver.
#[derive(Clone)]
pub struct FetchConfig {
    /// `[web] allow_private`: also connect to loopback, private, link-local
    /// and the other non-public addresses ([`crate::blocked_class`]).
    pub allow_private: bool,
    /// `[sandbox] network`.
    pub network: NetworkAccess,
    /// The whole call, every redirect and the conversion included.
    pub timeout: Duration,
    /// Bytes of body read at most; the rest is not downloaded and the
    /// result says the page was cut.
    pub max_bytes: usize,
    /// Redirects followed at most (one more fails the call).
    pub max_redirects: usize,
    /// Bytes of text returned at most (cut on a character boundary, with a
    /// note).
    pub max_output_bytes: usize,
    /// Exact addresses (IP and port) exempt from the private-address rule
    /// when a URL names them as an IP literal: for tests and benchmarks
    /// that serve pages on loopback. Never set from configuration. A name
    /// that resolves to such an address is still refused.
    pub exempt: Vec<SocketAddr>,
    /// Resolves host names; every address it returns is checked before it
    /// is connected to.
    pub resolver: Arc<dyn dsh_netproxy::Resolve>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            allow_private: false,
            network: NetworkAccess::Open,
            timeout: FETCH_TIMEOUT,
            max_bytes: MAX_DOWNLOAD_BYTES,
            max_redirects: MAX_REDIRECTS,
            max_output_bytes: MAX_OUTPUT_BYTES,
            exempt: Vec::new(),
            resolver: Arc::new(dsh_netproxy::SystemResolver),
        }
    }
}

impl std::fmt::Debug for FetchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchConfig")
            .field("allow_private", &self.allow_private)
            .field("network", &self.network)
            .field("timeout", &self.timeout)
            .field("max_bytes", &self.max_bytes)
            .field("max_redirects", &self.max_redirects)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("exempt", &self.exempt)
            .finish_non_exhaustive()
    }
}

/// A fetched page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The URL the page came from (after redirects).
    pub url: String,
    /// The URLs that redirected, in order (empty without redirects).
    pub redirects: Vec<String>,
    /// The `Content-Type` header (`""` when the server sent none).
    pub content_type: String,
    /// The text: markdown for HTML, the body as is for text and JSON
    /// (invalid UTF-8 replaced).
    pub text: String,
    /// Bytes downloaded.
    pub bytes: usize,
    /// The body was longer than [`FetchConfig::max_bytes`]; only that much
    /// was read.
    pub cut: bool,
    /// The HTML nested too deep to convert; [`Page::text`] is its text with
    /// the tags stripped.
    pub stripped: bool,
}

/// What the body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
}

/// The fetcher behind the `web_fetch` tool: one HTTP client (HTTP/1, no
/// proxy from the environment, no automatic redirects, connections only to
/// checked addresses) and the configuration. Cheap to clone.
#[derive(Clone)]
pub struct WebFetcher {
    client: reqwest::Client,
    guard: Arc<Guard>,
    config: Arc<FetchConfig>,
}

impl std::fmt::Debug for WebFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebFetcher")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl WebFetcher {
    /// A fetcher for `config`.
    ///
    /// # Errors
    /// `WEB_FETCH_FAILED` when the HTTP client cannot be built (no TLS
    /// roots).
    pub fn new(config: FetchConfig) -> Result<Self, ToolError> {
        let guard = Arc::new(Guard {
            allow_private: config.allow_private,
            network: config.network.clone(),
            exempt: config.exempt.clone(),
        });
        let resolver = GuardedResolver {
            inner: config.resolver.clone(),
            guard: guard.clone(),
        };
        let client = crate::client_builder()
            .dns_resolver(resolver)
            .build()
            .map_err(|e| {
                ToolError::new(
                    codes::WEB_FETCH_FAILED,
                    format!("cannot build the HTTP client: {}", error_chain(&e)),
                )
            })?;
        Ok(WebFetcher {
            client,
            guard,
            config: Arc::new(config),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &FetchConfig {
        &self.config
    }

    /// Fetches `url`, following at most [`FetchConfig::max_redirects`]
    /// redirects (each hop checked like the first), within
    /// [`FetchConfig::timeout`].
    ///
    /// # Errors
    /// `INVALID_ARGS` for a URL that does not parse; `WEB_BLOCKED` for a
    /// scheme other than http/https, credentials in the URL, a host the
    /// `[sandbox] network` setting refuses, or a non-public address (an IP
    /// literal, or every address a name resolves to); `WEB_TIMEOUT` when
    /// the time runs out; `WEB_UNSUPPORTED_CONTENT` for a content type
    /// other than HTML, text or JSON; `WEB_FETCH_FAILED` for a connection
    /// failure, an HTTP error status or too many redirects.
    pub async fn fetch(&self, url: &str) -> Result<Page, ToolError> {
        let deadline = Instant::now() + self.config.timeout;
        match tokio::time::timeout_at(deadline, self.fetch_within(url, deadline)).await {
            Ok(result) => result,
            Err(_) => Err(timeout(self.config.timeout, url)),
        }
    }

    async fn fetch_within(&self, url: &str, deadline: Instant) -> Result<Page, ToolError> {
        let mut current = Url::parse(url.trim()).map_err(|e| {
            ToolError::invalid_args(vec![format!(
                "\"url\" is not a valid URL ({e}): write an absolute http or https URL such as https://example.org/page"
            )])
        })?;
        let mut redirects = Vec::new();
        let response = loop {
            self.guard.check_url(&current)?;
            let response = self
                .client
                .get(current.clone())
                .header(USER_AGENT, HeaderValue::from_static(crate::USER_AGENT))
                .header(ACCEPT, HeaderValue::from_static(ACCEPTED))
                .send()
                .await
                .map_err(|e| send_error(&e, &current))?;
            let status = response.status();
            if !status.is_redirection() {
                break response;
            }
            let next = location(&response, &current)?;
            redirects.push(current.to_string());
            if redirects.len() > self.config.max_redirects {
                return Err(ToolError::new(
                    codes::WEB_FETCH_FAILED,
                    format!(
                        "too many redirects: {url} redirected more than {} times (last to {next})",
                        self.config.max_redirects
                    ),
                ));
            }
            current = next;
        };
        let status = response.status();
        if !status.is_success() {
            return Err(ToolError::new(
                codes::WEB_FETCH_FAILED,
                format!("{current} answered HTTP {}", status_text(status)),
            ));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let declared = kind_of(&content_type).map_err(|mime| {
            ToolError::new(
                codes::WEB_UNSUPPORTED_CONTENT,
                format!(
                    "{current} is {mime}, which web_fetch does not read: it reads HTML, plain text and JSON"
                ),
            )
        })?;
        let (body, cut) = self.read_body(response, &current).await?;
        let kind = match declared {
            Some(kind) => kind,
            None => sniff(&body).ok_or_else(|| {
                ToolError::new(
                    codes::WEB_UNSUPPORTED_CONTENT,
                    format!(
                        "{current} sent no content type and its body is not text: web_fetch reads HTML, plain text and JSON"
                    ),
                )
            })?,
        };
        let bytes = body.len();
        let (text, stripped) = match kind {
            Kind::Text => (String::from_utf8_lossy(&body).into_owned(), false),
            Kind::Html => convert_off_runtime(body, deadline).await?,
        };
        Ok(Page {
            url: current.to_string(),
            redirects,
            content_type,
            text,
            bytes,
            cut,
            stripped,
        })
    }

    /// Reads at most `max_bytes` of the body, chunk by chunk (never more
    /// than one chunk past the limit in memory); `true` when it was cut.
    async fn read_body(
        &self,
        mut response: reqwest::Response,
        url: &Url,
    ) -> Result<(Vec<u8>, bool), ToolError> {
        let limit = self.config.max_bytes;
        let hint = response.content_length().unwrap_or(0);
        let mut body = Vec::with_capacity(usize::try_from(hint).unwrap_or(limit).min(limit));
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                ToolError::new(
                    codes::WEB_FETCH_FAILED,
                    format!(
                        "reading {url} failed after {} bytes: {}",
                        body.len(),
                        error_chain(&e)
                    ),
                )
            })?;
            let Some(chunk) = chunk else {
                return Ok((body, false));
            };
            let room = limit - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                // Dropping the response closes the connection: the rest is
                // never downloaded.
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
    }
}

/// The `Accept` header.
const ACCEPTED: &str =
    "text/html, application/xhtml+xml, text/markdown;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.1";

/// The body's kind from its content type: `Ok(None)` when there is none
/// (the body decides), `Err(mime)` when it is one web_fetch does not read.
fn kind_of(content_type: &str) -> Result<Option<Kind>, String> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime.is_empty() {
        return Ok(None);
    }
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Ok(Some(Kind::Html)),
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/x-javascript"
        | "application/ecmascript"
        | "application/x-ndjson"
        | "application/toml"
        | "application/yaml"
        | "application/x-yaml" => Ok(Some(Kind::Text)),
        m if m.starts_with("text/") || m.ends_with("+json") || m.ends_with("+xml") => {
            Ok(Some(Kind::Text))
        }
        _ => Err(mime),
    }
}

/// The kind of a body without a content type: HTML when it starts (after
/// blanks) with `<`, text when it is UTF-8 without NUL, else `None`.
fn sniff(body: &[u8]) -> Option<Kind> {
    let head = &body[..body.len().min(8192)];
    if head.contains(&0) {
        return None;
    }
    let start = head.iter().position(|b| !b.is_ascii_whitespace());
    if start.is_some_and(|i| head[i] == b'<') {
        return Some(Kind::Html);
    }
    // A cut in the middle of a character at the end of the sample is fine.
    match std::str::from_utf8(head) {
        Ok(_) => Some(Kind::Text),
        Err(e) if e.error_len().is_none() => Some(Kind::Text),
        Err(_) => None,
    }
}

/// Converts HTML on a thread of its own (a large stack, off the runtime),
/// giving up at `deadline` (the thread then finishes on its own).
async fn convert_off_runtime(
    body: Vec<u8>,
    deadline: Instant,
) -> Result<(String, bool), ToolError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("web-fetch-markdown".into())
        .stack_size(markdown::STACK_BYTES)
        .spawn(move || {
            let html = String::from_utf8_lossy(&body);
            let (done, tree) = markdown::convert_keeping_tree(&html);
            // The receiver is gone only when the call timed out or was
            // cancelled: nobody wants the result then.
            let _ = tx.send(done);
            // Freed after the result is on its way, off the caller's time.
            drop(tree);
            drop(html);
        });
    if let Err(e) = spawned {
        return Err(ToolError::new(
            codes::WEB_FETCH_FAILED,
            format!("cannot start the HTML conversion: {e}"),
        ));
    }
    match tokio::time::timeout_at(deadline, rx).await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(_)) => Err(ToolError::new(
            codes::WEB_FETCH_FAILED,
            "the HTML conversion failed".to_string(),
        )),
        Err(_) => Err(ToolError::new(
            codes::WEB_TIMEOUT,
            "the page did not convert to markdown in time".to_string(),
        )),
    }
}

/// The redirect target of a 3xx response, resolved against `current`.
fn location(response: &reqwest::Response, current: &Url) -> Result<Url, ToolError> {
    let status = response.status();
    let Some(value) = response.headers().get(LOCATION) else {
        return Err(ToolError::new(
            codes::WEB_FETCH_FAILED,
            format!(
                "{current} answered HTTP {} without a Location header",
                status_text(status)
            ),
        ));
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    current.join(&text).map_err(|e| {
        ToolError::new(
            codes::WEB_FETCH_FAILED,
            format!("{current} redirected to {text:?}, which is not a valid URL ({e})"),
        )
    })
}

/// `404 Not Found`.
fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// The error of a request that got no response.
fn send_error(e: &reqwest::Error, url: &Url) -> ToolError {
    if let Some(blocked) = find_blocked(e) {
        return ToolError::new(codes::WEB_BLOCKED, blocked.0.clone());
    }
    ToolError::new(
        codes::WEB_FETCH_FAILED,
        format!("cannot fetch {url}: {}", error_chain(e)),
    )
}

/// `WEB_TIMEOUT` for a call that ran out of time.
fn timeout(limit: Duration, url: &str) -> ToolError {
    ToolError::new(
        codes::WEB_TIMEOUT,
        format!(
            "fetching {url} took longer than {} s (web_fetch's limit); the server is slow or not answering",
            limit.as_secs_f64()
        ),
    )
}

/// The text of the tool result: a header (the URL, redirects, content
/// type, the `prompt` as `Asked: …`, notes about cuts), a blank line, the
/// page; at most `max_bytes` (cut on a character boundary, with a note).
pub fn render(page: &Page, prompt: Option<&str>, max_bytes: usize) -> String {
    let mut out = format!("URL: {}\n", page.url);
    if let Some(first) = page.redirects.first() {
        out.push_str(&format!(
            "Redirected from: {first} ({} redirect{})\n",
            page.redirects.len(),
            if page.redirects.len() == 1 { "" } else { "s" }
        ));
    }
    if !page.content_type.is_empty() {
        out.push_str(&format!("Content-Type: {}\n", page.content_type));
    }
    if let Some(p) = prompt.map(str::trim).filter(|p| !p.is_empty()) {
        out.push_str(&format!("Asked: {p}\n"));
    }
    if page.cut {
        out.push_str(&format!(
            "Note: the page is larger than {}; only its first {} bytes were downloaded, so it is cut.\n",
            mib(page.bytes),
            page.bytes
        ));
    }
    if page.stripped {
        out.push_str(&format!(
            "Note: the page nests elements more than {} deep; shown as text with its tags stripped.\n",
            markdown::MAX_DEPTH
        ));
    }
    out.push('\n');
    let room = max_bytes.saturating_sub(out.len());
    if page.text.len() <= room {
        out.push_str(&page.text);
    } else {
        let mut end = room;
        while !page.text.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&page.text[..end]);
        out.push_str(&format!(
            "\n\n(cut: the page's text is {} bytes; only the first {end} are shown)",
            page.text.len()
        ));
    }
    out
}

/// `5 MiB` for byte counts that are whole MiB, else `N bytes`.
fn mib(bytes: usize) -> String {
    if bytes.is_multiple_of(1 << 20) && bytes > 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn content_types_are_sorted_into_html_text_or_refused() {
        assert_eq!(kind_of("text/html; charset=utf-8"), Ok(Some(Kind::Html)));
        assert_eq!(kind_of("TEXT/HTML"), Ok(Some(Kind::Html)));
        assert_eq!(kind_of("text/plain"), Ok(Some(Kind::Text)));
        assert_eq!(kind_of("application/json"), Ok(Some(Kind::Text)));
        assert_eq!(kind_of("application/vnd.api+json"), Ok(Some(Kind::Text)));
        assert_eq!(kind_of(""), Ok(None));
        assert_eq!(kind_of("image/png"), Err("image/png".to_string()));
        assert_eq!(
            kind_of("application/pdf; x=y"),
            Err("application/pdf".to_string())
        );
        assert_eq!(sniff(b"  <!doctype html>"), Some(Kind::Html));
        assert_eq!(sniff(b"plain words"), Some(Kind::Text));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0"), None);
        assert_eq!(sniff(b"\xff\xfe\xfd bad utf8"), None);
    }

    #[test]
    fn render_puts_the_prompt_and_the_notes_above_the_page_and_caps_it() {
        let page = Page {
            url: "https://e.org/b".into(),
            redirects: vec!["https://e.org/a".into()],
            content_type: "text/html".into(),
            text: "é".repeat(100),
            bytes: 5 << 20,
            cut: true,
            stripped: false,
        };
        let out = render(&page, Some(" the version "), 10_000);
        assert!(out.starts_with(
            "URL: https://e.org/b\nRedirected from: https://e.org/a (1 redirect)\nContent-Type: text/html\nAsked: the version\nNote: the page is larger than 5 MiB"
        ), "{out}");
        assert!(out.ends_with(&"é".repeat(100)));
        let small = render(&page, None, 200);
        assert!(
            small.contains("(cut: the page's text is 200 bytes;"),
            "{small}"
        );
        assert!(!small.contains("Asked"));
    }
}
