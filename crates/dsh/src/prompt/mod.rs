//! The coding agent's system prompt: built-in sections whose model-facing
//! text lives in the `.md` files beside this module, the environment, the
//! project instructions (`AGENTS.md` files, see [`instructions`]) and the
//! skills catalog (see [`skills`]). [`nested`] adds the `AGENTS.md` of
//! directories below the working directory as context when a file tool
//! first touches them.

use std::path::Path;

use dsh_prompt::Section;

pub mod instructions;
pub mod nested;
pub mod skills;

/// Who the agent is and how it works.
pub const IDENTITY: &str = include_str!("identity.md");
/// How to use the bash tool.
pub const BASH_RULES: &str = include_str!("bash-rules.md");

/// The coding-agent system-prompt sections, in order: identity and working
/// rules, bash rules, the environment (working directory, OS, date), the
/// project instructions for `cwd` (the user's `AGENTS.md` in `user_dir`,
/// then the repository's from its root down to `cwd`) when there are any,
/// and the catalog of `skills` when there are any (with `skill_tool`, it
/// tells the model to load one with the `skill` tool; without, to read its
/// `SKILL.md`).
pub fn coding_sections(
    cwd: &Path,
    user_dir: Option<&Path>,
    skills: &[skills::Skill],
    skill_tool: bool,
) -> Vec<Section> {
    let mut sections = vec![
        Section::fixed("identity", 0, IDENTITY.trim_end()),
        Section::fixed("bash-rules", 10, BASH_RULES.trim_end()),
    ];
    let cwd_text = cwd.display().to_string();
    sections.push(Section::computed("environment", 20, move || {
        format!(
            "Environment: working directory {cwd_text}; OS {} ({}); date {}.",
            std::env::consts::OS,
            std::env::consts::ARCH,
            today()
        )
    }));
    let files = instructions::instruction_files(cwd, user_dir);
    if let Some(text) = instructions::render_instructions(&files) {
        sections.push(Section::fixed("agents-md", 30, text));
    }
    if let Some(text) = skills::render_skills(skills, skill_tool) {
        sections.push(Section::fixed("skills", 40, text));
    }
    sections
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
fn today() -> String {
    dsh_protocol::time::Utc::now().date()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn today_is_a_plausible_date() {
        let t = today();
        assert_eq!(t.len(), 10);
        let year: i32 = t[..4].parse().unwrap();
        assert!(year >= 2024, "{t}");
    }

    #[test]
    fn agents_md_is_included_when_present() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(coding_sections(dir.path(), None, &[], true).len(), 3);
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.\n").unwrap();
        let s = coding_sections(dir.path(), None, &[], true);
        assert_eq!(s.len(), 4);
        assert!(s[3].text.evaluate().ends_with("Use tabs."));
    }

    #[test]
    fn the_skills_catalog_is_the_last_section_when_there_are_skills() {
        let dir = tempfile::tempdir().unwrap();
        let skill = skills::Skill {
            name: "deploy".into(),
            description: "Ship it.".into(),
            dir: dir.path().join("deploy"),
            file: dir.path().join("deploy/SKILL.md"),
            source: skills::SkillSource::ProjectDsh,
        };
        let s = coding_sections(dir.path(), None, std::slice::from_ref(&skill), true);
        assert_eq!(s.len(), 4);
        assert_eq!(s[3].name, "skills");
        let text = s[3].text.evaluate();
        assert!(text.starts_with("Skills: "), "{text}");
        assert!(text.ends_with("\n- deploy: Ship it."), "{text}");
    }

    #[test]
    fn prompt_text_comes_from_the_md_files() {
        let s = coding_sections(Path::new("/"), None, &[], true);
        assert!(s[0]
            .text
            .evaluate()
            .starts_with("You are dsh, a coding agent"));
        assert!(s[1].text.evaluate().starts_with("Rules for the bash tool"));
    }
}
