//! Custom commands end to end, with the real binary in a private home:
//! `dsh run "/greet Bob"` sends the expanded body (the echo model calls
//! its tool), the log names the command, Claude Code's `~/.claude/commands`
//! files work unchanged, `allowed-tools` denies the other tools in that
//! turn only, `model:` switches the model for one turn (a loopback
//! DeepSeek server sees it), project commands load only in a trusted
//! project, `/help` and tab completion in the line mode list them, broken
//! files are skipped with a warning naming the line, ACP advertises them
//! and runs them as turns, and `/init` sends the AGENTS.md prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use dsh_testkit::cli::{output_within, text_reply, Home, Outcome, LIMIT};
use dsh_testkit::LoopbackServer;
use serde_json::{json, Value};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// Writes `text` to `path`, creating its directory.
fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `dsh ARGS…` in `home`.
fn dsh(home: &Home, args: &[&str]) -> Outcome {
    let mut c = home.dsh();
    c.args(args);
    output_within(c, None, LIMIT).into()
}

/// `dsh chat ARGS…` with `lines` piped in.
fn chat(home: &Home, args: &[&str], lines: &[&str]) -> Outcome {
    let mut c = home.dsh();
    c.arg("chat").args(args);
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    output_within(c, Some(&input), LIMIT).into()
}

/// The events of `kind` in `log`.
fn of_kind<'a>(log: &'a [Value], kind: &str) -> Vec<&'a Value> {
    log.iter().filter(|e| e["type"] == kind).collect()
}

/// The text of a user message event.
fn message_text(event: &Value) -> String {
    event["data"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

#[test]
fn run_expands_a_user_command_and_logs_which_command_it_was() {
    let home = Home::new(DSH).in_dir("ws");
    write(
        &home.config_dir().join("commands/greet.md"),
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\necho hello $1\n",
    );
    let out = dsh(&home, &["run", "/greet Bob"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The echo tool says: hello Bob\n");
    let log = home.only_log();
    let command = of_kind(&log, "command/custom");
    assert_eq!(command.len(), 1, "{log:?}");
    assert_eq!(command[0]["data"]["name"], "greet");
    assert_eq!(command[0]["data"]["args"], "Bob");
    assert_eq!(command[0]["data"]["source"], "user");
    let messages = of_kind(&log, "user/message");
    assert_eq!(messages.len(), 1);
    assert_eq!(message_text(messages[0]), "echo hello Bob");
    // The command comes first, then the turn it produced.
    let pos = |ty: &str| log.iter().position(|e| e["type"] == ty).unwrap();
    assert!(pos("command/custom") < pos("user/message"));
    // A path is still a message, and an unknown /word is sent as it is.
    let out = dsh(&home, &["run", "/usr/bin/greet Bob"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("offline echo model"), "{}", out.stdout);
}

#[test]
fn claude_code_command_files_work_unchanged_with_namespaces() {
    let home = Home::new(DSH).in_dir("ws");
    // A Claude Code command as its docs show one: a subfolder namespace,
    // Bash(...) permissions, a bracketed hint, a Claude model.
    // (The echo model acts on a body that starts with `run`.)
    write(
        &home.path().join(".claude/commands/git/summary.md"),
        "---\nallowed-tools: Bash(git status:*), Bash(echo:*)\nargument-hint: [focus]\ndescription: Summarise the state of the repository\nmodel: claude-3-5-haiku-20241022\n---\nrun echo focus=$ARGUMENTS\n",
    );
    let out = dsh(&home, &["run", "/git:summary the tests"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("focus=the tests"), "{}", out.stdout);
    let log = home.only_log();
    let command = of_kind(&log, "command/custom");
    assert_eq!(command[0]["data"]["name"], "git:summary");
    assert_eq!(command[0]["data"]["allowedTools"], json!(["bash"]));
    // The Claude model is not served: the turn ran on the session's model.
    assert_eq!(command[0]["data"]["model"], Value::Null);
    let results = of_kind(&log, "tool/result");
    assert_eq!(results.len(), 1);
    assert_ne!(results[0]["data"]["isError"], true, "{:?}", results[0]);
}

#[test]
fn allowed_tools_deny_the_other_tools_in_that_turn_only() {
    let home = Home::new(DSH).in_dir("ws");
    write(
        &home.cwd().join(".dsh/commands/look.md"),
        "---\ndescription: Look around without changing anything\nallowed-tools: Read\n---\nrun echo should-not-run\n",
    );
    let out = chat(
        &home,
        &["--trust-project"],
        &["/look", "run echo after-the-command"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let log = home.only_log();
    let results = of_kind(&log, "tool/result");
    assert_eq!(results.len(), 2, "{results:?}");
    let denied = results[0]["data"].to_string();
    assert_eq!(results[0]["data"]["isError"], true, "{denied}");
    assert!(
        denied.contains(
            "/look allows only read in its turn (its allowed-tools); bash is not allowed"
        ),
        "{denied}"
    );
    assert!(!denied.contains("should-not-run\\n"), "{denied}");
    // The next turn has every tool again.
    let after = results[1]["data"].to_string();
    assert_ne!(results[1]["data"]["isError"], true, "{after}");
    assert!(after.contains("after-the-command"), "{after}");
}

#[tokio::test]
async fn model_switches_for_the_commands_turn_only() {
    let server = LoopbackServer::start([text_reply("one"), text_reply("two")])
        .await
        .unwrap();
    let home = Home::new(DSH).in_dir("ws");
    write(
        &home.config_dir().join("commands/deep.md"),
        "---\nmodel: deepseek-v4-pro\nallowed-tools: [Read, Grep]\n---\nThink hard about $ARGUMENTS.\n",
    );
    let mut c = home.tokio_dsh();
    c.args(["chat"])
        .env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url())
        .stdin(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"/deep the parser\nand now a plain question\n")
            .await
            .unwrap();
    }
    let out = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("/deep (user command): sent to the model; model deepseek-v4-pro for this turn; tools: read, grep"),
        "{stderr}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let names = |req: &Value| -> Vec<String> {
        req["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (first, second) = (reqs[0].json(), reqs[1].json());
    assert_eq!(first["model"], "deepseek-v4-pro");
    assert_eq!(names(&first), ["read", "grep"]);
    let last_user = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .to_string();
    assert!(
        last_user.contains("Think hard about the parser."),
        "{last_user}"
    );
    assert_eq!(second["model"], "deepseek-v4-flash", "back after the turn");
    assert!(
        names(&second).iter().any(|n| n == "bash"),
        "{:?}",
        names(&second)
    );
}

#[test]
fn project_commands_load_only_in_a_trusted_project() {
    let home = Home::new(DSH).in_dir("ws");
    write(
        &home.cwd().join(".claude/commands/deploy.md"),
        "Deploy everything to production.\n",
    );
    write(
        &home.config_dir().join("commands/mine.md"),
        "My own command.\n",
    );
    let out = chat(&home, &[], &["/help", "/deploy"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("1 project command not loaded: the project is not trusted (dsh trust)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("/mine  "), "{}", out.stderr);
    assert!(
        out.stderr.contains("(user) My own command."),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("unknown command /deploy;")
            && out.stderr.contains("the project is not trusted"),
        "{}",
        out.stderr
    );
    assert!(
        home.logs()
            .iter()
            .flatten()
            .all(|e| e["type"] != "user/message"),
        "nothing was sent"
    );
    // `dsh trust` in a project without a dsh.toml trusts the directory.
    let trusted = dsh(&home, &["trust"]);
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let out = chat(&home, &[], &["/help"]);
    assert!(
        out.stderr
            .contains("(project) Deploy everything to production."),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("not loaded"), "{}", out.stderr);
    // A dsh.toml added later is a change: undecided again.
    home.write_project_config("[tools]\nmax_parallel = 2\n");
    let out = chat(&home, &[], &["/help"]);
    assert!(
        out.stderr.contains("1 project command not loaded"),
        "{}",
        out.stderr
    );
}

#[test]
fn project_commands_shadow_user_ones_and_built_ins_win() {
    let home = Home::new(DSH).in_dir("ws");
    write(
        &home.cwd().join(".dsh/commands/hi.md"),
        "echo from-dsh-project\n",
    );
    write(
        &home.cwd().join(".claude/commands/hi.md"),
        "echo from-claude-project\n",
    );
    write(
        &home.config_dir().join("commands/hi.md"),
        "echo from-user\n",
    );
    write(&home.config_dir().join("commands/help.md"), "echo never\n");
    let out = dsh(&home, &["run", "--trust-project", "/hi"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The echo tool says: from-dsh-project\n");
    assert!(
        out.stderr
            .contains("help.md: /help is a built-in command, which wins; skipped"),
        "{}",
        out.stderr
    );
}

#[test]
fn broken_front_matter_is_a_warning_naming_the_line_and_the_others_load() {
    let home = Home::new(DSH).in_dir("ws");
    let bad = home.config_dir().join("commands/bad.md");
    write(
        &bad,
        "---\ndescription: fine\nthis line is wrong\n---\necho no\n",
    );
    write(
        &home.config_dir().join("commands/big.md"),
        &"x".repeat(300 * 1024),
    );
    write(&home.config_dir().join("commands/good.md"), "echo yes\n");
    let out = dsh(&home, &["run", "/good"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The echo tool says: yes\n");
    assert!(
        out.stderr.contains(&format!(
            "custom command {}:3: expected `key: value`; skipped",
            bad.display()
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("big.md: the file has 307200 bytes, more than the 262144"),
        "{}",
        out.stderr
    );
    let out = dsh(&home, &["run", "/bad"]);
    assert!(out.stdout.contains("offline echo model"), "{}", out.stdout);
}

#[test]
fn help_and_tab_completion_in_the_line_mode() {
    let home = Home::new(DSH).in_dir("ws");
    write(
        &home.config_dir().join("commands/greet.md"),
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\necho hello $1\n",
    );
    let mut cmd = home.dsh();
    cmd.arg("chat")
        .env("TERM", "xterm-256color")
        .env("DSH_TUI", "0");
    let mut screen = dsh_testkit::screen::Screen::spawn(&cmd, 40, 120);
    screen.wait_for("the prompt", |t| t.contains("/help for the commands"));
    screen.keys("/help\r");
    let shown = screen.wait_for_history("the custom commands", |t| {
        t.contains("custom commands:") && t.contains("Greet someone")
    });
    assert!(
        shown
            .lines()
            .any(|l| l.trim_start().starts_with("/greet <name>")
                && l.ends_with("(user) Greet someone")),
        "{shown}"
    );
    assert!(shown.contains("/init"), "{shown}");
    // Tab completes the custom command's name; Enter runs it.
    screen.keys("/gre\t");
    screen.wait_for("the completed name", |t| t.contains("/greet"));
    screen.keys(" Ann\r");
    screen.wait_for_history("the command's turn", |t| {
        t.contains("The echo tool says: hello Ann")
    });
    screen.keys("\x04");
    assert_eq!(screen.wait_exit(Duration::from_secs(20)), 0);
}

#[test]
fn acp_advertises_custom_commands_and_runs_them_as_turns() {
    use std::io::{BufRead, BufReader, Write};
    let home = Home::new(DSH).in_dir("ws");
    write(
        &home.config_dir().join("commands/greet.md"),
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\necho hello $1\n",
    );
    let mut c = home.dsh();
    c.args(["acp", "--model", "echo"])
        .stdin(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let out = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let mut send = move |v: Value| writeln!(stdin, "{v}").unwrap();
    let until = |pred: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let v = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("a message from dsh acp");
            let done = pred(&v);
            seen.push(v);
            if done {
                return seen;
            }
        }
    };
    let response = |id: u64| move |v: &Value| v["id"] == id && v.get("result").is_some();
    send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}),
    );
    until(&response(1));
    send(
        json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd": home.cwd(),"mcpServers":[]}}),
    );
    let session = until(&response(2)).last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let update =
        until(&|v: &Value| v["params"]["update"]["sessionUpdate"] == "available_commands_update");
    let commands = update.last().unwrap()["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .clone();
    let greet = commands
        .iter()
        .find(|c| c["name"] == "greet")
        .unwrap_or_else(|| panic!("greet advertised: {commands:?}"));
    assert_eq!(greet["description"], "(user) Greet someone");
    assert_eq!(greet["input"]["hint"], "<name>");
    assert!(commands.iter().any(|c| c["name"] == "init"), "{commands:?}");
    send(
        json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId": session,"prompt":[{"type":"text","text":"/greet Zoe"}]}}),
    );
    let turn = until(&response(3));
    assert_eq!(turn.last().unwrap()["result"]["stopReason"], "end_turn");
    let text: String = turn
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert!(text.ends_with("The echo tool says: hello Zoe"), "{text}");
    let announces = |seen: &[Value]| {
        seen.iter()
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
            .count()
    };
    assert_eq!(announces(&turn), 0, "unchanged commands are not told again");
    // A command file added while the session is open is told at the next
    // prompt (once the folders are looked at again, after 2 s).
    write(
        &home.config_dir().join("commands/bye.md"),
        "---\ndescription: Say goodbye\n---\necho bye\n",
    );
    std::thread::sleep(dsh::custom_commands::RESCAN_AFTER + Duration::from_millis(200));
    send(
        json!({"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId": session,"prompt":[{"type":"text","text":"echo hi"}]}}),
    );
    let turn = until(&response(4));
    assert_eq!(announces(&turn), 1, "{turn:?}");
    let told = turn
        .iter()
        .find(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .unwrap();
    let names: Vec<&str> = told["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        names.contains(&"bye") && names.contains(&"greet"),
        "{names:?}"
    );
    drop(send);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn init_asks_the_model_to_write_agents_md() {
    let server = LoopbackServer::start([text_reply("written")])
        .await
        .unwrap();
    let home = Home::new(DSH).in_dir("ws");
    let mut c = home.tokio_dsh();
    c.args(["run", "/init keep it short"])
        .env("DEEPSEEK_API_KEY", "sk-test")
        .env("DEEPSEEK_BASE_URL", server.base_url());
    let out = dsh_testkit::cli::outcome(c).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "written\n");
    let req = server.requests()[0].json();
    let asked = req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .to_string();
    assert!(asked.contains("write an `AGENTS.md`"), "{asked}");
    assert!(
        asked.contains("Also, from the user: keep it short"),
        "{asked}"
    );
    let log = home.only_log();
    let command = of_kind(&log, "command/custom");
    assert_eq!(command[0]["data"]["name"], "init");
    assert_eq!(command[0]["data"]["source"], "builtin");
}

#[test]
fn the_inline_uis_popup_offers_custom_commands_and_runs_them() {
    use dsh_testkit::screen::{key, Screen};
    let home = Home::new(DSH).in_dir("ws");
    write(
        &home.config_dir().join("commands/greet.md"),
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\necho hello $1\n",
    );
    let mut s = Screen::chat(&home, &[], 30, 100);
    s.wait_for("the composer", |t| t.contains("type a message"));
    s.keys("/gre");
    let screen = s.wait_for("the popup", |t| t.contains("▸ /greet"));
    assert!(screen.contains("(user) <name> Greet someone"), "{screen}");
    s.keys(key::TAB);
    s.wait_for("the completion", |t| {
        t.contains("› /greet") && !t.contains("▸")
    });
    s.keys("Lea");
    s.keys(key::ENTER);
    s.wait_for_history("the command's turn", |t| {
        t.contains("The echo tool says: hello Lea")
    });
    s.keys("\x04");
    assert_eq!(s.wait_exit(Duration::from_secs(20)), 0);
}
