//! The model-facing web tools: `web_fetch` (one page, HTML converted to
//! markdown) and `web_search` (a query to a configured search provider:
//! Brave, Tavily, SearXNG or Exa).
//!
//! Start at [`WebTools`] (a kernel plugin registering the tools it is
//! given) or build them one by one with [`web_fetch_tool`] and
//! [`web_search_tool`]; the work is done by [`WebFetcher`] and
//! [`WebSearcher`], usable without a registry.
//!
//! **`web_fetch` and SSRF.** A model must not reach the user's machine or
//! network through it. Every hop (the URL and each redirect target, at most
//! [`MAX_REDIRECTS`]) is checked before anything is sent: http or https
//! only, no credentials in the URL, the host allowed by `[sandbox]
//! network` ([`NetworkAccess`]), and an IP literal that is public
//! ([`blocked_class`]) unless `allow_private` is set. Host names are
//! resolved by this crate's resolver inside the HTTP client, which drops
//! every non-public address before the client connects: the connection
//! goes to an address that was checked, so DNS cannot answer differently
//! for the check and the connect (rebinding). Environment proxies are
//! ignored (a proxy would connect on our behalf, unchecked).
//!
//! **Bounds.** A call takes at most [`FETCH_TIMEOUT`] (`WEB_TIMEOUT`),
//! downloads at most [`MAX_DOWNLOAD_BYTES`] (the body is read chunk by
//! chunk and the connection dropped at the limit; the result says it was
//! cut) and returns at most [`MAX_OUTPUT_BYTES`] of text; the stack's
//! `max_result_bytes` applies on top. HTML nested deeper than
//! [`MAX_DEPTH`] is shown as text with its tags stripped rather than
//! recursed into.
//!
//! What this crate does not do: cookies, authentication, JavaScript,
//! charsets other than UTF-8 (other bytes are replaced), HTTP/2,
//! compression, PDFs or images (`WEB_UNSUPPORTED_CONTENT`), or a sub-model
//! call for `prompt` (it is shown above the page as `Asked: …`).

#![warn(missing_docs)]

mod address;
mod fetch;
mod guard;
mod markdown;
mod search;

use std::sync::Arc;

use dsh_kernel::{DshError, Registration};
use dsh_llm::ContentBlock;
use dsh_tools::{define_tool, ToolArgs, ToolContext, ToolError, ToolRegistry};
use serde::{Deserialize, Serialize};

pub use address::{blocked_class, is_blocked};
pub use fetch::{
    render as render_page, FetchConfig, Page, WebFetcher, FETCH_TIMEOUT, MAX_DOWNLOAD_BYTES,
    MAX_OUTPUT_BYTES, MAX_REDIRECTS,
};
pub use guard::NetworkAccess;
pub use markdown::MAX_DEPTH;
pub use search::{
    render as render_results, SearchConfig, SearchHit, SearchProvider, WebSearcher, MAX_RESULTS,
    MAX_SEARCH_RESPONSE_BYTES, SEARCH_TIMEOUT,
};

/// The tool names, in registration order.
pub const WEB_TOOLS: [&str; 2] = ["web_fetch", "web_search"];

/// Description of `web_fetch`, as the model sees it.
pub const WEB_FETCH_DESCRIPTION: &str = "Fetch a web page over http or https and return its content: HTML converted to markdown, plain text and JSON as they are. `prompt` (optional) says what you are looking for; it is shown above the page. Pages on the local machine or a private network are refused, and so are URLs with credentials; at most 10 redirects, 5 MiB downloaded and 30 s; long pages are cut. Use it to read documentation or a URL the user gave; use web_search to find pages.";

/// Description of `web_search`, as the model sees it.
pub const WEB_SEARCH_DESCRIPTION: &str = "Search the web. Returns up to 10 results as a numbered list of title, URL and snippet. `allowed_domains` keeps only results from those domains (subdomains included), `blocked_domains` leaves results from them out. Read a result with web_fetch.";

/// The `User-Agent` of both tools.
pub(crate) const USER_AGENT: &str = concat!("dsh-web/", env!("CARGO_PKG_VERSION"));

/// Arguments of `web_fetch`.
#[derive(Debug, Deserialize, Serialize, ToolArgs)]
pub struct WebFetchArgs {
    /// The absolute http or https URL to fetch, e.g. `https://docs.rs/tokio/latest/tokio/`.
    #[tool(min_length = 1, max_length = 8192)]
    pub url: String,
    /// What you want from the page (a question or the information to find); shown above the page to keep you focused.
    #[serde(default)]
    #[tool(max_length = 2000)]
    pub prompt: Option<String>,
}

/// Arguments of `web_search`.
#[derive(Debug, Deserialize, Serialize, ToolArgs)]
pub struct WebSearchArgs {
    /// The search query.
    #[tool(min_length = 1, max_length = 1000)]
    pub query: String,
    /// Only results from these domains (and their subdomains), e.g. `["docs.rs", "github.com"]`.
    #[serde(default)]
    #[tool(max_items = 50)]
    pub allowed_domains: Option<Vec<String>>,
    /// Leave out results from these domains (and their subdomains).
    #[serde(default)]
    #[tool(max_items = 50)]
    pub blocked_domains: Option<Vec<String>>,
}

/// The `web_fetch` tool over `fetcher`: the page rendered by
/// [`render_page`] (header, `Asked: …`, notes, then the text), capped at
/// [`FetchConfig::max_output_bytes`]. Concurrency-safe (read-only). Errors:
/// as [`WebFetcher::fetch`], and `ABORTED` when the call is cancelled.
pub fn web_fetch_tool(fetcher: WebFetcher) -> Arc<dyn dsh_tools::Tool> {
    let fetcher = Arc::new(fetcher);
    define_tool(
        "web_fetch",
        WEB_FETCH_DESCRIPTION,
        move |args: WebFetchArgs, ctx: ToolContext| {
            let fetcher = fetcher.clone();
            async move {
                let page = tokio::select! {
                    page = fetcher.fetch(&args.url) => page?,
                    () = ctx.cancel.cancelled() => {
                        return Err(ToolError::aborted("web_fetch cancelled"))
                    }
                };
                let max = fetcher.config().max_output_bytes;
                Ok(vec![ContentBlock::text(render_page(
                    &page,
                    args.prompt.as_deref(),
                    max,
                ))])
            }
        },
    )
    .concurrency_safe()
    .into_arc()
}

/// The `web_search` tool over `searcher`: the results rendered by
/// [`render_results`]. Concurrency-safe (read-only). Errors: as
/// [`WebSearcher::search`], and `ABORTED` when the call is cancelled.
pub fn web_search_tool(searcher: WebSearcher) -> Arc<dyn dsh_tools::Tool> {
    let searcher = Arc::new(searcher);
    define_tool(
        "web_search",
        WEB_SEARCH_DESCRIPTION,
        move |args: WebSearchArgs, ctx: ToolContext| {
            let searcher = searcher.clone();
            async move {
                let allowed = args.allowed_domains.unwrap_or_default();
                let blocked = args.blocked_domains.unwrap_or_default();
                let (hits, dropped) = tokio::select! {
                    r = searcher.search(&args.query, &allowed, &blocked) => r?,
                    () = ctx.cancel.cancelled() => {
                        return Err(ToolError::aborted("web_search cancelled"))
                    }
                };
                let provider = searcher.config().provider;
                Ok(vec![ContentBlock::text(render_results(
                    provider,
                    &args.query,
                    &hits,
                    dropped,
                ))])
            }
        },
    )
    .concurrency_safe()
    .into_arc()
}

/// The web tools plugin: `web_fetch` when `fetch` is set, `web_search` when
/// `search` is set (in that order), registered in the kernel's
/// [`ToolRegistry`] (see [`install`], which it calls).
#[derive(Debug, Default)]
pub struct WebTools {
    /// `web_fetch`'s configuration; `None`: no `web_fetch`.
    pub fetch: Option<FetchConfig>,
    /// `web_search`'s configuration; `None`: no `web_search`.
    pub search: Option<SearchConfig>,
}

/// Registers `web_fetch` (when `fetch` is set) and `web_search` (when
/// `search` is set). Undoing the registration removes both.
///
/// # Errors
/// As [`WebFetcher::new`] and [`WebSearcher::new`] (nothing is registered
/// then); `DUPLICATE_TOOL` when a name is taken.
pub fn install(
    registry: &ToolRegistry,
    fetch: Option<FetchConfig>,
    search: Option<SearchConfig>,
) -> Result<Registration, ToolError> {
    let mut tools = Vec::new();
    if let Some(cfg) = fetch {
        tools.push(web_fetch_tool(WebFetcher::new(cfg)?));
    }
    if let Some(cfg) = search {
        tools.push(web_search_tool(WebSearcher::new(cfg)?));
    }
    registry.register_all(tools)
}

impl dsh_kernel::Plugin for WebTools {
    /// # Errors
    /// `MISSING_SERVICE` without a [`ToolRegistry`]; as [`install`].
    fn install(self, kernel: &dsh_kernel::Kernel) -> Result<Registration, DshError> {
        let registry = kernel.service::<ToolRegistry>().map_err(DshError::from)?;
        install(&registry, self.fetch, self.search).map_err(DshError::from)
    }
}

/// The HTTP client both tools start from: rustls (ring), HTTP/1, no proxy
/// from the environment, no automatic redirects.
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    // Err means another provider is already installed, which is fine:
    // reqwest uses whatever default provider the process has.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(std::time::Duration::from_secs(10))
}

/// `e`'s message followed by its sources', `: `-separated, repeats left
/// out.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = s.source();
    }
    parts.join(": ")
}
