//! Every numeric limit of dsh.toml has a hard ceiling no file can pass
//! (issue 33, item 8), checked through `dsh::resolve` / `dsh::diagnose`
//! with a `--config` file (trusted, so only the ceiling stands in the way),
//! and an untrusted project may lower a limit but not raise it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh::config::{self, LIMITS};
use dsh::{Settings, StackError};

/// A dsh.toml that sets the limit `key` (as written in [`LIMITS`]) to
/// `value`.
fn snippet(key: &str, value: u64) -> String {
    match key {
        "models.*.context_window" => format!("[models.echo]\ncontext_window = {value}\n"),
        "mcp.servers.*.timeout_ms" => {
            format!("[mcp.servers.x]\ncommand = \"true\"\nenabled = false\ntimeout_ms = {value}\n")
        }
        "mcp.servers.*.max_message_bytes" => format!(
            "[mcp.servers.x]\ncommand = \"true\"\nenabled = false\nmax_message_bytes = {value}\n"
        ),
        "hooks.*.timeout" => format!("[[hooks.Stop]]\ncommand = \"true\"\ntimeout = {value}\n"),
        dotted => match dotted.split_once('.') {
            Some((table, leaf)) => format!("[{table}]\n{leaf} = {value}\n"),
            None => format!("{dotted} = {value}\n"),
        },
    }
}

fn resolve_with(text: &str) -> (tempfile::TempDir, Result<dsh::Resolved, StackError>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("limits.toml");
    std::fs::write(&file, text).unwrap();
    let settings = Settings {
        config: Some(file),
        cwd: Some(dir.path().to_path_buf()),
        ..Settings::default()
    };
    let r = dsh::resolve(&settings);
    (dir, r)
}

#[test]
fn every_limit_above_its_ceiling_is_an_error_naming_key_file_and_ceiling() {
    assert!(LIMITS.len() >= 17, "every limit is listed");
    for limit in LIMITS {
        let leaf = limit.key.rsplit('.').next().unwrap();
        let (dir, r) = resolve_with(&snippet(limit.key, limit.ceiling + 1));
        let e = r.err().unwrap_or_else(|| panic!("{}: accepted", limit.key));
        let msg = e.to_string();
        assert!(matches!(e, StackError::Usage(_)), "{msg}");
        assert!(msg.contains(leaf), "{}: {msg}", limit.key);
        assert!(
            msg.contains(&limit.ceiling.to_string()),
            "{}: {msg}",
            limit.key
        );
        assert!(
            msg.contains(&dir.path().join("limits.toml").display().to_string()),
            "{}: {msg}",
            limit.key
        );
        // At the ceiling it resolves.
        let (_dir, r) = resolve_with(&snippet(limit.key, limit.ceiling));
        assert!(r.is_ok(), "{}: {:?}", limit.key, r.err());
        assert!(limit.default <= limit.ceiling, "{}", limit.key);
    }
}

#[test]
fn u64_max_timeouts_are_refused_not_waited_for() {
    let (_dir, r) = resolve_with("[deepseek]\nconnect_timeout_ms = 18446744073709551615\n");
    let msg = r.err().unwrap().to_string();
    assert!(
        msg.contains("connect_timeout_ms") && msg.contains("600000"),
        "{msg}"
    );
}

#[test]
fn an_untrusted_project_may_lower_a_limit_but_raising_one_is_an_unsafe_key() {
    for limit in LIMITS {
        if limit.key.starts_with("mcp.") || limit.key.starts_with("hooks.") {
            continue; // those sections are unsafe as a whole
        }
        let raised = config::parse(&snippet(limit.key, limit.default + 1)).unwrap();
        let keys = raised.unsafe_keys();
        assert_eq!(keys.len(), 1, "{}: {keys:?}", limit.key);
        let safe = raised.without_unsafe_keys();
        assert!(safe.limits().is_empty(), "{}", limit.key);
        let lowered = config::parse(&snippet(limit.key, limit.default.max(1) - 1)).unwrap();
        assert!(lowered.unsafe_keys().is_empty(), "{}", limit.key);
        assert_eq!(
            lowered.clone().without_unsafe_keys().limits(),
            lowered.limits()
        );
    }
}

#[test]
fn diagnose_reports_every_problem_and_still_resolves() {
    let (dir, _) = resolve_with("");
    let file = dir.path().join("many.toml");
    std::fs::write(
        &file,
        "model = \"deepseek-v4-flash\"\nsystem_prompt = \"missing.md\"\n",
    )
    .unwrap();
    let settings = Settings {
        config: Some(file.clone()),
        cwd: Some(dir.path().to_path_buf()),
        ..Settings::default()
    };
    let d = dsh::diagnose(&settings);
    let msgs: Vec<String> = d.problems.iter().map(ToString::to_string).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(
        msgs[0].contains("needs an API key (DEEPSEEK_API_KEY or api_key)"),
        "{msgs:?}"
    );
    assert!(
        msgs[1].contains(&dir.path().join("missing.md").display().to_string())
            && msgs[1].contains(&file.display().to_string()),
        "{msgs:?}"
    );
    assert_eq!(d.resolved.model, "echo", "the fallback");
    let e = dsh::resolve(&settings).unwrap_err().to_string();
    assert_eq!(e, msgs[0], "resolve fails with the first problem");
}
