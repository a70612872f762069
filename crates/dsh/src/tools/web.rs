//! `[web]` in dsh.toml and whether `web_fetch` and `web_search` are on:
//! the section's keys, how files overlay it, which keys an untrusted
//! project may not set, and [`resolve`] (section + tool selection + the
//! sandbox's network setting → [`WebSettings`]).
//!
//! Both tools are off by default. `web_fetch` is on with `[web] fetch =
//! true`, `web_search` with `[web.search] provider`; a tool list (`tools =
//! [...]` or `--tools`) decides instead when given: a tool is on when the
//! list names it (`web_search` also needs a provider).

use dsh_tool_web::{FetchConfig, NetworkAccess, SearchConfig, SearchProvider};
use serde::Deserialize;

/// `[web]`
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WebSection {
    /// Offer `web_fetch` (default `false`).
    pub fetch: Option<bool>,
    /// Let `web_fetch` connect to loopback, private, link-local and other
    /// non-public addresses (default `false`). Unsafe in an untrusted
    /// project config.
    pub allow_private: Option<bool>,
    /// `[web.search]`: the search provider of `web_search`.
    pub search: Option<WebSearchSection>,
}

/// `[web.search]`
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WebSearchSection {
    /// `brave`, `tavily`, `searxng` or `exa`; setting it offers
    /// `web_search`.
    pub provider: Option<SearchProvider>,
    /// The environment variable holding the key (default `BRAVE_API_KEY`,
    /// `TAVILY_API_KEY`, `EXA_API_KEY`; SearXNG needs none). Unsafe in an
    /// untrusted project config (it picks which secret is sent).
    pub api_key_env: Option<String>,
    /// The provider's base URL: required for SearXNG, an override for the
    /// others. Not subject to the private-address rule. Unsafe in an
    /// untrusted project config (it decides where the key goes).
    pub url: Option<String>,
}

impl WebSection {
    /// `upper` over `self`, key by key.
    pub fn overlay(self, upper: WebSection) -> WebSection {
        let search = match (self.search, upper.search) {
            (Some(l), Some(u)) => Some(WebSearchSection {
                provider: u.provider.or(l.provider),
                api_key_env: u.api_key_env.or(l.api_key_env),
                url: u.url.or(l.url),
            }),
            (l, u) => u.or(l),
        };
        WebSection {
            fetch: upper.fetch.or(self.fetch),
            allow_private: upper.allow_private.or(self.allow_private),
            search,
        }
    }

    /// The keys set here that an untrusted project may not set, as written:
    /// `web.allow_private` (opens the user's network to the model),
    /// `web.search.api_key_env` and `web.search.url` (which secret is sent
    /// where).
    pub fn unsafe_keys(&self) -> Vec<String> {
        let search = self.search.as_ref();
        [
            ("web.allow_private", self.allow_private.is_some()),
            (
                "web.search.api_key_env",
                search.is_some_and(|s| s.api_key_env.is_some()),
            ),
            ("web.search.url", search.is_some_and(|s| s.url.is_some())),
        ]
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(k, _)| k.to_string())
        .collect()
    }

    /// Clears the keys [`WebSection::unsafe_keys`] names.
    pub fn clear_unsafe_keys(&mut self) {
        self.allow_private = None;
        if let Some(s) = &mut self.search {
            s.api_key_env = None;
            s.url = None;
        }
    }
}

/// The resolved web tools: each one's configuration when it is on, and
/// for `dsh doctor` a line saying whether it is on and why.
#[derive(Debug, Clone, Default)]
pub struct WebSettings {
    /// `web_fetch`'s configuration; `None`: off.
    pub fetch: Option<FetchConfig>,
    /// `web_search`'s configuration; `None`: off.
    pub search: Option<SearchConfig>,
    /// `on ([web] fetch = true)`, `off (not enabled: set [web] fetch = true)`, …
    pub fetch_status: String,
    /// As [`WebSettings::fetch_status`], for `web_search`.
    pub search_status: String,
}

/// Resolves `section` with the tool list (`tools`, `None`: no list) and
/// the sandbox's network (`network` false, or the `hosts` list). A
/// `[web.search]` that cannot work (SearXNG without `url`, a bad `url`) is
/// a `problem`; a `web_search` named in the list without a provider a
/// `warning` (the tool is left out).
pub fn resolve(
    section: &WebSection,
    tools: Option<&[String]>,
    network: bool,
    hosts: Option<&dsh_netproxy::Allowlist>,
    problem: &mut dyn FnMut(String),
    warnings: &mut Vec<String>,
) -> WebSettings {
    let access = match (network, hosts) {
        (_, Some(list)) => NetworkAccess::Hosts(list.clone()),
        (false, None) => NetworkAccess::Off,
        (true, None) => NetworkAccess::Open,
    };
    let named = |name: &str| tools.map(|t| t.iter().any(|n| n == name));
    let network_note = match &access {
        NetworkAccess::Open => "",
        NetworkAccess::Off => "; every call is refused: [sandbox] network = false",
        NetworkAccess::Hosts(_) => "; only the hosts in [sandbox] network",
    };
    let (fetch_on, fetch_why) = match (named("web_fetch"), section.fetch) {
        (Some(true), _) => (true, "named in the tool list"),
        (Some(false), _) => (false, "not in the tool list"),
        (None, Some(true)) => (true, "[web] fetch = true"),
        (None, _) => (false, "not enabled: set [web] fetch = true"),
    };
    let allow_private = section.allow_private.unwrap_or(false);
    let fetch = fetch_on.then(|| FetchConfig {
        allow_private,
        network: access.clone(),
        ..FetchConfig::default()
    });
    let fetch_status = match fetch_on {
        true => format!(
            "on ({fetch_why}{}{network_note})",
            if allow_private {
                "; allow_private: private addresses reachable"
            } else {
                ""
            }
        ),
        false => format!("off ({fetch_why})"),
    };
    let search_section = section.search.clone().unwrap_or_default();
    let provider = search_section.provider;
    let (search_on, search_why) = match (named("web_search"), provider) {
        (Some(false), _) => (false, "not in the tool list".to_string()),
        (Some(true), None) => {
            warnings.push(
                "web_search is in the tool list but [web.search] provider is not set; the tool is left out".to_string(),
            );
            (
                false,
                "named in the tool list, but [web.search] provider is not set".to_string(),
            )
        }
        (Some(true), Some(p)) => (true, format!("named in the tool list; provider {p}")),
        (None, Some(p)) => (true, format!("[web.search] provider = \"{p}\"")),
        (None, None) => (false, "not enabled: set [web.search] provider".to_string()),
    };
    let mut search = None;
    let mut search_status = format!("off ({search_why})");
    if let (true, Some(p)) = (search_on, provider) {
        let var = search_section
            .api_key_env
            .clone()
            .or_else(|| p.default_key_env().map(str::to_string));
        let key = var
            .as_deref()
            .and_then(|v| std::env::var(v).ok())
            .filter(|k| !k.is_empty());
        let cfg = SearchConfig {
            api_key: key.clone(),
            api_key_env: var.clone(),
            url: search_section.url.clone(),
            network: access.clone(),
            ..SearchConfig::new(p)
        };
        match cfg.base_url() {
            Err(e) => {
                problem(format!("invalid config [INVALID_CONFIG]: {e}"));
                search_status = format!("off ({search_why}; {e})");
            }
            Ok(base) => {
                let key_note = match (&var, &key) {
                    (None, _) => String::new(),
                    (Some(v), Some(_)) => format!("; key: set ({v})"),
                    (Some(v), None) => {
                        format!("; key: NOT SET ({v}): every search fails until it is")
                    }
                };
                let net = match &access {
                    NetworkAccess::Off => "; every call is refused: [sandbox] network = false",
                    _ => "",
                };
                search_status = format!("on ({search_why}; {base}{key_note}{net})");
                search = Some(cfg);
            }
        }
    }
    WebSettings {
        fetch,
        search,
        fetch_status,
        search_status,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn run(
        section: &str,
        tools: Option<&[&str]>,
        network: bool,
    ) -> (WebSettings, Vec<String>, Vec<String>) {
        let section: WebSection = toml::from_str(section).unwrap();
        let tools: Option<Vec<String>> = tools.map(|t| t.iter().map(|s| s.to_string()).collect());
        let (mut problems, mut warnings) = (Vec::new(), Vec::new());
        let w = resolve(
            &section,
            tools.as_deref(),
            network,
            None,
            &mut |p| problems.push(p),
            &mut warnings,
        );
        (w, problems, warnings)
    }

    #[test]
    fn both_tools_are_off_by_default_and_on_by_config_or_by_the_list() {
        let (w, p, _) = run("", None, true);
        assert!(w.fetch.is_none() && w.search.is_none() && p.is_empty());
        assert_eq!(w.fetch_status, "off (not enabled: set [web] fetch = true)");
        let (w, _, _) = run(
            "fetch = true\nallow_private = true\n[search]\nprovider = \"searxng\"\nurl = \"http://127.0.0.1:8888\"",
            None,
            true,
        );
        assert!(w.fetch.as_ref().unwrap().allow_private);
        assert_eq!(w.search.as_ref().unwrap().provider, SearchProvider::Searxng);
        assert!(
            w.search_status
                .starts_with("on ([web.search] provider = \"searxng\"; http://127.0.0.1:8888/"),
            "{}",
            w.search_status
        );
        let (w, _, warnings) = run("fetch = true", Some(&["bash", "web_search"]), true);
        assert!(w.fetch.is_none(), "the list decides");
        assert!(w.search.is_none());
        assert!(warnings[0].contains("provider is not set"));
        let (w, _, _) = run("", Some(&["web_fetch"]), false);
        assert_eq!(w.fetch.unwrap().network, NetworkAccess::Off);
        assert!(w.fetch_status.contains("[sandbox] network = false"));
    }

    #[test]
    fn searxng_without_a_url_is_a_problem_and_unsafe_keys_are_named() {
        let (w, p, _) = run("[search]\nprovider = \"searxng\"", None, true);
        assert!(w.search.is_none());
        assert!(p[0].contains("[web.search] url is required"), "{p:?}");
        let s: WebSection = toml::from_str(
            "allow_private = true\nfetch = true\n[search]\nprovider = \"brave\"\nurl = \"http://x\"\napi_key_env = \"K\"",
        )
        .unwrap();
        assert_eq!(
            s.unsafe_keys(),
            [
                "web.allow_private",
                "web.search.api_key_env",
                "web.search.url"
            ]
        );
        let mut cleared = s.clone();
        cleared.clear_unsafe_keys();
        assert!(cleared.unsafe_keys().is_empty());
        assert_eq!(cleared.fetch, Some(true));
        let e = toml::from_str::<WebSection>("[search]\nprovider = \"bing\"").unwrap_err();
        assert!(e.to_string().contains("brave"), "{e}");
        let merged = s.overlay(toml::from_str("[search]\nprovider = \"exa\"").unwrap());
        assert_eq!(merged.search.unwrap().url.as_deref(), Some("http://x"));
    }
}
