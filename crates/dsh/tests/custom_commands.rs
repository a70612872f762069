//! The custom command loader on real folders: precedence between the
//! project's and the user's folders, `dir:name` namespacing, broken front
//! matter skipped with a warning naming the file and line while the others
//! load, the size limit, trust gating, a Claude Code command file, and
//! [`Commands`] reading again after a file changed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use dsh::custom_commands::{
    discover, reserved_names, CommandRoots, Commands, Scope, MAX_COMMAND_BYTES,
};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workspace `ws`, a user config dir `config/dsh` and a home `home`, all
/// under one temp dir.
struct Dirs {
    _tmp: tempfile::TempDir,
    ws: std::path::PathBuf,
    config: std::path::PathBuf,
    home: std::path::PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let config = tmp.path().join("config/dsh");
    let home = tmp.path().join("home");
    for d in [&ws, &config, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    Dirs {
        _tmp: tmp,
        ws,
        config,
        home,
    }
}

impl Dirs {
    fn roots(&self, trusted: bool) -> CommandRoots {
        CommandRoots::new(&self.ws, trusted, Some(&self.config), Some(&self.home))
    }
}

#[test]
fn the_first_folder_wins_and_subfolders_namespace() {
    let d = dirs();
    write(&d.ws.join(".dsh/commands/review.md"), "dsh project review");
    write(
        &d.ws.join(".claude/commands/review.md"),
        "claude project review",
    );
    write(
        &d.ws.join(".claude/commands/only-claude.md"),
        "from .claude",
    );
    write(&d.config.join("commands/review.md"), "user review");
    write(&d.config.join("commands/mine.md"), "user mine");
    write(&d.home.join(".claude/commands/mine.md"), "claude user mine");
    write(
        &d.home.join(".claude/commands/frontend/test.md"),
        "frontend tests",
    );
    write(&d.home.join(".claude/commands/a/b/deep.md"), "deep");
    write(&d.config.join("commands/notes.txt"), "not a command");
    write(&d.config.join("commands/.hidden.md"), "hidden");
    let catalog = discover(&d.roots(true), &reserved_names());
    assert!(catalog.warnings.is_empty(), "{:?}", catalog.warnings);
    let names: Vec<(&str, &str, Scope)> = catalog
        .commands
        .iter()
        .map(|c| (c.name.as_str(), c.body.as_str(), c.scope))
        .collect();
    assert_eq!(
        names,
        [
            ("a:b:deep", "deep", Scope::User),
            ("frontend:test", "frontend tests", Scope::User),
            ("mine", "user mine", Scope::User),
            ("only-claude", "from .claude", Scope::Project),
            ("review", "dsh project review", Scope::Project),
        ]
    );
    assert_eq!(catalog.untrusted, 0);
}

#[test]
fn an_untrusted_projects_commands_are_counted_not_loaded() {
    let d = dirs();
    write(&d.ws.join(".dsh/commands/deploy.md"), "deploy");
    write(&d.ws.join(".claude/commands/ops/rollback.md"), "rollback");
    write(&d.config.join("commands/review.md"), "user review");
    let catalog = discover(&d.roots(false), &reserved_names());
    let names: Vec<&str> = catalog.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["review"]);
    assert_eq!(catalog.untrusted, 2);
    let trusted = discover(&d.roots(true), &reserved_names());
    assert_eq!(trusted.commands.len(), 3);
    assert_eq!(trusted.untrusted, 0);
}

#[test]
fn broken_files_are_skipped_with_a_warning_and_the_rest_load() {
    let d = dirs();
    let dir = d.config.join("commands");
    write(&dir.join("ok.md"), "---\ndescription: fine\n---\nbody");
    write(&dir.join("open.md"), "---\ndescription: never closed\nbody");
    write(
        &dir.join("noise.md"),
        "---\ndescription: x\n# a comment\n: no key\n---\nb",
    );
    write(&dir.join("list.md"), "---\nmodel:\n  - a\n---\nb");
    write(&dir.join("bad name.md"), "body");
    write(&dir.join("help.md"), "a built-in's name");
    write(
        &dir.join("big.md"),
        &"y".repeat(MAX_COMMAND_BYTES as usize + 1),
    );
    write(
        &dir.join("edge.md"),
        &"z".repeat(MAX_COMMAND_BYTES as usize),
    );
    std::fs::write(dir.join("latin1.md"), b"caf\xe9").unwrap();
    let catalog = discover(&d.roots(true), &reserved_names());
    let names: Vec<&str> = catalog.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["edge", "ok"]);
    let shown: Vec<String> = catalog.warnings.iter().map(ToString::to_string).collect();
    let find = |file: &str| {
        shown
            .iter()
            .find(|w| w.contains(&format!("{}", dir.join(file).display())))
            .unwrap_or_else(|| panic!("a warning about {file}: {shown:?}"))
            .clone()
    };
    assert!(
        find("open.md").ends_with("open.md:1: the front matter opened on this line is not closed by a `---` line; skipped"),
        "{shown:?}"
    );
    assert!(find("list.md").contains("list.md:2: `model` takes one value, not a list"));
    assert!(
        find("noise.md").contains("noise.md:4: expected `key: value`"),
        "{shown:?}"
    );
    assert!(find("bad name.md").contains("cannot be part of a command name"));
    assert!(find("help.md").contains("/help is a built-in command, which wins; skipped"));
    assert!(find("big.md").contains(&format!(
        "the file has {} bytes, more than the {MAX_COMMAND_BYTES}",
        MAX_COMMAND_BYTES + 1
    )));
    assert!(find("latin1.md").contains("not UTF-8"));
    assert!(shown.iter().all(|w| w.ends_with("; skipped")), "{shown:?}");
}

#[test]
fn a_claude_code_command_file_loads_as_written() {
    let d = dirs();
    // The example from Claude Code's documentation of slash commands.
    write(
        &d.ws.join(".claude/commands/commit.md"),
        "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)\nargument-hint: [message]\ndescription: Create a git commit\nmodel: claude-3-5-haiku-20241022\n---\n\n## Context\n\n- Current status: !`git status`\n\n## Your task\n\nCreate a single git commit with message: $ARGUMENTS\n",
    );
    write(
        &d.home.join(".claude/commands/fix-issue.md"),
        "Find and fix issue #$1 with priority $2. Explain the change.\n",
    );
    let catalog = discover(&d.roots(true), &reserved_names());
    assert!(catalog.warnings.is_empty(), "{:?}", catalog.warnings);
    let commit = catalog.get("commit").unwrap();
    assert_eq!(commit.description, "Create a git commit");
    assert_eq!(commit.argument_hint.as_deref(), Some("[message]"));
    assert_eq!(commit.model.as_deref(), Some("claude-3-5-haiku-20241022"));
    assert_eq!(
        commit.allowed_tools.as_deref(),
        Some(&["bash".to_string()][..])
    );
    assert!(commit.body.starts_with("\n## Context"), "{:?}", commit.body);
    assert!(commit
        .prompt("fix the parser")
        .ends_with("Create a single git commit with message: fix the parser"));
    let fix = catalog.get("fix-issue").unwrap();
    assert_eq!(fix.scope, Scope::User);
    assert_eq!(
        fix.description,
        "Find and fix issue #$1 with priority $2. Explain the change."
    );
    assert_eq!(
        fix.prompt("123 \"very high\""),
        "Find and fix issue #123 with priority very high. Explain the change."
    );
}

#[test]
fn commands_are_read_again_when_a_file_changes() {
    let d = dirs();
    let file = d.config.join("commands/greet.md");
    write(&file, "---\ndescription: first\n---\nhello");
    let commands = Commands::new(d.roots(true));
    assert_eq!(
        commands.current().get("greet").unwrap().description,
        "first"
    );
    // Same size, newer mtime: parsed again.
    write(&file, "---\ndescription: again\n---\nhello");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let (catalog, fresh) = commands.refresh();
    assert_eq!(catalog.get("greet").unwrap().description, "again");
    assert!(fresh.is_empty());
    // A new broken file: its warning is new once.
    write(&d.config.join("commands/bad.md"), "---\nx\n---\n");
    let (catalog, fresh) = commands.refresh();
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    assert_eq!(catalog.warnings.len(), 1);
    let (_, again) = commands.refresh();
    assert!(again.is_empty());
    // A removed file is gone.
    std::fs::remove_file(&file).unwrap();
    assert!(commands.refresh().0.get("greet").is_none());
}

#[test]
fn a_workspace_that_is_the_home_has_its_claude_commands_as_the_users() {
    let d = dirs();
    write(&d.home.join(".claude/commands/mine.md"), "mine");
    let roots = CommandRoots::new(&d.home, false, Some(&d.config), Some(&d.home));
    let catalog = discover(&roots, &reserved_names());
    assert_eq!(catalog.get("mine").unwrap().scope, Scope::User);
    assert_eq!(catalog.untrusted, 0, "not counted as a project's");
}
