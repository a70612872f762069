//! Skills and nested instructions through the whole stack, with the
//! offline echo model driving real tool calls (`call <tool> <json>`):
//! the system prompt carries the skills catalog, `skill` returns a body
//! read fresh from disk and refuses unknown names with the list; a file
//! tool reaching a directory below the working directory with its own
//! `AGENTS.md` (or `CLAUDE.md`) adds it once as a context message.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use dsh::{Settings, Stack, StackOptions};
use dsh_agent::Agent;
use dsh_agent_loop::AgentHandle;
use dsh_llm::MessageSource;
use dsh_session::{EventPayload, TurnEndReason};

use common::{tool_results, turn_within};

/// Every test of this binary runs with an empty user config directory, so
/// the user's own skills and AGENTS.md never leak in. Set once, before any
/// test reads the environment.
fn isolate_user_config() {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("dsh-skills-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::env::set_var("XDG_CONFIG_HOME", &dir);
        dir
    });
}

struct World {
    stack: Stack,
    repo: PathBuf,
    _dir: tempfile::TempDir,
}

/// A repository (`.git`) whose root is the working directory, with the
/// files `setup` writes.
fn world(setup: impl FnOnce(&Path)) -> World {
    isolate_user_config();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    setup(&repo);
    let config = dir.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let resolved = dsh::resolve(&Settings {
        model: Some("echo".into()),
        config: Some(config),
        cwd: Some(repo.clone()),
        session_dir: Some(dir.path().join("sessions")),
        ..Default::default()
    })
    .unwrap();
    let stack = Stack::build_with(
        resolved,
        StackOptions {
            persist_sessions: false,
            ..Default::default()
        },
    )
    .unwrap();
    World {
        stack,
        repo,
        _dir: dir,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Sends `prompt` and waits for the turn to end (completed).
async fn turn(stack: &Stack, agent: &Arc<dyn Agent>, prompt: &str) {
    let reason = turn_within(stack, agent, prompt, Duration::from_secs(60)).await;
    assert_eq!(reason, TurnEndReason::Completed);
}

/// The last tool result of the session: (is_error, code, text).
fn last_result(agent: &Arc<dyn Agent>) -> (bool, Option<String>, String) {
    let r = tool_results(&agent.session().events())
        .pop()
        .expect("a tool result");
    let text = r
        .content
        .iter()
        .filter_map(|b| b.as_text())
        .collect::<Vec<_>>()
        .join("\n");
    (r.is_error, r.code().map(str::to_string), text)
}

/// The texts of the session's nested-instruction context messages.
fn nested_context(agent: &Arc<dyn Agent>) -> Vec<String> {
    agent
        .session()
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::ContextMessage(m)
                if m.source == MessageSource::plugin("instructions") =>
            {
                Some(
                    m.content
                        .iter()
                        .filter_map(|b| b.as_text())
                        .collect::<String>(),
                )
            }
            _ => None,
        })
        .collect()
}

fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
}

async fn start(w: &World) -> (AgentHandle, Arc<dyn Agent>) {
    let handle = w.stack.create_agent(None).unwrap();
    let agent = handle.agent();
    (handle, agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skill_tool_returns_the_body_fresh_and_refuses_unknown_names() {
    let w = world(|repo| {
        write(
            &repo.join(".dsh/skills/deploy/SKILL.md"),
            &skill_md(
                "deploy",
                "Ship a release to production.",
                "Run `make ship`.",
            ),
        );
        write(
            &repo.join(".agents/skills/lint/SKILL.md"),
            &skill_md("lint", "Lint the code.", "Run clippy."),
        );
    });
    let skill_dir = w.repo.join(".dsh/skills/deploy");
    assert!(
        w.stack.tools.schemas().iter().any(|s| s.name == "skill"),
        "the skill tool is registered when skills exist"
    );
    let (handle, agent) = start(&w).await;

    turn(&w.stack, &agent, r#"call skill {"name": "deploy"}"#).await;
    let (is_error, _, text) = last_result(&agent);
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        format!(
            "Skill \"deploy\" (folder {}; paths in it are relative to that folder)\n\nRun `make ship`.",
            skill_dir.display()
        )
    );

    // The system prompt of the step carried the catalog.
    let system = agent
        .session()
        .events()
        .iter()
        .find_map(|e| match &e.data {
            EventPayload::Other { kind, data } if kind == "request/system" => {
                data["text"].as_str().map(str::to_string)
            }
            _ => None,
        })
        .expect("a request/system event");
    assert!(system.contains("call the `skill` tool"), "{system}");
    assert!(
        system.contains("\n- deploy: Ship a release to production.\n- lint: Lint the code."),
        "{system}"
    );

    // An edit is seen by the next call, without a restart.
    write(
        &skill_dir.join("SKILL.md"),
        &skill_md("deploy", "Ship a release.", "Run `make ship-v2`."),
    );
    turn(&w.stack, &agent, r#"call skill {"name": "deploy"}"#).await;
    let (_, _, text) = last_result(&agent);
    assert!(text.ends_with("\n\nRun `make ship-v2`."), "{text}");

    turn(&w.stack, &agent, r#"call skill {"name": "deplyo"}"#).await;
    let (is_error, code, text) = last_result(&agent);
    assert!(is_error);
    assert_eq!(code.as_deref(), Some("UNKNOWN_SKILL"));
    assert_eq!(
        text,
        "Error: no skill named \"deplyo\". Did you mean \"deploy\"? Available skills: deploy, lint."
    );

    handle.dispose().await;
    w.stack.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_skills_there_is_no_skill_tool_and_no_catalog() {
    let w = world(|repo| {
        // Not a skill: no SKILL.md.
        write(&repo.join(".dsh/skills/notes/README.md"), "notes");
    });
    assert!(w.stack.skills.is_empty());
    assert!(!w.stack.tools.schemas().iter().any(|s| s.name == "skill"));
    let prompt = dsh_prompt::render(&w.stack.prompt.assemble().await);
    assert!(!prompt.contains("Skills:"), "{prompt}");
    w.stack.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_skill_tool_the_catalog_points_at_the_files() {
    isolate_user_config();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    write(
        &repo.join(".dsh/skills/deploy/SKILL.md"),
        &skill_md("deploy", "Ship it.", "body"),
    );
    let config = dir.path().join("dsh.toml");
    std::fs::write(&config, "tools = [\"read\"]\n").unwrap();
    let resolved = dsh::resolve(&Settings {
        model: Some("echo".into()),
        config: Some(config),
        cwd: Some(repo.clone()),
        session_dir: Some(dir.path().join("sessions")),
        ..Default::default()
    })
    .unwrap();
    let stack = Stack::build(resolved).unwrap();
    let names: Vec<String> = stack.tools.schemas().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["read"]);
    let prompt = dsh_prompt::render(&stack.prompt.assemble().await);
    let line = format!(
        "- deploy ({}): Ship it.",
        repo.join(".dsh/skills/deploy/SKILL.md").display()
    );
    assert!(prompt.contains(&line), "{prompt}");
    assert!(!prompt.contains("`skill` tool"), "{prompt}");
    stack.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_agents_md_is_added_once_when_a_file_tool_first_reaches_it() {
    let w = world(|repo| {
        write(&repo.join("AGENTS.md"), "root rules (in the system prompt)");
        write(&repo.join("top.txt"), "top");
        write(&repo.join("sub/AGENTS.md"), "sub rules");
        write(&repo.join("sub/CLAUDE.md"), "ignored: sub has an AGENTS.md");
        write(&repo.join("sub/x.txt"), "x");
        write(&repo.join("sub/z.txt"), "z");
        write(
            &repo.join("sub/deeper/CLAUDE.md"),
            "deeper rules (CLAUDE.md)",
        );
        write(&repo.join("sub/deeper/y.txt"), "y");
    });
    let sub_agents = w.repo.join("sub/AGENTS.md");
    let (handle, agent) = start(&w).await;

    // A read in the working directory itself adds nothing.
    turn(&w.stack, &agent, r#"call read {"file_path": "top.txt"}"#).await;
    assert!(nested_context(&agent).is_empty());

    // A failed call adds nothing.
    turn(
        &w.stack,
        &agent,
        r#"call read {"file_path": "sub/missing.txt"}"#,
    )
    .await;
    assert!(last_result(&agent).0, "the read failed");
    assert!(nested_context(&agent).is_empty());

    turn(&w.stack, &agent, r#"call read {"file_path": "sub/x.txt"}"#).await;
    let added = nested_context(&agent);
    assert_eq!(added.len(), 1, "{added:?}");
    assert!(
        added[0].starts_with(&format!("## {}\n\n", sub_agents.display())),
        "{}",
        added[0]
    );
    assert!(added[0].ends_with("\n\nsub rules"), "{}", added[0]);
    assert!(!added[0].contains("ignored"));
    // Again in `sub` (another file, an absolute path): nothing new.
    let z = w.repo.join("sub/z.txt");
    turn(
        &w.stack,
        &agent,
        &format!(r#"call read {{"file_path": "{}"}}"#, z.display()),
    )
    .await;
    turn(
        &w.stack,
        &agent,
        r#"call grep {"pattern": "x", "path": "sub"}"#,
    )
    .await;
    assert_eq!(nested_context(&agent).len(), 1);

    // Deeper, with only a CLAUDE.md: that one, and `sub`'s not again.
    turn(
        &w.stack,
        &agent,
        r#"call read {"file_path": "sub/deeper/y.txt"}"#,
    )
    .await;
    let added = nested_context(&agent);
    assert_eq!(added.len(), 2, "{added:?}");
    assert!(added[1].starts_with(&format!(
        "## {}\n\n",
        w.repo.join("sub/deeper/CLAUDE.md").display()
    )));
    assert!(added[1].ends_with("\n\ndeeper rules (CLAUDE.md)"));

    // The root's AGENTS.md is in the system prompt, never a context message.
    assert!(added.iter().all(|t| !t.contains("root rules")));
    let prompt = dsh_prompt::render(&w.stack.prompt.assemble().await);
    assert!(prompt.contains("root rules (in the system prompt)"));
    assert!(!prompt.contains("sub rules"));

    handle.dispose().await;
    w.stack.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_glob_into_a_new_directory_adds_its_file_and_each_session_gets_its_own() {
    let w = world(|repo| {
        write(&repo.join("pkg/AGENTS.md"), "pkg rules");
        write(&repo.join("pkg/lib.rs"), "fn main() {}");
    });
    let (handle, agent) = start(&w).await;
    turn(&w.stack, &agent, r#"call glob {"pattern": "pkg/**/*.rs"}"#).await;
    assert_eq!(nested_context(&agent).len(), 1);
    turn(
        &w.stack,
        &agent,
        r#"call glob {"pattern": "*.rs", "path": "pkg"}"#,
    )
    .await;
    assert_eq!(nested_context(&agent).len(), 1, "once per session");
    handle.dispose().await;

    // A second session in the same stack gets it again.
    let prepared = w.stack.prepare_session(None).unwrap();
    let second = w.stack.create_agent_in(prepared).unwrap();
    let agent2 = second.agent();
    turn(
        &w.stack,
        &agent2,
        r#"call read {"file_path": "pkg/lib.rs"}"#,
    )
    .await;
    let added = nested_context(&agent2);
    assert_eq!(added.len(), 1);
    assert!(added[0].ends_with("pkg rules"));
    second.dispose().await;
    w.stack.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_remembers_the_nested_files_it_already_has() {
    isolate_user_config();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    write(&repo.join("sub/AGENTS.md"), "sub rules");
    write(&repo.join("sub/x.txt"), "x");
    write(&repo.join("other/AGENTS.md"), "other rules");
    write(&repo.join("other/y.txt"), "y");
    let config = dir.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let resolve = || {
        dsh::resolve(&Settings {
            model: Some("echo".into()),
            config: Some(config.clone()),
            cwd: Some(repo.clone()),
            session_dir: Some(dir.path().join("sessions")),
            ..Default::default()
        })
        .unwrap()
    };
    let stack = Stack::build(resolve()).unwrap();
    let handle = stack.create_agent(None).unwrap();
    let agent = handle.agent();
    let id = agent.session().id().to_string();
    turn(&stack, &agent, r#"call read {"file_path": "sub/x.txt"}"#).await;
    assert_eq!(nested_context(&agent).len(), 1);
    handle.dispose().await;
    stack.shutdown().await;

    let stack = Stack::build(resolve()).unwrap();
    let handle = stack.create_agent(Some(&id)).unwrap();
    let agent = handle.agent();
    assert_eq!(nested_context(&agent).len(), 1, "the seed holds it");
    turn(&stack, &agent, r#"call read {"file_path": "sub/x.txt"}"#).await;
    assert_eq!(nested_context(&agent).len(), 1, "not added again");
    turn(&stack, &agent, r#"call read {"file_path": "other/y.txt"}"#).await;
    let added = nested_context(&agent);
    assert_eq!(added.len(), 2);
    assert!(added[1].ends_with("other rules"));
    handle.dispose().await;
    stack.shutdown().await;
}
