//! The fixture of the file-tool tests: every file tool (the editor too) on
//! a temporary working directory, called through a ToolRegistry so the
//! schema path runs.
#![allow(dead_code)] // each test file uses part of it

use dsh_tools::{CallEnv, ToolCall, ToolRegistry, ToolResult};

pub(crate) struct Fx {
    pub(crate) dir: tempfile::TempDir,
    registry: ToolRegistry,
    _reg: dsh_kernel::Registration,
}

impl Fx {
    pub(crate) fn new() -> Self {
        Self::fenced(dsh_tool_fs::Fence::open())
    }

    /// All tools, their writes confined by `fence`.
    pub(crate) fn fenced(fence: dsh_tool_fs::Fence) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let registry = ToolRegistry::new();
        let reg = dsh_tool_fs::install_fenced(&registry, dir.path().to_path_buf(), |_| true, fence)
            .unwrap();
        Fx {
            dir,
            registry,
            _reg: reg,
        }
    }

    /// `name` inside the working directory.
    pub(crate) fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// [`Fx::path`] as a string, for JSON arguments.
    pub(crate) fn p(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    pub(crate) async fn call(&self, tool: &str, args: serde_json::Value) -> ToolResult {
        self.registry
            .execute(
                &ToolCall::new("c1", tool, args.to_string()),
                CallEnv::default(),
            )
            .await
    }
}

/// The text of a successful result.
pub(crate) fn ok(r: &ToolResult) -> String {
    assert!(!r.is_error, "expected success, got {r:?}");
    r.text()
}

/// The text of an error result with `code`.
pub(crate) fn err(r: &ToolResult, code: &str) -> String {
    assert!(r.is_error, "expected {code}, got success {}", r.text());
    assert_eq!(r.code(), Some(code), "{}", r.text());
    r.text()
}
