//! Lasting permission rules on the stack (the engine is the `dsh-rules`
//! crate; the user's guide is `docs/permissions.md`).
//!
//! - [`resolve`] gathers the rules of `[permission] allow`/`deny`/`ask` in
//!   the user config and a trusted project config (each with its file) and
//!   of the current project's table in `permissions.toml`; a rule that
//!   cannot be parsed is a configuration problem naming the rule and its
//!   file (`PERMISSION_RULE_INVALID`).
//! - [`install`] adds the `tools/pre-execute` guard: a deny rule refuses
//!   the call, an ask rule asks the user even where the permission mode
//!   would let the call run.
//! - [`Rules::answers`] is what the approver consults before putting a
//!   question: an allow rule answers a PreToolUse hook's ask and an
//!   escalation to `workspace-write` (still confined); an escalation to
//!   `danger-full-access` is always asked. A rule never widens the mode.
//! - [`Rules::suggest`] and [`Rules::save_for_project`] are the "always
//!   allow" dialog's two halves.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use dsh_bash_local::LocalBashExecutor;
use dsh_kernel::sync::{read, write};
use dsh_kernel::Registration;
use dsh_protocol::{SandboxMode, ToolCall};
use dsh_rules::{Kind, Outcome, RuleSet, StoreError};
use dsh_tools::{PreExecute, Question, ToolRegistry, Verdict};
use serde_json::Value;

use crate::config::{ConfigOrigin, FileConfig, PermissionSection};

/// Sets the source of every `[permission]` rule of `file` (read from
/// `path`, an absolute path, as `origin`): the path with the home
/// directory shown as `~`, or `./dsh.toml (trusted)` for the project
/// config (whose rules apply only when it is trusted).
pub fn label_sources(file: &mut FileConfig, path: &Path, origin: ConfigOrigin) {
    let Some(section) = file.permission.as_mut() else {
        return;
    };
    let label = match origin {
        ConfigOrigin::Project => "./dsh.toml (trusted)".to_string(),
        ConfigOrigin::User | ConfigOrigin::Explicit => tilde(path),
    };
    for rule in section
        .allow
        .iter_mut()
        .chain(section.deny.iter_mut())
        .chain(section.ask.iter_mut())
    {
        rule.source = label.clone();
    }
}

/// `path` with the home directory written `~`.
fn tilde(path: &Path) -> String {
    match crate::config::home_dir().and_then(|h| path.strip_prefix(h).ok().map(Path::to_path_buf)) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

/// The rules in force in `cwd`: those of `section` (the merged
/// `[permission]` of the files that apply), then the project's table of
/// `permissions.toml` in the user's configuration directory. `mcp_prefix`:
/// how dsh names MCP tools. Each rule that cannot be parsed, and a
/// `permissions.toml` that cannot be read, is reported to `problem` (and
/// left out).
pub fn resolve(
    section: Option<&PermissionSection>,
    cwd: &Path,
    mcp_prefix: &str,
    problem: &mut dyn FnMut(String),
) -> RuleSet {
    let home = crate::config::home_dir();
    let mut set = RuleSet::new(cwd, home.as_deref(), mcp_prefix);
    if let Some(section) = section {
        for (kind, list) in [
            (Kind::Deny, &section.deny),
            (Kind::Ask, &section.ask),
            (Kind::Allow, &section.allow),
        ] {
            for rule in list {
                if let Err(e) = set.add(kind, &rule.text, &rule.source) {
                    problem(e.to_string());
                }
            }
        }
    }
    if let Some(dir) = crate::config::user_config_dir() {
        match dsh_rules::load_project(&dir, cwd) {
            Ok(Some(project)) => {
                let source = project.source();
                for (kind, text) in &project.rules {
                    if let Err(e) = set.add(*kind, text, &source) {
                        problem(format!("{e} (in {})", project.file.display()));
                    }
                }
            }
            Ok(None) => {}
            Err(e) => problem(format!("invalid config [INVALID_CONFIG]: {e}")),
        }
    }
    set
}

/// The rules of a running stack: read by the guard and the approver,
/// extended when the user saves an "always allow" rule.
#[derive(Debug)]
pub struct Rules {
    set: RwLock<Arc<RuleSet>>,
    config_dir: Option<PathBuf>,
}

impl Rules {
    /// The rules of `set`; saved rules go to `permissions.toml` in the
    /// user's configuration directory (as found now).
    pub fn new(set: RuleSet) -> Arc<Rules> {
        Arc::new(Rules {
            set: RwLock::new(Arc::new(set)),
            config_dir: crate::config::user_config_dir(),
        })
    }

    /// The rules in force now.
    pub fn current(&self) -> Arc<RuleSet> {
        read(&self.set).clone()
    }

    /// The rule an "always allow" answer about `call` would save (see
    /// [`dsh_rules::suggest_for`]; files inside the workspace are named
    /// relative to it), or `None` when no rule fits.
    pub fn suggest(&self, call: &ToolCall) -> Option<String> {
        let set = self.current();
        dsh_rules::suggest_for(set.workspace(), &call.name, &call.arguments)
    }

    /// Saves `rule` as an allow rule of this workspace in
    /// `permissions.toml` and applies it from now on. `Ok(false)`: it was
    /// saved already (nothing written).
    ///
    /// # Errors
    /// [`StoreError`]: a rule that does not parse, a `permissions.toml`
    /// that cannot be read, parsed or written, no configuration directory
    /// (neither `XDG_CONFIG_HOME` nor `HOME` set).
    pub fn save_for_project(&self, rule: &str) -> Result<bool, StoreError> {
        let dir = self
            .config_dir
            .as_deref()
            .ok_or_else(|| StoreError::Write {
                path: PathBuf::from(dsh_rules::RULES_FILE),
                source: std::io::Error::other(
                    "no configuration directory: set XDG_CONFIG_HOME or HOME",
                ),
            })?;
        let mut guard = write(&self.set);
        let workspace = guard.workspace().to_path_buf();
        let added = dsh_rules::save_rule(dir, &workspace, rule)?;
        let source = dsh_rules::store::source_label(&dsh_rules::store::project_key(&workspace));
        let present = guard
            .of_kind(Kind::Allow)
            .any(|r| r.text == rule.trim() && r.source == source);
        if !present {
            let mut next = (**guard).clone();
            next.add(Kind::Allow, rule, &source)?;
            *guard = Arc::new(next);
        }
        Ok(added)
    }

    /// The file [`Rules::save_for_project`] writes to
    /// (`<user config dir>/permissions.toml`); `None` without a
    /// configuration directory.
    pub fn saved_rules_file(&self) -> Option<PathBuf> {
        Some(self.config_dir.as_deref()?.join(dsh_rules::RULES_FILE))
    }

    /// The allow rules (joined by `, `) that answer `question` about
    /// `call` without asking anybody, or `None`. Only two questions are
    /// answered: a PreToolUse hook's ask, and an escalation to
    /// `workspace-write` (which stays confined). A call that asks for
    /// `danger-full-access`, and every other question, is left to the
    /// user.
    pub fn answers(&self, call: &ToolCall, question: &Question) -> Option<String> {
        let key = question.grant_key.as_deref().unwrap_or("");
        let asked = serde_json::from_str::<Value>(&call.arguments)
            .ok()
            .and_then(|a| {
                a.get("sandbox_permissions")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        let workspace_write = SandboxMode::WorkspaceWrite.as_str();
        let answerable = match asked.as_deref() {
            None => key.starts_with(&format!("hook {} ", call.name)),
            Some(mode) if mode == workspace_write => {
                key.starts_with(&format!("{} {workspace_write} ", call.name))
                    || key.starts_with(&format!("hook {} ", call.name))
            }
            Some(_) => false,
        };
        if !answerable {
            return None;
        }
        match self.current().evaluate(&call.name, &call.arguments) {
            Outcome::Allow(rules) => Some(
                rules
                    .iter()
                    .map(|r| r.text.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            _ => None,
        }
    }
}

/// Installs the rules' guard on `registry`, before the escalation guard
/// (so an ask rule's question, which carries the escalation's details
/// too, is the one put). Undo the registration to remove it.
pub fn install(
    registry: &ToolRegistry,
    rules: Arc<Rules>,
    executor: Arc<LocalBashExecutor>,
) -> Registration {
    registry.add_guard(move |pre: &PreExecute| {
        let verdict = verdict(
            &rules.current(),
            &pre.call.name,
            &pre.call.arguments,
            executor.sandbox_mode(),
        );
        Box::pin(async move { verdict })
    })
}

/// The guard's verdict for a call of `tool` with `arguments` while the
/// session is in `mode`: deny for a deny rule (`denied by permission rule
/// "bash(rm:*)" (<source>)`), ask for an ask rule, allow otherwise (an
/// allow rule acts through [`Rules::answers`], never here).
pub fn verdict(set: &RuleSet, tool: &str, arguments: &str, mode: SandboxMode) -> Verdict {
    match set.evaluate(tool, arguments) {
        Outcome::Deny(rule) => {
            Verdict::Deny(format!("denied by permission rule {}", rule.describe()))
        }
        Outcome::Ask(rule) => {
            let asks = format!("permission rule {} asks", rule.describe());
            match crate::escalation::verdict(tool, arguments, mode) {
                // The escalation's question, so the user sees the mode and
                // the justification they are agreeing to.
                Verdict::Ask(q) => Verdict::Ask(Question {
                    summary: format!("{}; {asks}", q.summary),
                    grant_key: q.grant_key.map(|k| format!("rule {} {k}", rule.text)),
                    ..q
                }),
                _ => {
                    let args = serde_json::from_str::<Value>(arguments).unwrap_or(Value::Null);
                    let field = |k: &str| args.get(k).and_then(Value::as_str);
                    let (what, detail) = match (tool, field("command"), field("file_path")) {
                        ("bash", Some(c), _) => ("run a command".to_string(), c.to_string()),
                        (_, _, Some(p)) => (format!("{tool} {p}"), arguments.to_string()),
                        _ => (format!("run {tool}"), arguments.to_string()),
                    };
                    Verdict::Ask(Question {
                        summary: format!("{what} ({asks})"),
                        grant_key: Some(format!("rule {} {tool} {detail}", rule.text)),
                        detail: Some(detail),
                        justification: None,
                    })
                }
            }
        }
        Outcome::Allow(_) | Outcome::None => Verdict::Allow,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(rules: &[(Kind, &str)]) -> RuleSet {
        let mut set = RuleSet::new(Path::new("/w"), None, "mcp");
        for (kind, text) in rules {
            set.add(*kind, text, "~/.config/dsh/dsh.toml").unwrap();
        }
        set
    }

    fn bash(command: &str, mode: Option<&str>) -> String {
        let mut v = serde_json::json!({"command": command, "description": "d"});
        if let Some(mode) = mode {
            v["sandbox_permissions"] = mode.into();
            v["justification"] = "needed".into();
        }
        v.to_string()
    }

    #[test]
    fn deny_and_ask_rules_become_verdicts_naming_the_rule() {
        let s = set(&[(Kind::Deny, "bash(rm:*)"), (Kind::Ask, "bash(git push:*)")]);
        assert_eq!(
            verdict(
                &s,
                "bash",
                &bash("ls && rm -rf x", None),
                SandboxMode::WorkspaceWrite
            ),
            Verdict::Deny(
                "denied by permission rule \"bash(rm:*)\" (~/.config/dsh/dsh.toml)".to_string()
            )
        );
        let Verdict::Ask(q) = verdict(
            &s,
            "bash",
            &bash("git push", None),
            SandboxMode::WorkspaceWrite,
        ) else {
            panic!("asked");
        };
        assert_eq!(
            q.summary,
            "run a command (permission rule \"bash(git push:*)\" (~/.config/dsh/dsh.toml) asks)"
        );
        assert_eq!(q.detail.as_deref(), Some("git push"));
        // With an escalation: its question, the rule named.
        let Verdict::Ask(q) = verdict(
            &s,
            "bash",
            &bash("git push", Some("danger-full-access")),
            SandboxMode::WorkspaceWrite,
        ) else {
            panic!("asked");
        };
        assert!(
            q.summary
                .starts_with("run a command under danger-full-access"),
            "{}",
            q.summary
        );
        assert!(q
            .summary
            .ends_with("permission rule \"bash(git push:*)\" (~/.config/dsh/dsh.toml) asks"));
        assert_eq!(q.justification.as_deref(), Some("needed"));
        assert_eq!(
            verdict(&s, "bash", &bash("ls", None), SandboxMode::ReadOnly),
            Verdict::Allow
        );
    }

    #[test]
    fn allow_rules_answer_hook_asks_and_workspace_write_escalations_only() {
        let rules = Rules::new(set(&[(Kind::Allow, "bash(cargo test:*)")]));
        let q = |key: &str| Question {
            summary: "s".into(),
            detail: None,
            justification: None,
            grant_key: Some(key.into()),
        };
        let call = |args: String| ToolCall::new("c", "bash", args);
        let ww = call(bash("cargo test", Some("workspace-write")));
        assert_eq!(
            rules
                .answers(&ww, &q("bash workspace-write cargo test"))
                .as_deref(),
            Some("bash(cargo test:*)")
        );
        let dfa = call(bash("cargo test", Some("danger-full-access")));
        assert_eq!(
            rules.answers(&dfa, &q("bash danger-full-access cargo test")),
            None
        );
        assert_eq!(
            rules.answers(&dfa, &q("hook bash {}")),
            None,
            "never widens"
        );
        let plain = call(bash("cargo test -q", None));
        assert_eq!(
            rules.answers(&plain, &q("hook bash {}")).as_deref(),
            Some("bash(cargo test:*)")
        );
        assert_eq!(rules.answers(&plain, &q("plan")), None, "other questions");
        let other = call(bash("cargo test && rm -rf ~", None));
        assert_eq!(rules.answers(&other, &q("hook bash {}")), None);
    }

    #[test]
    fn a_saved_rule_applies_at_once_and_is_written_once() {
        let dir = tempfile::tempdir().unwrap();
        let rules = Arc::new(Rules {
            set: RwLock::new(Arc::new(RuleSet::new(dir.path(), None, "mcp"))),
            config_dir: Some(dir.path().join("cfg")),
        });
        let call = ToolCall::new("c", "bash", bash("cargo test --all", None));
        let rule = rules.suggest(&call).unwrap();
        assert_eq!(rule, "bash(cargo test:*)");
        assert!(rules.save_for_project(&rule).unwrap());
        assert!(!rules.save_for_project(&rule).unwrap());
        assert_eq!(rules.current().rules().len(), 1);
        assert!(matches!(
            rules.current().evaluate("bash", &call.arguments),
            Outcome::Allow(_)
        ));
        let saved = dsh_rules::load_project(&dir.path().join("cfg"), dir.path())
            .unwrap()
            .unwrap();
        assert_eq!(saved.rules, vec![(Kind::Allow, rule)]);
        assert!(rules.save_for_project("bash(").is_err());
    }

    #[test]
    fn every_builtin_tool_can_be_named_in_a_rule() {
        for tool in crate::tools::BUILTIN_TOOLS {
            let mut set = RuleSet::default();
            assert!(set.add(Kind::Allow, tool, "x").is_ok(), "{tool}");
        }
    }

    #[test]
    fn rules_of_both_files_add_up_each_with_its_source() {
        let mut user =
            crate::config::parse("[permission]\nallow = [\"bash(ls)\"]\ndeny = [\"bash(rm:*)\"]")
                .unwrap();
        label_sources(
            &mut user,
            Path::new("/etc/dsh/dsh.toml"),
            ConfigOrigin::User,
        );
        let mut project =
            crate::config::parse("[permission]\nallow = [\"bash(pwd)\"]\nask = [\"oops(\"]")
                .unwrap();
        label_sources(
            &mut project,
            Path::new("/w/dsh.toml"),
            ConfigOrigin::Project,
        );
        let merged = user.overlay(project);
        let mut problems = Vec::new();
        let set = resolve(
            merged.permission.as_ref(),
            Path::new("/w"),
            "mcp",
            &mut |p| problems.push(p),
        );
        let listed: Vec<(Kind, &str, &str)> = set
            .rules()
            .iter()
            .map(|r| (r.kind, r.text.as_str(), r.source.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                (Kind::Deny, "bash(rm:*)", "/etc/dsh/dsh.toml"),
                (Kind::Allow, "bash(ls)", "/etc/dsh/dsh.toml"),
                (Kind::Allow, "bash(pwd)", "./dsh.toml (trusted)"),
            ]
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with(
                "invalid permission rule \"oops(\" in ./dsh.toml (trusted) (ask list)"
            ),
            "{}",
            problems[0]
        );
    }
}
