//! `skill`: loads a skill's instructions (see [`crate::prompt::skills`]).
//! The skills are those found when the stack was built; each body is read
//! from disk at call time, so edits to a `SKILL.md` are seen at once.

use std::sync::Arc;

use dsh_llm::ContentBlock;
use dsh_tools::{define_tool, Tool, ToolArgs, ToolContext, ToolError};
use serde::{Deserialize, Serialize};

use crate::prompt::skills::{read_body, Skill};

/// Arguments of the built-in `skill` tool.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct SkillArgs {
    /// The skill's name, exactly as the system prompt lists it.
    #[tool(min_length = 1)]
    pub name: String,
}

/// What the tool says it does.
pub const SKILL_DESCRIPTION: &str = "Load a skill: returns the instructions of the named skill (from the skills listed in the system prompt) and the folder it lives in. Call it when a task matches a skill's description, before starting the task.";

/// The `skill` tool over `skills` (names unique).
///
/// Result: one text block, `Skill "<name>" (folder <dir>; paths in it are
/// relative to that folder)`, a blank line, then the `SKILL.md` body
/// without its front matter. Errors: `UNKNOWN_SKILL` for a name not in
/// `skills` (the message lists the skills and the closest name);
/// `TOOL_FAILED` when the file cannot be read or parsed any more.
pub fn skill_tool(skills: Arc<[Skill]>) -> Arc<dyn Tool> {
    define_tool(
        "skill",
        SKILL_DESCRIPTION,
        move |args: SkillArgs, _ctx: ToolContext| {
            let skills = skills.clone();
            async move {
                let Some(skill) = skills.iter().find(|s| s.name == args.name) else {
                    return Err(unknown(&skills, &args.name));
                };
                let body = read_body(skill).map_err(|m| {
                    ToolError::failed(format!(
                        "cannot load skill \"{}\" from {}: {m}",
                        skill.name,
                        skill.file.display()
                    ))
                })?;
                let text = format!(
                    "Skill \"{}\" (folder {}; paths in it are relative to that folder)\n\n{}",
                    skill.name,
                    skill.dir.display(),
                    if body.is_empty() {
                        "(the skill's SKILL.md has no instructions after its front matter)"
                    } else {
                        &body
                    }
                );
                Ok::<_, ToolError>(vec![ContentBlock::text(text)])
            }
        },
    )
    .into_arc()
}

/// `UNKNOWN_SKILL`: names the closest skill and lists them all.
fn unknown(skills: &[Skill], name: &str) -> ToolError {
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    let hint = dsh_schema::suggest::closest(name, names.iter().copied())
        .map(|c| format!(" Did you mean \"{c}\"?"))
        .unwrap_or_default();
    ToolError::new(
        dsh_protocol::codes::UNKNOWN_SKILL,
        format!(
            "no skill named \"{name}\".{hint} Available skills: {}.",
            names.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_args_do_not_drift() {
        dsh_tools::testing::assert_no_drift::<SkillArgs>(256);
    }
}
