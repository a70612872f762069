//! Configuration: `dsh.toml`, then environment, then flags.
//!
//! The file is searched in the working directory, then in
//! `$XDG_CONFIG_HOME/dsh/` (default `~/.config/dsh/`), unless `--config` names
//! one. Unknown keys and bad values are errors naming the key and the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The parsed `dsh.toml`. Every field is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The default model (`echo`, `deepseek-v4-flash`, …).
    pub model: Option<String>,
    /// Where session logs go.
    pub session_dir: Option<PathBuf>,
    /// A file whose text is appended to the system prompt.
    pub system_prompt: Option<PathBuf>,
    /// Hard cap on steps per turn.
    pub max_steps: Option<u32>,
    /// DeepSeek adapter settings.
    #[serde(default)]
    pub deepseek: DeepSeekSection,
    /// Bash executor settings.
    #[serde(default)]
    pub bash: BashSection,
    /// MCP servers.
    #[serde(default)]
    pub mcp: McpSection,
}

/// `[deepseek]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeepSeekSection {
    /// API key (prefer the environment variable `DEEPSEEK_API_KEY`).
    pub api_key: Option<String>,
    /// Base URL (default `https://api.deepseek.com`).
    pub base_url: Option<String>,
    /// Extra model names served by the adapter.
    #[serde(default)]
    pub models: Vec<String>,
    /// `enabled` or `disabled`.
    pub thinking: Option<ThinkingSetting>,
    /// `high` or `max`.
    pub reasoning_effort: Option<EffortSetting>,
    /// Retries of transient failures (0 disables).
    pub max_retries: Option<u32>,
}

/// `thinking = "enabled" | "disabled"`
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingSetting {
    /// Thinking mode on.
    Enabled,
    /// Thinking mode off.
    Disabled,
}

/// `reasoning_effort = "high" | "max"`
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EffortSetting {
    /// High effort.
    High,
    /// Maximum effort.
    Max,
}

/// `[bash]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashSection {
    /// Default foreground timeout in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Cap on per-call timeouts in milliseconds.
    pub max_timeout_ms: Option<u64>,
    /// In-memory tail per stream in bytes.
    pub max_output_bytes: Option<usize>,
    /// Keep spill files after exit.
    pub keep_spill_files: Option<bool>,
}

/// `[mcp]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// `[mcp.servers.NAME]` tables: `command`, `args`, `env`, `cwd`,
    /// `timeout_ms`, `enabled`.
    #[serde(default)]
    pub servers: BTreeMap<String, dsh_mcp::McpServerSpec>,
}

/// A configuration error, naming the file and the key when it can.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file named by `--config` does not exist or cannot be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has an unknown key or bad value.
    #[error("invalid config file {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// toml's message, which names the key and the line.
        message: String,
    },
}

/// Where the config came from and what it says.
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    /// The file read, if any.
    pub path: Option<PathBuf>,
    /// Its contents (defaults when there was no file).
    pub file: FileConfig,
}

/// Finds and parses the configuration.
///
/// # Errors
/// An explicit `--config` file that cannot be read; any file that does not
/// parse (unknown keys included).
pub fn load(explicit: Option<&Path>, cwd: &Path) -> Result<LoadedConfig, ConfigError> {
    let path = match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => search(cwd),
    };
    let Some(path) = path else {
        return Ok(LoadedConfig::default());
    };
    let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
        path: path.clone(),
        source,
    })?;
    let file = parse(&text).map_err(|message| ConfigError::Invalid {
        path: path.clone(),
        message,
    })?;
    Ok(LoadedConfig {
        path: Some(path),
        file,
    })
}

/// Parses a `dsh.toml` text.
///
/// # Errors
/// toml's message (it names the offending key and line).
pub fn parse(text: &str) -> Result<FileConfig, String> {
    toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())
}

fn search(cwd: &Path) -> Option<PathBuf> {
    let local = cwd.join("dsh.toml");
    if local.is_file() {
        return Some(local);
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let global = base.join("dsh").join("dsh.toml");
    global.is_file().then_some(global)
}

/// `$XDG_DATA_HOME/dsh/sessions` (default `~/.local/share/dsh/sessions`).
pub fn default_session_dir() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("dsh").join("sessions")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_config_parses() {
        let cfg = parse(
            r#"
model = "deepseek-v4-pro"
max_steps = 20
[deepseek]
models = ["deepseek-v4-exp"]
thinking = "enabled"
reasoning_effort = "max"
[bash]
timeout_ms = 1000
[mcp.servers.files]
command = "mcp-files"
args = ["--root", "."]
env = { LOG = "1" }
"#,
        )
        .unwrap();
        assert_eq!(cfg.model.as_deref(), Some("deepseek-v4-pro"));
        assert_eq!(cfg.deepseek.thinking, Some(ThinkingSetting::Enabled));
        assert_eq!(cfg.deepseek.reasoning_effort, Some(EffortSetting::Max));
        assert_eq!(cfg.bash.timeout_ms, Some(1000));
        assert_eq!(cfg.mcp.servers["files"].args, ["--root", "."]);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let e = parse("modle = \"x\"").unwrap_err();
        assert!(e.contains("modle"), "{e}");
        let e = parse("[bash]\ntimeout_ms = \"soon\"").unwrap_err();
        assert!(e.contains("timeout_ms"), "{e}");
        let e = parse("[deepseek]\nthinking = \"maybe\"").unwrap_err();
        assert!(e.contains("thinking") || e.contains("maybe"), "{e}");
    }
}
