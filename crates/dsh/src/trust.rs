//! Trust in project configs: which `./dsh.toml` files the user has trusted
//! or refused, recorded in `$XDG_CONFIG_HOME/dsh/trusted.toml`.
//!
//! A decision is keyed by the config's canonical path **and** the SHA-256
//! of its contents (`dsh.toml` and the `hooks.json` beside it), and records
//! the SHA-256 of every project file the config runs ([`project_files`]:
//! hook scripts, MCP server programs and scripts inside the project). A
//! trusted config that changes, or whose scripts change, appear or vanish
//! (a `git pull`), is undecided again until the user looks at it;
//! [`TrustStore::changes`] says what changed. The record file is written
//! atomically (a private temporary file renamed over it) with mode 0600:
//!
//! ```toml
//! [[project]]
//! path = "/home/me/src/app/dsh.toml"
//! sha256 = "9f86d081884c7d65…"
//! trusted = true
//!
//! [project.files]
//! "/home/me/src/app/hooks/check.sh" = "2c26b46b68ffc68f…"
//! ```
//!
//! A record without `files` (written by an earlier dsh) vouches for the
//! config only: it still counts for a config that runs no project file,
//! and leaves one that does undecided (docs/decisions/0002).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{self, lexical_normal, ConfigError, ConfigFile, FileConfig};

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
    /// Project file → SHA-256 of its contents; `None` in records of
    /// earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    files: Option<BTreeMap<PathBuf, String>>,
}

/// A project file a config runs, as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFile {
    /// Its absolute path (inside the project directory).
    pub path: PathBuf,
    /// The SHA-256 of its contents, lower-case hex.
    pub sha256: String,
    /// What runs it (`hook on Stop`, `mcp server "files"`).
    pub used_by: String,
}

/// One difference between a recorded decision and the project now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `dsh.toml` (or the `hooks.json` beside it) changed.
    Config(PathBuf),
    /// A file the config runs changed.
    Modified(PathBuf),
    /// A file the config ran is gone.
    Removed(PathBuf),
    /// The config now runs a project file it did not run (or that did not
    /// exist) when the decision was made.
    Added(PathBuf),
    /// The decision was recorded by an earlier dsh, which did not look at
    /// the files a config runs; the config runs this one.
    Unchecked(PathBuf),
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Config(p) => write!(f, "{} changed", p.display()),
            Change::Modified(p) => write!(f, "{} changed", p.display()),
            Change::Removed(p) => write!(f, "{} was removed", p.display()),
            Change::Added(p) => write!(f, "{} was added (now run by the config)", p.display()),
            Change::Unchecked(p) => write!(
                f,
                "{} is run by the config but was not checked when you decided (a decision recorded by an earlier dsh)",
                p.display()
            ),
        }
    }
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

    /// The decision recorded for the project config `cfg` as it is now:
    /// [`Decision::Trusted`] only when its text and every project file it
    /// runs ([`project_files`]) are as recorded; [`Decision::Refused`] when
    /// its text is as refused (its files do not matter: a refused config
    /// runs nothing).
    pub fn decision(&self, cfg: &ConfigFile) -> Decision {
        let Some(entry) = self.entry(&cfg.path) else {
            return Decision::Unknown { changed: false };
        };
        if entry.sha256 != content_hash(&cfg.text) {
            return Decision::Unknown { changed: true };
        }
        if !entry.trusted {
            return Decision::Refused;
        }
        let now = file_map(&project_files(cfg));
        let same = match &entry.files {
            Some(recorded) => *recorded == now,
            None => now.is_empty(),
        };
        if same {
            Decision::Trusted
        } else {
            Decision::Unknown { changed: true }
        }
    }

    /// What differs between the decision recorded for `cfg` and `cfg` as it
    /// is now, config first, then files by path; empty when nothing was
    /// recorded or nothing changed. Paths are shown relative to the
    /// project directory.
    pub fn changes(&self, cfg: &ConfigFile) -> Vec<Change> {
        let Some(entry) = self.entry(&cfg.path) else {
            return Vec::new();
        };
        let dir = project_dir(cfg);
        let show = |p: &Path| p.strip_prefix(&dir).unwrap_or(p).to_path_buf();
        let mut out = Vec::new();
        if entry.sha256 != content_hash(&cfg.text) {
            let name = cfg
                .path
                .file_name()
                .map_or_else(|| cfg.path.clone(), PathBuf::from);
            out.push(Change::Config(name));
        }
        let now = file_map(&project_files(cfg));
        match &entry.files {
            None => out.extend(now.keys().map(|p| Change::Unchecked(show(p)))),
            Some(recorded) => {
                for (path, hash) in recorded {
                    match now.get(path) {
                        None => out.push(Change::Removed(show(path))),
                        Some(h) if h != hash => out.push(Change::Modified(show(path))),
                        Some(_) => {}
                    }
                }
                for path in now.keys().filter(|p| !recorded.contains_key(*p)) {
                    out.push(Change::Added(show(path)));
                }
            }
        }
        out
    }

    /// Records `trusted` for the project config `cfg` as it is now (its
    /// text and the hash of every project file it runs), replacing any
    /// earlier decision about that path, and saves the file.
    ///
    /// # Errors
    /// The record file cannot be written (the message names it).
    pub fn record(&mut self, cfg: &ConfigFile, trusted: bool) -> Result<(), String> {
        let key = canonical(&cfg.path);
        self.file.projects.retain(|e| e.path != key);
        self.file.projects.push(TrustEntry {
            path: key,
            sha256: content_hash(&cfg.text),
            trusted,
            files: Some(file_map(&project_files(cfg))),
        });
        self.save()
    }

    fn entry(&self, path: &Path) -> Option<&TrustEntry> {
        let key = canonical(path);
        self.file.projects.iter().find(|e| e.path == key)
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
    for raised in file.raised_limits() {
        lines.push(format!(
            "{} = {} raises a limit above its default of {}",
            raised.key, raised.value, raised.limit.default
        ));
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

/// What [`describe_unsafe`] says, then one line per project file the
/// config runs with its hash (`runs the project file hooks/x.sh (sha256
/// 2c26b46b…)`): what a person trusting `cfg` vouches for.
pub fn describe(cfg: &ConfigFile) -> Vec<String> {
    let mut lines = describe_unsafe(&cfg.file);
    let dir = project_dir(cfg);
    for f in project_files(cfg) {
        let shown = f.path.strip_prefix(&dir).unwrap_or(&f.path);
        lines.push(format!(
            "{}: runs the project file {:?} (sha256 {})",
            f.used_by,
            shown.display().to_string(),
            f.sha256.get(..16).unwrap_or(&f.sha256)
        ));
    }
    lines
}

/// The project files `cfg` would run, by path, each once: every word of a
/// hook command (`[[hooks.<Event>]]` and `hooks.json`) and of an MCP
/// server's `command` and `args` that names an existing regular file inside
/// the project directory (the directory of `cfg.path`; an MCP server's
/// words are taken relative to its `cwd`). `./hooks/x.sh`, `hooks/x.sh`,
/// `bash hooks/x.sh`, `"$CLAUDE_PROJECT_DIR"/hooks/x.sh` and `python3
/// server.py` all count; a program found on `PATH` does not. Words are
/// split like a shell does, without expansion besides
/// `$CLAUDE_PROJECT_DIR` / `$DSH_PROJECT_DIR`; what a script itself runs is
/// not followed.
pub fn project_files(cfg: &ConfigFile) -> Vec<ProjectFile> {
    let dir = project_dir(cfg);
    let mut found: BTreeMap<PathBuf, ProjectFile> = BTreeMap::new();
    let mut scan = |command: &str, base: &Path, used_by: String| {
        for word in shell_words(command, &dir) {
            record(&mut found, &dir, &word, base, &used_by);
        }
    };
    if let Some(section) = &cfg.file.hooks {
        for (event, hook) in section.entries() {
            scan(&hook.command, &dir, format!("hook on {}", event.name()));
        }
    }
    for json in &cfg.file.claude_hooks {
        // An invalid file is reported when the configuration resolves.
        if let Ok((set, _)) = dsh_hooks::HookSet::from_claude_json(&json.text, "hooks.json") {
            for hook in set.iter() {
                scan(
                    &hook.command,
                    &dir,
                    format!("hooks.json hook on {}", hook.event.name()),
                );
            }
        }
    }
    for (name, spec) in &cfg.file.mcp.servers {
        let base = match &spec.cwd {
            Some(cwd) => std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.clone()),
            None => dir.clone(),
        };
        let mut words: Vec<String> = spec.command.iter().cloned().collect();
        words.extend(spec.args.iter().cloned());
        let used_by = format!("mcp server {name:?}");
        for word in words {
            // Each word as it is: no shell reads `command` or `args`.
            record(&mut found, &dir, &word, &base, &used_by);
        }
    }
    found.into_values().collect()
}

/// Records in `found`, as used by `used_by`, the file `word` names (taken
/// relative to `base`) when it lies inside `dir`, is not recorded yet and
/// is a regular file.
fn record(
    found: &mut BTreeMap<PathBuf, ProjectFile>,
    dir: &Path,
    word: &str,
    base: &Path,
    used_by: &str,
) {
    let path = lexical_normal(&config::anchored(Path::new(word), base, None));
    if !path.starts_with(dir) || found.contains_key(&path) {
        return;
    }
    if let Some(sha256) = file_hash(&path) {
        found.insert(
            path.clone(),
            ProjectFile {
                path,
                sha256,
                used_by: used_by.to_string(),
            },
        );
    }
}

/// The absolute, canonical directory of a project config.
fn project_dir(cfg: &ConfigFile) -> PathBuf {
    let dir = cfg.path.parent().unwrap_or(Path::new("."));
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

fn file_map(files: &[ProjectFile]) -> BTreeMap<PathBuf, String> {
    files
        .iter()
        .map(|f| (f.path.clone(), f.sha256.clone()))
        .collect()
}

/// The SHA-256 of the regular file at `path` (through symlinks), or `None`
/// when there is none or it cannot be read. Streamed in 64 KiB pieces.
fn file_hash(path: &Path) -> Option<String> {
    // Refuses (without blocking) anything but a regular file.
    let (mut file, _) = dsh_tools::regular::open(path).ok()?;
    let mut hasher = Sha256::new();
    dsh_tools::regular::for_each_chunk(&mut file, |chunk| hasher.update(chunk)).ok()?;
    Some(
        hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// The words of a shell command, split at blanks and at the operators `;
/// & | < > ( )`, quotes removed, `$CLAUDE_PROJECT_DIR` / `$DSH_PROJECT_DIR`
/// (bare or braced) replaced by `project`. Not a shell parser: good enough
/// to find the file names a command mentions.
fn shell_words(command: &str, project: &Path) -> Vec<String> {
    let project = project.display().to_string();
    let mut text = command.to_string();
    for var in ["CLAUDE_PROJECT_DIR", "DSH_PROJECT_DIR"] {
        text = text
            .replace(&format!("${{{var}}}"), &project)
            .replace(&format!("${var}"), &project);
    }
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (None, c) if c.is_whitespace() || ";&|<>()".contains(c) => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
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

    fn project(dir: &Path, text: &str) -> ConfigFile {
        std::fs::write(dir.join("dsh.toml"), text).unwrap();
        config::read_project(dir).unwrap().unwrap()
    }

    #[test]
    fn decisions_are_keyed_by_path_and_contents() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = project(dir.path(), "model = \"echo\"\n");
        let record = dir.path().join("conf/trusted.toml");
        let mut store = TrustStore::open_at(record.clone()).unwrap();
        assert_eq!(store.decision(&cfg), Decision::Unknown { changed: false });
        store.record(&cfg, true).unwrap();
        let store = TrustStore::open_at(record.clone()).unwrap();
        assert_eq!(store.decision(&cfg), Decision::Trusted);
        assert!(store.changes(&cfg).is_empty());
        let other = project(dir.path(), "model = \"other\"\n");
        assert_eq!(store.decision(&other), Decision::Unknown { changed: true });
        assert_eq!(
            store.changes(&other),
            [Change::Config(PathBuf::from("dsh.toml"))]
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&record).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mut store = TrustStore::open_at(record.clone()).unwrap();
        store.record(&cfg, false).unwrap();
        assert_eq!(store.entries().len(), 1, "one decision per path");
        assert_eq!(store.decision(&cfg), Decision::Refused);
        assert!(store.forget(&cfg.path).unwrap());
        assert!(!store.forget(&cfg.path).unwrap());
    }

    #[test]
    fn the_files_a_config_runs_are_part_of_the_decision() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("hooks")).unwrap();
        for f in ["a.sh", "b.sh", "c.sh", "d.py", "srv.js"] {
            std::fs::write(d.join("hooks").join(f), f).unwrap();
        }
        std::fs::write(d.join("outside-not-run"), "x").unwrap();
        let cfg = project(
            d,
            r#"
[[hooks.Stop]]
command = "./hooks/a.sh && bash hooks/b.sh --flag | tee /dev/null"
[[hooks.PreToolUse]]
command = "\"$CLAUDE_PROJECT_DIR\"/hooks/c.sh; python3 ${DSH_PROJECT_DIR}/hooks/d.py"
[mcp.servers.s]
command = "node"
args = ["srv.js", "/etc/hostname", "../../x"]
cwd = "hooks"
"#,
        );
        let files: Vec<String> = project_files(&cfg)
            .iter()
            .map(|f| {
                f.path
                    .strip_prefix(std::fs::canonicalize(d).unwrap())
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(
            files,
            [
                "hooks/a.sh",
                "hooks/b.sh",
                "hooks/c.sh",
                "hooks/d.py",
                "hooks/srv.js"
            ]
        );
        let record = d.join("conf/trusted.toml");
        let mut store = TrustStore::open_at(record.clone()).unwrap();
        store.record(&cfg, true).unwrap();
        let store = TrustStore::open_at(record).unwrap();
        assert_eq!(store.decision(&cfg), Decision::Trusted);
        std::fs::write(d.join("hooks/b.sh"), "changed").unwrap();
        std::fs::remove_file(d.join("hooks/srv.js")).unwrap();
        assert_eq!(store.decision(&cfg), Decision::Unknown { changed: true });
        assert_eq!(
            store.changes(&cfg),
            [
                Change::Modified(PathBuf::from("hooks/b.sh")),
                Change::Removed(PathBuf::from("hooks/srv.js"))
            ]
        );
        let lines = describe(&cfg);
        assert!(
            lines
                .iter()
                .any(|l| l.contains("\"hooks/b.sh\"") && l.contains("sha256")),
            "{lines:?}"
        );
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
