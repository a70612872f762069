//! Issue 33's configuration defects, through the binary: limits an
//! untrusted project may not lift and no file may pass (item 8), an API key
//! that cannot be a header value (14), `dsh doctor` that keeps going (16),
//! paths relative to the file that sets them and the README's starter
//! config pasted verbatim (17).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use dsh_testkit::cli::{outcome, Home};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// A private home (config, data, state) with a project directory in it and
/// the user config's directory made.
fn new_home() -> Home {
    Home::new(DSH).in_dir("project").with_config_dir()
}

// ---- item 8: limits ----

#[tokio::test]
async fn an_untrusted_project_cannot_raise_a_limit_but_may_lower_one() {
    let home = new_home();
    for (text, key) in [
        ("max_tool_calls = 1000\n", "max_tool_calls"),
        ("max_result_bytes = 9000000\n", "max_result_bytes"),
        ("max_step_output_bytes = 9000000\n", "max_step_output_bytes"),
        ("[subagents]\nmax_depth = 6\n", "subagents.max_depth"),
        (
            "[deepseek]\nmax_event_bytes = 100000000\n",
            "deepseek.max_event_bytes",
        ),
        (
            "[deepseek]\nconnect_timeout_ms = 500000\n",
            "deepseek.connect_timeout_ms",
        ),
    ] {
        home.write_project_config(text);
        let out = home.outcome(&["run", "hi"]).await;
        assert_eq!(out.code, 2, "{text}: {}", out.stderr);
        assert!(out.stderr.contains(key), "{text}: {}", out.stderr);
        assert!(out.stderr.contains("dsh trust"), "{text}: {}", out.stderr);
        // Listing commands ignore it with a warning.
        let out = home.outcome(&["tools", "list"]).await;
        assert_eq!(out.code, 0, "{text}: {}", out.stderr);
        assert!(
            out.stderr.contains("ignoring") && out.stderr.contains(key),
            "{text}: {}",
            out.stderr
        );
        // Trusted, it applies (it is under the ceiling).
        let out = home.outcome(&["run", "--trust-project", "hi"]).await;
        assert_eq!(out.code, 0, "{text}: {}", out.stderr);
    }
    // Tightening needs no trust.
    home.write_project_config("max_tool_calls = 5\n[subagents]\nmax_depth = 1\n");
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("ignoring"), "{}", out.stderr);
}

#[tokio::test]
async fn no_config_can_pass_a_limit_ceiling() {
    let home = new_home();
    for (text, key, ceiling) in [
        (
            "[deepseek]\nconnect_timeout_ms = 18446744073709551615\n",
            "connect_timeout_ms",
            "600000",
        ),
        (
            "[deepseek]\nmax_event_bytes = 1000000000000\n",
            "max_event_bytes",
            "268435456",
        ),
        ("[subagents]\nmax_depth = 100\n", "max_depth", "8"),
        ("max_tool_calls = 1000000\n", "max_tool_calls", "4096"),
    ] {
        // The user's own config is trusted, and still bounded.
        home.write_user_config(text);
        let out = home.outcome(&["run", "hi"]).await;
        assert_eq!(out.code, 2, "{text}: {}", out.stderr);
        assert!(out.stderr.contains(key), "{text}: {}", out.stderr);
        assert!(out.stderr.contains(ceiling), "{text}: {}", out.stderr);
        assert!(
            out.stderr
                .contains(&home.user_config().display().to_string()),
            "{text}: {}",
            out.stderr
        );
        // A trusted project is bounded too.
        std::fs::remove_file(home.user_config()).unwrap();
        home.write_project_config(text);
        let out = home.outcome(&["run", "--trust-project", "hi"]).await;
        assert_eq!(out.code, 2, "{text}: {}", out.stderr);
        assert!(out.stderr.contains(ceiling), "{text}: {}", out.stderr);
        std::fs::remove_file(home.cwd().join("dsh.toml")).unwrap();
    }
}

// ---- item 14: an API key that cannot be sent ----

#[tokio::test]
async fn an_api_key_with_a_line_break_is_a_config_error_naming_its_source() {
    let home = new_home();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut c = home.tokio_dsh();
    c.args(["run", "hi"])
        .env("DEEPSEEK_API_KEY", "sk-abc\nsecretpart")
        .env("DEEPSEEK_BASE_URL", &url);
    let out = outcome(c).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("DEEPSEEK_API_KEY"), "{}", out.stderr);
    assert!(out.stderr.contains("INVALID_CONFIG"), "{}", out.stderr);
    assert!(!out.stderr.contains("NETWORK"), "{}", out.stderr);
    assert!(!out.stderr.contains("sk-abc"), "the key is never echoed");
    assert!(
        !out.stderr.contains("secretpart"),
        "the key is never echoed"
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "no connection was attempted"
    );

    // From a file: named with the file.
    home.write_user_config("[deepseek]\napi_key = \"sk-abc\\r\\nsecretpart\"\n");
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("api_key"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&home.user_config().display().to_string()),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("secretpart"), "{}", out.stderr);
}

// ---- item 16: doctor keeps going ----

#[tokio::test]
async fn doctor_reports_a_deepseek_model_without_a_key_and_keeps_going() {
    let home = new_home();
    home.write_user_config("model = \"deepseek-v4-flash\"\n");
    let out = home.outcome(&["doctor"]).await;
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains("needs an API key (DEEPSEEK_API_KEY or api_key)"),
        "{all}"
    );
    assert!(!all.contains("unknown model"), "{all}");
    for section in [
        "sandbox:",
        "permission:",
        "config files:",
        "model:",
        "mcp servers",
    ] {
        assert!(out.stdout.contains(section), "{section}: {}", out.stdout);
    }
    // The same words wherever the model is resolved.
    for args in [&["run", "hi"][..], &["chat"][..]] {
        let out = home.outcome(args).await;
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("needs an API key (DEEPSEEK_API_KEY or api_key)"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("unknown model"), "{}", out.stderr);
    }
}

#[tokio::test]
async fn switching_to_a_deepseek_model_without_a_key_says_it_needs_one() {
    let home = new_home();
    let mut c = home.tokio_dsh();
    c.args(["chat"]).stdin(Stdio::piped());
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"/model deepseek-v4-flash\n")
            .await
            .unwrap();
    }
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("needs an API key (DEEPSEEK_API_KEY or api_key)"),
        "{stderr}"
    );
    assert!(!stderr.contains("unknown model"), "{stderr}");
}

#[tokio::test]
async fn doctor_reports_every_config_problem_and_prints_each_section() {
    let home = new_home();
    home.write_user_config("modle = \"echo\"\n");
    home.write_project_config("[deepseek]\nconnect_timeout_ms = 18446744073709551615\n");
    let out = home.outcome(&["doctor"]).await;
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("modle"), "{all}");
    assert!(
        all.contains("connect_timeout_ms") && all.contains("600000"),
        "both files' problems: {all}"
    );
    assert!(
        out.stdout.contains(&format!(
            "{} (not applied: see problems)",
            home.user_config().display()
        )),
        "{}",
        out.stdout
    );
    for section in [
        "sandbox:",
        "permission:",
        "config files:",
        "model:",
        "mcp servers",
    ] {
        assert!(out.stdout.contains(section), "{section}: {}", out.stdout);
    }
}

// ---- item 17: paths relative to the file ----

#[tokio::test]
async fn a_config_path_resolves_against_the_file_that_sets_it() {
    let home = new_home();
    let conf_dir = home.user_config().parent().unwrap().to_path_buf();
    std::fs::write(conf_dir.join("rules.md"), "Always answer in haiku.\n").unwrap();
    home.write_user_config("system_prompt = \"rules.md\"\nsession_dir = \"sessions\"\n");
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        conf_dir.join("sessions").is_dir(),
        "session_dir is beside the config file"
    );
    assert!(!home.cwd().join("sessions").exists());

    // `--config FILE` from elsewhere: beside that file, not the cwd.
    let other = home.path().join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("p.md"), "x").unwrap();
    std::fs::write(other.join("c.toml"), "system_prompt = \"p.md\"\n").unwrap();
    let cfg = other.join("c.toml");
    let out = home
        .outcome(&["run", "--config", cfg.to_str().unwrap(), "hi"])
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    // `~/` is the home directory.
    std::fs::write(home.path().join("home-rules.md"), "x").unwrap();
    home.write_user_config("system_prompt = \"~/home-rules.md\"\n");
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    // Missing: the error names the config file and the path tried.
    home.write_user_config("system_prompt = \"nope.md\"\n");
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&conf_dir.join("nope.md").display().to_string()),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains(&home.user_config().display().to_string()),
        "{}",
        out.stderr
    );
}

/// The block between `<!-- starter-config -->` and
/// `<!-- /starter-config -->` in README.md, without its fences.
fn readme_starter_config() -> String {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    let start = text
        .find("<!-- starter-config -->")
        .expect("README.md has a <!-- starter-config --> marker");
    let end = text
        .find("<!-- /starter-config -->")
        .expect("README.md has a <!-- /starter-config --> marker");
    let block = &text[start..end];
    let open = block.find("```toml\n").expect("a ```toml fence") + "```toml\n".len();
    let close = block[open..].find("```").expect("a closing fence") + open;
    block[open..close].to_string()
}

#[tokio::test]
async fn the_readme_starter_config_works_as_pasted() {
    let block = readme_starter_config();
    assert!(block.lines().count() >= 3, "{block}");
    // As the user config, from a directory of its own.
    let home = new_home();
    home.write_user_config(&block);
    let out = home.outcome(&["doctor"]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    // As a project config: it needs no trust decision.
    let home = new_home();
    home.write_project_config(&block);
    let out = home.outcome(&["doctor"]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let out = home.outcome(&["run", "hi"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
}
