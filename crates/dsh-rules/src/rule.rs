//! One rule in Claude Code's syntax: `Tool` or `Tool(specifier)`, parsed
//! into what it matches.

use std::path::{Path, PathBuf};

/// The built-in tools a rule may name, as dsh names them.
pub const TOOLS: &[&str] = &[
    "bash",
    "bash_output",
    "bash_kill",
    "job_output",
    "job_list",
    "job_kill",
    "subagent",
    "subagent_fork",
    "read",
    "write",
    "edit",
    "glob",
    "grep",
    "todo_write",
    "exit_plan_mode",
    "str_replace_editor",
    "skill",
    "echo",
    "web_fetch",
    "web_search",
    "ask_user",
];

/// Claude Code's tool names (lower-cased) and the dsh tool each means.
const ALIASES: &[(&str, &str)] = &[
    ("multiedit", "edit"),
    ("notebookedit", "edit"),
    ("webfetch", "web_fetch"),
    ("websearch", "web_search"),
    ("task", "subagent"),
    ("todowrite", "todo_write"),
    ("exitplanmode", "exit_plan_mode"),
    ("bashoutput", "job_output"),
    ("askuserquestion", "ask_user"),
    ("killshell", "job_kill"),
];

/// The tools an `edit` rule covers (Claude Code's `Edit` covers every
/// file edit).
pub const EDIT_TOOLS: &[&str] = &["edit", "write", "str_replace_editor"];

/// What a rule names.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A built-in tool (canonical name).
    Tool(String),
    /// MCP tools: `mcp__<server>` (all its tools), `mcp__<server>__*`,
    /// `mcp__<server>__<tool>`, `mcp__<server>__<prefix>*`.
    Mcp {
        server: String,
        /// `None`: every tool of the server; `Some((name, wildcard))`.
        tool: Option<(String, bool)>,
    },
}

/// What a rule's specifier says.
#[derive(Debug, Clone)]
pub(crate) enum Spec {
    /// No specifier (or `*`): every call of the tool.
    Any,
    /// `bash(cargo test:*)`: the command's words start with these.
    Prefix(Vec<String>),
    /// `bash(git status)`: exactly this command.
    Exact(Vec<String>),
    /// `edit(src/**)`: the file matches the glob.
    Path(PathGlob),
    /// `web_fetch(domain:example.com)`: the URL's host is this or below.
    Domain(String),
}

/// A compiled path glob.
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    /// Absolute pattern (`/abs/**`, `~/x/**`): matched against the
    /// absolute path; else against the path relative to the workspace.
    pub absolute: bool,
    pub matcher: globset::GlobMatcher,
}

/// A parsed rule.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    pub target: Target,
    pub spec: Spec,
}

/// Parses `text`. `home` expands a leading `~/` of a path glob.
///
/// # Errors
/// The reason the rule cannot be used, for a message that also names the
/// rule and its file.
pub(crate) fn parse(text: &str, home: Option<&Path>) -> Result<Matcher, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the rule is empty".to_string());
    }
    let (name, spec) = match text.find('(') {
        Some(open) => {
            let Some(inner) = text[open + 1..].strip_suffix(')') else {
                return Err("a specifier must end with `)`: write `Tool(specifier)`".to_string());
            };
            (text[..open].trim_end(), Some(inner.trim()))
        }
        None => (text, None),
    };
    if name.is_empty() || name.contains(char::is_whitespace) || name.contains(')') {
        return Err(format!(
            "{name:?} is not a tool name: write `Tool` or `Tool(specifier)`"
        ));
    }
    if let Some(rest) = strip_prefix_ignore_case(name, "mcp__") {
        if spec.is_some() {
            return Err(
                "an MCP rule takes no specifier: write `mcp__server__tool` or `mcp__server__*`"
                    .to_string(),
            );
        }
        return mcp(rest).map(|target| Matcher {
            target,
            spec: Spec::Any,
        });
    }
    let tool = canonical(name).ok_or_else(|| {
        format!(
            "unknown tool {name:?}; rules name one of {} (or Claude Code's Bash, Read, Write, Edit, Glob, Grep, WebFetch, …), or an MCP tool as mcp__server__tool",
            TOOLS.join(", ")
        )
    })?;
    let spec = match spec {
        None => Spec::Any,
        Some("") => return Err(format!("empty specifier: write `{tool}` for every call")),
        Some("*") => Spec::Any,
        Some(s) => match tool {
            "bash" => bash_spec(s)?,
            "read" | "write" | "edit" | "glob" | "grep" => Spec::Path(path_glob(s, home)?),
            "web_fetch" => match s.strip_prefix("domain:") {
                Some(host) if !host.trim().is_empty() && !host.contains(['/', ' ']) => {
                    Spec::Domain(host.trim().to_ascii_lowercase())
                }
                _ => {
                    return Err(
                        "web_fetch takes `domain:<host>` (web_fetch(domain:example.com))"
                            .to_string(),
                    )
                }
            },
            other => return Err(format!("{other} takes no specifier: write `{other}`")),
        },
    };
    Ok(Matcher {
        target: Target::Tool(tool.to_string()),
        spec,
    })
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    match s.get(..prefix.len()) {
        Some(head) if head.eq_ignore_ascii_case(prefix) => Some(&s[prefix.len()..]),
        _ => None,
    }
}

/// The dsh tool `name` means (case-insensitive, Claude Code's names too).
pub(crate) fn canonical(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    TOOLS.iter().find(|t| **t == lower).copied().or_else(|| {
        ALIASES
            .iter()
            .find(|(alias, _)| *alias == lower)
            .map(|(_, t)| *t)
    })
}

fn mcp(rest: &str) -> Result<Target, String> {
    let (server, tool) = match rest.split_once("__") {
        Some((server, tool)) => (server, Some(tool)),
        None => (rest, None),
    };
    if server.is_empty() || server.contains('*') {
        return Err(
            "an MCP rule names its server: mcp__server, mcp__server__*, mcp__server__tool"
                .to_string(),
        );
    }
    let tool = match tool {
        None | Some("*") => None,
        Some("") => {
            return Err(
                "an MCP rule's tool name is empty: write mcp__server__* for all its tools"
                    .to_string(),
            )
        }
        Some(t) => {
            let (name, wildcard) = match t.strip_suffix('*') {
                Some(head) => (head, true),
                None => (t, false),
            };
            if name.contains('*') {
                return Err("a `*` is allowed only at the end of an MCP rule".to_string());
            }
            Some((name.to_string(), wildcard))
        }
    };
    Ok(Target::Mcp {
        server: server.to_string(),
        tool,
    })
}

fn bash_spec(spec: &str) -> Result<Spec, String> {
    let (head, prefix) = if let Some(head) = spec.strip_suffix(":*") {
        (head, true)
    } else if let Some(head) = spec.strip_suffix(" *") {
        (head, true)
    } else {
        (spec, false)
    };
    if head.contains(":*") {
        return Err("`:*` is allowed only at the end: bash(cargo test:*)".to_string());
    }
    let words: Vec<String> = head.split_whitespace().map(str::to_string).collect();
    if words.is_empty() {
        return Err("the command prefix is empty: write `bash` for every command".to_string());
    }
    Ok(if prefix {
        Spec::Prefix(words)
    } else {
        Spec::Exact(words)
    })
}

fn path_glob(spec: &str, home: Option<&Path>) -> Result<PathGlob, String> {
    let (pattern, absolute) = if let Some(rest) = spec.strip_prefix("~/") {
        let home = home.ok_or("`~/` needs HOME to be set")?;
        (format!("{}/{rest}", glob_dir(home)), true)
    } else if spec.starts_with('/') {
        (spec.to_string(), true)
    } else {
        let rel = spec.strip_prefix("./").unwrap_or(spec);
        if rel.split('/').any(|c| c == "..") {
            return Err(
                "a relative path glob cannot go up with `..`; write an absolute one".to_string(),
            );
        }
        // As in .gitignore: a pattern without `/` matches at any depth.
        if rel.contains('/') {
            (rel.to_string(), false)
        } else {
            (format!("**/{rel}"), false)
        }
    };
    let glob = globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("bad path glob: {}", e.kind()))?;
    Ok(PathGlob {
        absolute,
        matcher: glob.compile_matcher(),
    })
}

/// `dir` as the start of a glob: glob characters escaped.
pub(crate) fn glob_dir(dir: &Path) -> String {
    globset::escape(dir.to_string_lossy().trim_end_matches('/'))
}

/// `path` without `.` components and with each `..` applied to the
/// component before it, textually: no symlink is followed, so a symlinked
/// directory keeps its spelling. A `..` at the root stays there (`/..` is
/// `/`); a leading `..` of a relative path is kept (`../../x`).
pub fn lexical_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => out.push(c),
            },
            other => out.push(other),
        }
    }
    out
}

/// `path` with the symlinks of its longest existing ancestor resolved (the
/// rest appended as written).
pub(crate) fn resolved(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for c in rest.iter().rev() {
                out.push(c);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        match parse(text, Some(Path::new("/home/u"))) {
            Ok(m) => panic!("{text} parsed: {m:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn claude_code_names_and_aliases_resolve() {
        for (text, tool) in [
            ("Bash", "bash"),
            ("bash(cargo test:*)", "bash"),
            ("Read(src/**)", "read"),
            ("MultiEdit", "edit"),
            ("WebFetch(domain:example.com)", "web_fetch"),
            ("Task", "subagent"),
            ("GLOB", "glob"),
        ] {
            let m = parse(text, None).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(matches!(&m.target, Target::Tool(t) if t == tool), "{text}");
        }
        assert!(matches!(
            parse("mcp__github__*", None).map(|m| m.target),
            Ok(Target::Mcp { server, tool: None }) if server == "github"
        ));
        assert!(matches!(
            parse("mcp__github__create_*", None).map(|m| m.target),
            Ok(Target::Mcp { tool: Some((t, true)), .. }) if t == "create_"
        ));
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        assert!(err("").contains("empty"));
        assert!(err("Frobnicate").contains("unknown tool \"Frobnicate\""));
        assert!(err("bash(cargo test").contains("must end with `)`"));
        assert!(err("bash()").contains("empty specifier"));
        assert!(err("bash(:*)").contains("prefix is empty"));
        assert!(err("bash(a:*b:*)").contains("only at the end"));
        assert!(err("edit(src/[)").contains("bad path glob"));
        assert!(err("edit(../x/**)").contains("`..`"));
        assert!(err("todo_write(x)").contains("takes no specifier"));
        assert!(err("mcp__github__x(y)").contains("no specifier"));
        assert!(err("mcp__").contains("names its server"));
        assert!(err("mcp__gh__a*b").contains("only at the end"));
        assert!(err("web_fetch(example.com)").contains("domain:"));
        assert!(err("two words").contains("not a tool name"));
        assert!(parse("edit(~/x/**)", None).is_err(), "no HOME");
    }

    #[test]
    fn bash_specifiers() {
        assert!(matches!(parse("bash(cargo test:*)", None).map(|m| m.spec),
            Ok(Spec::Prefix(w)) if w == ["cargo", "test"]));
        assert!(matches!(parse("bash(npm run *)", None).map(|m| m.spec),
            Ok(Spec::Prefix(w)) if w == ["npm", "run"]));
        assert!(
            matches!(parse("bash( git   status )", None).map(|m| m.spec),
            Ok(Spec::Exact(w)) if w == ["git", "status"])
        );
        assert!(matches!(
            parse("bash(*)", None).map(|m| m.spec),
            Ok(Spec::Any)
        ));
    }

    #[test]
    fn resolved_follows_symlinks_of_existing_ancestors() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap_or_default();
        let link = dir.path().join("link");
        if std::os::unix::fs::symlink(&real, &link).is_err() {
            return;
        }
        let want = std::fs::canonicalize(&real)
            .unwrap_or_default()
            .join("new/file");
        assert_eq!(resolved(&link.join("new/file")), want);
    }
}
