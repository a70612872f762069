//! Lasting permission rules in Claude Code's syntax (see
//! `docs/permissions.md`).
//!
//! A rule is `Tool` or `Tool(specifier)`: `bash(cargo test:*)` (the
//! command's words start with `cargo test`), `bash(git status)` (exactly
//! that command), `edit(src/**)` (a path glob, relative to the workspace),
//! `mcp__github__*` (MCP tools). A [`RuleSet`] holds the rules of every
//! source, each with its kind (allow, ask, deny) and where it came from;
//! [`RuleSet::evaluate`] judges one call: deny wins over ask over allow.
//!
//! Bash commands are parsed with a real shell parser ([`shell`]): an
//! allow rule covers a command only if it covers every simple command in
//! it (so `cargo test && rm -rf ~` is not allowed by `bash(cargo test:*)`)
//! and nothing in it escapes judgement (substitutions, unparsable text);
//! deny and ask rules match if any simple command matches, or, for text
//! the parser cannot read, any piece of the raw text (fail closed).
//!
//! [`suggest`] proposes the rule an "always allow" answer saves;
//! [`store::save_rule`] appends it to `permissions.toml`.

pub mod rule;
pub mod shell;
pub mod store;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::rule::{Matcher, PathGlob, Spec, Target};
use crate::shell::SimpleCommand;

pub use rule::lexical_normal;
pub use store::{load_project, save_rule, ProjectRules, StoreError, RULES_FILE};

/// What a rule does when it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The call raises no question it would otherwise raise (it still runs
    /// in the session's permission mode).
    Allow,
    /// The user is asked before the call runs.
    Ask,
    /// The call is refused.
    Deny,
}

impl Kind {
    /// `allow`, `ask` or `deny`: the key the rule is listed under.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Allow => "allow",
            Kind::Ask => "ask",
            Kind::Deny => "deny",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rule as written in a config file's `[permission]` list, with the
/// file it came from: deserialized from a plain string (the source left
/// empty for the reader of the file to fill in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// The rule's text.
    pub text: String,
    /// Where it was written (`~/.config/dsh/dsh.toml`, `./dsh.toml
    /// (trusted)`).
    pub source: String,
}

impl<'de> serde::Deserialize<'de> for Written {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|text| Written {
            text,
            source: String::new(),
        })
    }
}

/// A rule that cannot be parsed (`PERMISSION_RULE_INVALID`); the message
/// names the rule, the list and the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule {rule:?} in {source_name} ({kind} list): {reason} [PERMISSION_RULE_INVALID]")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// The list it was in.
    pub kind: Kind,
    /// Where it was written (a file, `permissions.toml [projects."…"]`).
    pub source_name: String,
    /// What is wrong with it.
    pub reason: String,
}

impl dsh_protocol::codes::ErrorCode for RuleError {
    /// Always `PERMISSION_RULE_INVALID`.
    fn code(&self) -> &str {
        dsh_protocol::codes::PERMISSION_RULE_INVALID
    }
}

/// One rule of a [`RuleSet`].
#[derive(Debug, Clone)]
pub struct Rule {
    /// Allow, ask or deny.
    pub kind: Kind,
    /// The rule as written (`bash(cargo test:*)`).
    pub text: String,
    /// Where it was written: a config file, `permissions.toml
    /// [projects."/path"]`, a flag.
    pub source: String,
    matcher: Matcher,
}

impl Rule {
    /// `"<text>" (<source>)`: how messages name the rule.
    pub fn describe(&self) -> String {
        format!("{:?} ({})", self.text, self.source)
    }
}

/// What the rules say about one call: [`RuleSet::evaluate`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// No rule matches: behaviour is unchanged.
    None,
    /// Covered by these allow rules: for a bash command, the first rule
    /// that covers each simple command, without duplicates.
    Allow(Vec<Matched>),
    /// Refused by this deny rule.
    Deny(Matched),
    /// To be asked, because of this ask rule.
    Ask(Matched),
}

/// A rule that matched, by text and source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// The rule as written.
    pub text: String,
    /// Where it was written.
    pub source: String,
}

impl Matched {
    fn of(rule: &Rule) -> Self {
        Matched {
            text: rule.text.clone(),
            source: rule.source.clone(),
        }
    }

    /// `"<text>" (<source>)`.
    pub fn describe(&self) -> String {
        format!("{:?} ({})", self.text, self.source)
    }
}

/// The rules in force for one workspace.
#[derive(Debug, Clone)]
pub struct RuleSet {
    workspace: PathBuf,
    workspace_real: PathBuf,
    home: Option<PathBuf>,
    mcp_prefix: String,
    rules: Vec<Rule>,
}

impl Default for RuleSet {
    /// No rules, workspace `/`.
    fn default() -> Self {
        RuleSet::new(Path::new("/"), None, "mcp")
    }
}

impl RuleSet {
    /// An empty set for `workspace` (relative path globs are relative to
    /// it), `home` (what `~/` in a path glob means) and the MCP tool-name
    /// prefix dsh uses (`mcp` by default; `mcp__server__tool` rules are
    /// mapped onto it).
    pub fn new(workspace: &Path, home: Option<&Path>, mcp_prefix: &str) -> Self {
        let workspace = rule::lexical_normal(workspace);
        RuleSet {
            workspace_real: rule::resolved(&workspace),
            workspace,
            home: home.map(Path::to_path_buf),
            mcp_prefix: mcp_prefix.to_string(),
            rules: Vec::new(),
        }
    }

    /// Adds `text` as a `kind` rule written in `source`, after the rules
    /// already there.
    ///
    /// # Errors
    /// [`RuleError`] (`PERMISSION_RULE_INVALID`) naming the rule, its list
    /// and its source when it cannot be parsed; the set is unchanged.
    pub fn add(&mut self, kind: Kind, text: &str, source: &str) -> Result<(), RuleError> {
        let matcher = rule::parse(text, self.home.as_deref()).map_err(|reason| RuleError {
            rule: text.to_string(),
            kind,
            source_name: source.to_string(),
            reason,
        })?;
        self.rules.push(Rule {
            kind,
            text: text.trim().to_string(),
            source: source.to_string(),
            matcher,
        });
        Ok(())
    }

    /// Every rule, in the order added.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rules of `kind`, in the order added.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Rule> {
        self.rules.iter().filter(move |r| r.kind == kind)
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The workspace relative path globs are matched in.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Judges a call of dsh's tool `tool` with the raw JSON `arguments`:
    /// the first deny rule that matches, else the first ask rule, else the
    /// allow rules that cover the call, else [`Outcome::None`]. Deny and
    /// ask rules match loosely (any simple command of a bash command, any
    /// piece of text the parser cannot read, the file path as written or
    /// with symlinks resolved); allow rules strictly (every simple command,
    /// nothing opaque, both spellings of the path). Never panics.
    pub fn evaluate(&self, tool: &str, arguments: &str) -> Outcome {
        if self.rules.is_empty() {
            return Outcome::None;
        }
        let call = Call::new(tool, arguments, self);
        for kind in [Kind::Deny, Kind::Ask] {
            if let Some(rule) = self
                .of_kind(kind)
                .find(|r| self.targets(r, tool) && self.loose(r, &call))
            {
                return match kind {
                    Kind::Deny => Outcome::Deny(Matched::of(rule)),
                    _ => Outcome::Ask(Matched::of(rule)),
                };
            }
        }
        let allow: Vec<&Rule> = self
            .of_kind(Kind::Allow)
            .filter(|r| self.targets(r, tool))
            .collect();
        match self.allowed_by(&allow, &call) {
            Some(rules) => Outcome::Allow(rules.into_iter().map(Matched::of).collect()),
            None => Outcome::None,
        }
    }

    /// Whether `rule` is about calls of `tool`.
    fn targets(&self, rule: &Rule, tool: &str) -> bool {
        match &rule.matcher.target {
            Target::Tool(t) if t == "edit" => rule::EDIT_TOOLS.contains(&tool),
            Target::Tool(t) => t == tool,
            Target::Mcp { server, tool: want } => {
                let head = if self.mcp_prefix.is_empty() {
                    format!("{}__", sanitize(server))
                } else {
                    format!("{}__{}__", sanitize(&self.mcp_prefix), sanitize(server))
                };
                let Some(rest) = tool.strip_prefix(&head) else {
                    return false;
                };
                match want {
                    None => !rest.is_empty(),
                    Some((name, wildcard)) => {
                        let name = sanitize(name);
                        rest == name || (*wildcard && rest.starts_with(&name))
                    }
                }
            }
        }
    }

    /// Deny/ask matching: any part of the call.
    fn loose(&self, rule: &Rule, call: &Call) -> bool {
        match &rule.matcher.spec {
            Spec::Any => true,
            Spec::Prefix(p) | Spec::Exact(p) => {
                let exact = matches!(rule.matcher.spec, Spec::Exact(_));
                let Some(command) = &call.command else {
                    return false;
                };
                if exact && normalised(command) == p.join(" ") {
                    return true;
                }
                let words_match = |words: &[String]| loose_words(words, p, exact);
                match &call.split {
                    Ok(split) => {
                        split.commands.iter().any(|c| {
                            let words: Vec<String> =
                                c.words.iter().map(|w| w.text.clone()).collect();
                            words_match(&words)
                        }) || split
                            .unparsed
                            .iter()
                            .flat_map(|u| shell::raw_segments(u))
                            .any(|seg| words_match(&seg))
                    }
                    Err(_) => shell::raw_segments(command)
                        .iter()
                        .any(|seg| words_match(seg)),
                }
            }
            Spec::Path(glob) => {
                let paths = call.paths();
                !paths.is_empty() && paths.iter().any(|p| self.path_matches(glob, p))
            }
            Spec::Domain(d) => call.host.as_deref().is_some_and(|h| host_matches(h, d)),
        }
    }

    /// The allow rules (among `rules`, all about this tool) that cover
    /// the whole call, or `None`.
    fn allowed_by<'r>(&self, rules: &[&'r Rule], call: &Call) -> Option<Vec<&'r Rule>> {
        if let Some(rule) = rules.iter().find(|r| matches!(r.matcher.spec, Spec::Any)) {
            return Some(vec![rule]);
        }
        if let Some(command) = &call.command {
            let whole = normalised(command);
            if let Some(rule) = rules
                .iter()
                .find(|r| matches!(&r.matcher.spec, Spec::Exact(p) if p.join(" ") == whole))
            {
                return Some(vec![rule]);
            }
            let split = call.split.as_ref().ok()?;
            if split.opaque || split.commands.is_empty() {
                return None;
            }
            let mut used: Vec<&'r Rule> = Vec::new();
            for c in &split.commands {
                let rule = rules.iter().find(|r| strict_command(r, c))?;
                if !used.iter().any(|u| std::ptr::eq(*u, *rule)) {
                    used.push(rule);
                }
            }
            return Some(used);
        }
        let paths = call.paths();
        if !paths.is_empty() {
            return rules
                .iter()
                .find(|r| {
                    matches!(&r.matcher.spec, Spec::Path(g)
                        if paths.iter().all(|p| self.path_matches(g, p)))
                })
                .map(|r| vec![*r]);
        }
        if let Some(host) = &call.host {
            return rules
                .iter()
                .find(|r| matches!(&r.matcher.spec, Spec::Domain(d) if host_matches(host, d)))
                .map(|r| vec![*r]);
        }
        None
    }

    /// Whether `path` (absolute, normalised) matches `glob`.
    fn path_matches(&self, glob: &PathGlob, path: &Path) -> bool {
        if glob.absolute {
            return glob.matcher.is_match(path);
        }
        [&self.workspace, &self.workspace_real]
            .iter()
            .filter_map(|w| path.strip_prefix(w).ok())
            .any(|rel| !rel.as_os_str().is_empty() && glob.matcher.is_match(rel))
    }
}

/// One call, parsed once for all rules.
struct Call {
    /// The bash command, for `bash`.
    command: Option<String>,
    split: Result<shell::Split, shell::ParseFailure>,
    /// The file path as written, made absolute against the workspace.
    path: Option<PathBuf>,
    /// The host of `url`, lower-cased.
    host: Option<String>,
}

impl Call {
    fn new(tool: &str, arguments: &str, set: &RuleSet) -> Call {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let field = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
        let command = (tool == "bash").then(|| field("command")).flatten();
        let split = match &command {
            Some(c) => shell::split(c),
            None => Err(shell::ParseFailure("not a command".to_string())),
        };
        let path = match tool {
            "read" | "write" | "edit" => field("file_path"),
            "str_replace_editor" => field("path"),
            "glob" | "grep" if args.is_object() => {
                Some(field("path").unwrap_or_else(|| ".".into()))
            }
            _ => None,
        }
        .map(|p| {
            let p = expand_home(&p, set.home.as_deref());
            rule::lexical_normal(&set.workspace.join(p))
        });
        let host = (tool == "web_fetch")
            .then(|| field("url"))
            .flatten()
            .and_then(|u| url_host(&u));
        Call {
            command,
            split,
            path,
            host,
        }
    }

    /// The file's spellings: as written, and with symlinks resolved.
    fn paths(&self) -> Vec<PathBuf> {
        match &self.path {
            Some(p) => {
                let real = rule::resolved(p);
                if real == *p {
                    vec![p.clone()]
                } else {
                    vec![p.clone(), real]
                }
            }
            None => Vec::new(),
        }
    }
}

fn expand_home(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// Whether an allow rule covers one simple command: no assignments
/// before it, and its words (literal where compared) start with the
/// rule's prefix or are exactly the rule's command.
fn strict_command(rule: &Rule, command: &SimpleCommand) -> bool {
    let (words, exact) = match &rule.matcher.spec {
        Spec::Prefix(p) => (p, false),
        Spec::Exact(p) => (p, true),
        _ => return false,
    };
    if command.assignments || command.words.len() < words.len() {
        return false;
    }
    if exact && command.words.len() != words.len() {
        return false;
    }
    let compared = if exact {
        command.words.len()
    } else {
        words.len()
    };
    command.words[..compared]
        .iter()
        .zip(words)
        .all(|(w, p)| w.literal && w.text == *p)
}

/// Programs that run the command in their arguments; deny and ask rules
/// also look past them (`sudo rm -rf /` is matched by `bash(rm:*)`).
const WRAPPERS: &[&str] = &[
    "sudo", "env", "command", "exec", "nohup", "nice", "time", "builtin", "xargs", "doas",
];

/// Deny/ask matching of one command's words: the words themselves, with
/// the program's directory dropped, and past wrapper programs.
fn loose_words(words: &[String], prefix: &[String], exact: bool) -> bool {
    let mut rest = words;
    loop {
        if rest.is_empty() {
            return false;
        }
        let program = rest[0].rsplit('/').next().unwrap_or(&rest[0]);
        let head_ok = program == prefix[0] || rest[0] == prefix[0];
        let ok = head_ok
            && rest.len() >= prefix.len()
            && (!exact || rest.len() == prefix.len())
            && rest[1..prefix.len()]
                .iter()
                .zip(&prefix[1..])
                .all(|(w, p)| w == p);
        if ok {
            return true;
        }
        if !WRAPPERS.contains(&program) {
            return false;
        }
        // Past the wrapper, its options and `NAME=value` words.
        rest = &rest[1..];
        while rest
            .first()
            .is_some_and(|w| w.starts_with('-') || (w.contains('=') && !w.starts_with('=')))
        {
            rest = &rest[1..];
        }
    }
}

/// `text` with runs of whitespace made one space, trimmed; a line break
/// separates commands, so it becomes ` ; ` (`a\nb` is not `a b`).
fn normalised(text: &str) -> String {
    text.replace('\n', " ; ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The lower-cased host of `url` (`https://user@Example.com:8080/x` →
/// `example.com`).
fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let host = if host_port.starts_with('[') {
        host_port.split(']').next()?.trim_start_matches('[')
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then(|| host.trim_end_matches('.').to_ascii_lowercase())
}

fn host_matches(host: &str, domain: &str) -> bool {
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// As dsh-mcp names tools: characters outside `[A-Za-z0-9_-]` become `_`.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The rule an "always allow" answer to a question about this call would
/// save, or `None` when no rule fits: `bash` → `bash(<first two
/// words>:*)` for a single simple command of two or more literal words
/// (`cargo test --all` → `bash(cargo test:*)`), else `bash(<the exact
/// command>)`; `edit`/`write`/`str_replace_editor` → `edit(<dir>/**)`,
/// `read` → `read(<dir>/**)` (the file's directory as written; see
/// [`suggest_for`] for paths relative to the workspace); an MCP tool
/// (`mcp__…`) → its name; `glob`, `grep` → the tool name. Every
/// suggestion is checked to allow the call it came from.
pub fn suggest(tool: &str, arguments: &str) -> Option<String> {
    suggest_in(None, tool, arguments)
}

/// [`suggest`], with a file inside `workspace` named relative to it
/// (`/w/src/main.rs` → `edit(src/**)`, `/w/README.md` → `edit(**)`).
pub fn suggest_for(workspace: &Path, tool: &str, arguments: &str) -> Option<String> {
    suggest_in(Some(workspace), tool, arguments)
}

fn suggest_in(workspace: Option<&Path>, tool: &str, arguments: &str) -> Option<String> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    let field = |k: &str| args.get(k).and_then(Value::as_str);
    let rule = match tool {
        "bash" => {
            let command = field("command")?;
            let words = match shell::split(command) {
                Ok(split) if !split.opaque && split.commands.len() == 1 => {
                    let c = &split.commands[0];
                    (c.words.len() >= 2
                        && !c.assignments
                        && c.words[..2].iter().all(|w| {
                            w.literal && !w.text.is_empty() && !w.text.contains(char::is_whitespace)
                        }))
                    .then(|| format!("{} {}", c.words[0].text, c.words[1].text))
                }
                _ => None,
            };
            match words {
                Some(two) => format!("bash({two}:*)"),
                None => format!("bash({})", normalised(command)),
            }
        }
        "edit" | "write" | "str_replace_editor" | "read" => {
            let path = field(if tool == "str_replace_editor" {
                "path"
            } else {
                "file_path"
            })?;
            let name = if tool == "read" { "read" } else { "edit" };
            let abs = rule::lexical_normal(&match workspace {
                Some(w) => w.join(path),
                None => PathBuf::from(path),
            });
            let dir = abs.parent()?;
            let rel = workspace.and_then(|w| dir.strip_prefix(rule::lexical_normal(w)).ok());
            match rel {
                Some(rel) if rel.as_os_str().is_empty() => format!("{name}(**)"),
                Some(rel) => format!("{name}({}/**)", rule::glob_dir(rel)),
                None if dir.as_os_str().is_empty() => format!("{name}(**)"),
                None => format!("{name}({}/**)", rule::glob_dir(dir)),
            }
        }
        "glob" | "grep" => tool.to_string(),
        t if t.starts_with("mcp__") => t.to_string(),
        _ => return None,
    };
    // The suggestion must parse and allow the very call it came from.
    let mut check = RuleSet::new(workspace.unwrap_or(Path::new("/")), None, "mcp");
    check.add(Kind::Allow, &rule, "suggestion").ok()?;
    matches!(check.evaluate(tool, arguments), Outcome::Allow(_)).then_some(rule)
}

#[cfg(test)]
mod tests;
