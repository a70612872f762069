//! Custom commands: markdown files whose body becomes the user's message
//! when the user types `/name args`.
//!
//! [`CommandRoots::for_session`] names the folders searched, highest rank
//! first: the project's `<workspace>/.dsh/commands/` and
//! `<workspace>/.claude/commands/` (only when the project is trusted, see
//! [`project_trusted`]), then the user's `$XDG_CONFIG_HOME/dsh/commands/`
//! and `~/.claude/commands/`. Every `*.md` file below a folder is one
//! command named by its stem; one in a subfolder is `dir:name` (Claude
//! Code's namespacing). The first folder to define a name wins; a built-in
//! chat command's name ([`reserved_names`]) always wins over a custom one.
//!
//! A file may open with a front matter block ([`parse_command_file`]):
//!
//! ```text
//! ---
//! description: Review the changes in a directory
//! argument-hint: [dir]
//! model: deepseek-v4-pro
//! allowed-tools: Read, Grep, Bash(git diff:*)
//! ---
//! Review the changes under $1 …
//! ```
//!
//! [`discover`] never fails: a file it cannot use (broken front matter, a
//! bad name, larger than [`MAX_COMMAND_BYTES`], not UTF-8) is skipped with
//! a [`CommandWarning`] naming the file and, when it can, the line.
//! [`Commands`] keeps the catalog of one session and reads the folders
//! again when asked after [`RESCAN_AFTER`], re-parsing only when a file
//! was added, removed or changed (its size or mtime).
//!
//! Running one: [`expand`] puts the arguments into the body; a command
//! with `model:` or `allowed-tools:` limits its own turn through a
//! [`CommandTurn`] (the model of that turn's requests, the tools offered
//! and a guard denying the others).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use dsh_agent::AgentRegistry;
use dsh_kernel::sync::lock;
use dsh_kernel::Registration;
use dsh_protocol::{EventPayload, MessageSource, TurnTrigger};
use dsh_tools::{PreExecute, ToolRegistry, Verdict};

use crate::trust::ProjectTrust;

/// The largest command file read, in bytes; a larger one is skipped.
pub const MAX_COMMAND_BYTES: u64 = 256 * 1024;

/// The most files looked at below one folder; the rest are skipped with a
/// warning.
pub const MAX_FILES_PER_ROOT: usize = 1_000;

/// How deep subfolders are followed (`a:b:c` is depth 3).
pub const MAX_DEPTH: usize = 8;

/// The most characters of a description taken from the body's first line.
pub const MAX_DESCRIPTION_CHARS: usize = 80;

/// How long [`Commands::current`] trusts its last look at the folders.
pub const RESCAN_AFTER: Duration = Duration::from_secs(2);

/// The kind of the log-only event recorded before the message of a command
/// that became a prompt (a custom command or `/init`): `{"name", "args",
/// "source": "project"|"user"|"builtin", "file"?, "model"?,
/// "allowedTools"?}`.
pub const COMMAND_EVENT: &str = "command/custom";

/// What `/init` sends: explore the project and write (or improve) its
/// `AGENTS.md`.
pub const INIT_PROMPT: &str = include_str!("prompt/init.md");

/// Names front ends handle themselves (the inline UI's `/reasoning` and
/// `/quit`), reserved like the table's.
pub const FRONT_END_COMMANDS: &[&str] = &["reasoning", "quit"];

/// Every name a custom command may not take: the chat commands of
/// [`crate::commands::SLASH_COMMANDS`] and [`FRONT_END_COMMANDS`].
pub fn reserved_names() -> Vec<&'static str> {
    crate::commands::SLASH_COMMANDS
        .iter()
        .map(|c| c.name)
        .chain(FRONT_END_COMMANDS.iter().copied())
        .collect()
}

/// Where a command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The project's `.dsh/commands` or `.claude/commands`.
    Project,
    /// The user's `$XDG_CONFIG_HOME/dsh/commands` or `~/.claude/commands`.
    User,
}

impl Scope {
    /// `project` or `user`: what `/help` shows and the log records.
    pub fn label(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// One folder searched for command files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRoot {
    /// The folder (it need not exist).
    pub dir: PathBuf,
    /// What its commands are.
    pub scope: Scope,
}

/// The folders of one session, in rank order, and the project folders
/// left out because the project is not trusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandRoots {
    /// Searched, highest rank first.
    pub roots: Vec<CommandRoot>,
    /// Project folders not loaded (the project is not trusted); their
    /// files are only counted ([`CommandCatalog::untrusted`]).
    pub untrusted: Vec<PathBuf>,
}

impl CommandRoots {
    /// The folders for a session in `workspace`: the project's
    /// `.dsh/commands` and `.claude/commands` (in `roots` when `trusted`,
    /// else in `untrusted`), then `<user_config>/commands` (dsh's user
    /// config directory) and `<home>/.claude/commands`.
    pub fn new(
        workspace: &Path,
        trusted: bool,
        user_config: Option<&Path>,
        home: Option<&Path>,
    ) -> Self {
        let project = [
            workspace.join(".dsh").join("commands"),
            workspace.join(".claude").join("commands"),
        ];
        let mut roots = Vec::new();
        let mut untrusted = Vec::new();
        if trusted {
            roots.extend(project.into_iter().map(|dir| CommandRoot {
                dir,
                scope: Scope::Project,
            }));
        } else {
            untrusted.extend(project);
        }
        if let Some(dir) = user_config {
            roots.push(CommandRoot {
                dir: dir.join("commands"),
                scope: Scope::User,
            });
        }
        if let Some(home) = home {
            roots.push(CommandRoot {
                dir: home.join(".claude").join("commands"),
                scope: Scope::User,
            });
        }
        Self { roots, untrusted }
    }

    /// [`CommandRoots::new`] from the environment: dsh's user config
    /// directory (`$XDG_CONFIG_HOME/dsh`), `$HOME`, and whether the project
    /// in `workspace` is trusted under `policy` ([`project_trusted`]).
    pub fn for_session(workspace: &Path, policy: ProjectTrust) -> Self {
        let user = crate::config::user_config_dir();
        let home = crate::config::home_dir();
        Self::new(
            workspace,
            project_trusted(workspace, policy),
            user.as_deref(),
            home.as_deref(),
        )
    }
}

/// Whether files of the project in `workspace` that steer the model (its
/// commands) may be used: `--trust-project` ([`ProjectTrust::Trust`]), or
/// the user trusted the project with `dsh trust`: its `dsh.toml` as it is
/// now, or — a project without one — the directory itself (a record for
/// an empty `dsh.toml`, see [`empty_project_config`]). A trust record that
/// cannot be read counts as not trusted.
pub fn project_trusted(workspace: &Path, policy: ProjectTrust) -> bool {
    if policy == ProjectTrust::Trust {
        return true;
    }
    let config = match crate::config::read_project(workspace) {
        Ok(Some(config)) => config,
        Ok(None) => empty_project_config(workspace),
        Err(_) => return false,
    };
    crate::trust::TrustStore::open()
        .is_ok_and(|store| store.decision(&config) == crate::trust::Decision::Trusted)
}

/// The project config of a `workspace` that has no `dsh.toml`: an empty
/// one at `<workspace>/dsh.toml`. `dsh trust` records it to trust such a
/// project's commands; adding a `dsh.toml` later makes the project
/// undecided again (its contents differ).
pub fn empty_project_config(workspace: &Path) -> crate::config::ConfigFile {
    crate::config::ConfigFile {
        path: workspace.join("dsh.toml"),
        origin: crate::config::ConfigOrigin::Project,
        text: String::new(),
        file: crate::config::FileConfig::default(),
    }
}

/// Whether `workspace` has a project command folder (`.dsh/commands` or
/// `.claude/commands`).
pub fn has_project_commands(workspace: &Path) -> bool {
    CommandRoots::new(workspace, false, None, None)
        .untrusted
        .iter()
        .any(|d| d.is_dir())
}

/// One custom command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// Its name without the slash (`review`, `frontend:test`).
    pub name: String,
    /// What it does: the front matter's `description`, else the body's
    /// first non-empty line (cut at [`MAX_DESCRIPTION_CHARS`]).
    pub description: String,
    /// The front matter's `argument-hint`.
    pub argument_hint: Option<String>,
    /// The front matter's `model`: the model of this command's turn.
    pub model: Option<String>,
    /// The front matter's `allowed-tools`, as dsh tool names
    /// ([`dsh_tool_names`]): the only tools of this command's turn.
    pub allowed_tools: Option<Vec<String>>,
    /// The text after the front matter.
    pub body: String,
    /// The file.
    pub file: PathBuf,
    /// Where it was found.
    pub scope: Scope,
}

impl CustomCommand {
    /// The message `/name args` sends ([`expand`]).
    pub fn prompt(&self, args: &str) -> String {
        expand(&self.body, args)
    }

    /// What `/help`, completion and ACP show of it.
    pub fn summary(&self) -> CommandSummary {
        CommandSummary {
            name: self.name.clone(),
            description: self.description.clone(),
            argument_hint: self.argument_hint.clone(),
            scope: self.scope,
        }
    }
}

/// A command as lists show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSummary {
    /// The name without the slash.
    pub name: String,
    /// What it does, one line.
    pub description: String,
    /// The argument hint, when it has one.
    pub argument_hint: Option<String>,
    /// Where it comes from.
    pub scope: Scope,
}

/// A command file that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandWarning {
    /// The file (or folder).
    pub file: PathBuf,
    /// The 1-based line the problem is on, when it is on one.
    pub line: Option<usize>,
    /// What is wrong; ends with what happened (`skipped`).
    pub message: String,
}

impl std::fmt::Display for CommandWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(
                f,
                "custom command {}:{line}: {}",
                self.file.display(),
                self.message
            ),
            None => write!(
                f,
                "custom command {}: {}",
                self.file.display(),
                self.message
            ),
        }
    }
}

/// What [`discover`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandCatalog {
    /// The commands, sorted by name.
    pub commands: Vec<CustomCommand>,
    /// Files skipped, in discovery order.
    pub warnings: Vec<CommandWarning>,
    /// Command files in project folders not loaded because the project is
    /// not trusted.
    pub untrusted: usize,
}

impl CommandCatalog {
    /// The command named `name` (without the slash).
    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// Every command's summary, sorted by name.
    pub fn summaries(&self) -> Vec<CommandSummary> {
        self.commands.iter().map(CustomCommand::summary).collect()
    }
}

/// A `*.md` file found below a root.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    path: PathBuf,
    /// The folders below the root, then the stem.
    segments: Vec<String>,
    len: u64,
    modified: Option<SystemTime>,
}

/// What a look at the folders saw: every file with its size and mtime.
type Stamp = Vec<(PathBuf, u64, Option<SystemTime>)>;

/// The files below `root`, sorted by path; folders and files whose names
/// start with `.` are skipped, symbolic links to folders are not followed.
fn walk(root: &Path, warnings: &mut Vec<CommandWarning>) -> Vec<Found> {
    let mut found = Vec::new();
    let mut stack = vec![(root.to_path_buf(), Vec::<String>::new())];
    let mut capped = false;
    while let Some((dir, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        let mut subdirs = Vec::new();
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if prefix.len() + 1 < MAX_DEPTH {
                    let mut sub = prefix.clone();
                    sub.push(name);
                    subdirs.push((path, sub));
                }
                continue;
            }
            let Some(stem) = name.strip_suffix(".md") else {
                continue;
            };
            // A link is followed to a file, never to a folder.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            if found.len() >= MAX_FILES_PER_ROOT {
                capped = true;
                break;
            }
            let mut segments = prefix.clone();
            segments.push(stem.to_string());
            found.push(Found {
                path,
                segments,
                len: meta.len(),
                modified: meta.modified().ok(),
            });
        }
        if capped {
            break;
        }
        // Popped in reverse: subfolders are visited in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    if capped {
        warnings.push(CommandWarning {
            file: root.to_path_buf(),
            line: None,
            message: format!("more than {MAX_FILES_PER_ROOT} command files; the rest are skipped"),
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// Whether `segment` may be part of a command name: ASCII letters, digits,
/// `_` and `-`.
fn valid_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `name` is a well-formed command name: `[A-Za-z0-9_:-]+`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ':')
}

/// The commands in `roots` (see the module docs): the first root to
/// define a name wins, a name in `reserved` (the built-in commands) is
/// skipped with a warning, as is every file that cannot be used.
pub fn discover(roots: &CommandRoots, reserved: &[&str]) -> CommandCatalog {
    let mut catalog = CommandCatalog::default();
    let mut warnings = Vec::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut seen_dirs: Vec<PathBuf> = Vec::new();
    for root in &roots.roots {
        // A folder reached twice (a link, HOME inside the project) counts once.
        if let Ok(canonical) = std::fs::canonicalize(&root.dir) {
            if seen_dirs.contains(&canonical) {
                continue;
            }
            seen_dirs.push(canonical);
        }
        for found in walk(&root.dir, &mut warnings) {
            let warn = |line: Option<usize>, message: String| CommandWarning {
                file: found.path.clone(),
                line,
                message,
            };
            if let Some(bad) = found.segments.iter().find(|s| !valid_segment(s)) {
                warnings.push(warn(
                    None,
                    format!("\"{}\" cannot be part of a command name (use letters, digits, _ and -); skipped", bad.escape_debug()),
                ));
                continue;
            }
            let name = found.segments.join(":");
            if reserved.contains(&name.as_str()) {
                warnings.push(warn(
                    None,
                    format!("/{name} is a built-in command, which wins; skipped"),
                ));
                continue;
            }
            if taken.contains(&name) {
                // A higher-ranked folder defines it.
                continue;
            }
            match load(&found.path, &name, root.scope) {
                Ok(command) => {
                    taken.insert(name);
                    catalog.commands.push(command);
                }
                Err((line, message)) => warnings.push(warn(line, format!("{message}; skipped"))),
            }
        }
    }
    for dir in &roots.untrusted {
        // The workspace is the home: its `.claude/commands` are the user's.
        if std::fs::canonicalize(dir).is_ok_and(|c| seen_dirs.contains(&c)) {
            continue;
        }
        catalog.untrusted += walk(dir, &mut Vec::new())
            .iter()
            .filter(|f| f.segments.iter().all(|s| valid_segment(s)))
            .count();
    }
    catalog.commands.sort_by(|a, b| a.name.cmp(&b.name));
    catalog.warnings = warnings;
    catalog
}

/// The size and mtime of every file the roots hold now.
fn stamp(roots: &CommandRoots) -> Stamp {
    roots
        .roots
        .iter()
        .map(|r| &r.dir)
        .chain(roots.untrusted.iter())
        .flat_map(|dir| walk(dir, &mut Vec::new()))
        .map(|f| (f.path, f.len, f.modified))
        .collect()
}

/// Reads and parses one command file.
fn load(path: &Path, name: &str, scope: Scope) -> Result<CustomCommand, (Option<usize>, String)> {
    let text = read_command_file(path).map_err(|m| (None, m))?;
    let parsed = parse_command_file(&text)?;
    let description = parsed
        .description
        .filter(|d| !d.trim().is_empty())
        .map(|d| one_line(&d))
        .unwrap_or_else(|| first_line(&parsed.body));
    Ok(CustomCommand {
        name: name.to_string(),
        description,
        argument_hint: parsed.argument_hint.filter(|h| !h.trim().is_empty()),
        model: parsed.model.filter(|m| !m.trim().is_empty()),
        allowed_tools: parsed.allowed_tools,
        body: parsed.body,
        file: path.to_path_buf(),
        scope,
    })
}

/// The text of a command file, without a byte-order mark.
fn read_command_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let (file, meta) =
        dsh_tools::regular::open(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let too_big = |len: u64| {
        format!(
            "the file has {len} bytes, more than the {MAX_COMMAND_BYTES} a command file may have"
        )
    };
    if meta.len() > MAX_COMMAND_BYTES {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    // One byte more than allowed tells a file that grew since the check.
    file.take(MAX_COMMAND_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the file: {e}"))?;
    if bytes.len() as u64 > MAX_COMMAND_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "the file is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(&text).to_string())
}

/// `text` on one line: runs of whitespace (newlines included) become one
/// space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first non-empty line of `body`, markdown heading marks removed, cut
/// at [`MAX_DESCRIPTION_CHARS`] characters; empty when there is none.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = one_line(line);
    match line.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        Some((cut, _)) => line[..cut].trim_end().to_string(),
        None => line,
    }
}

/// A command file's front matter and body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandFile {
    /// `description`.
    pub description: Option<String>,
    /// `argument-hint`.
    pub argument_hint: Option<String>,
    /// `model`.
    pub model: Option<String>,
    /// `allowed-tools`, as dsh tool names ([`dsh_tool_names`]), in order,
    /// without repeats.
    pub allowed_tools: Option<Vec<String>>,
    /// Everything after the front matter (the whole text without one).
    pub body: String,
}

/// A problem with a command file: the 1-based line it is on (when it is
/// on one) and what it is.
type Problem = (Option<usize>, String);

/// A front matter field: its key, its line, its value.
type Field = (String, usize, Value);

/// A front matter value: one line of text, or a list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Text(String),
    List(Vec<String>),
}

/// Parses a command file: an optional front matter block (a first line
/// `---`, `key: value` lines, a closing `---`), then the body.
///
/// The front matter is the simple subset of YAML command files use: one
/// `key: value` per line (`#` comments and blank lines ignored); values
/// plain (a ` #` starts a comment), `"double"` (with `\"`, `\\`, `\n`,
/// `\t`) or `'single'` (`''` for a quote) quoted, continued on indented
/// lines, or `|` / `>` blocks; lists as `[a, b]` or `- a` lines below an
/// empty `key:`. Known keys: `description`, `argument-hint`, `model` (one
/// value each; `argument-hint: [file]` is the text `[file]`) and
/// `allowed-tools` (a list, or one value split at commas and spaces
/// outside parentheses); other keys are ignored.
///
/// # Errors
/// `(line, message)`: an unterminated block (the line that opened it), a
/// line that is not `key: value`, a bad quote or list, a list for a key
/// that takes one value, an empty `allowed-tools` item.
pub fn parse_command_file(text: &str) -> Result<CommandFile, (Option<usize>, String)> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let is_fence = |l: &str| l.trim_end() == "---";
    if !lines.first().is_some_and(|l| is_fence(l)) {
        return Ok(CommandFile {
            body: text.to_string(),
            ..Default::default()
        });
    }
    let Some(close) = lines
        .iter()
        .skip(1)
        .position(|l| is_fence(l))
        .map(|i| i + 1)
    else {
        return Err((
            Some(1),
            "the front matter opened on this line is not closed by a `---` line".into(),
        ));
    };
    let mut out = CommandFile {
        body: lines[close + 1..].concat(),
        ..Default::default()
    };
    let fields = parse_fields(&lines[1..close], 2)?;
    for (key, line, value) in fields {
        let one = |value: Value| match value {
            Value::Text(t) => Ok(t),
            Value::List(_) => Err((Some(line), format!("`{key}` takes one value, not a list"))),
        };
        match key.as_str() {
            "description" => out.description = Some(one(value)?),
            "argument-hint" => out.argument_hint = Some(one(value)?),
            "model" => out.model = Some(one(value)?),
            "allowed-tools" => {
                let items = match value {
                    Value::Text(t) => split_tool_list(&t).map_err(|m| (Some(line), m))?,
                    Value::List(items) => items,
                };
                let mut tools: Vec<String> = Vec::new();
                for item in items {
                    let names = dsh_tool_names(&item).map_err(|m| (Some(line), m))?;
                    for n in names {
                        if !tools.contains(&n) {
                            tools.push(n);
                        }
                    }
                }
                out.allowed_tools = Some(tools);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The `key: value` fields of front matter `lines`, the first being line
/// `first` of the file: `(key, line, value)` in order.
fn parse_fields(lines: &[&str], first: usize) -> Result<Vec<Field>, Problem> {
    let mut fields: Vec<(String, usize, Value)> = Vec::new();
    // The field that indented lines continue: a plain value, a block or a
    // `- item` list.
    enum Open {
        None,
        Plain,
        Block { fold: bool, started: bool },
        List,
    }
    let mut open = Open::None;
    for (i, raw) in lines.iter().enumerate() {
        let n = first + i;
        let line = raw.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim();
        let indented = line.starts_with([' ', '\t']);
        if let Open::Block { fold, started } = &mut open {
            if indented || trimmed.is_empty() {
                if let Some((_, _, Value::Text(text))) = fields.last_mut() {
                    if *started {
                        text.push(if *fold && !trimmed.is_empty() {
                            ' '
                        } else {
                            '\n'
                        });
                    }
                    text.push_str(trimmed);
                    *started = true;
                }
                continue;
            }
            open = Open::None;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed
            .strip_prefix('-')
            .filter(|r| r.is_empty() || r.starts_with([' ', '\t']))
        {
            if !matches!(open, Open::List) {
                return Err((Some(n), "a `- item` line without a `key:` above it".into()));
            }
            let item = scalar(item.trim()).map_err(|m| (Some(n), m))?;
            if let Some((_, _, Value::List(items))) = fields.last_mut() {
                if !item.is_empty() {
                    items.push(item);
                }
            }
            continue;
        }
        if indented {
            match (&open, fields.last_mut()) {
                (Open::Plain, Some((_, _, Value::Text(text)))) => {
                    text.push(' ');
                    text.push_str(trimmed);
                    continue;
                }
                // `key:` then the value on the next, indented line.
                (Open::List, Some((_, _, value))) if *value == Value::List(Vec::new()) => {
                    *value = Value::Text(scalar(trimmed).map_err(|m| (Some(n), m))?);
                    open = Open::Plain;
                    continue;
                }
                _ => {}
            }
            return Err((
                Some(n),
                "an indented line that continues nothing (expected `key: value`)".into(),
            ));
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err((Some(n), "expected `key: value`".into()));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err((Some(n), "expected `key: value`".into()));
        }
        let value = value.trim();
        let (value, next) = match value {
            "" => (Value::List(Vec::new()), Open::List),
            "|" | "|-" | ">" | ">-" => (
                Value::Text(String::new()),
                Open::Block {
                    fold: value.starts_with('>'),
                    started: false,
                },
            ),
            v if v.starts_with('[') => (Value::Text(v.to_string()), Open::None),
            v if v.starts_with(['"', '\'']) => (
                Value::Text(scalar(v).map_err(|m| (Some(n), m))?),
                Open::None,
            ),
            v => (
                Value::Text(scalar(v).map_err(|m| (Some(n), m))?),
                Open::Plain,
            ),
        };
        fields.retain(|(k, _, _)| k != key);
        fields.push((key.to_string(), n, value));
        open = next;
    }
    // `key:` with no items is an absent value, `[a, b]` a list where a list
    // is wanted: decided by the caller's key, so flow lists stay text here
    // and are split for `allowed-tools` only.
    Ok(fields
        .into_iter()
        .filter(|(_, _, v)| !matches!(v, Value::List(items) if items.is_empty()))
        .collect())
}

/// A one-line scalar: plain (a ` #` starts a comment), or quoted.
fn scalar(value: &str) -> Result<String, String> {
    if let Some(rest) = value.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return after_quote(chars.as_str(), out),
                '\\' => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some(other) => {
                        out.push('\\');
                        out.push(other);
                    }
                    None => break,
                },
                c => out.push(c),
            }
        }
        return Err("a \"quoted\" value without its closing quote".into());
    }
    if let Some(rest) = value.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push('\'');
                    continue;
                }
                return after_quote(&chars.collect::<String>(), out);
            }
            out.push(c);
        }
        return Err("a 'quoted' value without its closing quote".into());
    }
    let plain = match value.find(" #") {
        Some(i) => &value[..i],
        None => value,
    };
    Ok(plain.trim().to_string())
}

/// What may follow a closing quote: nothing, or a comment.
fn after_quote(rest: &str, value: String) -> Result<String, String> {
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(value)
    } else {
        Err(format!(
            "text after the closing quote: \"{}\"",
            rest.escape_debug()
        ))
    }
}

/// Splits an `allowed-tools` value: a `[a, b]` list, or items separated by
/// commas and whitespace outside parentheses (`Bash(git status:*), Read`).
fn split_tool_list(value: &str) -> Result<Vec<String>, String> {
    let inner = match value.strip_prefix('[') {
        Some(rest) => rest
            .trim_end()
            .strip_suffix(']')
            .ok_or("a `[` list without its closing `]`")?,
        None => value,
    };
    let mut items = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in inner.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.checked_sub(1).ok_or("a `)` without its `(`")?;
                current.push(c);
            }
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                if !current.is_empty() {
                    items.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if depth > 0 {
        return Err("a `(` without its `)`".into());
    }
    if !current.is_empty() {
        items.push(current);
    }
    items
        .into_iter()
        .map(|i| scalar(&i))
        .filter(|i| !matches!(i, Ok(s) if s.is_empty()))
        .collect()
}

/// The dsh tools an `allowed-tools` item stands for. A specifier in
/// parentheses (`Bash(git status:*)`) is dropped: the turn is limited by
/// tool names only. Claude Code's names map to dsh's, case blind: `Bash` →
/// `bash`; `Read` → `read`; `Write` → `write` and `str_replace_editor`;
/// `Edit`, `MultiEdit` → `edit` and `str_replace_editor`; `Glob`, `LS` →
/// `glob`; `Grep` → `grep`; `TodoWrite` → `todo_write`; `Task` →
/// `subagent`; `BashOutput` → `job_output`; `KillShell`, `KillBash` →
/// `job_kill`. Any other name (a dsh tool, `mcp__server__tool`) is kept as
/// written.
///
/// # Errors
/// An empty item, or an unbalanced parenthesis.
pub fn dsh_tool_names(item: &str) -> Result<Vec<String>, String> {
    let item = item.trim();
    let name = match item.split_once('(') {
        Some((name, rest)) if rest.ends_with(')') => name.trim(),
        Some(_) => {
            return Err(format!(
                "`{}` has a `(` without its `)`",
                item.escape_debug()
            ))
        }
        None => item,
    };
    if name.is_empty() {
        return Err(format!(
            "an empty tool name in allowed-tools (`{}`)",
            item.escape_debug()
        ));
    }
    let mapped: &[&str] = match name.to_ascii_lowercase().as_str() {
        "bash" => &["bash"],
        "read" => &["read"],
        "write" => &["write", "str_replace_editor"],
        "edit" | "multiedit" => &["edit", "str_replace_editor"],
        "glob" | "ls" => &["glob"],
        "grep" => &["grep"],
        "todowrite" => &["todo_write"],
        "task" => &["subagent"],
        "bashoutput" => &["job_output"],
        "killshell" | "killbash" => &["job_kill"],
        _ => return Ok(vec![name.to_string()]),
    };
    Ok(mapped.iter().map(|s| s.to_string()).collect())
}

/// Splits `args` into words the way a shell would, without expanding
/// anything; an unterminated quote runs to the end
/// ([`dsh_process::words::split_words_lenient`]).
pub fn split_args(args: &str) -> Vec<String> {
    dsh_process::words::split_words_lenient(args)
}

/// The message a command with `body` sends for `args`: `$ARGUMENTS`
/// becomes the whole argument text (trimmed), `$1`, `$2`, … the words of
/// [`split_args`] (a missing one: empty). When the body has none of these
/// and arguments were given, they are appended after a blank line as
/// `ARGUMENTS: <args>` (what Claude Code does), so they are never lost.
pub fn expand(body: &str, args: &str) -> String {
    let args = args.trim();
    let words = split_args(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
            continue;
        }
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match after[..digits].parse::<usize>() {
            Ok(n) if n >= 1 => {
                if let Some(w) = words.get(n - 1) {
                    out.push_str(w);
                }
                used = true;
                rest = &after[digits..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    let out = out.trim().to_string();
    if !used && !args.is_empty() {
        return format!("{out}\n\nARGUMENTS: {args}");
    }
    out
}

/// One session's commands, read again when they may have changed (see
/// the module docs). Shared by the session's front ends.
#[derive(Debug)]
pub struct Commands {
    roots: CommandRoots,
    state: Mutex<Cached>,
}

#[derive(Debug)]
struct Cached {
    catalog: Arc<CommandCatalog>,
    stamp: Stamp,
    checked: Instant,
}

impl Commands {
    /// Reads the commands of `roots` now.
    pub fn new(roots: CommandRoots) -> Self {
        let stamp = stamp(&roots);
        let catalog = Arc::new(discover(&roots, &reserved_names()));
        Self {
            roots,
            state: Mutex::new(Cached {
                catalog,
                stamp,
                checked: Instant::now(),
            }),
        }
    }

    /// The folders searched.
    pub fn roots(&self) -> &CommandRoots {
        &self.roots
    }

    /// The catalog, looked at again when the last look is older than
    /// [`RESCAN_AFTER`] (for `/help` and completion, which may ask often).
    pub fn current(&self) -> Arc<CommandCatalog> {
        self.check(false).0
    }

    /// The catalog as the folders are now (a look at every file's size and
    /// mtime; parsed again only when one changed), for running a command.
    /// Also returns the warnings that are new since the previous catalog.
    pub fn refresh(&self) -> (Arc<CommandCatalog>, Vec<CommandWarning>) {
        self.check(true)
    }

    fn check(&self, always: bool) -> (Arc<CommandCatalog>, Vec<CommandWarning>) {
        let mut state = lock(&self.state);
        if !always && state.checked.elapsed() < RESCAN_AFTER {
            return (state.catalog.clone(), Vec::new());
        }
        let now = stamp(&self.roots);
        state.checked = Instant::now();
        if now == state.stamp {
            return (state.catalog.clone(), Vec::new());
        }
        let catalog = discover(&self.roots, &reserved_names());
        let new: Vec<CommandWarning> = catalog
            .warnings
            .iter()
            .filter(|w| !state.catalog.warnings.contains(w))
            .cloned()
            .collect();
        state.catalog = Arc::new(catalog);
        state.stamp = now;
        (state.catalog.clone(), new)
    }
}

/// How a command limits its own turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnLimits {
    /// The command's name (for the denial's reason).
    pub command: String,
    /// The model of the turn's requests.
    pub model: Option<String>,
    /// The only tools the turn offers and runs.
    pub tools: Option<Vec<String>>,
}

impl TurnLimits {
    /// Whether the limits change anything.
    pub fn is_empty(&self) -> bool {
        self.model.is_none() && self.tools.is_none()
    }
}

/// The limits of one command's turn, for the main agent of one stack.
/// [`CommandTurn::arm`] before sending the command's message; the next
/// turn the user starts takes them and they end with it.
#[derive(Debug, Default)]
pub struct CommandTurn {
    state: Mutex<TurnState>,
}

#[derive(Debug, Default)]
struct TurnState {
    pending: Option<TurnLimits>,
    /// `(session id, turn, limits)`.
    active: Option<(String, u64, TurnLimits)>,
}

impl CommandTurn {
    /// No limits.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The next turn started by a user message takes `limits`.
    pub fn arm(&self, limits: TurnLimits) {
        lock(&self.state).pending = Some(limits);
    }

    /// Drops limits no turn took yet (the message was not sent).
    pub fn disarm(&self) {
        lock(&self.state).pending = None;
    }

    /// The limits of the turn running now, if it has any.
    pub fn active(&self) -> Option<TurnLimits> {
        lock(&self.state).active.as_ref().map(|(_, _, l)| l.clone())
    }

    /// Whether limits wait for their turn or one runs with them.
    pub fn is_busy(&self) -> bool {
        let state = lock(&self.state);
        state.pending.is_some() || state.active.is_some()
    }

    fn active_for(&self, session: &str, turn: Option<u64>) -> Option<TurnLimits> {
        let state = lock(&self.state);
        let (s, t, limits) = state.active.as_ref()?;
        (s == session && turn.is_none_or(|turn| turn == *t)).then(|| limits.clone())
    }

    /// Installs the limits on the main agent (`agent_id`): turn starts and
    /// ends (`agent/event`), the model and tools of its requests
    /// (`agent/request`, prepended so the model switch and the compactor
    /// see the command's model) and a guard denying the calls of other
    /// tools with a reason the model reads. Sub-agents are not limited
    /// (starting one needs its tool, which the command may leave out).
    /// Undo the registration to remove all three.
    pub fn install(
        self: &Arc<Self>,
        agents: &AgentRegistry,
        tools: &ToolRegistry,
        agent_id: &'static str,
    ) -> Registration {
        let me = self.clone();
        let events = agents.hooks().event.on(move |e| {
            if e.agent.id().as_str() != agent_id {
                return;
            }
            let session = e.agent.session().id().to_string();
            let mut state = lock(&me.state);
            match &e.event.data {
                EventPayload::TurnStart(start) => {
                    let by_user = matches!(
                        &start.trigger,
                        TurnTrigger::Message {
                            source: MessageSource::User
                        }
                    );
                    if by_user {
                        if let Some(limits) = state.pending.take() {
                            state.active = Some((session, start.turn, limits));
                        }
                    }
                }
                EventPayload::TurnEnd(end)
                    if state
                        .active
                        .as_ref()
                        .is_some_and(|(s, t, _)| *s == session && *t == end.turn) =>
                {
                    state.active = None;
                }
                _ => {}
            }
        });
        let me = self.clone();
        let requests =
            agents
                .hooks()
                .request
                .prepend(move |mut ctx: dsh_agent::RequestContext, next| {
                    if ctx.agent.id().as_str() == agent_id {
                        let session = ctx.agent.session().id().to_string();
                        if let Some(limits) = me.active_for(&session, Some(ctx.turn)) {
                            if let Some(model) = limits.model {
                                ctx.request.model = model;
                            }
                            if let (Some(allowed), Some(set)) = (&limits.tools, &ctx.request.tools)
                            {
                                let kept: Vec<_> = set
                                    .schemas()
                                    .iter()
                                    .filter(|t| allowed.contains(&t.name))
                                    .cloned()
                                    .collect();
                                ctx.request.tools =
                                    (!kept.is_empty()).then(|| dsh_llm::ToolSet::new(kept));
                            }
                        }
                    }
                    next.run(ctx)
                });
        let me = self.clone();
        let guard = tools.add_guard(move |pre: &PreExecute| {
            let limits = pre
                .extensions
                .get::<Arc<dyn dsh_agent::Agent>>()
                .filter(|a| a.id().as_str() == agent_id)
                .and_then(|a| me.active_for(a.session().id().as_str(), None));
            let verdict = match limits {
                Some(limits) => tool_verdict(&limits, &pre.call.name),
                None => Verdict::Allow,
            };
            Box::pin(async move { verdict })
        });
        Registration::merge(vec![events, requests, guard])
    }
}

/// The guard's verdict on a call of `tool` in a turn with `limits`:
/// allowed when the command lists no tools or lists this one, else a
/// denial naming the command and the tools it allows.
pub fn tool_verdict(limits: &TurnLimits, tool: &str) -> Verdict {
    match &limits.tools {
        Some(allowed) if !allowed.iter().any(|t| t == tool) => Verdict::Deny(format!(
            "/{} allows only {} in its turn (its allowed-tools); {tool} is not allowed: do the task with those tools, or say what you would need",
            limits.command,
            if allowed.is_empty() {
                "no tools".to_string()
            } else {
                allowed.join(", ")
            }
        )),
        _ => Verdict::Allow,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_fields_and_body() {
        let text = "---\ndescription: \"Review: the diff\"\nargument-hint: [dir] [focus]\nmodel: deepseek-v4-pro # the big one\nallowed-tools: Bash(git diff:*), Read Grep\nunknown: whatever\n---\nReview $1.\n";
        let f = parse_command_file(text).unwrap();
        assert_eq!(f.description.as_deref(), Some("Review: the diff"));
        assert_eq!(f.argument_hint.as_deref(), Some("[dir] [focus]"));
        assert_eq!(f.model.as_deref(), Some("deepseek-v4-pro"));
        assert_eq!(
            f.allowed_tools.unwrap(),
            ["bash", "read", "grep"].map(String::from)
        );
        assert_eq!(f.body, "Review $1.\n");
    }

    #[test]
    fn allowed_tools_as_lists() {
        let flow =
            parse_command_file("---\nallowed-tools: [Read, 'Edit', mcp__gh__x]\n---\nx").unwrap();
        assert_eq!(
            flow.allowed_tools.unwrap(),
            ["read", "edit", "str_replace_editor", "mcp__gh__x"].map(String::from)
        );
        let block =
            parse_command_file("---\nallowed-tools:\n  - Write\n  - \"Bash(ls:*)\"\n---\nx")
                .unwrap();
        assert_eq!(
            block.allowed_tools.unwrap(),
            ["write", "str_replace_editor", "bash"].map(String::from)
        );
    }

    #[test]
    fn blocks_and_continuations() {
        let f = parse_command_file(
            "---\ndescription: >\n  one\n  two\nargument-hint: a\n  b\n---\nbody",
        )
        .unwrap();
        assert_eq!(f.description.as_deref(), Some("one two"));
        assert_eq!(f.argument_hint.as_deref(), Some("a b"));
        assert_eq!(f.body, "body");
    }

    #[test]
    fn broken_front_matter_names_the_line() {
        let cases = [
            ("---\ndescription: x\nbody\n", 1, "not closed"),
            (
                "---\ndescription: x\nthis is not a field\n---\n",
                3,
                "expected `key: value`",
            ),
            ("---\nmodel:\n  - a\n  - b\n---\n", 2, "takes one value"),
            ("---\ndescription: \"open\n---\n", 2, "closing quote"),
            ("---\nallowed-tools: Bash(ls\n---\n", 2, "without its `)`"),
            ("---\n- stray\n---\n", 2, "without a `key:`"),
            ("---\nallowed-tools: [Read\n---\n", 2, "closing `]`"),
        ];
        for (text, line, what) in cases {
            let (at, message) = parse_command_file(text).unwrap_err();
            assert_eq!(at, Some(line), "{text:?}: {message}");
            assert!(message.contains(what), "{text:?}: {message}");
        }
    }

    #[test]
    fn without_front_matter_the_whole_text_is_the_body() {
        let f = parse_command_file("# Fix\nFix issue $ARGUMENTS\n").unwrap();
        assert_eq!(f.body, "# Fix\nFix issue $ARGUMENTS\n");
        assert_eq!(first_line(&f.body), "Fix");
        let long = "x".repeat(200);
        assert_eq!(
            first_line(&format!("\n\n{long}")).len(),
            MAX_DESCRIPTION_CHARS
        );
    }

    #[test]
    fn arguments_are_substituted() {
        assert_eq!(
            expand("Fix issue $ARGUMENTS now", "  #12 fast "),
            "Fix issue #12 fast now"
        );
        assert_eq!(
            expand("a=$1 b=$2 c=$3", "one 'two words'"),
            "a=one b=two words c="
        );
        assert_eq!(expand("$2-$1", r#""x \"y\"" z\ w"#), r#"z w-x "y""#);
        assert_eq!(expand("$10 $1", "a b c d e f g h i j"), "j a");
        assert_eq!(
            expand("cost $ and $0 and $x $1", "a"),
            "cost $ and $0 and $x a"
        );
        assert_eq!(
            expand("Review the code", "src/lib.rs"),
            "Review the code\n\nARGUMENTS: src/lib.rs"
        );
        assert_eq!(expand("Review the code", ""), "Review the code");
        assert_eq!(split_args("a \"b c"), ["a", "b c"]);
        assert!(split_args("   ").is_empty());
        assert_eq!(split_args("''"), [""]);
    }

    #[test]
    fn tool_names_map_to_dsh() {
        assert_eq!(dsh_tool_names("Bash(git status:*)").unwrap(), ["bash"]);
        assert_eq!(dsh_tool_names("read").unwrap(), ["read"]);
        assert_eq!(dsh_tool_names("LS").unwrap(), ["glob"]);
        assert_eq!(dsh_tool_names("job_output").unwrap(), ["job_output"]);
        assert!(dsh_tool_names("()").is_err());
        assert!(dsh_tool_names("Bash(x").is_err());
    }

    #[test]
    fn the_guard_denies_tools_the_command_leaves_out() {
        let limits = TurnLimits {
            command: "look".into(),
            model: None,
            tools: Some(vec!["read".into(), "grep".into()]),
        };
        assert_eq!(tool_verdict(&limits, "read"), Verdict::Allow);
        let Verdict::Deny(reason) = tool_verdict(&limits, "bash") else {
            panic!("bash is denied");
        };
        assert!(
            reason.starts_with("/look allows only read, grep"),
            "{reason}"
        );
        assert!(reason.contains("bash is not allowed"), "{reason}");
        let open = TurnLimits {
            tools: None,
            ..limits
        };
        assert_eq!(tool_verdict(&open, "bash"), Verdict::Allow);
    }

    #[test]
    fn names() {
        assert!(valid_name("frontend:test-2_x"));
        assert!(!valid_name("a b"));
        assert!(!valid_name(""));
        assert!(reserved_names().contains(&"help"));
        assert!(reserved_names().contains(&"init"));
        assert!(reserved_names().contains(&"reasoning"));
    }
}
