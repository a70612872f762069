//! Server configuration: [`McpServerConfig`], the `dsh.toml` entry
//! [`McpServerSpec`] and the `--mcp 'NAME=COMMAND ARGS…'` flag parser.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::McpError;
use crate::frames::DEFAULT_MAX_MESSAGE_BYTES;

/// The default per-call (and start-up) timeout: 60 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The default first part of registry names: `mcp__<server>__<tool>`.
pub const DEFAULT_TOOL_PREFIX: &str = "mcp";

/// Header names the HTTP transport sets itself; a configured header may not
/// use them.
const RESERVED_HEADERS: [&str; 4] = [
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// How to run one MCP server.
///
/// A stdio server's environment is exactly its `env` plus `PATH` and `HOME`
/// copied from the harness (unless `env` sets them): the harness environment
/// — API keys included — never leaks into a server unless configured here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name: part of its tools' names
    /// (`<tool_prefix>__<name>__<tool>`), shown in logs and errors.
    /// Characters outside `[A-Za-z0-9_-]` are replaced by `_` in tool names.
    pub name: String,
    /// How to reach it: a child process over stdio, or a URL.
    pub transport: McpTransport,
    /// Per-call timeout, also the bound on each start (spawn or connect +
    /// `initialize` + `tools/list`). Default [`DEFAULT_TIMEOUT`].
    pub timeout: Duration,
    /// Disabled servers are skipped by [`start_all`](crate::start_all).
    pub enabled: bool,
    /// Largest JSON-RPC message read from the server, in bytes (default
    /// [`DEFAULT_MAX_MESSAGE_BYTES`]); a larger response fails its call
    /// with `RESULT_TOO_LARGE` without being buffered whole.
    pub max_message_bytes: usize,
    /// Validate the model's arguments in dsh, with the usual wording, before
    /// the call leaves (default false: the server validates). A tool whose
    /// schema is outside the enforced subset is passed through with a
    /// warning naming the keyword.
    pub validate_args: bool,
    /// The first part of the registry names (default
    /// [`DEFAULT_TOOL_PREFIX`]); empty gives the older `<name>__<tool>`.
    /// See [`tool_name`](crate::tool_name).
    pub tool_prefix: String,
    /// When and how often a server whose connection dropped is started
    /// again (code only; `dsh.toml` has no key for it).
    pub restart: RestartPolicy,
}

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP over its stdin/stdout.
    Stdio {
        /// The program to run (looked up in `PATH` when it has no `/`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// The server's whole environment besides `PATH`/`HOME`.
        env: BTreeMap<String, String>,
        /// The working directory; the harness's when `None`.
        cwd: Option<PathBuf>,
    },
    /// The streamable HTTP transport of the MCP spec: dsh connects, nothing
    /// listens.
    Http {
        /// `http://` or `https://` URL of the MCP endpoint.
        url: String,
        /// Extra headers sent with every request. Values may hold `${VAR}`,
        /// replaced by dsh's environment variable `VAR` when the server
        /// starts, so secrets stay out of config files. Values are never
        /// shown in messages or logs.
        headers: BTreeMap<String, String>,
    },
}

impl McpTransport {
    /// `command: <command line>` or `url: <url>` (a password in the URL is
    /// masked), for messages.
    pub fn describe(&self) -> String {
        match self {
            McpTransport::Stdio { .. } => format!("command: {}", self.target()),
            McpTransport::Http { .. } => format!("url: {}", self.target()),
        }
    }

    /// The command line, shell-quoted, or the URL with any password masked:
    /// what `dsh mcp list` shows.
    pub fn target(&self) -> String {
        match self {
            McpTransport::Stdio { command, args, .. } => std::iter::once(command)
                .chain(args)
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url, .. } => masked_url(url),
        }
    }
}

/// When a server whose connection dropped (a crash, a closed pipe, a
/// refused or failed HTTP request) is started again.
///
/// Attempt `n` (from 1) waits [`RestartPolicy::delay`]`(n)` first:
/// `initial_delay` doubling each time, at most `max_delay`. Attempts count
/// from the last time the server stayed up for `stable_after`: a server
/// that starts but drops again sooner goes on with the next attempt, so
/// one that crashes right after every start is not restarted forever.
/// After `max_attempts` attempts the server is given up (its tools are
/// unregistered). `max_attempts = 0` never restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// The wait before the first attempt.
    pub initial_delay: Duration,
    /// The longest wait between attempts.
    pub max_delay: Duration,
    /// Attempts before giving up.
    pub max_attempts: u32,
    /// How long a connection must last for the count of attempts to start
    /// over.
    pub stable_after: Duration,
    /// How often an HTTP server is pinged while it runs, so a server that
    /// went away is noticed (and restarted) without waiting for a call;
    /// `Duration::ZERO` does not ping. A stdio server's drop is noticed at
    /// once.
    pub probe_every: Duration,
}

impl Default for RestartPolicy {
    /// 500 ms doubling to 30 s, at most 10 attempts; the count starts
    /// over once a connection lasted 60 s; HTTP servers pinged every 15 s.
    fn default() -> Self {
        RestartPolicy {
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_attempts: 10,
            stable_after: Duration::from_secs(60),
            probe_every: Duration::from_secs(15),
        }
    }
}

impl RestartPolicy {
    /// Never restart: a dropped server is exited at once.
    pub const NEVER: RestartPolicy = RestartPolicy {
        initial_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
        max_attempts: 0,
        stable_after: Duration::ZERO,
        probe_every: Duration::ZERO,
    };

    /// The wait before attempt `attempt` (1-based): `initial_delay ·
    /// 2^(attempt-1)`, capped at `max_delay` (attempt 0 counts as 1).
    pub fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.initial_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_delay)
    }
}

impl McpServerConfig {
    /// A stdio server `name` running `command` with no arguments, an empty
    /// environment (besides `PATH`/`HOME`), the default timeout, enabled.
    pub fn new(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// An HTTP server `name` at `url` (not checked here: see
    /// [`McpServerSpec::into_config`]) with no extra headers, the default
    /// timeout, enabled.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    fn with_transport(name: impl Into<String>, transport: McpTransport) -> Self {
        McpServerConfig {
            name: name.into(),
            transport,
            timeout: DEFAULT_TIMEOUT,
            enabled: true,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            validate_args: false,
            tool_prefix: DEFAULT_TOOL_PREFIX.to_string(),
            restart: RestartPolicy::default(),
        }
    }

    /// Appends arguments (stdio servers; no effect on an HTTP server).
    pub fn args<I, S>(mut self, more: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let McpTransport::Stdio { args, .. } = &mut self.transport {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets one environment variable of the server (stdio servers; no
    /// effect on an HTTP server).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory (stdio servers; no effect on an HTTP
    /// server).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Sets one header of an HTTP server (`${VAR}` is expanded at start;
    /// no effect on a stdio server).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Sets the per-call and start-up timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the first part of the tool names (`""` for `<server>__<tool>`).
    pub fn tool_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.tool_prefix = prefix.into();
        self
    }

    /// Sets the restart policy.
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.restart = policy;
        self
    }

    /// The program of a stdio server; `None` for an HTTP server.
    pub fn program(&self) -> Option<&str> {
        match &self.transport {
            McpTransport::Stdio { command, .. } => Some(command),
            McpTransport::Http { .. } => None,
        }
    }

    /// The command line (stdio) or the URL (HTTP): [`McpTransport::target`].
    pub fn target(&self) -> String {
        self.transport.target()
    }
}

/// One `[mcp.servers.NAME]` table of `dsh.toml`; turn it into a config
/// with [`McpServerSpec::into_config`]. Exactly one of `command` (a stdio
/// server) or `url` (streamable HTTP) is set.
///
/// ```toml
/// [mcp.servers.files]
/// command = "npx"
/// args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
/// env = { LOG_LEVEL = "warn" }
/// cwd = "/work"
/// timeout_ms = 30000
/// max_message_bytes = 16777216
/// validate_args = false
/// enabled = true
///
/// [mcp.servers.github]
/// url = "https://api.githubcopilot.com/mcp/"
/// headers = { X-Client = "dsh" }
/// bearer_token_env_var = "GITHUB_TOKEN"  # Authorization: Bearer $GITHUB_TOKEN
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    /// The program to run (a stdio server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The MCP endpoint of an HTTP server (`http://` or `https://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its arguments (stdio only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The server's environment besides `PATH`/`HOME` (stdio only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The working directory (stdio only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Extra request headers (HTTP only); values may hold `${VAR}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// A dsh environment variable whose value is sent as
    /// `Authorization: Bearer <value>` (HTTP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    /// Per-call timeout in milliseconds (default 60000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Largest message read from the server (default 16 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_message_bytes: Option<usize>,
    /// Validate arguments in dsh before calling (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub validate_args: bool,
    /// Whether the server is started (default true).
    #[serde(default = "default_enabled")]
    pub enabled: bool,
}

fn default_enabled() -> bool {
    true
}

impl McpServerSpec {
    /// The config of server `name` (the table key), with the default tool
    /// prefix and restart policy.
    ///
    /// # Errors
    /// `MCP_INVALID_CONFIG` when the name is not `[A-Za-z0-9_-]+`; when
    /// both or neither of `command` and `url` are set; when the command is
    /// empty; when the URL is not `http(s)://HOST…`; when `args`, `env` or
    /// `cwd` come with `url`, or `headers` or `bearer_token_env_var` with
    /// `command`; for a header name that is invalid or set by the
    /// transport itself, a malformed `${…}` in a header value, an
    /// `Authorization` header together with `bearer_token_env_var`; or when
    /// `timeout_ms` or `max_message_bytes` is 0.
    pub fn into_config(self, name: &str) -> Result<McpServerConfig, McpError> {
        check_name(name, name)?;
        let invalid = |reason: &str| McpError::invalid(name, reason);
        let transport = match (self.command, self.url) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "both `command` and `url` are set; a server is either a command (stdio) or a url (HTTP), keep one",
                ))
            }
            (None, None) => {
                return Err(invalid(
                    "neither `command` nor `url` is set; set `command` to run a stdio server or `url` for an HTTP server",
                ))
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(invalid(
                        "`command` is empty; set the program that runs the server",
                    ));
                }
                if !self.headers.is_empty() || self.bearer_token_env_var.is_some() {
                    return Err(invalid(
                        "`headers` and `bearer_token_env_var` apply only to HTTP servers (`url`), not to `command`",
                    ));
                }
                McpTransport::Stdio {
                    command,
                    args: self.args,
                    env: self.env,
                    cwd: self.cwd,
                }
            }
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err(invalid(
                        "`args`, `env` and `cwd` apply only to stdio servers (`command`), not to `url`",
                    ));
                }
                check_url(&url).map_err(|reason| McpError::invalid(name, reason))?;
                let mut headers = self.headers;
                for (key, value) in &headers {
                    check_header(key, value).map_err(|reason| McpError::invalid(name, reason))?;
                }
                if let Some(var) = self.bearer_token_env_var {
                    if !is_var_name(&var) {
                        return Err(McpError::invalid(
                            name,
                            format!("`bearer_token_env_var` {var:?} is not an environment variable name"),
                        ));
                    }
                    if headers.keys().any(|k| k.eq_ignore_ascii_case("authorization")) {
                        return Err(invalid(
                            "both `bearer_token_env_var` and an `Authorization` header are set; keep one",
                        ));
                    }
                    headers.insert("Authorization".to_string(), format!("Bearer ${{{var}}}"));
                }
                McpTransport::Http { url, headers }
            }
        };
        let timeout = match self.timeout_ms {
            None => DEFAULT_TIMEOUT,
            Some(0) => return Err(invalid("`timeout_ms` must be greater than 0")),
            Some(ms) => Duration::from_millis(ms),
        };
        let max_message_bytes = match self.max_message_bytes {
            None => DEFAULT_MAX_MESSAGE_BYTES,
            Some(0) => return Err(invalid("`max_message_bytes` must be greater than 0")),
            Some(n) => n,
        };
        let mut config = McpServerConfig::with_transport(name, transport);
        config.timeout = timeout;
        config.enabled = self.enabled;
        config.max_message_bytes = max_message_bytes;
        config.validate_args = self.validate_args;
        Ok(config)
    }
}

/// Parses the value of `--mcp 'NAME=COMMAND ARGS…'` or `--mcp
/// 'NAME=URL'` into a config with the default timeout.
///
/// When the part after the first `=` is one word starting with `http://`
/// or `https://`, the server is an HTTP server at that URL. Otherwise it is
/// split into words the way a POSIX shell splits them: whitespace separates
/// words; `'…'` is literal; inside `"…"` a backslash escapes `"`, `\`, `$`
/// and `` ` ``; outside quotes a backslash escapes the next character.
/// There is no variable expansion or globbing. Leading `KEY=VALUE` words
/// (before the command) set environment variables of the server, as in a
/// shell: `--mcp 'gh=GITHUB_TOKEN=… github-mcp'`.
///
/// # Errors
/// `MCP_INVALID_CONFIG` for a missing `=`, an empty or invalid name (allowed:
/// `[A-Za-z0-9_-]`), a missing command, an unbalanced quote, a trailing
/// backslash or a URL without a host — each message says which.
pub fn parse_mcp_flag(flag: &str) -> Result<McpServerConfig, McpError> {
    let Some((name, rest)) = flag.split_once('=') else {
        return Err(McpError::invalid(
            flag,
            "expected NAME=COMMAND ARGS… or NAME=URL (e.g. --mcp 'files=npx -y @modelcontextprotocol/server-filesystem .')",
        ));
    };
    let name = name.trim();
    check_name(name, flag)?;
    let url = rest.trim();
    if (url.starts_with("http://") || url.starts_with("https://"))
        && !url.contains(char::is_whitespace)
    {
        check_url(url).map_err(|reason| McpError::invalid(flag, reason))?;
        return Ok(McpServerConfig::http(name, url));
    }
    let words = split_words(rest).map_err(|reason| McpError::invalid(flag, reason))?;
    let mut words = words.into_iter().peekable();
    let mut env = BTreeMap::new();
    while let Some((key, value)) = words.peek().and_then(|w| env_assignment(w)) {
        env.insert(key, value);
        words.next();
    }
    let Some(command) = words.next() else {
        return Err(McpError::invalid(
            flag,
            format!("no command after \"{name}=\"; expected NAME=COMMAND ARGS… or NAME=URL"),
        ));
    };
    let mut config = McpServerConfig::new(name, command).args(words);
    if let McpTransport::Stdio { env: e, .. } = &mut config.transport {
        *e = env;
    }
    Ok(config)
}

/// Replaces every `${VAR}` in `value` by `lookup(VAR)`; `$` not followed by
/// `{` stays as it is.
///
/// # Errors
/// The name of the first variable `lookup` does not know (`Ok` text is
/// never part of an error, so a secret cannot leak through one), or a
/// description of a malformed `${…}`.
pub(crate) fn expand_vars(
    value: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err(ExpandError::Malformed(
                "`${` without a closing `}`".to_string(),
            ));
        };
        let var = &after[..end];
        if !is_var_name(var) {
            return Err(ExpandError::Malformed(format!(
                "`${{{var}}}` is not a variable reference (use ${{NAME}}, NAME of letters, digits and '_')"
            )));
        }
        match lookup(var) {
            Some(v) => out.push_str(&v),
            None => return Err(ExpandError::Unset(var.to_string())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Why [`expand_vars`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// This variable is not set.
    Unset(String),
    /// The value is not well-formed (the message says how).
    Malformed(String),
}

fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An `http://` or `https://` URL with a host.
fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("`url` {:?} is not a valid URL: {e}", masked_url(url)))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "`url` must start with http:// or https://, not {}://",
            parsed.scheme()
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("`url` {:?} has no host", masked_url(url)));
    }
    Ok(())
}

/// `url` with a password replaced by `***` (or as given when unparsable).
pub(crate) fn masked_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            // Only fails for URLs that cannot have credentials, which this
            // one has.
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

/// A header name HTTP accepts and the transport does not set itself, and a
/// value whose `${…}` references are well-formed.
fn check_header(key: &str, value: &str) -> Result<(), String> {
    if reqwest::header::HeaderName::from_bytes(key.as_bytes()).is_err() {
        return Err(format!(
            "header name {key:?} is not a valid HTTP header name"
        ));
    }
    if RESERVED_HEADERS.iter().any(|r| key.eq_ignore_ascii_case(r)) {
        return Err(format!(
            "header {key:?} is set by the MCP HTTP transport itself and cannot be configured"
        ));
    }
    match expand_vars(value, |_| Some(String::new())) {
        Err(ExpandError::Malformed(why)) => Err(format!("header {key:?}: {why}")),
        _ => Ok(()),
    }
}

/// Splits `input` into words like a POSIX shell (see [`parse_mcp_flag`]):
/// [`dsh_process::words::split_words`].
pub use dsh_process::words::split_words;

/// `KEY=VALUE` with `KEY` a shell identifier.
fn env_assignment(word: &str) -> Option<(String, String)> {
    let (key, value) = word.split_once('=')?;
    let mut chars = key.chars();
    let first = chars.next()?;
    let ident = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    ident.then(|| (key.to_string(), value.to_string()))
}

fn check_name(name: &str, input: &str) -> Result<(), McpError> {
    if name.is_empty() {
        return Err(McpError::invalid(
            input,
            "the server name is empty; expected NAME=COMMAND ARGS…",
        ));
    }
    if let Some(bad) = name.chars().find(|c| !is_name_char(*c)) {
        return Err(McpError::invalid(
            input,
            format!("the server name \"{name}\" contains {bad:?}; use only letters, digits, '_' and '-'"),
        ));
    }
    Ok(())
}

pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Quotes `word` for display so that [`split_words`] would read it back.
pub(crate) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_kernel::ErrorCode;

    fn words(s: &str) -> Vec<String> {
        split_words(s).expect("splits")
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(words("  a  b\tc "), ["a", "b", "c"]);
        assert_eq!(words(r#"'a b' "c d" e\ f"#), ["a b", "c d", "e f"]);
        assert_eq!(
            words(r#"'it''s' "say \"hi\"" 'a\b' "a\b""#),
            ["its", r#"say "hi""#, r"a\b", r"a\b"]
        );
        assert_eq!(words(r#"x'' "" ''"#), ["x", "", ""]);
        assert_eq!(words(r#"pre"mid"'post'"#), ["premidpost"]);
        assert_eq!(words(r#"'$HOME' "\$x""#), ["$HOME", "$x"]);
        assert!(words("").is_empty());
    }

    #[test]
    fn unbalanced_quotes_and_trailing_backslash_are_errors() {
        assert!(split_words("a 'b")
            .unwrap_err()
            .contains("single quote at byte 2"));
        assert!(split_words(r#"a "b\""#)
            .unwrap_err()
            .contains("double quote"));
        assert!(split_words("a \\")
            .unwrap_err()
            .contains("trailing backslash"));
    }

    #[test]
    fn parses_the_flag() {
        let c = parse_mcp_flag("files=npx -y '@scope/server files' \"/tmp/a b\"").expect("valid");
        assert_eq!(c.name, "files");
        let McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &c.transport
        else {
            panic!("a stdio server: {c:?}")
        };
        assert_eq!(command, "npx");
        assert_eq!(args, &["-y", "@scope/server files", "/tmp/a b"]);
        assert_eq!(c.timeout, DEFAULT_TIMEOUT);
        assert!(c.enabled && env.is_empty() && cwd.is_none());
        assert_eq!(c.target(), "npx -y '@scope/server files' '/tmp/a b'");
        assert_eq!(c.tool_prefix, "mcp");
        assert_eq!(c.restart, RestartPolicy::default());

        let c = parse_mcp_flag("gh=TOKEN=abc X_Y='1 2' server --flag=1").expect("valid");
        let McpTransport::Stdio {
            command, args, env, ..
        } = &c.transport
        else {
            panic!("a stdio server: {c:?}")
        };
        assert_eq!(command, "server");
        assert_eq!(args, &["--flag=1"]);
        assert_eq!(env.get("TOKEN").map(String::as_str), Some("abc"));
        assert_eq!(env.get("X_Y").map(String::as_str), Some("1 2"));
        // `=` in the command line belongs to the command line.
        assert_eq!(
            parse_mcp_flag("a=b=").unwrap_err().code(),
            "MCP_INVALID_CONFIG"
        );
    }

    #[test]
    fn a_flag_with_one_url_word_is_an_http_server() {
        let c = parse_mcp_flag("gh= https://example.com/mcp ").expect("valid");
        assert_eq!(
            c.transport,
            McpTransport::Http {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::new()
            }
        );
        assert_eq!(c.target(), "https://example.com/mcp");
        assert_eq!(c.transport.describe(), "url: https://example.com/mcp");
        // More than one word: a command line (a program named like a URL).
        let c = parse_mcp_flag("x=http://a b").expect("valid");
        assert!(matches!(c.transport, McpTransport::Stdio { .. }), "{c:?}");
        let e = parse_mcp_flag("x=http://").unwrap_err().to_string();
        assert!(e.contains("url"), "{e}");
    }

    #[test]
    fn flag_errors_say_what_is_wrong() {
        let msg = |f: &str| parse_mcp_flag(f).unwrap_err().to_string();
        assert!(msg("no-equals-sign").contains("expected NAME=COMMAND"));
        assert!(msg("=cmd").contains("name is empty"));
        assert!(msg("a b=cmd").contains("contains ' '"));
        assert!(msg("x=").contains("no command"));
        assert!(msg("x='cmd").contains("unbalanced single quote"));
    }

    fn spec(v: serde_json::Value) -> McpServerSpec {
        serde_json::from_value(v).expect("valid spec")
    }

    fn spec_error(v: serde_json::Value) -> String {
        let e = spec(v).into_config("s").unwrap_err();
        assert_eq!(e.code(), "MCP_INVALID_CONFIG");
        e.to_string()
    }

    #[test]
    fn spec_from_toml_shape() {
        let s = spec(serde_json::json!({
            "command": "srv", "args": ["a"], "env": {"K": "v"}, "timeout_ms": 250
        }));
        let c = s.clone().into_config("s1").expect("valid");
        assert_eq!(c.timeout, Duration::from_millis(250));
        assert!(c.enabled);
        assert_eq!(c.target(), "srv a");
        assert!(
            matches!(&c.transport, McpTransport::Stdio { env, .. } if env.get("K").map(String::as_str) == Some("v"))
        );
        assert!(s.clone().into_config("bad name").is_err());
        let zero = McpServerSpec {
            timeout_ms: Some(0),
            ..s
        };
        assert!(zero
            .into_config("s")
            .unwrap_err()
            .to_string()
            .contains("timeout_ms"));
    }

    #[test]
    fn an_http_spec_keeps_headers_and_adds_the_bearer_token() {
        let c = spec(serde_json::json!({
            "url": "https://user:pw@example.com/mcp",
            "headers": {"X-Team": "a ${TEAM} b"},
            "bearer_token_env_var": "GH_TOKEN",
            "max_message_bytes": 100
        }))
        .into_config("gh")
        .expect("valid");
        let McpTransport::Http { url, headers } = &c.transport else {
            panic!("an HTTP server: {c:?}")
        };
        assert_eq!(url, "https://user:pw@example.com/mcp");
        assert_eq!(headers["X-Team"], "a ${TEAM} b");
        assert_eq!(headers["Authorization"], "Bearer ${GH_TOKEN}");
        assert_eq!(c.max_message_bytes, 100);
        // The password never shows.
        assert_eq!(c.target(), "https://user:***@example.com/mcp");
    }

    #[test]
    fn exactly_one_of_command_and_url() {
        let e = spec_error(serde_json::json!({"command": "a", "url": "http://h/"}));
        assert!(e.contains("both `command` and `url`"), "{e}");
        let e = spec_error(serde_json::json!({}));
        assert!(e.contains("neither `command` nor `url`"), "{e}");
        let e = spec_error(serde_json::json!({"command": " "}));
        assert!(e.contains("`command` is empty"), "{e}");
    }

    #[test]
    fn http_and_stdio_keys_do_not_mix() {
        for extra in [
            serde_json::json!({"args": ["x"]}),
            serde_json::json!({"env": {"A": "b"}}),
            serde_json::json!({"cwd": "/tmp"}),
        ] {
            let mut v = serde_json::json!({"url": "http://127.0.0.1:1/mcp"});
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let e = spec_error(v);
            assert!(e.contains("only to stdio servers"), "{e}");
        }
        for extra in [
            serde_json::json!({"headers": {"A": "b"}}),
            serde_json::json!({"bearer_token_env_var": "T"}),
        ] {
            let mut v = serde_json::json!({"command": "srv"});
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let e = spec_error(v);
            assert!(e.contains("only to HTTP servers"), "{e}");
        }
    }

    #[test]
    fn bad_urls_and_headers_are_config_errors() {
        let e = spec_error(serde_json::json!({"url": "ftp://h/x"}));
        assert!(e.contains("http:// or https://"), "{e}");
        let e = spec_error(serde_json::json!({"url": "not a url"}));
        assert!(e.contains("not a valid URL"), "{e}");
        let e = spec_error(serde_json::json!({"url": "http://h/", "headers": {"Bad Name": "x"}}));
        assert!(e.contains("\"Bad Name\""), "{e}");
        let e = spec_error(serde_json::json!({"url": "http://h/", "headers": {"Accept": "x"}}));
        assert!(e.contains("set by the MCP HTTP transport"), "{e}");
        let e = spec_error(serde_json::json!({"url": "http://h/", "headers": {"A": "${OPEN"}}));
        assert!(e.contains("without a closing"), "{e}");
        let e = spec_error(serde_json::json!({
            "url": "http://h/", "headers": {"authorization": "x"}, "bearer_token_env_var": "T"
        }));
        assert!(e.contains("keep one"), "{e}");
        let e = spec_error(serde_json::json!({"url": "http://h/", "bearer_token_env_var": "A-B"}));
        assert!(e.contains("not an environment variable name"), "{e}");
        // An unknown key is rejected by serde.
        let err = serde_json::from_value::<McpServerSpec>(
            serde_json::json!({"url": "http://h/", "header": {}}),
        );
        assert!(err.is_err());
    }

    #[test]
    fn vars_expand_and_unset_ones_are_named() {
        let env = |k: &str| (k == "TOKEN").then(|| "s3cret".to_string());
        assert_eq!(
            expand_vars("Bearer ${TOKEN}", env),
            Ok("Bearer s3cret".into())
        );
        assert_eq!(expand_vars("$TOKEN and $", env), Ok("$TOKEN and $".into()));
        assert_eq!(
            expand_vars("${TOKEN}-${MISSING}", env),
            Err(ExpandError::Unset("MISSING".into()))
        );
        assert!(matches!(
            expand_vars("${1X}", env),
            Err(ExpandError::Malformed(_))
        ));
    }

    #[test]
    fn restart_delays_double_up_to_the_cap() {
        let p = RestartPolicy::default();
        let delays: Vec<u64> = (1..=10).map(|n| p.delay(n).as_millis() as u64).collect();
        assert_eq!(
            delays,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000]
        );
        assert_eq!(p.max_attempts, 10);
        assert_eq!(p.delay(0), p.delay(1));
        assert_eq!(p.delay(u32::MAX), Duration::from_secs(30));
    }
}
