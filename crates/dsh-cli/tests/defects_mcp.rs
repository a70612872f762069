//! Issue 33 item 13, through the binary: an MCP server whose `tools/list`
//! holds a tool with a 200-deep `inputSchema` starts at once; its other
//! tools work, and the refused tool is named with why (depth, the limit) in
//! a warning and in `dsh mcp list`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use dsh_testkit::cli::{text, Home, LIMIT};

/// The MCP test fixture server, built by `dsh-mcp`'s tests into the same
/// directory as `dsh`.
fn mcp_fixture() -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_dsh")).with_file_name("dsh-mcp-fixture");
    assert!(
        p.exists(),
        "{} is not built: run the workspace tests (cargo test --workspace), or build it with `cargo build -p dsh-mcp --features fixture`",
        p.display()
    );
    p
}

/// Runs `dsh args…` with a user config declaring the fixture as server
/// `fx`, listing a tool nested 200 levels deep; returns the output and how
/// long it took.
fn dsh_with_deep_server(home: &Home, args: &[&str]) -> (Output, Duration) {
    home.write_user_config(&format!(
        "[mcp.servers.fx]\ncommand = {:?}\nenv = {{ DSH_FIXTURE_DEEP = \"200\" }}\n",
        mcp_fixture().display().to_string()
    ));
    home.run(args, LIMIT)
}

#[test]
fn a_too_deep_tool_is_refused_by_name_and_the_rest_start_at_once() {
    let home = Home::new(env!("CARGO_BIN_EXE_dsh"));
    let (out, took) = dsh_with_deep_server(&home, &["mcp", "list"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(took < Duration::from_secs(10), "mcp list took {took:?}");
    assert!(
        stdout.starts_with("fx\trunning\t") && stdout.contains("mcp__fx__add"),
        "{stdout}"
    );
    assert!(!stdout.contains("mcp__fx__deep"), "{stdout}");
    let refusal = stdout
        .lines()
        .find(|l| l.starts_with("  skipped deep: "))
        .unwrap_or_else(|| panic!("no refusal line for deep:\n{stdout}"));
    assert!(
        refusal.contains("200 levels deep") && refusal.contains("depth limit of 64"),
        "{refusal}"
    );
    assert!(
        stderr.contains("dsh: warning: MCP server fx: tool \"deep\" (mcp__fx__deep) skipped: ")
            && stderr.contains("depth limit"),
        "{stderr}"
    );
    assert!(!stderr.contains("no answer"), "{stderr}");

    // The server's other tools work.
    let (out, took) =
        dsh_with_deep_server(&home, &["run", r#"call mcp__fx__add {"a": 2, "b": 3}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "The mcp__fx__add tool returned:\n5\n");
    assert!(took < Duration::from_secs(10), "run took {took:?}");
}
