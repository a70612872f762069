//! Issue 33's command-line defects, through the real binary: every command
//! on a closed stdout and a full disk (item 3), a hostile project config's
//! escapes kept off the terminal (7), `/todo` styled rather than escaped
//! (18), warnings as `dsh: warning:` lines rather than log lines (19),
//! `schema validate` on text that is not JSON (22), and discoverability:
//! global flags on either side of the subcommand, the `tools list` table,
//! shell completions, the man page and the chat banner (25).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use dsh_testkit::cli::{output_within, text, text_reply, Home, Tmux, LIMIT};
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use serde_json::{json, Value};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// A private home: config (its `config/dsh` made), data and state
/// directories, and a working directory `ws` that is not a project unless a
/// test makes it one.
fn new_home() -> Home {
    Home::new(DSH).in_dir("ws").with_config_dir()
}

/// Runs `cmd`, feeding `stdin` when given; bounded in time (killed after
/// 60 s, failing the test).
fn run_with(cmd: Command, stdin: Option<&str>) -> Output {
    output_within(cmd, stdin, LIMIT)
}

// ---------------------------------------------------------------- item 3

#[test]
fn every_command_survives_a_closed_stdout_and_a_full_disk() {
    let home = new_home();
    let out = run_with(
        {
            let mut c = home.dsh();
            c.args(["run", r#"call echo {"text":"x"}"#]);
            c
        },
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = home.only_session();
    let spec = home.path().join("spec.json");
    std::fs::write(&spec, r#"{"x": {"type": "string"}}"#).unwrap();
    let args = home.path().join("args.json");
    std::fs::write(&args, r#"{"x": "y"}"#).unwrap();
    let (spec, args) = (spec.display().to_string(), args.display().to_string());
    let commands: Vec<(Vec<&str>, Option<&str>)> = vec![
        (vec!["--help"], None),
        (vec!["--version"], None),
        (vec!["help", "run"], None),
        (vec!["run", "--help"], None),
        (vec!["tools", "list"], None),
        (vec!["tools", "list", "--schemas"], None),
        (vec!["tools", "list", "--json"], None),
        (vec!["schema", "json-schema", "--spec", &spec], None),
        (
            vec!["schema", "validate", "--spec", &spec, "--args", &args],
            None,
        ),
        (vec!["session", "list"], None),
        (vec!["session", "show", &id], None),
        (vec!["session", "show", "--requests", &id], None),
        (vec!["session", "replay", &id], None),
        (vec!["session", "stats", &id], None),
        (vec!["session", "stats", "--json", &id], None),
        (vec!["skills", "list"], None),
        (vec!["skills", "list", "--json"], None),
        (vec!["mcp", "list"], None),
        (vec!["trust", "--list"], None),
        (vec!["doctor"], None),
        (vec!["run", r#"call echo {"text":"y"}"#], None),
        (vec!["run", "--json", r#"call echo {"text":"y"}"#], None),
        (vec!["completions", "bash"], None),
        (vec!["completions", "zsh"], None),
        (vec!["completions", "fish"], None),
        (vec!["man"], None),
        (vec!["man", "run"], None),
        (vec!["chat"], Some("call echo {\"text\":\"z\"}\n")),
    ];
    for (argv, stdin) in &commands {
        // With a reader: what the command prints and its own exit code.
        let mut c = home.dsh();
        c.args(argv);
        let base = run_with(c, *stdin);
        let base_code = base.status.code();
        let base_err = text(&base.stderr);
        assert!(!base_err.contains("panicked"), "{argv:?}: {base_err}");
        let printed = !base.stdout.is_empty();

        // stdout a pipe whose reader is gone before dsh starts.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut c = home.dsh();
        c.args(argv).stdout(writer);
        let out = run_with(c, *stdin);
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{argv:?} closed pipe: {err}");
        assert!(
            !err.contains("cannot write output"),
            "{argv:?}: a closed pipe is quiet: {err}"
        );
        assert!(
            out.status.code() == Some(0) || out.status.code() == base_code,
            "{argv:?} closed pipe: exit {:?} (with a reader {base_code:?}): {err}",
            out.status.code()
        );

        // stdout on a full disk.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut c = home.dsh();
        c.args(argv).stdout(full);
        let out = run_with(c, *stdin);
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{argv:?} /dev/full: {err}");
        if printed {
            assert_eq!(out.status.code(), Some(1), "{argv:?} /dev/full: {err}");
            assert!(
                err.contains("dsh: error: cannot write output: No space left on device"),
                "{argv:?} /dev/full: {err}"
            );
        } else {
            assert_eq!(out.status.code(), base_code, "{argv:?} /dev/full: {err}");
        }
    }
}

// ---------------------------------------------------------------- item 7

/// The characters that must never reach the terminal from foreign text.
fn assert_inert(what: &str, bytes: &[u8]) {
    let s = text(bytes);
    for c in s.chars() {
        let bad = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}');
        assert!(!bad, "{what}: raw {:?} in {s:?}", c);
    }
}

#[test]
fn a_hostile_project_config_writes_no_escapes() {
    let home = new_home();
    let cases = [
        // A clipboard write and a screen clear in the model name.
        "model = \"evil\\u001b]52;c;aGVsbG8=\\u0007\\u001b[2J\"\n",
        // A bad tool name.
        "[tools]\nenabled = [\"bash\\u001b[2J\\u009b31m\"]\n",
        // An unknown key whose name holds escapes.
        "\"k\\u001b]0;owned\\u0007\" = 1\n",
        // Bidi controls that reorder what the terminal shows.
        "model = \"abc\\u202eTXT.exe\\u2066x\\u2069\"\n",
    ];
    for case in cases {
        std::fs::write(home.cwd().join("dsh.toml"), case).unwrap();
        for argv in [
            vec!["run", "hi"],
            vec!["tools", "list"],
            vec!["mcp", "list"],
            vec!["--model", "x\u{1b}[2J\u{202e}", "run", "hi"],
            vec!["session", "show", "nope\u{1b}[2J"],
            vec!["chat"],
        ] {
            let mut c = home.dsh();
            c.args(&argv);
            let out = run_with(c, Some("hello\n"));
            assert!(
                !out.stderr.is_empty(),
                "{case} {argv:?}: an error or warning was expected"
            );
            assert_inert(&format!("{case} {argv:?} stderr"), &out.stderr);
            assert_inert(&format!("{case} {argv:?} stdout"), &out.stdout);
        }
    }
}

/// `dsh doctor` and `dsh trust` (`--list`, `--revoke`) on a project whose
/// directory name, `dsh.toml` values, hook command and MCP server name
/// hold escapes and bidi controls, and on a corrupt trust record quoting
/// them: every line is inert, and the foreign text is shown escaped.
#[test]
fn doctor_and_trust_write_no_escapes() {
    let home = new_home();
    let hostile = "\u{1b}]0;owned\u{7}\u{9b}31m\u{202e}";
    let project = home.path().join(format!("proj{hostile}"));
    std::fs::create_dir_all(project.join("hooks")).unwrap();
    // No `;` here: the hook command is split like a shell would.
    let hook = "hooks/x\u{1b}[2J\u{7}\u{9b}31m\u{202e}.sh";
    std::fs::write(project.join(hook), "#!/bin/sh\n").unwrap();
    std::fs::write(
        project.join("dsh.toml"),
        "model = \"evil\\u001b]52;c;aGVsbG8=\\u0007\\u001b[2J\\u2066\"\n\
         [[hooks.Stop]]\n\
         command = \"./hooks/x\\u001b[2J\\u0007\\u009b31m\\u202e.sh\"\n\
         [mcp.servers.\"srv\\u001b[2J\\u202e\"]\n\
         command = \"./srv\\u001b[31m\\u2069.sh\"\n",
    )
    .unwrap();
    let dir = project.to_str().unwrap();
    let dsh = |args: &[&str], cwd: &Path| {
        let mut c = home.dsh();
        c.args(args).current_dir(cwd);
        let out = run_with(c, None);
        let what = format!("{args:?}");
        assert_inert(&format!("{what} stdout"), &out.stdout);
        assert_inert(&format!("{what} stderr"), &out.stderr);
        out
    };
    // Undecided: doctor lists the project config and the model, escaped.
    let out = dsh(&["doctor"], &project);
    let report = text(&out.stdout);
    assert!(report.contains("proj\\x1b]0;owned\\x07"), "{report}");
    assert!(report.contains("evil\\x1b]52;c;"), "{report}");
    let out = dsh(&["trust"], &project);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("trusted "),
        "{}",
        text(&out.stdout)
    );
    // Trusted: the server is listed too.
    let report = text(&dsh(&["doctor"], &project).stdout);
    assert!(report.contains("srv\\x1b[2J"), "{report}");
    // The hook script changes: --list and doctor name it.
    std::fs::write(project.join(hook), "#!/bin/sh\nrm -rf ~\n").unwrap();
    let out = dsh(&["trust", "--list"], home.cwd());
    assert!(
        text(&out.stdout).contains("(changed since)")
            && text(&out.stdout).contains("x\\x1b[2J\\x07\\u{9b}31m\\u{202e}.sh"),
        "{}",
        text(&out.stdout)
    );
    dsh(&["doctor"], &project);
    // DIR as given on the command line, on stdout and then on stderr.
    let out = dsh(&["trust", "--revoke", dir], home.cwd());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("forgot the decision about"),
        "{}",
        text(&out.stdout)
    );
    let out = dsh(&["trust", "--revoke", dir], home.cwd());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no decision recorded for"),
        "{}",
        text(&out.stderr)
    );
    let out = dsh(&["trust", &format!("{dir}/nope{hostile}")], home.cwd());
    assert_eq!(out.status.code(), Some(2));
    // A corrupt trust record: the parse error quotes the bad line.
    std::fs::write(
        home.path().join("config/dsh/trusted.toml"),
        format!("[[project]]\npath = \"{hostile}\n"),
    )
    .unwrap();
    for args in [&["trust", "--list"][..], &["trust"][..], &["doctor"][..]] {
        let out = dsh(args, &project);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
    }
}

#[test]
fn logs_under_dsh_log_are_sanitised_too() {
    let home = new_home();
    std::fs::write(
        home.path().join("config/dsh/dsh.toml"),
        "[[hooks.UserPromptSubmit]]\ncommand = \"echo 'bad\\u001b[2J\\u202e' >&2; exit 1\"\n",
    )
    .unwrap();
    let mut c = home.dsh();
    c.env("DSH_LOG", "warn")
        .args(["run", r#"call echo {"text":"x"}"#]);
    let out = run_with(c, None);
    let err = text(&out.stderr);
    assert!(err.contains("WARN"), "DSH_LOG shows the log lines: {err}");
    assert_inert("DSH_LOG stderr", &out.stderr);
}

// ---------------------------------------------------------------- item 19

#[tokio::test]
async fn a_retried_request_is_one_warning_line_not_a_log_line() {
    let server = LoopbackServer::start([
        ScriptedResponse::json(503, &json!({"error": {"message": "overloaded"}})),
        text_reply("fine"),
    ])
    .await
    .unwrap();
    let home = new_home();
    let mut c = home.dsh();
    c.env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url())
        .args(["run", "--model", "deepseek-v4-flash", "hi"]);
    let out = tokio::task::spawn_blocking(move || run_with(c, None))
        .await
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "fine\n");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("dsh: warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("retrying"), "{err}");
    assert!(
        warnings[0].contains("503") || warnings[0].contains("SERVER"),
        "{err}"
    );
    assert!(!err.contains("WARN"), "{err}");
    assert!(!err.contains("dsh_llm"), "no log target: {err}");
    let timestamp = err.char_indices().any(|(i, c)| {
        c == 'T' && i >= 10 && err[..i].len() >= 10 && {
            let date = &err[i - 10..i];
            date.len() == 10
                && date.as_bytes()[4] == b'-'
                && date.as_bytes()[7] == b'-'
                && date.chars().filter(char::is_ascii_digit).count() == 8
        }
    });
    assert!(!timestamp, "no timestamp: {err}");
    server.shutdown().await;
}

#[test]
fn a_failing_hook_is_one_warning_line_naming_it() {
    let home = new_home();
    let script = home.path().join("fail-hook.sh");
    std::fs::write(&script, "#!/bin/sh\necho oops >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        home.path().join("config/dsh/dsh.toml"),
        format!(
            "[[hooks.UserPromptSubmit]]\ncommand = {:?}\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    let mut c = home.dsh();
    c.args(["run", r#"call echo {"text":"x"}"#]);
    let out = run_with(c, None);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("dsh: warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("fail-hook.sh"), "{err}");
    assert!(warnings[0].contains("exited with code 1"), "{err}");
    assert!(!err.contains("WARN") && !err.contains("dsh_hooks"), "{err}");
}

// ---------------------------------------------------------------- item 22

#[test]
fn schema_validate_on_text_that_is_not_json_exits_2() {
    let home = new_home();
    let spec = home.path().join("spec.json");
    std::fs::write(&spec, r#"{"x": {"type": "string"}}"#).unwrap();
    let validate = |args: &str| {
        let mut c = home.dsh();
        c.args([
            "schema",
            "validate",
            "--spec",
            spec.to_str().unwrap(),
            "--args",
            "-",
        ]);
        run_with(c, Some(args))
    };
    let out = validate("{\"x\": ");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdict["valid"], false);
    // Valid JSON that breaks the spec is still 1.
    let out = validate("{\"x\": 1}");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

// ---------------------------------------------------------------- item 25

#[test]
fn agent_flags_work_before_the_subcommand() {
    let home = new_home();
    let write = r#"call write {"file_path":"made.txt","content":"hi"}"#;
    let mut c = home.dsh();
    c.args(["--permission", "read-only", "run", write]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("read-only"),
        "{}",
        text(&out.stdout)
    );
    assert!(!home.cwd().join("made.txt").exists(), "read-only in force");
    // After the subcommand, as before.
    let mut c = home.dsh();
    c.args(["run", "--permission", "read-only", write]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!home.cwd().join("made.txt").exists(), "read-only in force");
    // Without it, the write happens (the default mode).
    let mut c = home.dsh();
    c.args(["run", write]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        home.cwd().join("made.txt").exists(),
        "{}",
        text(&out.stdout)
    );

    // --model and --session-dir before the subcommand, down two levels.
    let dir = home.path().join("elsewhere");
    let mut c = home.dsh();
    c.arg("--session-dir")
        .arg(&dir)
        .args(["--model", "echo", "run", r#"call echo {"text":"q"}"#]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut c = home.dsh();
    c.arg("--session-dir").arg(&dir).args(["session", "list"]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert_eq!(
        listed.lines().count(),
        2,
        "a header and the session: {listed}"
    );
    assert!(listed.contains("call echo"), "{listed}");
    // An unknown model before the subcommand is refused like after it.
    let mut c = home.dsh();
    c.args(["--model", "nope", "run", "hi"]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    // The flag after the subcommand wins.
    let mut c = home.dsh();
    c.args(["--model", "nope", "run", "--model", "echo", "hi"]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // chat's own --resume stays chat's.
    let mut c = home.dsh();
    c.args(["--resume", "x", "run", "hi"]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn tools_list_is_a_table_with_schemas_and_json_on_request() {
    let home = new_home();
    let mut c = home.dsh();
    c.args(["tools", "list"]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SOURCE", "VALIDATION", "DESCRIPTION"]);
    let echo: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(&echo[..4], ["echo", "builtin", "dsh", "Echo"], "{table}");
    assert!(table.len() < 4096, "a table, not the schemas: {table}");
    assert!(table.lines().any(|l| l.starts_with("bash ")), "{table}");

    let mut c = home.dsh();
    c.args(["tools", "list", "--schemas"]);
    let out = run_with(c, None);
    let schemas: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schemas[0]["name"], "echo");
    assert!(schemas[0]["parameters"].is_object());
    assert!(schemas[0].get("validation").is_none());

    let mut c = home.dsh();
    c.args(["tools", "list", "--json"]);
    let out = run_with(c, None);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["name"], "echo");
    assert_eq!(listed[0]["validation"], "dsh");
}

#[test]
fn completions_and_the_man_page() {
    let home = new_home();
    for (shell, needle) in [
        ("bash", "complete -F _dsh"),
        ("zsh", "#compdef dsh"),
        ("fish", "complete -c dsh"),
    ] {
        let mut c = home.dsh();
        c.args(["completions", shell]);
        let out = run_with(c, None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(script.contains(needle), "{shell}: {script}");
        assert!(script.contains("permission"), "{shell}: the flags");
    }
    let mut c = home.dsh();
    c.arg("man");
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.contains(".TH dsh 1"), "{page}");
    assert!(page.contains("completions"), "{page}");
    assert!(
        page.contains("\\-\\-permission"),
        "the global flags: {page}"
    );
    // Every subcommand is listed, each with a page of its own (rendered at
    // build time) holding its flags, the global ones included.
    let man = |words: &[&str]| {
        let mut c = home.dsh();
        c.arg("man").args(words);
        let out = run_with(c, None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    for sub in [
        "chat",
        "run",
        "acp",
        "tools",
        "skills",
        "schema",
        "session",
        "mcp",
        "trust",
        "doctor",
        "completions",
    ] {
        assert!(
            page.contains(&format!("dsh\\-{sub}(1)")),
            "{sub} listed: {page}"
        );
        let sub_page = man(&[sub]);
        assert!(
            sub_page.contains(&format!(".TH dsh-{sub} 1  \"dsh ")),
            "{sub}'s page: {sub_page}"
        );
    }
    let run_page = man(&["run"]);
    for flag in ["wait\\-jobs", "no\\-wait", "permission", "resume"] {
        assert!(
            run_page.contains(&format!("\\-\\-{flag}")),
            "{flag}: {run_page}"
        );
    }
    assert!(man(&["acp"]).contains("\\-\\-max\\-line\\-bytes"));
    let list_page = man(&["tools", "list"]);
    assert!(list_page.contains("\\-\\-schemas"), "{list_page}");
    assert!(list_page.contains("\\-\\-permission"), "{list_page}");
    assert!(man(&["session"]).contains("dsh\\-session\\-compact(1)"));
    // A page that does not exist is a usage error naming the pages.
    let mut c = home.dsh();
    c.args(["man", "nope"]);
    let out = run_with(c, None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("dsh-run"),
        "{}",
        text(&out.stderr)
    );
}

// ------------------------------------------------------- items 18 and 25

#[test]
fn todo_is_styled_on_a_terminal_and_the_banner_mentions_help() {
    let home = new_home();
    let t = Tmux::chat(&home, "todo");
    let banner = t.wait_for_styled("the banner", |s| s.contains("Ctrl-D exits"));
    t.keys(&[
        r#"call todo_write {"todos":[{"content":"Explore","status":"completed"},{"content":"Build","status":"in_progress"}]}"#,
        "Enter",
    ]);
    t.wait_for_styled("the checklist", |s| s.contains("[~]"));
    t.keys(&["/todo", "Enter"]);
    let screen = t.wait_for_styled("the /todo reply", |s| {
        s.matches("Todo list (1/2").count() >= 2
    });
    assert!(
        !screen.contains("\\x1b["),
        "dsh's styling shown as text:\n{screen}"
    );
    // The reply is styled: its header dim (SGR 2) as under the call.
    let reply = &screen[screen.rfind("/todo").unwrap()..];
    assert!(reply.contains("\u{1b}[2m  ⎿ Todo list (1/2"), "{reply:?}");
    assert!(reply.contains("[~] Build"), "{reply:?}");
    assert!(banner.contains("/help"), "the banner names /help: {banner}");
}
