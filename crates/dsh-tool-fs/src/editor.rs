//! `str_replace_editor`: the SWE-bench-style editor (view, create,
//! str_replace, insert) on the same guard and atomic writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_llm::ContentBlock;
use dsh_protocol::codes;
use dsh_tools::{
    define_tool, Concurrency, ConcurrencyRule, Tool, ToolArgs, ToolContext, ToolError,
};
use serde::{Deserialize, Serialize};

use crate::guard::{self, Guard, Memory};
use crate::{edit, io_error, load_fresh, store, window, write_err, Io};

/// Most characters of output; the rest is replaced by a marker.
pub const MAX_EDITOR_CHARS: usize = 16_000;

/// Description of `str_replace_editor`.
pub const EDITOR_DESCRIPTION: &str = "View, create and edit files. `view` shows a file with line numbers (optionally `view_range` [start, end], -1 for the end) or lists a directory two levels deep; `create` writes `file_text` to a new file (it refuses an existing one); `str_replace` replaces `old_str`, which must occur exactly once, by `new_str`; `insert` adds `new_str` after line `insert_line` (0 = top). `path` must be absolute. A file must be viewed before it is changed, and must not have changed since.";

/// What the editor does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToolArgs)]
#[serde(rename_all = "snake_case")]
pub enum EditorCommand {
    /// Show a file or list a directory.
    View,
    /// Create a new file.
    Create,
    /// Replace one exact text.
    StrReplace,
    /// Insert text after a line.
    Insert,
}

/// Arguments of `str_replace_editor`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct EditorArgs {
    /// The operation.
    pub command: EditorCommand,
    /// Absolute path of the file or directory.
    #[tool(min_length = 1)]
    pub path: String,
    /// `create`: the content of the new file.
    pub file_text: Option<String>,
    /// `insert`: the line after which `new_str` goes (0 = before the first).
    pub insert_line: Option<u64>,
    /// `str_replace`: the replacement (default empty); `insert`: the text.
    pub new_str: Option<String>,
    /// `str_replace`: the exact text to replace.
    pub old_str: Option<String>,
    /// `view` of a file: [start, end] lines, 1-based, end -1 for the last.
    #[tool(min_items = 2, max_items = 2)]
    pub view_range: Option<Vec<i64>>,
}

fn missing(what: &str, command: &str) -> ToolError {
    ToolError::new(
        codes::INVALID_ARGS,
        format!("invalid arguments: \"{what}\" is required for command \"{command}\""),
    )
}

/// Cuts `text` to [`MAX_EDITOR_CHARS`] characters with a marker.
fn clip(text: String) -> String {
    match text.char_indices().nth(MAX_EDITOR_CHARS) {
        Some((at, _)) => format!(
            "{}\n<response clipped: the output exceeded {MAX_EDITOR_CHARS} characters; view a smaller view_range>",
            &text[..at]
        ),
        None => text,
    }
}

/// The entries of `dir` two levels deep, without hidden ones, sorted.
fn list_dir(dir: &Path) -> Result<String, ToolError> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, &e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        out.push(format!(
            "{}{}",
            path.display(),
            if is_dir { "/" } else { "" }
        ));
        if is_dir {
            if let Ok(inner) = std::fs::read_dir(&path) {
                for sub in inner.flatten() {
                    let sub_name = sub.file_name().to_string_lossy().into_owned();
                    if sub_name.starts_with('.') {
                        continue;
                    }
                    let sub_dir = sub.file_type().is_ok_and(|t| t.is_dir());
                    out.push(format!(
                        "{}{}",
                        sub.path().display(),
                        if sub_dir { "/" } else { "" }
                    ));
                }
            }
        }
    }
    out.sort();
    Ok(format!(
        "Files and directories up to 2 levels deep in {}, excluding hidden items:\n{}\n",
        dir.display(),
        out.join("\n")
    ))
}

/// Numbered lines `from..=to` (1-based) of `text`, as a snippet.
fn snippet(text: &str, from: usize, to: usize) -> String {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .take(to.saturating_sub(from) + 1)
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect()
}

/// `view` only reads: it may run alongside other safe calls; every other
/// command (and arguments that name none) writes, so it runs alone.
fn view_is_safe(arguments: &str) -> Concurrency {
    #[derive(Deserialize)]
    struct Command<'a> {
        #[serde(borrow)]
        command: Option<std::borrow::Cow<'a, str>>,
    }
    match serde_json::from_str::<Command<'_>>(arguments) {
        Ok(Command { command: Some(c) }) if c == "view" => Concurrency::Safe,
        _ => Concurrency::Exclusive,
    }
}

pub(crate) fn editor_tool(memory: Arc<Memory>, io: Io) -> Arc<dyn Tool> {
    define_tool(
        "str_replace_editor",
        EDITOR_DESCRIPTION,
        move |args: EditorArgs, ctx: ToolContext| {
            let memory = memory.clone();
            let io = io.clone();
            async move {
                let path = PathBuf::from(&args.path);
                if !path.is_absolute() {
                    return Err(ToolError::new(
                        codes::INVALID_ARGS,
                        format!(
                            "invalid arguments: \"path\" must be an absolute path, got {:?}",
                            args.path
                        ),
                    ));
                }
                let guard = Guard {
                    ctx: &ctx,
                    memory: &memory,
                };
                if !matches!(args.command, EditorCommand::View) {
                    io.fence.check(&path)?;
                }
                let text = match args.command {
                    EditorCommand::View => view(&guard, &io, &path, args.view_range.as_deref()).await?,
                    EditorCommand::Create => {
                        let content = args.file_text.ok_or_else(|| missing("file_text", "create"))?;
                        if std::fs::symlink_metadata(&path).is_ok() {
                            return Err(ToolError::new(
                                codes::FS_ALREADY_EXISTS,
                                format!(
                                    "{} already exists; use str_replace or insert to change it",
                                    path.display()
                                ),
                            ));
                        }
                        if let Some(parent) = path.parent() {
                            std::fs::create_dir_all(parent).map_err(|e| write_err(parent, &e))?;
                        }
                        let key = guard::key_of(&path);
                        store(&guard, &io, &path, &key, None, &content).await?;
                        format!("File created successfully at: {}", path.display())
                    }
                    EditorCommand::StrReplace => {
                        let old = args.old_str.ok_or_else(|| missing("old_str", "str_replace"))?;
                        if old.is_empty() {
                            return Err(ToolError::new(
                                codes::INVALID_ARGS,
                                "invalid arguments: \"old_str\" must not be empty",
                            ));
                        }
                        let new = args.new_str.unwrap_or_default();
                        let (key, original) = load_fresh(&guard, &io.files, &path).await?;
                        let ending = edit::dominant_ending(&original);
                        let text = edit::to_lf(&original);
                        let (old, new) = (edit::to_lf(&old), edit::to_lf(&new));
                        let found = edit::occurrences(&text, &old);
                        match found.as_slice() {
                            [] => {
                                return Err(ToolError::new(
                                    codes::FS_EDIT_NOT_FOUND,
                                    format!("old_str does not occur verbatim in {}", path.display()),
                                ))
                            }
                            [at] => {
                                let replaced = format!("{}{new}{}", &text[..*at], &text[at + old.len()..]);
                                let out = edit::with_ending(&replaced, ending);
                                store(&guard, &io, &path, &key, Some(&original), &out).await?;
                                let line = edit::line_of(&text, *at);
                                let end = line + new.lines().count().max(1) - 1;
                                format!(
                                    "The file {} has been edited. A snippet of the result:\n{}Review the changes and edit again if needed.",
                                    path.display(),
                                    snippet(&replaced, line.saturating_sub(4).max(1), end + 4)
                                )
                            }
                            many => {
                                return Err(ToolError::new(
                                    codes::FS_AMBIGUOUS_EDIT,
                                    format!(
                                        "old_str occurs {} times in {} (lines {}); make it unique",
                                        many.len(),
                                        path.display(),
                                        edit::list_lines(&text, many)
                                    ),
                                ));
                            }
                        }
                    }
                    EditorCommand::Insert => {
                        let line = args.insert_line.ok_or_else(|| missing("insert_line", "insert"))?;
                        let new = args.new_str.ok_or_else(|| missing("new_str", "insert"))?;
                        let (key, original) = load_fresh(&guard, &io.files, &path).await?;
                        let ending = edit::dominant_ending(&original);
                        let text = edit::to_lf(&original);
                        let lines: Vec<&str> = text.lines().collect();
                        let at = usize::try_from(line).unwrap_or(usize::MAX);
                        if at > lines.len() {
                            return Err(ToolError::new(
                                codes::INVALID_ARGS,
                                format!(
                                    "invalid arguments: \"insert_line\" {line} is past the end of {} ({} lines)",
                                    path.display(),
                                    lines.len()
                                ),
                            ));
                        }
                        let new = edit::to_lf(&new);
                        let mut out: Vec<&str> = Vec::with_capacity(lines.len() + 1);
                        out.extend_from_slice(&lines[..at]);
                        out.extend(new.lines());
                        out.extend_from_slice(&lines[at..]);
                        let mut joined = out.join("\n");
                        if text.ends_with('\n') || text.is_empty() {
                            joined.push('\n');
                        }
                        let out = edit::with_ending(&joined, ending);
                        store(&guard, &io, &path, &key, Some(&original), &out).await?;
                        let added = new.lines().count().max(1);
                        format!(
                            "The file {} has been edited. A snippet of the result:\n{}Review the changes and edit again if needed.",
                            path.display(),
                            snippet(&joined, at.saturating_sub(3).max(1), at + added + 4)
                        )
                    }
                };
                Ok(vec![ContentBlock::text(clip(text))])
            }
        },
    )
    .concurrency(ConcurrencyRule::PerCall(Arc::new(view_is_safe)))
    .into_arc()
}

async fn view(
    guard: &Guard<'_>,
    io: &Io,
    path: &Path,
    range: Option<&[i64]>,
) -> Result<String, ToolError> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        if range.is_some() {
            return Err(ToolError::new(
                codes::INVALID_ARGS,
                "invalid arguments: \"view_range\" is for files, not directories",
            ));
        }
        return list_dir(path);
    }
    let (offset, limit) = match range {
        None => (1, u64::MAX),
        Some(r) => {
            let (start, end) = (
                r.first().copied().unwrap_or(1),
                r.get(1).copied().unwrap_or(-1),
            );
            let start = u64::try_from(start)
                .ok()
                .filter(|s| *s >= 1)
                .ok_or_else(|| {
                    ToolError::new(
                        codes::INVALID_ARGS,
                        "invalid arguments: \"view_range\" must start at line 1 or later",
                    )
                })?;
            let limit =
                match end {
                    -1 => u64::MAX,
                    e if e >= i64::try_from(start).unwrap_or(i64::MAX) => {
                        u64::try_from(e).unwrap_or(0) - start + 1
                    }
                    _ => return Err(ToolError::new(
                        codes::INVALID_ARGS,
                        "invalid arguments: \"view_range\" end must be -1 or at least its start",
                    )),
                };
            (start, limit)
        }
    };
    let window = window(&io.files, guard.ctx, path, (offset, limit), "view_range").await?;
    guard.record(&window.version);
    Ok(window.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_view_runs_alongside_other_calls() {
        let safe = |a: &str| view_is_safe(a) == Concurrency::Safe;
        assert!(safe(r#"{"command":"view","path":"/x"}"#));
        assert!(!safe(r#"{"command":"create","path":"/x","file_text":""}"#));
        assert!(!safe(r#"{"command":"str_replace","path":"/x"}"#));
        assert!(!safe(r#"{"path":"/x"}"#));
        assert!(!safe("not json"));
        // A repeated key is not a reliable answer: the call runs alone.
        assert!(!safe(r#"{"command":"view","command":"create"}"#));
    }
}
