//! `dsh skills list [--json]`: the skills a session in the working
//! directory would get, where each comes from, the ones shadowed by a
//! namesake in a higher-ranked root, and the files skipped and why.
//!
//! Text: one tab-separated line per skill (name, source, folder,
//! description cut to [`DESCRIPTION_COLUMN`] characters), then `shadowed:`
//! and `warnings:` blocks when there are any; without skills, `no skills
//! found` and the folders searched. `--json`: one object with `skills`,
//! `shadowed`, `warnings` and `roots`. Exit 0 (2 when the working directory
//! cannot be determined).

use dsh::prompt::skills::{discover, Skill, SkillCatalog};
use serde_json::{json, Value};

use crate::cli::{SkillsArgs, SkillsCommand};
use crate::output::emit;
use crate::sanitize::{json_visible, visible};

/// The most characters of a description the text listing shows.
const DESCRIPTION_COLUMN: usize = 80;

/// Runs `dsh skills`; returns the exit code.
pub(crate) fn run(args: SkillsArgs) -> u8 {
    let SkillsCommand::List { json } = args.command;
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            crate::output::say!("dsh: cannot determine the working directory: {e}");
            return 2;
        }
    };
    let user_dir = dsh::config::user_config_dir();
    let catalog = discover(&cwd, user_dir.as_deref());
    if json {
        let text = serde_json::to_string_pretty(&to_json(&catalog)).unwrap_or_else(|_| "{}".into());
        emit(&format!("{}\n", json_visible(&text)))
    } else {
        emit(&visible(&to_text(&catalog)))
    }
}

fn to_text(catalog: &SkillCatalog) -> String {
    let mut out = String::new();
    if catalog.skills.is_empty() {
        out.push_str("no skills found; searched:\n");
        for root in &catalog.roots {
            let state = if root.dir.is_dir() { "" } else { " (missing)" };
            out.push_str(&format!(
                "  {}\t{}{state}\n",
                root.source.label(),
                root.dir.display()
            ));
        }
        out.push_str("a skill is a folder there holding a SKILL.md that starts with front matter:\n  ---\n  name: my-skill\n  description: When to use it.\n  ---\n");
    }
    for s in &catalog.skills {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            s.name,
            s.source.label(),
            s.dir.display(),
            cut(&s.description, DESCRIPTION_COLUMN)
        ));
    }
    if !catalog.shadowed.is_empty() {
        out.push_str("shadowed (a skill of the same name in a higher-ranked folder is used):\n");
        for s in &catalog.shadowed {
            out.push_str(&format!(
                "  {}\t{}\t{}\tshadowed by {}\n",
                s.skill.name,
                s.skill.source.label(),
                s.skill.dir.display(),
                s.by.display()
            ));
        }
    }
    if !catalog.warnings.is_empty() {
        out.push_str("warnings:\n");
        for w in &catalog.warnings {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out
}

fn to_json(catalog: &SkillCatalog) -> Value {
    let skill = |s: &Skill| {
        json!({
            "name": s.name,
            "description": s.description,
            "source": s.source.key(),
            "dir": s.dir.display().to_string(),
            "file": s.file.display().to_string(),
        })
    };
    json!({
        "skills": catalog.skills.iter().map(skill).collect::<Vec<_>>(),
        "shadowed": catalog.shadowed.iter().map(|s| {
            let mut v = skill(&s.skill);
            v["shadowed_by"] = json!(s.by.display().to_string());
            v
        }).collect::<Vec<_>>(),
        "warnings": catalog.warnings.iter().map(|w| json!({
            "path": w.path.display().to_string(),
            "message": w.message,
        })).collect::<Vec<_>>(),
        "roots": catalog.roots.iter().map(|r| json!({
            "source": r.source.key(),
            "dir": r.dir.display().to_string(),
            "exists": r.dir.is_dir(),
        })).collect::<Vec<_>>(),
    })
}

/// `s` cut to `max` characters, the last one `…` when cut.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}
