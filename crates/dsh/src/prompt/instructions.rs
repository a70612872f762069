//! Project instructions: the `AGENTS.md` files the system prompt carries.
//!
//! In order: the user's `$XDG_CONFIG_HOME/dsh/AGENTS.md`, then one file per
//! directory from the repository root (the nearest ancestor of the working
//! directory holding `.git`; the working directory itself outside a
//! repository) down to the working directory: its `AGENTS.md`, or its
//! `CLAUDE.md` when it has no `AGENTS.md`. Each file goes under a heading
//! with its path; the whole is cut at [`INSTRUCTIONS_LIMIT`] bytes with a
//! note saying so. Files that are missing, unreadable, not UTF-8 or blank
//! are skipped.

use std::path::{Path, PathBuf};

/// The most bytes of instructions the system prompt carries.
pub const INSTRUCTIONS_LIMIT: usize = 64 * 1024;

/// One instruction file and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text, trailing whitespace removed.
    pub text: String,
}

/// The instruction files for a session in `cwd`, in prompt order (see the
/// module documentation); `user_dir` is dsh's user configuration directory.
pub fn instruction_files(cwd: &Path, user_dir: Option<&Path>) -> Vec<InstructionFile> {
    let mut files = Vec::new();
    if let Some(file) = user_dir.and_then(|d| read_instructions(&d.join("AGENTS.md"))) {
        files.push(file);
    }
    for dir in root_to(cwd) {
        files.extend(instruction_file_of(&dir).and_then(|f| read_instructions(&f)));
    }
    files
}

/// The repository root holding `cwd`: its nearest ancestor (itself
/// included) holding `.git`; `cwd` itself when none does.
pub fn repo_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The directories from the repository root holding `cwd` down to `cwd`;
/// only `cwd` when no ancestor holds `.git`.
fn root_to(cwd: &Path) -> Vec<PathBuf> {
    let root = repo_root(cwd);
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// The instruction file of one directory: its `AGENTS.md`, or its
/// `CLAUDE.md` when it has no `AGENTS.md` (even a blank `AGENTS.md`
/// shadows `CLAUDE.md`). `None` when neither exists; the path when one
/// does (it may still be unreadable or blank).
pub fn instruction_file_of(dir: &Path) -> Option<PathBuf> {
    let agents = dir.join("AGENTS.md");
    if agents.exists() {
        return Some(agents);
    }
    let claude = dir.join("CLAUDE.md");
    claude.exists().then_some(claude)
}

fn read_instructions(path: &Path) -> Option<InstructionFile> {
    let text = dsh_tools::regular::read_to_string(path).ok()?;
    let text = text.trim_end();
    (!text.trim().is_empty()).then(|| InstructionFile {
        path: path.to_path_buf(),
        text: text.to_string(),
    })
}

/// The system-prompt text of `files`: an opening line, then each file as
/// `## <path>` and its text, cut at [`INSTRUCTIONS_LIMIT`] bytes (on a
/// character boundary) with a closing note when cut. `None` without files.
pub fn render_instructions(files: &[InstructionFile]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Instructions from AGENTS.md files (the user's, then from the repository root down to the working directory; later ones are more specific):",
    );
    for f in files {
        text.push_str(&format!("\n\n## {}\n\n{}", f.path.display(), f.text));
    }
    if text.len() > INSTRUCTIONS_LIMIT {
        let total = text.len();
        let mut cut = INSTRUCTIONS_LIMIT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(&format!(
            "\n\n[instructions cut at 64 KiB: {} of {total} bytes not shown]",
            total - cut
        ));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn files_come_from_the_user_then_root_down_to_cwd_agents_before_claude() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let cwd = repo.join("a").join("b");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let user = tmp.path().join("config");
        write(&user.join("AGENTS.md"), "user rules\n");
        write(&tmp.path().join("AGENTS.md"), "outside the repository");
        write(&repo.join("AGENTS.md"), "root rules");
        write(&repo.join("CLAUDE.md"), "ignored: the root has AGENTS.md");
        write(&repo.join("a").join("CLAUDE.md"), "a rules (CLAUDE.md)");
        write(&cwd.join("AGENTS.md"), "   \n");
        write(
            &cwd.join("CLAUDE.md"),
            "ignored: b has an AGENTS.md, if blank",
        );
        let files = instruction_files(&cwd, Some(&user));
        let got: Vec<(&Path, &str)> = files
            .iter()
            .map(|f| (f.path.as_path(), f.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (user.join("AGENTS.md").as_path(), "user rules"),
                (repo.join("AGENTS.md").as_path(), "root rules"),
                (
                    repo.join("a").join("CLAUDE.md").as_path(),
                    "a rules (CLAUDE.md)"
                ),
            ]
        );
        let text = render_instructions(&files).unwrap();
        let root_heading = format!("## {}\n\nroot rules", repo.join("AGENTS.md").display());
        assert!(text.contains(&root_heading), "{text}");
        assert!(text.find("user rules") < text.find("root rules"));
        assert!(!text.contains("cut at"));
    }

    #[test]
    fn outside_a_repository_only_the_working_directory_counts() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("w");
        write(&tmp.path().join("AGENTS.md"), "parent");
        write(&cwd.join("AGENTS.md"), "here");
        let files = instruction_files(&cwd, None);
        let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
        // The temp dir itself might sit inside some repository; then its
        // `AGENTS.md` counts too.
        if tmp.path().ancestors().any(|a| a.join(".git").exists()) {
            assert_eq!(texts.last(), Some(&"here"));
            assert!(texts.contains(&"parent"));
        } else {
            assert_eq!(texts, ["here"]);
        }
        assert_eq!(render_instructions(&[]), None);
    }

    #[test]
    fn the_total_is_cut_at_64_kib_with_a_note() {
        let files = vec![
            InstructionFile {
                path: "/r/AGENTS.md".into(),
                text: "é".repeat(40_000),
            },
            InstructionFile {
                path: "/r/sub/AGENTS.md".into(),
                text: "tail".into(),
            },
        ];
        let text = render_instructions(&files).unwrap();
        let (body, note) = text.rsplit_once("\n\n").unwrap();
        assert!(body.len() <= INSTRUCTIONS_LIMIT);
        assert!(note.starts_with("[instructions cut at 64 KiB: "), "{note}");
        assert!(!text.contains("tail"));
    }
}
