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

/// How to run one MCP server.
///
/// The server's environment is exactly `env` plus `PATH` and `HOME` copied
/// from the harness (unless `env` sets them): the harness environment —
/// API keys included — never leaks into a server unless configured here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name: the prefix of its tools (`<name>__<tool>`), shown
    /// in logs and errors. Characters outside `[A-Za-z0-9_-]` are replaced by
    /// `_` in tool names.
    pub name: String,
    /// The program to run (looked up in `PATH` when it has no `/`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The server's whole environment besides `PATH`/`HOME`.
    pub env: BTreeMap<String, String>,
    /// The working directory; the harness's when `None`.
    pub cwd: Option<PathBuf>,
    /// Per-call timeout, also the bound on start-up (spawn + `initialize` +
    /// `tools/list`). Default [`DEFAULT_TIMEOUT`].
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
}

impl McpServerConfig {
    /// A server `name` running `command` with no arguments, an empty
    /// environment (besides `PATH`/`HOME`), the default timeout, enabled.
    pub fn new(name: impl Into<String>, command: impl Into<String>) -> Self {
        McpServerConfig {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            timeout: DEFAULT_TIMEOUT,
            enabled: true,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            validate_args: false,
        }
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets one environment variable of the server.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the per-call and start-up timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The command line, shell-quoted (for messages and `dsh mcp list`).
    pub fn command_line(&self) -> String {
        std::iter::once(&self.command)
            .chain(&self.args)
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One `[mcp.servers.NAME]` table of `dsh.toml`; turn it into a config
/// with [`McpServerSpec::into_config`].
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
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    /// The program to run.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// The server's environment (besides `PATH`/`HOME`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
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
    /// The config of server `name` (the table key).
    ///
    /// # Errors
    /// `MCP_INVALID_CONFIG` when the name is not `[A-Za-z0-9_-]+`, the
    /// command is empty, or `timeout_ms` or `max_message_bytes` is 0.
    pub fn into_config(self, name: &str) -> Result<McpServerConfig, McpError> {
        check_name(name, name)?;
        if self.command.trim().is_empty() {
            return Err(McpError::invalid(
                name,
                "`command` is empty; set the program that runs the server",
            ));
        }
        let timeout = match self.timeout_ms {
            None => DEFAULT_TIMEOUT,
            Some(0) => {
                return Err(McpError::invalid(
                    name,
                    "`timeout_ms` must be greater than 0",
                ))
            }
            Some(ms) => Duration::from_millis(ms),
        };
        let max_message_bytes = match self.max_message_bytes {
            None => DEFAULT_MAX_MESSAGE_BYTES,
            Some(0) => {
                return Err(McpError::invalid(
                    name,
                    "`max_message_bytes` must be greater than 0",
                ))
            }
            Some(n) => n,
        };
        Ok(McpServerConfig {
            name: name.to_string(),
            command: self.command,
            args: self.args,
            env: self.env,
            cwd: self.cwd,
            timeout,
            enabled: self.enabled,
            max_message_bytes,
            validate_args: self.validate_args,
        })
    }
}

/// Parses the value of `--mcp 'NAME=COMMAND ARGS…'` into a config with the
/// default timeout.
///
/// The part after the first `=` is split into words the way a POSIX shell
/// splits them: whitespace separates words; `'…'` is literal; inside `"…"`
/// a backslash escapes `"`, `\`, `$` and `` ` ``; outside quotes a backslash
/// escapes the next character. There is no variable expansion or globbing.
/// Leading `KEY=VALUE` words (before the command) set environment variables
/// of the server, as in a shell: `--mcp 'gh=GITHUB_TOKEN=… github-mcp'`.
///
/// # Errors
/// `MCP_INVALID_CONFIG` for a missing `=`, an empty or invalid name (allowed:
/// `[A-Za-z0-9_-]`), a missing command, an unbalanced quote or a trailing
/// backslash — each message says which.
pub fn parse_mcp_flag(flag: &str) -> Result<McpServerConfig, McpError> {
    let Some((name, rest)) = flag.split_once('=') else {
        return Err(McpError::invalid(
            flag,
            "expected NAME=COMMAND ARGS… (e.g. --mcp 'files=npx -y @modelcontextprotocol/server-filesystem .')",
        ));
    };
    let name = name.trim();
    check_name(name, flag)?;
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
            format!("no command after \"{name}=\"; expected NAME=COMMAND ARGS…"),
        ));
    };
    let mut config = McpServerConfig::new(name, command).args(words);
    config.env = env;
    Ok(config)
}

/// Splits `input` into words like a POSIX shell (see [`parse_mcp_flag`]).
///
/// # Errors
/// A message naming the unbalanced quote and its byte offset, or a trailing
/// backslash.
pub fn split_words(input: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    // A word exists once something (even an empty quoted string) started it.
    let mut in_word = false;
    let mut chars = input.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, c)) => word.push(c),
                        None => return Err(format!("unbalanced single quote at byte {at}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, c @ ('"' | '\\' | '$' | '`'))) => word.push(c),
                            Some((_, '\n')) => {}
                            Some((_, c)) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(format!("unbalanced double quote at byte {at}")),
                        },
                        Some((_, c)) => word.push(c),
                        None => return Err(format!("unbalanced double quote at byte {at}")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, c)) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err("trailing backslash at the end of the command line".to_string()),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

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
        assert_eq!(c.command, "npx");
        assert_eq!(c.args, ["-y", "@scope/server files", "/tmp/a b"]);
        assert_eq!(c.timeout, DEFAULT_TIMEOUT);
        assert!(c.enabled && c.env.is_empty() && c.cwd.is_none());
        assert_eq!(c.command_line(), "npx -y '@scope/server files' '/tmp/a b'");

        let c = parse_mcp_flag("gh=TOKEN=abc X_Y='1 2' server --flag=1").expect("valid");
        assert_eq!(c.command, "server");
        assert_eq!(c.args, ["--flag=1"]);
        assert_eq!(c.env.get("TOKEN").map(String::as_str), Some("abc"));
        assert_eq!(c.env.get("X_Y").map(String::as_str), Some("1 2"));
        // `=` in the command line belongs to the command line.
        assert_eq!(
            parse_mcp_flag("a=b=").unwrap_err().code(),
            "MCP_INVALID_CONFIG"
        );
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

    #[test]
    fn spec_from_toml_shape() {
        let spec: McpServerSpec = serde_json::from_value(serde_json::json!({
            "command": "srv", "args": ["a"], "env": {"K": "v"}, "timeout_ms": 250
        }))
        .expect("valid spec");
        let c = spec.clone().into_config("s1").expect("valid");
        assert_eq!(c.timeout, Duration::from_millis(250));
        assert!(c.enabled);
        assert_eq!(c.env.get("K").map(String::as_str), Some("v"));
        assert!(spec.clone().into_config("bad name").is_err());
        let zero = McpServerSpec {
            timeout_ms: Some(0),
            ..spec
        };
        assert!(zero
            .into_config("s")
            .unwrap_err()
            .to_string()
            .contains("timeout_ms"));
    }
}
