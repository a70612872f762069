//! [`NestedInstructions`]: the `AGENTS.md` of a directory below the working
//! directory reaches the model when a file tool first works there.
//!
//! The system prompt carries the instruction files from the repository root
//! down to the working directory ([`super::instructions`]). Below it, a
//! subproject's own `AGENTS.md` (or its `CLAUDE.md` when it has no
//! `AGENTS.md`) is added as a context message the first time a successful
//! `read`, `write`, `edit`, `str_replace_editor`, `glob` or `grep` call
//! touches that directory or one below it: for each directory from just
//! below the working directory down to the touched one, top-down, each file
//! once per session (a resumed session remembers the ones its log already
//! holds). Each message comes from source `plugin: instructions`, starts
//! with `## <path>` and holds at most [`NESTED_LIMIT`] bytes of the file,
//! with a note when cut.
//!
//! The directory a call touches: the parent of `file_path` (`read`,
//! `write`, `edit`); `path` itself when it is a directory, else its parent
//! (`str_replace_editor`, `grep`); for `glob`, `path` (default: the working
//! directory) joined with the pattern's leading directories that hold no
//! wildcard (`sub/*.rs` → `sub`). Calls outside the working directory add
//! nothing.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use dsh_agent::Agent;
use dsh_kernel::{DshError, Kernel, Plugin, Registration};
use dsh_llm::{ContentBlock, MessageSource};
use dsh_protocol::EventPayload;
use dsh_session::Session;
use dsh_tools::{ContextSink, Execution, ToolCall, ToolRegistry};

use crate::config::lexical_normal;

use super::instructions::instruction_file_of;

/// The plugin name of the context messages (`MessageSource::plugin`).
pub const NESTED_SOURCE: &str = "instructions";

/// The most bytes of one file a context message carries.
pub const NESTED_LIMIT: usize = 64 * 1024;

/// The tools whose calls are looked at.
pub const FILE_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "str_replace_editor",
    "glob",
    "grep",
];

/// The plugin: adds nested instruction files for sessions working in `cwd`.
#[derive(Debug)]
pub struct NestedInstructions {
    cwd: PathBuf,
    /// Per session: the files already added (or found unusable).
    seen: Mutex<HashMap<String, SessionFiles>>,
}

#[derive(Debug)]
struct SessionFiles {
    session: Weak<Session>,
    files: HashSet<PathBuf>,
}

impl NestedInstructions {
    /// For sessions whose file tools resolve relative paths against `cwd`.
    pub fn new(cwd: &Path) -> Self {
        NestedInstructions {
            cwd: lexical_normal(cwd),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// The directory `call` touches, when it is a file tool's call (see
    /// the module docs); `None` for other tools or unusable arguments.
    pub fn touched_dir(&self, call: &ToolCall) -> Option<PathBuf> {
        if !FILE_TOOLS.contains(&call.name.as_str()) {
            return None;
        }
        let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
        let text = |key: &str| args.get(key).and_then(|v| v.as_str()).map(str::to_string);
        let resolve = |p: &str| lexical_normal(&self.cwd.join(p));
        let dir_or_parent = |p: PathBuf| {
            if p.is_dir() {
                Some(p)
            } else {
                p.parent().map(Path::to_path_buf)
            }
        };
        match call.name.as_str() {
            "read" | "write" | "edit" => {
                let file = resolve(&text("file_path").or_else(|| text("path"))?);
                file.parent().map(Path::to_path_buf)
            }
            "str_replace_editor" | "grep" => match text("path") {
                Some(p) => dir_or_parent(resolve(&p)),
                None => Some(self.cwd.clone()),
            },
            "glob" => {
                let base = text("path").map_or_else(|| self.cwd.clone(), |p| resolve(&p));
                let pattern = text("pattern").unwrap_or_default();
                Some(lexical_normal(&base.join(literal_dirs(&pattern))))
            }
            _ => None,
        }
    }

    /// The instruction files of the directories strictly below the working
    /// directory down to `dir`, top-down (none when `dir` is not below it).
    pub fn files_for(&self, dir: &Path) -> Vec<PathBuf> {
        let (base, rest) = match dir.strip_prefix(&self.cwd) {
            Ok(rest) => (self.cwd.clone(), rest.to_path_buf()),
            // A path through a symlink, or the working directory reached by
            // another name: compare where they really are.
            Err(_) => match (std::fs::canonicalize(&self.cwd), std::fs::canonicalize(dir)) {
                (Ok(cwd), Ok(dir)) => match dir.strip_prefix(&cwd) {
                    Ok(rest) => (cwd.clone(), rest.to_path_buf()),
                    Err(_) => return Vec::new(),
                },
                _ => return Vec::new(),
            },
        };
        let mut files = Vec::new();
        let mut at = base;
        for part in rest.components() {
            at.push(part);
            files.extend(instruction_file_of(&at));
        }
        files
    }

    /// Adds to `sink` the files of `dir` (see [`Self::files_for`]) that
    /// `session` has not had yet.
    fn add(&self, dir: &Path, agent: &Arc<dyn Agent>, sink: &Arc<dyn ContextSink>) {
        let candidates = self.files_for(dir);
        if candidates.is_empty() {
            return;
        }
        let session = agent.session();
        let new: Vec<PathBuf> = {
            let mut seen = dsh_kernel::sync::lock(&self.seen);
            let id = session.id().to_string();
            if !seen.contains_key(&id) {
                // Sessions that are gone need no memory.
                seen.retain(|_, s| s.session.strong_count() > 0);
                let files = already_added(&session);
                seen.insert(
                    id.clone(),
                    SessionFiles {
                        session: Arc::downgrade(&session),
                        files,
                    },
                );
            }
            let Some(entry) = seen.get_mut(&id) else {
                unreachable!("the session's entry was inserted above");
            };
            // Marked before the lock is released: parallel calls in the same
            // directory add each file once.
            candidates
                .into_iter()
                .filter(|f| entry.files.insert(f.clone()))
                .collect()
        };
        for path in new {
            if let Some(text) = render_nested(&path) {
                // Fails only when the agent was disposed meanwhile: then
                // nobody will read the context anyway.
                let _ = sink.inject_context(
                    vec![ContentBlock::text(text)],
                    MessageSource::plugin(NESTED_SOURCE),
                );
            }
        }
    }
}

impl Plugin for NestedInstructions {
    /// Adds a `tools/execute` listener that, after a successful file-tool
    /// call from an agent (its extensions hold the agent and its
    /// [`ContextSink`]), adds the instruction files the call reached.
    ///
    /// # Errors
    /// `MISSING_SERVICE` without a [`ToolRegistry`] in the kernel.
    fn install(self, kernel: &Kernel) -> Result<Registration, DshError> {
        let tools = kernel.service::<ToolRegistry>()?;
        let this = Arc::new(self);
        Ok(tools.on_execute().on(move |(call, env): Execution, next| {
            let this = this.clone();
            let agent = env.extensions.get::<Arc<dyn Agent>>().cloned();
            let sink = env.extensions.get::<Arc<dyn ContextSink>>().cloned();
            let dir = match (&agent, &sink) {
                (Some(_), Some(_)) => this.touched_dir(&call),
                _ => None,
            };
            async move {
                let result = next.run((call, env)).await;
                if let (Some(dir), Some(agent), Some(sink), false) =
                    (dir, agent, sink, result.is_error)
                {
                    this.add(&dir, &agent, &sink);
                }
                result
            }
        }))
    }
}

/// The context message for the instruction file at `path`: `## <path>`, a
/// line saying what it is, its text cut at [`NESTED_LIMIT`] bytes (with a
/// note when cut). `None` when the file is unreadable, not UTF-8 or blank.
pub fn render_nested(path: &Path) -> Option<String> {
    use std::io::Read;
    // Never blocks: a fifo named AGENTS.md is refused, not waited on.
    let (file, meta) = dsh_tools::regular::open(path).ok()?;
    let total = meta.len();
    let mut bytes = Vec::new();
    // A UTF-8 character is at most 4 bytes: reading 3 past the limit is
    // enough to cut on a character boundary.
    file.take(NESTED_LIMIT as u64 + 3)
        .read_to_end(&mut bytes)
        .ok()?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        // Only a character cut off by the read window may be incomplete.
        Err(e) if e.error_len().is_none() && bytes.len() > NESTED_LIMIT => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    let mut cut = text.len().min(NESTED_LIMIT);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let shown = text[..cut].trim_end();
    if shown.trim().is_empty() {
        return None;
    }
    let dir = path.parent().unwrap_or(path);
    let name = path.file_name().map_or_else(
        || "the file".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut out = format!(
        "## {}\n\nInstructions for the files under {} (its {name}); they add to the instructions in the system prompt and take precedence where they are more specific.\n\n{shown}",
        path.display(),
        dir.display(),
    );
    let total = usize::try_from(total).unwrap_or(usize::MAX).max(text.len());
    if total > cut {
        out.push_str(&format!(
            "\n\n[{name} cut at 64 KiB: {} of {total} bytes not shown; read {} for the rest]",
            total - cut,
            path.display()
        ));
    }
    Some(out)
}

/// The files a session's log already holds as nested-instruction context
/// (a resumed session): the `## <path>` of each such message.
fn already_added(session: &Session) -> HashSet<PathBuf> {
    session
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::ContextMessage(m) if m.source == MessageSource::plugin(NESTED_SOURCE) => {
                let first = m.content.first()?.as_text()?;
                let heading = first.lines().next()?.strip_prefix("## ")?;
                Some(PathBuf::from(heading))
            }
            _ => None,
        })
        .collect()
}

/// The leading directories of a glob pattern that hold no wildcard
/// (`sub/dir/**/*.rs` → `sub/dir`); the last segment is a file pattern.
fn literal_dirs(pattern: &str) -> PathBuf {
    if pattern.starts_with('/') {
        return PathBuf::new();
    }
    let segments: Vec<&str> = pattern.split('/').collect();
    segments[..segments.len().saturating_sub(1)]
        .iter()
        .take_while(|s| !s.contains(['*', '?', '[', '{', '\\']))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, args: serde_json::Value) -> ToolCall {
        ToolCall::new("c1", tool, args.to_string())
    }

    #[test]
    fn the_touched_directory_follows_each_tools_arguments() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("w");
        std::fs::create_dir_all(cwd.join("sub/dir")).unwrap();
        std::fs::write(cwd.join("sub/file.txt"), "x").unwrap();
        let n = NestedInstructions::new(&cwd);
        let dir = |tool: &str, args: serde_json::Value| n.touched_dir(&call(tool, args));
        use serde_json::json;
        assert_eq!(
            dir("read", json!({"file_path": "sub/a.rs"})),
            Some(cwd.join("sub"))
        );
        assert_eq!(
            dir(
                "write",
                json!({"file_path": cwd.join("x/../sub/./b").to_str().unwrap()})
            ),
            Some(cwd.join("sub"))
        );
        assert_eq!(
            dir("edit", json!({"file_path": "top.rs"})),
            Some(cwd.clone())
        );
        assert_eq!(
            dir(
                "str_replace_editor",
                json!({"command": "view", "path": cwd.join("sub/dir").to_str().unwrap()})
            ),
            Some(cwd.join("sub/dir")),
            "a directory is itself"
        );
        assert_eq!(
            dir("grep", json!({"pattern": "x", "path": "sub/file.txt"})),
            Some(cwd.join("sub")),
            "a file is its parent"
        );
        assert_eq!(dir("grep", json!({"pattern": "sub/x"})), Some(cwd.clone()));
        assert_eq!(
            dir("glob", json!({"pattern": "sub/dir/**/*.rs"})),
            Some(cwd.join("sub/dir"))
        );
        assert_eq!(
            dir("glob", json!({"pattern": "*.rs", "path": "sub"})),
            Some(cwd.join("sub"))
        );
        assert_eq!(
            dir("glob", json!({"pattern": "s*/x/*.rs"})),
            Some(cwd.clone())
        );
        assert_eq!(dir("bash", json!({"command": "cat sub/a"})), None);
        assert_eq!(dir("read", json!({"nope": 1})), None);
    }

    #[test]
    fn files_come_from_below_the_working_directory_only_agents_before_claude() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("w");
        let deep = cwd.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(cwd.join("AGENTS.md"), "in the system prompt").unwrap();
        std::fs::write(cwd.join("a/AGENTS.md"), "a").unwrap();
        std::fs::write(cwd.join("a/CLAUDE.md"), "shadowed").unwrap();
        std::fs::write(cwd.join("a/b/c/CLAUDE.md"), "c").unwrap();
        let n = NestedInstructions::new(&cwd);
        assert_eq!(
            n.files_for(&deep),
            [cwd.join("a/AGENTS.md"), cwd.join("a/b/c/CLAUDE.md")]
        );
        assert!(n.files_for(&cwd).is_empty());
        assert!(n.files_for(tmp.path()).is_empty());
        assert!(n.files_for(&tmp.path().join("elsewhere")).is_empty());
    }

    #[test]
    fn a_long_file_is_cut_at_64_kib_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("AGENTS.md");
        std::fs::write(&path, "é".repeat(40_000)).unwrap();
        let text = render_nested(&path).unwrap();
        assert!(text.starts_with(&format!("## {}\n\n", path.display())));
        let note = text.rsplit_once("\n\n").unwrap().1;
        assert!(
            note.starts_with("[AGENTS.md cut at 64 KiB: 14464 of 80000 bytes not shown"),
            "{note}"
        );
        assert!(text.len() < NESTED_LIMIT + 600);
        std::fs::write(&path, "  \n").unwrap();
        assert_eq!(render_nested(&path), None, "blank");
        std::fs::write(&path, b"\xff\xfe").unwrap();
        assert_eq!(render_nested(&path), None, "not UTF-8");
        std::fs::write(&path, "short\n").unwrap();
        assert!(!render_nested(&path).unwrap().contains("cut at"));
    }
}
