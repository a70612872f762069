//! Plan mode and the todo list from the command line, with the offline echo
//! model: `dsh run --plan` prints the plan the model presents and exits 0,
//! denies file writes (the file is not there afterwards), and ends normally
//! when no plan is presented; `--json` stays one event per line; `/plan`
//! works in piped chat.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::Stdio;

use dsh_testkit::cli::{output_within, Home, Outcome, LIMIT};
use serde_json::{json, Value};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// `dsh ARGS…` to its end: its exit code, stdout and stderr.
fn run(home: &Home, args: &[&str]) -> (i32, String, String) {
    let mut c = home.dsh();
    c.args(args);
    Outcome::from(output_within(c, None, LIMIT)).into_parts()
}

#[test]
fn run_plan_prints_the_presented_plan_and_exits_0() {
    let home = Home::new(DSH);
    let plan = "# Plan\n1. Edit `src/lib.rs`\n2. Run the tests";
    let prompt = format!("call exit_plan_mode {}", json!({ "plan": plan }));
    let (code, stdout, stderr) = run(&home, &["run", "--plan", &prompt]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, format!("{plan}\n"), "the plan, nothing else");
    assert_eq!(
        home.of_type("plan/mode"),
        [json!({"active": true, "source": "--plan"})]
    );
    let context = home.of_type("context/message");
    assert_eq!(context.len(), 1);
    assert!(context[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Plan mode is on"));
    assert_eq!(
        home.of_type("step/start").len(),
        1,
        "the run ends after the step that presented the plan"
    );
    assert_eq!(
        home.of_type("turn/end")[0]["reason"],
        json!({"kind": "completed"})
    );
}

#[test]
fn run_plan_denies_writes_and_leaves_no_file() {
    let home = Home::new(DSH);
    let target = home.path().join("a.txt");
    let prompt = format!(
        "call write {}",
        json!({"file_path": target, "content": "hello\n"})
    );
    let (code, stdout, stderr) = run(&home, &["run", "--plan", &prompt]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("permission denied: plan mode: write is not allowed while planning"),
        "{stdout}"
    );
    assert!(!target.exists(), "nothing was written");
    let prompt = format!(
        "call bash {}",
        json!({"command": format!("touch {}", target.display()), "description": "touch"})
    );
    let (code, stdout, _) = run(&home, &["run", "--plan", &prompt]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("plan mode: bash is not allowed"),
        "{stdout}"
    );
    assert!(!target.exists(), "the command never ran");
}

#[test]
fn run_plan_without_a_plan_ends_normally_and_json_stays_events() {
    let home = Home::new(DSH);
    let (code, stdout, stderr) = run(&home, &["run", "--plan", "echo hi"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "The echo tool says: hi\n");

    let home = Home::new(DSH);
    let (code, stdout, stderr) = run(
        &home,
        &[
            "run",
            "--plan",
            "--json",
            r##"call exit_plan_mode {"plan":"# P"}"##,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is an event"))
        .collect();
    assert!(events
        .iter()
        .any(|e| e["type"] == "plan/mode" && e["data"]["active"] == true));
    assert!(
        !stdout.contains("\n# P\n"),
        "no plan text outside the events"
    );
}

#[test]
fn run_without_plan_refuses_exit_plan_mode_and_todo_write_works() {
    let home = Home::new(DSH);
    let (code, stdout, _) = run(&home, &["run", r##"call exit_plan_mode {"plan":"# P"}"##]);
    assert_eq!(code, 0);
    assert!(stdout.contains("plan mode is not active"), "{stdout}");
    assert!(home.of_type("plan/mode").is_empty());

    let home = Home::new(DSH);
    let todos = json!({"todos": [
        {"content": "Write it", "status": "in_progress"},
        {"content": "Test it", "status": "pending"},
    ]});
    let (code, stdout, _) = run(&home, &["run", &format!("call todo_write {todos}")]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("Todo list updated (0/2 completed):\n[~] Write it\n[ ] Test it"),
        "{stdout}"
    );
    assert_eq!(home.of_type("todo/update"), [todos]);
}

#[test]
fn piped_chat_takes_plan_commands() {
    let home = Home::new(DSH);
    let target = home.path().join("b.txt");
    let write = format!(
        "call write {}",
        json!({"file_path": target, "content": "x\n"})
    );
    let mut child = home
        .dsh()
        .arg("chat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Piped, nobody can approve a plan: plan mode stays on until /plan off.
    let present = r##"call exit_plan_mode {"plan":"# P"}"##;
    let input = format!("/plan\n{write}\n{present}\n/plan off\n{write}\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("plan mode: on"), "{stderr}");
    assert!(stderr.contains("plan mode: off"), "{stderr}");
    assert!(
        stdout.contains("plan mode: write is not allowed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("nobody could approve the plan (there is no user to ask)"),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
    assert!(!stdout.contains("--permission"), "{stdout}");
    let modes: Vec<Value> = home.of_type("plan/mode");
    assert_eq!(
        modes,
        [
            json!({"active": true, "source": "/plan"}),
            json!({"active": false, "source": "/plan"}),
        ]
    );
}
