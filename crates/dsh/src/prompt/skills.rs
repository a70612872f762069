//! Skills: folders of task-specific instructions the model loads on demand.
//!
//! A skill is a folder holding a `SKILL.md` that opens with a front matter
//! block naming it and saying when to use it:
//!
//! ```text
//! ---
//! name: release-notes
//! description: Write release notes from the git log since the last tag.
//! ---
//! (the instructions: the body, returned by the `skill` tool)
//! ```
//!
//! [`discover`] looks in three roots, highest rank first: the project's
//! `.dsh/skills/` and `.agents/skills/` (the project is the repository root
//! the working directory is in, see [`repo_root`](super::instructions::repo_root)),
//! then the user's `$XDG_CONFIG_HOME/dsh/skills/`. Each immediate subfolder
//! with a `SKILL.md` is one skill; a skill whose name a higher-ranked root
//! already has is [`Shadowed`]. A file that cannot be used (no front matter,
//! unreadable, not UTF-8, larger than [`MAX_SKILL_BYTES`], no description) is
//! skipped with a [`SkillWarning`]; discovery never fails.
//!
//! The front matter is read line by line, not by a YAML library: top-level
//! `key: value` lines, values plain, `"double"` (with `\"`, `\\`, `\n`, `\t`
//! escapes) or `'single'` (`''` for a quote) quoted, plain values continued
//! on indented lines, and `|` / `>` block scalars. Other keys are ignored.

use std::path::{Path, PathBuf};

/// The most characters of a description the system prompt shows.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// The largest `SKILL.md` read, in bytes; a larger one is skipped.
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// The most characters of a skill name.
pub const MAX_NAME_CHARS: usize = 64;

/// Which root a skill was found in; the variants are in rank order (a
/// skill in an earlier one shadows a namesake in a later one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkillSource {
    /// `<project>/.dsh/skills/`.
    ProjectDsh,
    /// `<project>/.agents/skills/`.
    ProjectAgents,
    /// `$XDG_CONFIG_HOME/dsh/skills/`.
    User,
}

impl SkillSource {
    /// A short label for listings: `project .dsh/skills`, `project
    /// .agents/skills`, `user`.
    pub fn label(self) -> &'static str {
        match self {
            SkillSource::ProjectDsh => "project .dsh/skills",
            SkillSource::ProjectAgents => "project .agents/skills",
            SkillSource::User => "user",
        }
    }

    /// A stable machine name for JSON: `project-dsh`, `project-agents`,
    /// `user`.
    pub fn key(self) -> &'static str {
        match self {
            SkillSource::ProjectDsh => "project-dsh",
            SkillSource::ProjectAgents => "project-agents",
            SkillSource::User => "user",
        }
    }
}

/// One directory searched for skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRoot {
    /// Which root it is.
    pub source: SkillSource,
    /// The directory (it may not exist).
    pub dir: PathBuf,
}

/// A skill found by [`discover`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name: the front matter's `name`, else the folder's name.
    pub name: String,
    /// Its description on one line (whitespace runs collapsed), at most
    /// [`MAX_DESCRIPTION_CHARS`] characters (a longer one ends in `…`).
    pub description: String,
    /// The skill's folder.
    pub dir: PathBuf,
    /// Its `SKILL.md`.
    pub file: PathBuf,
    /// The root it was found in.
    pub source: SkillSource,
}

/// A skill left out because a higher-ranked root has one of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed {
    /// The skill left out.
    pub skill: Skill,
    /// The folder of the skill that is used instead.
    pub by: PathBuf,
}

/// A file or folder discovery skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillWarning {
    /// The file or folder.
    pub path: PathBuf,
    /// What is wrong with it and what to do about it.
    pub message: String,
}

impl std::fmt::Display for SkillWarning {
    /// `<path>: <message>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// What [`discover`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillCatalog {
    /// The roots searched, in rank order.
    pub roots: Vec<SkillRoot>,
    /// The skills, sorted by name; names are unique.
    pub skills: Vec<Skill>,
    /// Skills hidden by a namesake in a higher-ranked root, in discovery
    /// order.
    pub shadowed: Vec<Shadowed>,
    /// What was skipped, in discovery order.
    pub warnings: Vec<SkillWarning>,
}

impl SkillCatalog {
    /// The skill called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Whether no skill was found.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}

/// The roots searched for a session in `cwd`, in rank order: the project's
/// `.dsh/skills` and `.agents/skills` (the project being the repository
/// root holding `cwd`, else `cwd`), then `<user_dir>/skills` when dsh has a
/// user configuration directory.
pub fn skill_roots(cwd: &Path, user_dir: Option<&Path>) -> Vec<SkillRoot> {
    let project = super::instructions::repo_root(cwd);
    let mut roots = vec![
        SkillRoot {
            source: SkillSource::ProjectDsh,
            dir: project.join(".dsh").join("skills"),
        },
        SkillRoot {
            source: SkillSource::ProjectAgents,
            dir: project.join(".agents").join("skills"),
        },
    ];
    if let Some(user) = user_dir {
        roots.push(SkillRoot {
            source: SkillSource::User,
            dir: user.join("skills"),
        });
    }
    roots
}

/// The skills for a session in `cwd` ([`skill_roots`], then
/// [`discover_in`]). Reads the file system; never fails.
pub fn discover(cwd: &Path, user_dir: Option<&Path>) -> SkillCatalog {
    discover_in(skill_roots(cwd, user_dir))
}

/// The skills in `roots` (highest rank first): see the module docs. A root
/// that does not exist is silently empty; one reached twice (a symlink to
/// another root) is searched once.
pub fn discover_in(roots: Vec<SkillRoot>) -> SkillCatalog {
    let mut catalog = SkillCatalog::default();
    let mut seen_roots: Vec<PathBuf> = Vec::new();
    for root in &roots {
        let entries = match std::fs::read_dir(&root.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                if root.dir.exists() {
                    catalog.warnings.push(SkillWarning {
                        path: root.dir.clone(),
                        message: format!("cannot list the skills folder: {e}"),
                    });
                }
                continue;
            }
        };
        if let Ok(canonical) = std::fs::canonicalize(&root.dir) {
            if seen_roots.contains(&canonical) {
                continue;
            }
            seen_roots.push(canonical);
        }
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .filter(|p| {
                !p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
            })
            .collect();
        dirs.sort();
        for dir in dirs {
            match load_skill(&dir, root.source) {
                Ok(skill) => match catalog.skills.iter().find(|s| s.name == skill.name) {
                    Some(kept) => {
                        let by = kept.dir.clone();
                        if kept.source == skill.source {
                            catalog.warnings.push(SkillWarning {
                                path: skill.file.clone(),
                                message: format!(
                                    "skipped: {} already has a skill named \"{}\" (in {}); give one of them another name",
                                    root.dir.display(),
                                    skill.name,
                                    by.display()
                                ),
                            });
                        } else {
                            catalog.shadowed.push(Shadowed { skill, by });
                        }
                    }
                    None => catalog.skills.push(skill),
                },
                Err(Skip::Silently) => {}
                Err(Skip::Warn(w)) => catalog.warnings.push(w),
            }
        }
    }
    catalog.skills.sort_by(|a, b| a.name.cmp(&b.name));
    catalog.roots = roots;
    catalog
}

/// A skill's body read fresh from its `SKILL.md` (front matter removed,
/// leading blank lines and trailing whitespace trimmed).
///
/// # Errors
/// The message says what is wrong with the file (missing, unreadable, too
/// large, not UTF-8, no front matter).
pub fn read_body(skill: &Skill) -> Result<String, String> {
    let text = read_skill_file(&skill.file)?;
    let parsed = parse_skill_md(&text)?;
    Ok(parsed.body)
}

/// The system-prompt text listing `skills` (see the module docs); `None`
/// when there are none. With `tool`, the model is told to load a skill by
/// calling the `skill` tool; without it (the tool is not offered), to read
/// the skill's `SKILL.md`, whose path is then listed.
pub fn render_skills(skills: &[Skill], tool: bool) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut text = String::from(if tool {
        "Skills: instructions for particular tasks, loaded on demand. When a task matches a skill's description, call the `skill` tool with the skill's name to load its instructions before you start, and follow them. Load only the skills the task needs. Available skills:\n"
    } else {
        "Skills: instructions for particular tasks, loaded on demand. When a task matches a skill's description, read the skill's SKILL.md (the path after its name) before you start, and follow it; files it mentions are relative to its folder. Load only the skills the task needs. Available skills:\n"
    });
    for s in skills {
        if tool {
            text.push_str(&format!("\n- {}: {}", s.name, s.description));
        } else {
            text.push_str(&format!(
                "\n- {} ({}): {}",
                s.name,
                s.file.display(),
                s.description
            ));
        }
    }
    Some(text)
}

/// Why a folder yields no skill.
enum Skip {
    /// Not meant as a skill (no `SKILL.md`, nor anything like one).
    Silently,
    /// Meant as one, but unusable.
    Warn(SkillWarning),
}

fn load_skill(dir: &Path, source: SkillSource) -> Result<Skill, Skip> {
    let file = dir.join("SKILL.md");
    if !file.exists() {
        // A `skill.md` (wrong case) is almost certainly meant as one; any
        // other folder (shared scripts, notes) is simply not a skill.
        let near = std::fs::read_dir(dir).ok().and_then(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .find(|n| n.eq_ignore_ascii_case("SKILL.md"))
        });
        return Err(match near {
            Some(n) => Skip::Warn(SkillWarning {
                path: dir.join(n),
                message: "the file must be named SKILL.md (upper case); skipped".into(),
            }),
            None => Skip::Silently,
        });
    }
    let warn = |message: String| {
        Skip::Warn(SkillWarning {
            path: file.clone(),
            message,
        })
    };
    let text = read_skill_file(&file).map_err(|m| warn(format!("{m}; skipped")))?;
    let parsed = parse_skill_md(&text).map_err(|m| warn(format!("{m}; skipped")))?;
    let name = match parsed.name {
        Some(n) => n,
        None => dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    if name.is_empty() {
        return Err(warn("the skill has an empty name; skipped".into()));
    }
    if name.chars().any(char::is_control) {
        return Err(warn(
            "the skill's name holds a control character; skipped".into(),
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(warn(format!(
            "the skill's name is longer than {MAX_NAME_CHARS} characters; skipped"
        )));
    }
    let description = parsed
        .description
        .map(|d| cap_description(&one_line(&d)))
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            warn(
                "the front matter has no `description:` (say when to use the skill); skipped"
                    .into(),
            )
        })?;
    Ok(Skill {
        name,
        description,
        dir: dir.to_path_buf(),
        file,
        source,
    })
}

/// The text of a `SKILL.md`, without a byte-order mark.
fn read_skill_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let (file, meta) =
        dsh_tools::regular::open(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let len = meta.len();
    if len > MAX_SKILL_BYTES {
        return Err(format!(
            "the file has {len} bytes, more than the {MAX_SKILL_BYTES} a SKILL.md may have (move details into other files of the skill's folder)"
        ));
    }
    let mut bytes = Vec::new();
    // One byte more than allowed tells a file that grew since the check.
    file.take(MAX_SKILL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the file: {e}"))?;
    if bytes.len() as u64 > MAX_SKILL_BYTES {
        return Err(format!(
            "the file has more than the {MAX_SKILL_BYTES} bytes a SKILL.md may have"
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "the file is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(&text).to_string())
}

/// A parsed `SKILL.md`.
#[derive(Debug, PartialEq, Eq)]
struct SkillMd {
    name: Option<String>,
    description: Option<String>,
    body: String,
}

/// Splits a `SKILL.md` into its front matter fields and body.
fn parse_skill_md(text: &str) -> Result<SkillMd, String> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(
            "no front matter: the file must start with a `---` line, then `name:` and `description:` lines, then `---`".into(),
        );
    }
    let mut front = Vec::new();
    let mut closed = false;
    let mut consumed = first.len();
    for line in lines.by_ref() {
        consumed += line.len();
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            closed = true;
            break;
        }
        front.push(bare);
    }
    if !closed {
        return Err("the front matter is not closed: add a `---` line after it".into());
    }
    let fields = parse_front_matter(&front)?;
    let body = text[consumed..].trim_end();
    let body = body.trim_start_matches(['\n', '\r']).to_string();
    let get = |key: &str| {
        fields
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    Ok(SkillMd {
        name: get("name").map(|n| n.trim().to_string()),
        description: get("description"),
        body,
    })
}

/// The top-level `key: value` pairs of a front matter block.
fn parse_front_matter(lines: &[&str]) -> Result<Vec<(String, String)>, String> {
    let mut fields = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // A nested value of a key we do not read (a list, a map).
            continue;
        }
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().to_string();
        let rest = rest.trim();
        // The indented lines that follow belong to this key.
        let start = i;
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            i += 1;
        }
        let more = &lines[start..i];
        let value = if let Some(style) = rest.strip_prefix(['|', '>']) {
            let folded = rest.starts_with('>');
            let keep_newline = !style.contains('-');
            block_scalar(more, folded, keep_newline)
        } else if rest.starts_with('"') || rest.starts_with('\'') {
            let mut whole = rest.to_string();
            for l in more {
                whole.push(' ');
                whole.push_str(l.trim());
            }
            unquote(&whole).map_err(|m| format!("front matter `{key}:` {m}"))?
        } else {
            let mut whole = strip_comment(rest).to_string();
            for l in more.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
                whole.push(' ');
                whole.push_str(strip_comment(l));
            }
            whole
        };
        fields.push((key, value));
    }
    Ok(fields)
}

/// A plain value without a trailing ` # comment`.
fn strip_comment(s: &str) -> &str {
    match s.find(" #") {
        Some(i) => s[..i].trim_end(),
        None => s,
    }
}

/// A `|` (literal) or `>` (folded) block scalar from its indented lines.
fn block_scalar(lines: &[&str], folded: bool, keep_newline: bool) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let body: Vec<&str> = lines
        .iter()
        .map(|l| {
            if l.trim().is_empty() {
                ""
            } else {
                &l[indent..]
            }
        })
        .collect();
    let mut text = if folded {
        let mut out = String::new();
        for (n, l) in body.iter().enumerate() {
            if l.is_empty() {
                out.push('\n');
            } else {
                if n > 0 && !body[n - 1].is_empty() {
                    out.push(' ');
                }
                out.push_str(l);
            }
        }
        out
    } else {
        body.join("\n")
    };
    text = text.trim_end().to_string();
    if keep_newline && !text.is_empty() {
        text.push('\n');
    }
    text
}

/// The value of a quoted scalar (`"…"` with escapes, `'…'` with `''`).
fn unquote(s: &str) -> Result<String, String> {
    let mut chars = s.chars();
    let quote = chars.next().unwrap_or('"');
    let mut out = String::new();
    while let Some(c) = chars.next() {
        if c == quote {
            if quote == '\'' && chars.clone().next() == Some('\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            let rest = chars.as_str().trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                return Err(format!(
                    "has text after its closing quote: {rest:?}; quote the whole value"
                ));
            }
            return Ok(out);
        }
        if c == '\\' && quote == '"' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => break,
            }
            continue;
        }
        out.push(c);
    }
    Err(format!("has no closing {quote}"))
}

/// `s` with every whitespace run (newlines too) made one space, trimmed.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` cut to [`MAX_DESCRIPTION_CHARS`] characters, the last one `…` when
/// cut.
fn cap_description(s: &str) -> String {
    if s.chars().count() <= MAX_DESCRIPTION_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_DESCRIPTION_CHARS - 1).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: impl AsRef<[u8]>) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn skill_md(name: &str, description: &str, body: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
    }

    /// A repository with `.git`, a cwd below its root, a user dir.
    struct World {
        _tmp: tempfile::TempDir,
        repo: PathBuf,
        cwd: PathBuf,
        user: PathBuf,
    }

    fn world() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let cwd = repo.join("src").join("deep");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let user = tmp.path().join("config").join("dsh");
        World {
            _tmp: tmp,
            repo,
            cwd,
            user,
        }
    }

    #[test]
    fn roots_rank_project_dsh_then_project_agents_then_user_and_shadow_by_name() {
        let w = world();
        let dsh = w.repo.join(".dsh/skills");
        let agents = w.repo.join(".agents/skills");
        let user = w.user.join("skills");
        write(
            &dsh.join("a/SKILL.md"),
            skill_md("deploy", "dsh deploy", "A"),
        );
        write(
            &agents.join("b/SKILL.md"),
            skill_md("deploy", "agents deploy", "B"),
        );
        write(
            &agents.join("c/SKILL.md"),
            skill_md("lint", "agents lint", "C"),
        );
        write(&user.join("d/SKILL.md"), skill_md("lint", "user lint", "D"));
        write(
            &user.join("e/SKILL.md"),
            skill_md("notes", "user notes", "E"),
        );
        let cat = discover(&w.cwd, Some(&w.user));
        assert_eq!(
            cat.roots.iter().map(|r| r.dir.clone()).collect::<Vec<_>>(),
            [dsh.clone(), agents.clone(), user.clone()],
            "the project is the repository root, not the cwd"
        );
        let got: Vec<(&str, &str, SkillSource)> = cat
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str(), s.source))
            .collect();
        assert_eq!(
            got,
            [
                ("deploy", "dsh deploy", SkillSource::ProjectDsh),
                ("lint", "agents lint", SkillSource::ProjectAgents),
                ("notes", "user notes", SkillSource::User),
            ]
        );
        let shadowed: Vec<(&str, &Path, &Path)> = cat
            .shadowed
            .iter()
            .map(|s| (s.skill.name.as_str(), s.skill.dir.as_path(), s.by.as_path()))
            .collect();
        assert_eq!(
            shadowed,
            [
                (
                    "deploy",
                    agents.join("b").as_path(),
                    dsh.join("a").as_path()
                ),
                ("lint", user.join("d").as_path(), agents.join("c").as_path()),
            ]
        );
        assert!(cat.warnings.is_empty(), "{:?}", cat.warnings);
        let deploy = cat.get("deploy").unwrap();
        assert_eq!(deploy.file, dsh.join("a/SKILL.md"));
        assert_eq!(read_body(deploy).unwrap(), "A");
    }

    #[test]
    fn outside_a_repository_the_project_is_the_working_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("w");
        std::fs::create_dir_all(&cwd).unwrap();
        if tmp.path().ancestors().any(|a| a.join(".git").exists()) {
            return; // The temp dir sits in a repository: covered above.
        }
        let roots = skill_roots(&cwd, None);
        assert_eq!(roots.len(), 2, "no user dir, no user root");
        assert_eq!(roots[0].dir, cwd.join(".dsh/skills"));
    }

    #[test]
    fn the_name_defaults_to_the_folder_and_quoted_values_are_unquoted() {
        let w = world();
        let dsh = w.repo.join(".dsh/skills");
        write(
            &dsh.join("from-folder/SKILL.md"),
            "---\ndescription: \"Says \\\"hi\\\": twice\" # a comment\n---\nbody\n",
        );
        write(
            &dsh.join("x/SKILL.md"),
            "---\nname: 'it''s'\ndescription: >\n  Folded over\n  two lines.\nlicense: MIT\n---\nbody\n",
        );
        write(
            &dsh.join("y/SKILL.md"),
            "\u{feff}---\r\nname: plain\r\ndescription: continued\r\n  on the next line\r\nallowed-tools:\r\n  - read\r\n---\r\n\r\nCRLF body\r\n",
        );
        let cat = discover(&w.cwd, None);
        assert!(cat.warnings.is_empty(), "{:?}", cat.warnings);
        let got: Vec<(&str, &str)> = cat
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("from-folder", "Says \"hi\": twice"),
                ("it's", "Folded over two lines."),
                ("plain", "continued on the next line"),
            ]
        );
        assert_eq!(read_body(cat.get("plain").unwrap()).unwrap(), "CRLF body");
    }

    #[test]
    fn descriptions_are_capped_at_500_characters_on_a_char_boundary() {
        let w = world();
        let dsh = w.repo.join(".dsh/skills");
        let exact = "é".repeat(MAX_DESCRIPTION_CHARS);
        let long = "ü".repeat(MAX_DESCRIPTION_CHARS + 1);
        write(&dsh.join("exact/SKILL.md"), skill_md("exact", &exact, "b"));
        write(&dsh.join("long/SKILL.md"), skill_md("long", &long, "b"));
        let cat = discover(&w.cwd, None);
        assert_eq!(cat.get("exact").unwrap().description, exact, "500 is kept");
        let cut = &cat.get("long").unwrap().description;
        assert_eq!(cut.chars().count(), MAX_DESCRIPTION_CHARS);
        assert!(cut.ends_with("ü…"), "{cut}");
        assert_eq!(cut.chars().filter(|c| *c == 'ü').count(), 499);
    }

    #[test]
    fn unusable_files_are_skipped_with_a_warning_and_never_panic() {
        let w = world();
        let dsh = w.repo.join(".dsh/skills");
        write(&dsh.join("good/SKILL.md"), skill_md("good", "fine", "ok"));
        write(
            &dsh.join("bare/SKILL.md"),
            "# Just markdown\nno front matter\n",
        );
        write(
            &dsh.join("open/SKILL.md"),
            "---\nname: open\ndescription: d\n",
        );
        write(
            &dsh.join("nodesc/SKILL.md"),
            "---\nname: nodesc\n---\nbody\n",
        );
        write(
            &dsh.join("binary/SKILL.md"),
            b"---\nname: b\xff\xfe\ndescription: d\n---\n",
        );
        write(
            &dsh.join("huge/SKILL.md"),
            format!(
                "---\nname: huge\ndescription: d\n---\n{}",
                "x".repeat(MAX_SKILL_BYTES as usize)
            ),
        );
        write(
            &dsh.join("quote/SKILL.md"),
            "---\ndescription: \"never closed\n---\n",
        );
        write(&dsh.join("lower/skill.md"), skill_md("lower", "d", "b"));
        write(&dsh.join("notes/README.md"), "not a skill: no warning");
        std::fs::create_dir_all(dsh.join("empty")).unwrap();
        std::fs::create_dir_all(dsh.join(".hidden")).unwrap();
        write(&dsh.join("loose-file.md"), "ignored: not a folder");
        write(&dsh.join("zz-dup/SKILL.md"), skill_md("good", "again", "x"));
        let cat = discover(&w.cwd, None);
        assert_eq!(
            cat.skills
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["good"]
        );
        let warned = |dir: &str, needle: &str| {
            let hit = cat
                .warnings
                .iter()
                .find(|w| w.path.starts_with(dsh.join(dir)))
                .unwrap_or_else(|| panic!("no warning for {dir}: {:?}", cat.warnings));
            assert!(hit.message.contains(needle), "{dir}: {}", hit.message);
        };
        warned("bare", "no front matter");
        warned("open", "not closed");
        warned("nodesc", "no `description:`");
        warned("binary", "not UTF-8");
        warned("huge", "more than the 262144");
        warned("quote", "no closing \"");
        warned("lower", "must be named SKILL.md");
        warned("zz-dup", "already has a skill named \"good\"");
        assert_eq!(cat.warnings.len(), 8, "{:?}", cat.warnings);
        assert!(
            cat.shadowed.is_empty(),
            "a namesake in the same root is no shadow"
        );
    }

    #[test]
    fn the_body_is_read_fresh() {
        let w = world();
        let file = w.repo.join(".dsh/skills/s/SKILL.md");
        write(&file, skill_md("s", "d", "first"));
        let cat = discover(&w.cwd, None);
        write(&file, skill_md("s", "d", "second\n\nwith more"));
        assert_eq!(read_body(&cat.skills[0]).unwrap(), "second\n\nwith more");
        std::fs::remove_file(&file).unwrap();
        assert!(read_body(&cat.skills[0])
            .unwrap_err()
            .contains("cannot read"));
    }

    #[test]
    fn the_prompt_text_lists_names_and_descriptions() {
        let skill = |name: &str, description: &str| Skill {
            name: name.into(),
            description: description.into(),
            dir: PathBuf::from(format!("/p/{name}")),
            file: PathBuf::from(format!("/p/{name}/SKILL.md")),
            source: SkillSource::User,
        };
        assert_eq!(render_skills(&[], true), None);
        let skills = [skill("a", "Does A."), skill("b", "Does B.")];
        let text = render_skills(&skills, true).unwrap();
        assert!(text.contains("call the `skill` tool"), "{text}");
        assert!(text.ends_with("\n\n- a: Does A.\n- b: Does B."), "{text}");
        let text = render_skills(&skills, false).unwrap();
        assert!(!text.contains("`skill` tool"), "{text}");
        assert!(text.contains("- a (/p/a/SKILL.md): Does A."), "{text}");
    }
}
