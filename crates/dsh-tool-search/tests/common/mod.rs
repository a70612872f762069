//! Test support shared by the integration tests of dsh-tool-search: a temp
//! directory as the working directory, a registry with `glob` and `grep`
//! over it, and helpers to lay out files with chosen modification times.
#![allow(dead_code)] // each test binary uses a different subset
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic
#![allow(unreachable_pub)] // shared by several test binaries

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use dsh_tools::{CallEnv, ToolCall, ToolRegistry, ToolResult};
use serde_json::Value;
use tempfile::TempDir;

/// A working directory with the search tools registered over it.
pub struct Harness {
    pub tmp: TempDir,
    pub registry: ToolRegistry,
}

impl Harness {
    /// `glob` and `grep` (30 s budget) over a fresh temp dir.
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let registry = ToolRegistry::new();
        // Dropping a registration leaves it in place.
        let _ = dsh_tool_search::install(&registry, tmp.path().to_path_buf()).unwrap();
        Self { tmp, registry }
    }

    /// `glob` and a `grep` with `budget` over a fresh temp dir.
    pub fn with_budget(budget: Duration) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let registry = ToolRegistry::new();
        let _ = registry
            .register(dsh_tool_search::glob_tool(tmp.path().to_path_buf()))
            .unwrap();
        let _ = registry
            .register(dsh_tool_search::grep_tool_with_budget(
                tmp.path().to_path_buf(),
                budget,
            ))
            .unwrap();
        Self { tmp, registry }
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// Calls `tool` with `args` through the registry (schema validation
    /// included).
    pub async fn call(&self, tool: &str, args: Value) -> ToolResult {
        self.registry
            .execute(
                &ToolCall::new("c1", tool, args.to_string()),
                CallEnv::default(),
            )
            .await
    }

    /// The text of a successful call; panics on an error result.
    pub async fn ok(&self, tool: &str, args: Value) -> String {
        let r = self.call(tool, args).await;
        assert!(!r.is_error, "unexpected error: {}", r.text());
        r.text()
    }

    /// Writes `content` to `rel` (parents created) and sets its mtime to
    /// `age_s` seconds after a fixed base time, so larger is newer.
    pub fn file(&self, rel: &str, content: impl AsRef<[u8]>, age_s: u64) -> PathBuf {
        write_at(&self.root().join(rel), content.as_ref(), age_s)
    }
}

/// Writes `content` to `path` (parents created) with mtime `base + age_s`.
pub fn write_at(path: &Path, content: &[u8], age_s: u64) -> PathBuf {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
    set_age(path, age_s);
    path.to_path_buf()
}

/// Sets the mtime of `path` to `base + age_s`.
pub fn set_age(path: &Path, age_s: u64) {
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(base + Duration::from_secs(age_s)).unwrap();
}

/// The lines of `text`.
pub fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// Asserts an error result with `code` whose text contains `needle`.
pub fn assert_error(r: &ToolResult, code: &str, needle: &str) {
    assert!(r.is_error, "expected {code}, got success: {}", r.text());
    assert_eq!(r.code(), Some(code), "{}", r.text());
    assert!(
        r.text().contains(needle),
        "{code}: {:?} does not contain {needle:?}",
        r.text()
    );
}
