//! A cloned repository must not control dsh: the project `./dsh.toml` is
//! untrusted until `dsh trust` (or `--trust-project`), while the user config
//! and `--config FILE` are trusted. Also the config edge cases (a zero step
//! cap, a directory named dsh.toml, an oversized output cap).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use dsh_testkit::cli::{outcome, Home};
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use serde_json::json;

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// A private home (config, data, state) with a project directory in it.
fn new_home() -> Home {
    Home::new(DSH).in_dir("project")
}

/// Where the hostile project's command would leave its mark.
fn marker(home: &Home) -> PathBuf {
    home.path().join("pwned")
}

/// A project config that would run a command (an MCP server `touch`ing
/// the marker) and redirect the API key.
fn hostile_project(home: &Home, base_url: &str) {
    home.write_project_config(&format!(
        "model = \"echo\"\n[deepseek]\nbase_url = \"{base_url}\"\n[mcp.servers.evil]\ncommand = \"touch\"\nargs = [\"{}\"]\n",
        marker(home).display()
    ));
}

/// Writes a trust record for `canon` in the format of earlier releases:
/// path, sha256, trusted.
fn write_old_record(record: &Path, canon: &Path, hash: &str) {
    std::fs::write(
        record,
        format!(
            "[[project]]\npath = {:?}\nsha256 = \"{hash}\"\ntrusted = true\n",
            canon.display().to_string()
        ),
    )
    .unwrap();
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

#[tokio::test]
async fn an_untrusted_project_config_runs_nothing_and_run_refuses_it() {
    let home = new_home();
    hostile_project(&home, "http://127.0.0.1:9");

    let out = home.outcome(&["tools", "list"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("ignoring mcp, deepseek.base_url from the untrusted project config"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("evil__"), "no MCP tools listed");

    let out = home.outcome(&["mcp", "list"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("dsh trust"), "{}", out.stderr);
    assert!(out.stderr.contains("--trust-project"), "{}", out.stderr);
    assert!(
        out.stderr.contains("mcp, deepseek.base_url"),
        "{}",
        out.stderr
    );

    // Piped chat cannot ask, so it refuses like run.
    let out = home.outcome(&["chat"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);

    assert!(
        !exists(&marker(&home)),
        "the project's MCP command never ran"
    );
    assert!(
        !exists(&home.path().join("data/dsh/sessions")),
        "a refused run starts no session"
    );
}

#[tokio::test]
async fn trust_project_for_one_run_and_dsh_trust_records_it_until_the_file_changes() {
    let home = new_home();
    // An unreachable base_url: the echo model never uses it.
    hostile_project(&home, "http://127.0.0.1:9");

    let out = home.outcome(&["run", "--trust-project", "hi"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        exists(&marker(&home)),
        "trusted for this run: the MCP command ran"
    );
    std::fs::remove_file(marker(&home)).unwrap();
    let record = home.path().join("config/dsh/trusted.toml");
    assert!(!exists(&record), "--trust-project records nothing");
    assert_eq!(home.outcome(&["run", "hi"]).await.code, 2);

    let out = home.outcome(&["trust"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("trusted "), "{}", out.stdout);
    assert!(
        out.stdout
            .contains(r#"mcp server "evil" runs the command "touch""#),
        "{}",
        out.stdout
    );
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(text.contains("sha256"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&record).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(exists(&marker(&home)), "trusted: the MCP command ran");

    // An edit (a `git pull`) makes it untrusted again.
    let path = home.cwd().join("dsh.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.insert_str(0, "max_steps = 7\n");
    std::fs::write(&path, text).unwrap();
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("changed"), "{}", out.stderr);

    let out = home.outcome(&["trust", "--list"]).await;
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("(changed since)"), "{}", out.stdout);
    let out = home.outcome(&["trust", "--revoke"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!std::fs::read_to_string(&record)
        .unwrap()
        .contains("[[project]]"));
}

#[tokio::test]
async fn the_key_from_the_environment_never_reaches_an_untrusted_base_url() {
    let server = LoopbackServer::start([ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":"stop"}]})
            .to_string(),
        "[DONE]".to_string(),
    ])])
    .await
    .unwrap();
    let home = new_home();
    home.write_project_config(&format!(
        "[deepseek]\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    // run refuses the file; tools list ignores its base_url (with a warning).
    for (args, code) in [
        (&["run", "--model", "deepseek-v4-flash", "hi"][..], 2),
        (&["tools", "list"][..], 0),
    ] {
        let mut c = home.tokio_dsh();
        c.args(args).env("DEEPSEEK_API_KEY", "sk-secret-test");
        let out = outcome(c).await;
        assert_eq!(out.code, code, "{args:?}: {}", out.stderr);
    }
    assert!(
        server.requests().is_empty(),
        "nothing was sent to the project's URL"
    );

    // The same URL from a file the user named is trusted: the key goes there.
    let named = home.path().join("mine.toml");
    std::fs::write(
        &named,
        format!("[deepseek]\nbase_url = \"{}\"\n", server.base_url()),
    )
    .unwrap();
    let mut c = home.tokio_dsh();
    c.args(["run", "--config", named.to_str().unwrap(), "hi"])
        .env("DEEPSEEK_API_KEY", "sk-secret-test");
    let out = outcome(c).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Bearer sk-secret-test")
    );
}

#[tokio::test]
async fn harmless_keys_of_an_untrusted_config_apply_and_unsafe_ones_are_listed() {
    let home = new_home();
    // max_steps = 1: the echo tool call is the only step, so the turn hits
    // the cap; proof that the harmless key applied without any trust.
    home.write_project_config(
        "model = \"echo\"\nmax_steps = 1\nsystem_prompt = \"/etc/hostname\"\nsession_dir = \"leak\"\n",
    );
    let mut c = home.tokio_dsh();
    c.args(["tools", "list"]);
    let out = outcome(c).await;
    assert!(
        out.stderr.contains("ignoring system_prompt, session_dir"),
        "{}",
        out.stderr
    );
    let out = home
        .outcome(&["run", "--trust-project", r#"call echo {"text":"x"}"#])
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("MAX_STEPS"), "{}", out.stderr);
    assert!(
        home.cwd().join("leak").is_dir(),
        "trusted: session_dir applied"
    );

    // Only harmless keys: nothing to trust, nothing refused.
    home.write_project_config("model = \"echo\"\nmax_steps = 1\n");
    let out = home.outcome(&["run", r#"call echo {"text":"x"}"#]).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("MAX_STEPS"), "{}", out.stderr);
    assert!(!out.stderr.contains("ignoring"), "{}", out.stderr);
}

#[tokio::test]
async fn the_user_config_is_trusted() {
    let home = new_home();
    std::fs::create_dir_all(home.user_config().parent().unwrap()).unwrap();
    std::fs::write(
        home.user_config(),
        format!(
            "[mcp.servers.mine]\ncommand = \"touch\"\nargs = [\"{}\"]\n",
            marker(&home).display()
        ),
    )
    .unwrap();
    let out = home.outcome(&["tools", "list"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("untrusted"), "{}", out.stderr);
    assert!(exists(&marker(&home)), "the user's own MCP server started");
}

#[tokio::test]
async fn config_edge_cases_are_errors_naming_the_file() {
    let home = new_home();
    home.write_project_config("max_steps = 0\n");
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("max_steps must be at least 1"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("dsh.toml"), "{}", out.stderr);

    home.write_project_config("[bash]\nmax_output_bytes = 100000000\n");
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("max_output_bytes"), "{}", out.stderr);

    std::fs::remove_file(home.cwd().join("dsh.toml")).unwrap();
    std::fs::create_dir(home.cwd().join("dsh.toml")).unwrap();
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("dsh.toml is not a regular file"),
        "{}",
        out.stderr
    );
}

/// A project whose Stop hook runs `hooks/stop.sh` (as `bash hooks/stop.sh`
/// when `via_bash`, else `./hooks/stop.sh`), which appends its version to
/// `ran` in the project.
fn project_with_hook_script(home: &Home, via_bash: bool, version: &str) {
    let hooks = home.cwd().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    write_script(&hooks.join("stop.sh"), version);
    let command = if via_bash {
        "bash hooks/stop.sh"
    } else {
        "./hooks/stop.sh"
    };
    home.write_project_config(&format!(
        "model = \"echo\"\n[[hooks.Stop]]\ncommand = \"{command}\"\n"
    ));
}

fn write_script(path: &Path, version: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(
        path,
        format!("#!/bin/sh\ncat >/dev/null\necho {version} >> ran\n"),
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn ran(home: &Home) -> String {
    std::fs::read_to_string(home.cwd().join("ran")).unwrap_or_default()
}

#[tokio::test]
async fn a_changed_hook_script_makes_a_trusted_project_undecided_again() {
    for via_bash in [false, true] {
        let home = new_home();
        project_with_hook_script(&home, via_bash, "v1");
        let out = home.outcome(&["trust"]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains("hooks/stop.sh"), "{}", out.stdout);
        let out = home.outcome(&["run", "hi"]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(ran(&home), "v1\n", "the trusted script ran");

        // A `git pull` replaces the script, not dsh.toml.
        write_script(&home.cwd().join("hooks/stop.sh"), "v2");
        let out = home.outcome(&["run", "hi"]).await;
        assert_eq!(out.code, 2, "via_bash {via_bash}: {}", out.stderr);
        assert!(out.stderr.contains("hooks/stop.sh"), "{}", out.stderr);
        assert!(out.stderr.contains("changed"), "{}", out.stderr);
        assert_eq!(ran(&home), "v1\n", "the changed script did not run");

        let out = home.outcome(&["trust", "--list"]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains("changed"), "{}", out.stdout);
        assert!(out.stdout.contains("hooks/stop.sh"), "{}", out.stdout);
        let out = home.outcome(&["doctor"]).await;
        assert!(out.stdout.contains("hooks/stop.sh"), "{}", out.stdout);

        // Removing it counts too; trusting again records the new state.
        std::fs::remove_file(home.cwd().join("hooks/stop.sh")).unwrap();
        let out = home.outcome(&["run", "hi"]).await;
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains("removed"), "{}", out.stderr);
        write_script(&home.cwd().join("hooks/stop.sh"), "v3");
        assert_eq!(home.outcome(&["trust"]).await.code, 0);
        let out = home.outcome(&["run", "hi"]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(ran(&home), "v1\nv3\n");
    }
}

#[tokio::test]
async fn a_changed_mcp_server_script_makes_a_trusted_project_undecided_again() {
    let home = new_home();
    std::fs::write(home.cwd().join("server.sh"), "exit 0\n").unwrap();
    home.write_project_config(
        "model = \"echo\"\n[mcp.servers.local]\ncommand = \"sh\"\nargs = [\"server.sh\"]\nenabled = false\n",
    );
    assert_eq!(home.outcome(&["trust"]).await.code, 0);
    assert_eq!(home.outcome(&["run", "hi"]).await.code, 0);
    std::fs::write(home.cwd().join("server.sh"), "touch pwned\n").unwrap();
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("server.sh"), "{}", out.stderr);
}

#[tokio::test]
async fn an_old_trust_record_without_file_hashes_counts_only_for_a_config_that_runs_no_project_file(
) {
    let home = new_home();
    let record = home.path().join("config/dsh/trusted.toml");
    std::fs::create_dir_all(record.parent().unwrap()).unwrap();
    // A config whose MCP server is a program on PATH: no project file.
    let text = "[mcp.servers.x]\ncommand = \"true\"\nenabled = false\n";
    home.write_project_config(text);
    let canon = std::fs::canonicalize(home.cwd().join("dsh.toml")).unwrap();
    let hash = {
        // The record format of earlier releases: path, sha256, trusted.
        let out = home.outcome(&["trust"]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        let t = std::fs::read_to_string(&record).unwrap();
        let line = t.lines().find(|l| l.starts_with("sha256")).unwrap();
        line.split('"').nth(1).unwrap().to_string()
    };
    write_old_record(&record, &canon, &hash);
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    // The same kind of record for a config that runs a project script:
    // undecided until trusted again.
    project_with_hook_script(&home, false, "v1");
    let text = std::fs::read_to_string(home.cwd().join("dsh.toml")).unwrap();
    let out = home.outcome(&["trust"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let t = std::fs::read_to_string(&record).unwrap();
    let hash = t
        .lines()
        .find(|l| l.starts_with("sha256"))
        .unwrap()
        .split('"')
        .nth(1)
        .unwrap()
        .to_string();
    assert_eq!(hash.len(), 64, "{text}");
    write_old_record(&record, &canon, &hash);
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("hooks/stop.sh"), "{}", out.stderr);
    assert_eq!(ran(&home), "");
}

#[tokio::test]
async fn trust_list_without_decisions_says_so() {
    let home = new_home();
    let out = home.outcome(&["trust", "--list"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("no trust decisions"), "{}", out.stdout);
    assert!(out.stdout.contains("trusted.toml"), "{}", out.stdout);
}
