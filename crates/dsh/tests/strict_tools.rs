//! The built-in tools in DeepSeek's strict dialect, pinned: what the model
//! is shown with `--strict-tools`, and that the nulls strict mode sends for
//! absent keys never reach a tool.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::sync::Arc;

use dsh::tools::BuiltinTools;
use dsh_bash_local::{LocalBashConfig, LocalBashExecutor};
use dsh_kernel::{Kernel, Plugin};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry};
use serde_json::{json, Value};

fn strict_registry() -> (Arc<ToolRegistry>, Kernel, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let kernel = Kernel::new();
    let tools = Arc::new(ToolRegistry::new());
    tools.set_strict(true);
    std::mem::forget(kernel.provide(tools.clone()).unwrap());
    let executor = Arc::new(LocalBashExecutor::new(LocalBashConfig {
        cwd: Some(dir.path().to_path_buf()),
        ..Default::default()
    }));
    std::mem::forget(
        BuiltinTools {
            executor,
            jobs: Default::default(),
            fence: dsh_tool_fs::Fence::open(),
            files: dsh_tool_fs::FileAccess::disk(),
            root: dir.path().to_path_buf(),
            only: None,
            offline: true,
            skills: Vec::new(),
            plan: dsh::plan::PlanMode::new(),
            approver: None,
            allow_parallel_in_progress: false,
        }
        .install(&kernel)
        .unwrap(),
    );
    (tools, kernel, dir)
}

fn parameters(tools: &ToolRegistry, name: &str) -> Value {
    let schema = tools
        .schemas()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap();
    assert_eq!(schema.strict, Some(true), "{name} is strict");
    schema.parameters
}

fn nullable(ty: &str, description: &str) -> Value {
    json!({"type": [ty, "null"], "description": description})
}

#[test]
fn every_built_in_tool_compiles_to_the_pinned_strict_schema() {
    let (tools, _kernel, _dir) = strict_registry();
    assert!(
        tools.take_strict_warnings().is_empty(),
        "all built-ins are expressible"
    );
    assert_eq!(
        parameters(&tools, "echo"),
        json!({"type": "object",
               "properties": {"text": {"type": "string", "description": "The text to echo back."}},
               "required": ["text"], "additionalProperties": false})
    );
    let bash = parameters(&tools, "bash");
    assert_eq!(
        bash["required"],
        json!([
            "command",
            "description",
            "timeoutMs",
            "workdir",
            "run_in_background",
            "sandbox_permissions",
            "justification"
        ])
    );
    let escalation = &bash["properties"]["sandbox_permissions"];
    let values: Vec<&Value> = escalation["enum"].as_array().unwrap().iter().collect();
    assert_eq!(
        values,
        [
            &json!("workspace-write"),
            &json!("danger-full-access"),
            &Value::Null
        ],
        "{escalation}"
    );
    assert_eq!(
        bash["properties"]["justification"],
        nullable(
            "string",
            "Why the command needs the wider mode, shown to the user who approves it."
        )
    );
    assert_eq!(bash["additionalProperties"], false);
    assert_eq!(
        bash["properties"]["command"],
        json!({"type": "string", "description": "The bash command to run."})
    );
    assert_eq!(
        bash["properties"]["timeoutMs"],
        nullable(
            "number",
            "Timeout in milliseconds (default 120000, max 600000). The command is killed when it expires."
        ),
        "exclusiveMinimum is enforced by dsh, not sent"
    );
    assert_eq!(
        bash["properties"]["workdir"],
        nullable(
            "string",
            "Working directory for this call (default: the session's working directory)."
        )
    );
    assert_eq!(
        bash["properties"]["run_in_background"],
        nullable(
            "boolean",
            "Run in the background and return a task id immediately; no timeout applies."
        )
    );
    for name in ["bash_output", "bash_kill"] {
        assert_eq!(
            parameters(&tools, name),
            json!({"type": "object",
                   "properties": {"task_id": {"type": "string", "description": "The task id returned by the bash tool."}},
                   "required": ["task_id"], "additionalProperties": false})
        );
    }
    // The file and search tools: every key required, optional ones nullable.
    for (name, keys) in [
        ("read", &["file_path", "offset", "limit"][..]),
        (
            "write",
            &[
                "file_path",
                "content",
                "sandbox_permissions",
                "justification",
            ],
        ),
        (
            "edit",
            &[
                "file_path",
                "old_string",
                "new_string",
                "replace_all",
                "sandbox_permissions",
                "justification",
            ],
        ),
        ("glob", &["pattern", "path"]),
        ("grep", &["pattern", "path", "include"]),
    ] {
        let p = parameters(&tools, name);
        assert_eq!(p["required"], json!(keys), "{name}");
        assert_eq!(p["additionalProperties"], false, "{name}");
    }
    assert_eq!(
        parameters(&tools, "grep")["properties"]["include"]["type"],
        json!(["string", "null"])
    );
}

#[tokio::test]
async fn nulls_for_absent_keys_are_stripped_and_bounds_still_hold() {
    let (tools, _kernel, _dir) = strict_registry();
    let call = ToolCall::new(
        "c1",
        "bash",
        r#"{"command": "echo hi", "description": "Say hi", "timeoutMs": null, "workdir": null, "run_in_background": null}"#,
    );
    let r = tools.execute(&call, CallEnv::default()).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.text(), "hi\n");
    // A bound strict mode does not carry is still enforced locally.
    let call = ToolCall::new(
        "c2",
        "bash",
        r#"{"command": "echo hi", "description": "Say hi", "timeoutMs": 0, "workdir": null, "run_in_background": null}"#,
    );
    let r = tools.execute(&call, CallEnv::default()).await;
    assert_eq!(r.code(), Some("INVALID_ARGS"));
    assert!(
        r.text().contains(r#""timeoutMs" must be greater than 0"#),
        "{}",
        r.text()
    );
}

#[test]
fn a_tool_strict_mode_cannot_express_is_sent_as_before_with_a_warning() {
    let tools = ToolRegistry::new();
    tools.set_strict(true);
    let spec = dsh_tools::SchemaSpec::new().with("blob", dsh_tools::SchemaProp::json());
    let tool =
        dsh_tools::define_tool_from_spec("blobby", "Takes anything", spec, |_v, _ctx| async {
            Ok(Vec::new())
        });
    std::mem::forget(tools.register(Arc::new(tool)).unwrap());
    let schema = tools.schemas().pop().unwrap();
    assert_eq!(schema.strict, None);
    assert_eq!(
        tools.take_strict_warnings(),
        [r#"tool "blobby" is sent without strict mode: "blob" accepts any JSON value"#]
    );
}

#[test]
fn the_skill_tool_compiles_to_a_strict_schema() {
    let tools = Arc::new(ToolRegistry::new());
    tools.set_strict(true);
    let skill = dsh::prompt::skills::Skill {
        name: "deploy".into(),
        description: "Ship it.".into(),
        dir: "/p/deploy".into(),
        file: "/p/deploy/SKILL.md".into(),
        source: dsh::prompt::skills::SkillSource::User,
    };
    std::mem::forget(
        tools
            .register(dsh::tools::skill_tool(vec![skill].into()))
            .unwrap(),
    );
    assert!(tools.take_strict_warnings().is_empty());
    assert_eq!(
        parameters(&tools, "skill"),
        json!({"type": "object",
               "properties": {"name": {"type": "string", "description": "The skill's name, exactly as the system prompt lists it."}},
               "required": ["name"], "additionalProperties": false})
    );
}
