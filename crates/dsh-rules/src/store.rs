//! `permissions.toml`: the rules dsh writes for the user, one table per
//! project.
//!
//! ```toml
//! [projects."/home/me/src/app"]
//! allow = ["bash(cargo test:*)", "edit(src/**)"]
//! deny = []
//! ask = []
//! ```
//!
//! It lives in the user's configuration directory
//! (`$XDG_CONFIG_HOME/dsh/permissions.toml`); only the table whose key is
//! the current workspace's canonical path applies. dsh writes it
//! atomically (a temporary file renamed over it), private (0600, its
//! directory 0700 when dsh creates it).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::Kind;

/// The file's name in the configuration directory.
pub const RULES_FILE: &str = "permissions.toml";

/// A `permissions.toml` that cannot be read, parsed or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but cannot be read, or is not a regular file.
    #[error("cannot read {}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The file is not valid TOML or has an unknown key or a bad value.
    #[error("invalid {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// toml's message (it names the key and the line).
        message: String,
    },
    /// The file or its directory cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The rule to save cannot be parsed.
    #[error(transparent)]
    Rule(#[from] crate::RuleError),
}

impl dsh_protocol::codes::ErrorCode for StoreError {
    /// `PERMISSION_RULE_INVALID` for a bad rule, `INVALID_CONFIG` for
    /// everything else.
    fn code(&self) -> &str {
        match self {
            StoreError::Rule(_) => dsh_protocol::codes::PERMISSION_RULE_INVALID,
            _ => dsh_protocol::codes::INVALID_CONFIG,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    projects: BTreeMap<String, Lists>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Lists {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
}

/// The rules `permissions.toml` holds for one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectRules {
    /// The file.
    pub file: PathBuf,
    /// The project's key (its canonical path).
    pub project: String,
    /// The rules, by kind, in file order: deny, ask, allow.
    pub rules: Vec<(Kind, String)>,
}

impl ProjectRules {
    /// How the rules' source is shown: `permissions.toml
    /// [projects."/path"]`.
    pub fn source(&self) -> String {
        source_label(&self.project)
    }
}

/// `permissions.toml [projects."<project>"]`.
pub fn source_label(project: &str) -> String {
    format!("{RULES_FILE} [projects.{project:?}]")
}

/// The key of `project` in the file: its canonical path (as given when it
/// cannot be resolved).
pub fn project_key(project: &Path) -> String {
    std::fs::canonicalize(project)
        .unwrap_or_else(|_| project.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// The rules `config_dir/permissions.toml` holds for `project`; `None`
/// when the file or the project's table does not exist. The rules are
/// not parsed here (see [`crate::RuleSet::add`]).
///
/// # Errors
/// [`StoreError::Read`] for a file that is not a regular file or cannot be
/// read, [`StoreError::Invalid`] for one that does not parse (unknown
/// keys included).
pub fn load_project(config_dir: &Path, project: &Path) -> Result<Option<ProjectRules>, StoreError> {
    let path = config_dir.join(RULES_FILE);
    let Some(text) = read(&path)? else {
        return Ok(None);
    };
    let file: File = toml::from_str(&text).map_err(|e| StoreError::Invalid {
        path: path.clone(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let key = project_key(project);
    let Some(lists) = file.projects.get(&key) else {
        return Ok(None);
    };
    let mut rules = Vec::new();
    for (kind, list) in [
        (Kind::Deny, &lists.deny),
        (Kind::Ask, &lists.ask),
        (Kind::Allow, &lists.allow),
    ] {
        rules.extend(list.iter().map(|r| (kind, r.clone())));
    }
    Ok(Some(ProjectRules {
        file: path,
        project: key,
        rules,
    }))
}

/// The file's text; `None` when nothing is there.
fn read(path: &Path) -> Result<Option<String>, StoreError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(StoreError::Read {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
        }
    };
    if !meta.is_file() {
        return Err(StoreError::Read {
            path: path.to_path_buf(),
            message: "not a regular file".to_string(),
        });
    }
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| StoreError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

/// Appends `rule` to the `allow` list of `project` (its canonical path) in
/// `config_dir/permissions.toml`, creating the file (0600) and the
/// directory (0700) when missing. Idempotent: `Ok(false)` when the rule
/// is already there (nothing is written), `Ok(true)` when it was added.
/// Other projects' tables and keys are kept; the file is replaced
/// atomically.
///
/// # Errors
/// [`StoreError::Rule`] for a rule that does not parse (nothing is
/// written); [`StoreError::Read`]/[`StoreError::Invalid`] for an existing
/// file that cannot be read or parsed (it is left alone);
/// [`StoreError::Write`] when the file cannot be written.
pub fn save_rule(config_dir: &Path, project: &Path, rule: &str) -> Result<bool, StoreError> {
    let rule = rule.trim();
    let key = project_key(project);
    crate::rule::parse(rule, Some(Path::new("/"))).map_err(|reason| crate::RuleError {
        rule: rule.to_string(),
        kind: Kind::Allow,
        source_name: source_label(&key),
        reason,
    })?;
    let path = config_dir.join(RULES_FILE);
    let text = read(&path)?.unwrap_or_default();
    let invalid = |message: String| StoreError::Invalid {
        path: path.clone(),
        message,
    };
    // Checked against the schema first, so a file dsh would refuse to load
    // is never made worse.
    toml::from_str::<File>(&text).map_err(|e| invalid(e.to_string().trim_end().to_string()))?;
    let mut doc: toml::Table = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    let projects = doc
        .entry("projects")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .ok_or_else(|| invalid("`projects` is not a table".to_string()))?;
    let table = projects
        .entry(key.clone())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .ok_or_else(|| invalid(format!("projects.{key:?} is not a table")))?;
    let allow = table
        .entry("allow")
        .or_insert_with(|| toml::Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| invalid(format!("projects.{key:?}.allow is not a list")))?;
    if allow.iter().any(|v| v.as_str() == Some(rule)) {
        return Ok(false);
    }
    allow.push(toml::Value::String(rule.to_string()));
    let mut out = String::from(
        "# Permission rules dsh saved (\"always allow\" answers), per project.\n# See docs/permissions.md; `dsh permissions list` shows the rules in force.\n\n",
    );
    out.push_str(&toml::to_string(&doc).map_err(|e| invalid(e.to_string()))?);
    write_atomic(config_dir, &path, out.as_bytes())?;
    Ok(true)
}

/// Writes `bytes` to `path` through a private temporary file in `dir`
/// renamed over it; creates `dir` (0700) when missing.
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let failed = |p: &Path| {
        let p = p.to_path_buf();
        move |source| StoreError::Write { path: p, source }
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(failed(dir))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(".{RULES_FILE}.{}.{nanos}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(failed(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn saving_is_idempotent_private_and_keeps_other_projects() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("cfg/dsh");
        let project = dir.path().join("proj");
        std::fs::create_dir(&project).unwrap();
        assert_eq!(load_project(&config, &project).unwrap(), None);
        assert!(save_rule(&config, &project, "bash(cargo test:*)").unwrap());
        assert!(!save_rule(&config, &project, " bash(cargo test:*) ").unwrap());
        assert!(save_rule(&config, Path::new("/elsewhere"), "edit(src/**)").unwrap());
        assert!(save_rule(&config, &project, "mcp__github__*").unwrap());
        let file = config.join(RULES_FILE);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&config), 0o700);
        let loaded = load_project(&config, &project).unwrap().unwrap();
        assert_eq!(
            loaded.rules,
            vec![
                (Kind::Allow, "bash(cargo test:*)".to_string()),
                (Kind::Allow, "mcp__github__*".to_string())
            ]
        );
        assert_eq!(loaded.project, project_key(&project));
        assert!(loaded
            .source()
            .starts_with("permissions.toml [projects.\"/"));
        let other = load_project(&config, Path::new("/elsewhere"))
            .unwrap()
            .unwrap();
        assert_eq!(other.rules, vec![(Kind::Allow, "edit(src/**)".to_string())]);
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&config)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(RULES_FILE)]);
    }

    #[test]
    fn bad_rules_and_bad_files_are_refused_without_writing() {
        let dir = tempfile::tempdir().unwrap();
        let err = save_rule(dir.path(), dir.path(), "bash(").unwrap_err();
        assert!(matches!(err, StoreError::Rule(_)), "{err}");
        assert!(err.to_string().contains("\"bash(\""), "{err}");
        assert!(!dir.path().join(RULES_FILE).exists());
        let file = dir.path().join(RULES_FILE);
        std::fs::write(&file, "[projects.\"/x\"]\nallow = \"not a list\"\n").unwrap();
        let err = save_rule(dir.path(), Path::new("/x"), "bash").unwrap_err();
        assert!(matches!(err, StoreError::Invalid { .. }), "{err}");
        assert!(load_project(dir.path(), Path::new("/x")).is_err());
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "[projects.\"/x\"]\nallow = \"not a list\"\n"
        );
        std::fs::write(&file, "[project]\n").unwrap();
        let err = load_project(dir.path(), Path::new("/x")).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
        std::fs::remove_file(&file).unwrap();
        std::fs::create_dir(&file).unwrap();
        assert!(matches!(
            load_project(dir.path(), Path::new("/x")),
            Err(StoreError::Read { .. })
        ));
    }
}
