//! Trust in project configs: which `./dsh.toml` files the user has trusted
//! or refused, recorded in `$XDG_CONFIG_HOME/dsh/trusted.toml`.
//!
//! A decision is keyed by the config's canonical path **and** the SHA-256
//! of its contents: a trusted file that changes (a `git pull`) is untrusted
//! again until the user looks at it. The record file is written atomically
//! (a private temporary file renamed over it) with mode 0600:
//!
//! ```toml
//! [[project]]
//! path = "/home/me/src/app/dsh.toml"
//! sha256 = "9f86d081884c7d65…"
//! trusted = true
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{self, ConfigError, FileConfig};

/// What the user decided about one project config, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Trusted in its current contents.
    Trusted,
    /// Refused in its current contents: only its harmless keys apply.
    Refused,
    /// Never decided, or decided about other contents (`changed`).
    Unknown {
        /// A decision exists for this path, but the file changed since.
        changed: bool,
    },
}

/// What a front end does with a project config the user has not trusted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProjectTrust {
    /// Refuse to run (a usage error naming `dsh trust`) when an undecided
    /// project config sets unsafe keys; a refused one applies its harmless
    /// keys with a warning. `dsh run` and `dsh acp`.
    #[default]
    Refuse,
    /// Apply only the harmless keys of an untrusted config, with a warning.
    /// Commands that only look (`dsh tools list`, `dsh mcp list`).
    IgnoreUnsafe,
    /// Trust it for this invocation (`--trust-project`), whatever was
    /// recorded.
    Trust,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    #[serde(default, rename = "project")]
    projects: Vec<TrustEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustEntry {
    path: PathBuf,
    sha256: String,
    trusted: bool,
}

/// The recorded decisions (`trusted.toml`).
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    file: TrustFile,
}

impl TrustStore {
    /// Reads `$XDG_CONFIG_HOME/dsh/trusted.toml` (empty when missing).
    ///
    /// # Errors
    /// No config directory (neither `XDG_CONFIG_HOME` nor `HOME`); a record
    /// file that cannot be read or does not parse (trust fails closed: the
    /// error names the file so the user can fix or remove it).
    pub fn open() -> Result<TrustStore, ConfigError> {
        let dir = config::user_config_dir().ok_or_else(|| ConfigError::Invalid {
            path: PathBuf::from("trusted.toml"),
            message: "neither XDG_CONFIG_HOME nor HOME is set".into(),
        })?;
        Self::open_at(dir.join("trusted.toml"))
    }

    /// Reads the record file at `path` (empty when missing).
    ///
    /// # Errors
    /// As [`TrustStore::open`].
    pub fn open_at(path: PathBuf) -> Result<TrustStore, ConfigError> {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let file = toml::from_str(&text).map_err(|e| ConfigError::Invalid {
            path: path.clone(),
            message: e.to_string().trim_end().to_string(),
        })?;
        Ok(TrustStore { path, file })
    }

    /// The record file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The decision recorded for the config at `path` with contents `text`.
    pub fn decision(&self, path: &Path, text: &str) -> Decision {
        let key = canonical(path);
        let hash = content_hash(text);
        match self.file.projects.iter().find(|e| e.path == key) {
            Some(e) if e.sha256 == hash => {
                if e.trusted {
                    Decision::Trusted
                } else {
                    Decision::Refused
                }
            }
            Some(_) => Decision::Unknown { changed: true },
            None => Decision::Unknown { changed: false },
        }
    }

    /// Records `trusted` for the config at `path` with contents `text`
    /// (replacing any earlier decision about that path) and saves the file.
    ///
    /// # Errors
    /// The record file cannot be written (the message names it).
    pub fn record(&mut self, path: &Path, text: &str, trusted: bool) -> Result<(), String> {
        let key = canonical(path);
        self.file.projects.retain(|e| e.path != key);
        self.file.projects.push(TrustEntry {
            path: key,
            sha256: content_hash(text),
            trusted,
        });
        self.save()
    }

    /// Forgets the decision about `path`; whether there was one.
    ///
    /// # Errors
    /// The record file cannot be written.
    pub fn forget(&mut self, path: &Path) -> Result<bool, String> {
        let key = canonical(path);
        let before = self.file.projects.len();
        self.file.projects.retain(|e| e.path != key);
        if self.file.projects.len() == before {
            return Ok(false);
        }
        self.save().map(|()| true)
    }

    /// Every recorded decision as `(path, trusted)`, in record order.
    pub fn entries(&self) -> Vec<(PathBuf, bool)> {
        self.file
            .projects
            .iter()
            .map(|e| (e.path.clone(), e.trusted))
            .collect()
    }

    fn save(&self) -> Result<(), String> {
        let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", self.path.display());
        let dir = self
            .path
            .parent()
            .ok_or_else(|| fail(&"no parent directory"))?;
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        let mut text = String::from(
            "# Project configs (dsh.toml) you trusted or refused; see `dsh trust --help`.\n",
        );
        text.push_str(&toml::to_string(&self.file).map_err(|e| fail(&e))?);
        // NamedTempFile: random name, exclusive create, mode 0600.
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(&e))?;
        tmp.write_all(text.as_bytes()).map_err(|e| fail(&e))?;
        tmp.as_file().sync_all().map_err(|e| fail(&e))?;
        tmp.persist(&self.path).map_err(|e| fail(&e.error))?;
        Ok(())
    }
}

/// What the unsafe keys of `file` would do, one line each, for a person
/// deciding whether to trust it. Values are quoted with escapes (`{:?}`),
/// so a hostile file cannot put control sequences on the terminal.
pub fn describe_unsafe(file: &FileConfig) -> Vec<String> {
    let mut lines = Vec::new();
    for (name, spec) in &file.mcp.servers {
        match (&spec.command, &spec.url) {
            (Some(command), _) => {
                let mut cmd = format!("{command:?}");
                for a in &spec.args {
                    cmd.push_str(&format!(" {a:?}"));
                }
                lines.push(format!("mcp server {name:?} runs the command {cmd}"));
            }
            (None, Some(url)) => {
                // Header names only: their values may be secrets.
                let mut sent: Vec<String> = spec.headers.keys().map(|k| format!("{k:?}")).collect();
                if let Some(var) = &spec.bearer_token_env_var {
                    sent.push(format!("a bearer token from ${var}"));
                }
                let with = if sent.is_empty() {
                    String::new()
                } else {
                    format!(" sending {}", sent.join(", "))
                };
                lines.push(format!("mcp server {name:?} connects to {url:?}{with}"));
            }
            (None, None) => lines.push(format!("mcp server {name:?} (no command or url)")),
        }
    }
    if let Some(section) = &file.hooks {
        for (event, hook) in section.entries() {
            lines.push(format!(
                "hook on {}: runs the command {:?}",
                event.name(),
                hook.command
            ));
        }
    }
    for json in &file.claude_hooks {
        lines.push(format!(
            "{}: Claude Code hooks (commands run on agent events)",
            json.path.display()
        ));
    }
    if let Some(url) = &file.deepseek.base_url {
        lines.push(format!(
            "deepseek.base_url = {url:?}: your API key and conversation would be sent there"
        ));
    }
    if file.deepseek.api_key.is_some() {
        lines.push("deepseek.api_key: requests would use the project's key (its owner could read your conversation)".into());
    }
    if let Some(p) = &file.system_prompt {
        lines.push(format!(
            "system_prompt = {:?}: that file's text is sent to the model",
            p.display().to_string()
        ));
    }
    if let Some(p) = &file.session_dir {
        lines.push(format!(
            "session_dir = {:?}: your conversations are saved there",
            p.display().to_string()
        ));
    }
    if let Some(names) = &file.bash.env_passthrough {
        lines.push(format!(
            "bash.env_passthrough = {names:?}: these variables reach every command the model runs"
        ));
    }
    if file.sandbox.is_some() {
        lines.push("sandbox: changes how commands are confined".into());
    }
    if file.permission.is_some() {
        lines.push("permission: changes what runs without asking".into());
    }
    lines
}

/// The SHA-256 of `text`, lower-case hex.
pub fn content_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_keyed_by_path_and_contents() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("dsh.toml");
        std::fs::write(&cfg, "model = \"echo\"\n").unwrap();
        let record = dir.path().join("conf/trusted.toml");
        let mut store = TrustStore::open_at(record.clone()).unwrap();
        assert_eq!(
            store.decision(&cfg, "model = \"echo\"\n"),
            Decision::Unknown { changed: false }
        );
        store.record(&cfg, "model = \"echo\"\n", true).unwrap();
        let store = TrustStore::open_at(record.clone()).unwrap();
        assert_eq!(
            store.decision(&cfg, "model = \"echo\"\n"),
            Decision::Trusted
        );
        assert_eq!(
            store.decision(&cfg, "model = \"other\"\n"),
            Decision::Unknown { changed: true }
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&record).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mut store = TrustStore::open_at(record.clone()).unwrap();
        store.record(&cfg, "model = \"echo\"\n", false).unwrap();
        assert_eq!(store.entries().len(), 1, "one decision per path");
        assert_eq!(
            store.decision(&cfg, "model = \"echo\"\n"),
            Decision::Refused
        );
        assert!(store.forget(&cfg).unwrap());
        assert!(!store.forget(&cfg).unwrap());
    }

    #[test]
    fn a_corrupt_record_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("trusted.toml");
        std::fs::write(&record, "[[project]]\npath = 3\n").unwrap();
        let e = TrustStore::open_at(record).unwrap_err();
        assert!(e.to_string().contains("trusted.toml"), "{e}");
    }

    #[test]
    fn content_hash_is_sha256() {
        assert_eq!(
            content_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
