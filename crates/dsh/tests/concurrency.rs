//! Which built-in tool calls may run alongside others: reads and searches
//! (`read`, `glob`, `grep`, `str_replace_editor view`) are safe; anything
//! that writes or runs a command is exclusive.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::sync::Arc;

use dsh::tools::BuiltinTools;
use dsh_bash_local::{LocalBashConfig, LocalBashExecutor};
use dsh_kernel::{Kernel, Plugin};
use dsh_tools::{Concurrency, ToolCall, ToolRegistry};

#[test]
fn reads_and_searches_are_safe_everything_else_runs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = Kernel::new();
    let tools = Arc::new(ToolRegistry::new());
    let _provided = kernel.provide(tools.clone()).unwrap();
    let executor = Arc::new(LocalBashExecutor::new(LocalBashConfig {
        cwd: Some(dir.path().to_path_buf()),
        ..Default::default()
    }));
    let _installed = BuiltinTools {
        executor,
        jobs: Default::default(),
        fence: dsh_tool_fs::Fence::open(),
        files: dsh_tool_fs::FileAccess::disk(),
        root: dir.path().to_path_buf(),
        only: Some(
            dsh::tools::BUILTIN_TOOLS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        ),
        offline: true,
        skills: Vec::new(),
        plan: dsh::plan::PlanMode::new(),
        approver: None,
        allow_parallel_in_progress: false,
    }
    .install(&kernel)
    .unwrap();
    let of = |name: &str, arguments: &str| {
        tools.concurrency(&ToolCall {
            call_id: "c".into(),
            name: name.into(),
            arguments: arguments.into(),
        })
    };
    use Concurrency::{Exclusive, Safe};
    let cases = [
        ("read", r#"{"file_path":"a"}"#, Safe),
        ("glob", r#"{"pattern":"*"}"#, Safe),
        ("grep", r#"{"pattern":"x"}"#, Safe),
        ("echo", r#"{"text":"x"}"#, Safe),
        (
            "str_replace_editor",
            r#"{"command":"view","path":"/a"}"#,
            Safe,
        ),
        (
            "str_replace_editor",
            r#"{"command":"create","path":"/a","file_text":""}"#,
            Exclusive,
        ),
        ("write", r#"{"file_path":"a","content":""}"#, Exclusive),
        (
            "edit",
            r#"{"file_path":"a","old_string":"x","new_string":"y"}"#,
            Exclusive,
        ),
        ("bash", r#"{"command":"ls"}"#, Exclusive),
        ("bash_output", r#"{"bash_id":"bash-1"}"#, Exclusive),
        ("bash_kill", r#"{"shell_id":"bash-1"}"#, Exclusive),
        // Not a tool: the call only produces its error result.
        ("no_such_tool", "{}", Safe),
    ];
    for (name, args, want) in cases {
        assert_eq!(of(name, args), want, "{name} {args}");
    }
}
