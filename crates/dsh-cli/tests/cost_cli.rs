//! Cost in money through the CLI: saved sessions priced in `dsh session
//! list` (COST), `dsh session stats` and `dsh usage --by day|model|project`
//! (unknown models `?`, never 0; the user config's prices); `/cost` in the
//! chat's line mode and the budget stopping a turn, both against a loopback
//! DeepSeek server that reports usage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use dsh_protocol::{EventPayload, SessionEvent, TokenUsage, ToolCall};
use dsh_session::{ToolCallEvent, UsageEvent};

/// 2026-10-27 00:00 UTC.
const DAY: u64 = 1_793_059_200_000;
const HOUR: u64 = 3_600_000;

/// Runs `dsh` with a private HOME (no user config unless the test writes
/// `config/dsh/dsh.toml`), stdin from `input`.
fn dsh(home: &Path, args: &[&str], input: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dsh"));
    cmd.current_dir(home)
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("DSH_MODEL")
        .env_remove("DEEPSEEK_BASE_URL")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match input {
        None => {
            cmd.stdin(Stdio::null());
            cmd.output().unwrap()
        }
        Some(text) => {
            use std::io::Write;
            cmd.stdin(Stdio::piped());
            let mut child = cmd.spawn().unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        }
    }
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What a generated log holds, in order.
enum Ev {
    /// The system prompt naming the working directory.
    Cwd(&'static str),
    /// The model of the requests that follow (`request/options`).
    Model(&'static str),
    /// A `/model` switch (`model/change`).
    Switch(&'static str),
    /// `turn/start`.
    Turn(u64),
    /// A `tool/call` of (turn, step).
    Call(u64, u64),
    /// A `usage` report of (turn, step) at a time: uncached input, cache
    /// hits, output.
    Usage(u64, u64, u64, i64, i64, i64),
}

/// Writes `<dir>/<id>.jsonl` as dsh writes logs.
fn write_log(dir: &Path, id: &str, start: u64, events: &[Ev]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut bytes = Vec::new();
    for (seq, e) in events.iter().enumerate() {
        let other = |kind: &str, data: serde_json::Value| EventPayload::Other {
            kind: kind.into(),
            data,
        };
        let (time, data) = match e {
            Ev::Cwd(cwd) => (
                start,
                other(
                    "request/system",
                    serde_json::json!({"text": format!("You are dsh.\n\nEnvironment: working directory {cwd}; OS linux (x86_64); date 2026-10-27.")}),
                ),
            ),
            Ev::Model(m) => (
                start,
                other("request/options", serde_json::json!({"model": m})),
            ),
            Ev::Switch(m) => (
                start,
                other(
                    "model/change",
                    serde_json::json!({"model": m, "source": "/model"}),
                ),
            ),
            Ev::Turn(t) => (
                start,
                EventPayload::TurnStart(dsh_session::TurnStartEvent {
                    turn: *t,
                    trigger: dsh_session::TurnTrigger::Message {
                        source: dsh_protocol::MessageSource::User,
                    },
                }),
            ),
            Ev::Call(turn, step) => (
                start,
                EventPayload::ToolCall(ToolCallEvent {
                    turn: *turn,
                    step: *step,
                    call: ToolCall::new(format!("c{turn}{step}"), "bash", "{}"),
                }),
            ),
            Ev::Usage(turn, step, time, miss, hit, out) => (
                *time,
                EventPayload::Usage(UsageEvent {
                    turn: *turn,
                    step: *step,
                    usage: TokenUsage {
                        input_tokens: *miss,
                        output_tokens: *out,
                        cache_read_tokens: Some(*hit),
                        cache_write_tokens: None,
                        reasoning_tokens: None,
                    },
                }),
            ),
        };
        dsh_session::write_jsonl_line(
            &SessionEvent {
                seq: seq as u64,
                time,
                data,
            },
            &mut bytes,
        );
    }
    std::fs::write(dir.join(format!("{id}.jsonl")), bytes).unwrap();
}

const A: &str = "s-0000000a-0000-7000-8000-000000000000";
const B: &str = "s-0000000b-0000-7000-8000-000000000000";
const C: &str = "s-0000000c-0000-7000-8000-000000000000";
const D: &str = "s-0000000d-0000-7000-8000-000000000000";

/// Four saved sessions:
/// - A (/work/alpha, 10-27): flash at peak 1M miss + 1M hit + 100k out
///   ($0.426, a tool step), then off-peak 1M miss ($0.15): $0.5760;
/// - B (/work/beta, 10-28): pro at peak 1M miss: $1.3200;
/// - C (/work/beta, 10-28): a model without a price: `?`;
/// - D (/work/alpha, 10-28): flash at peak 1M miss ($0.30), then switched
///   to the unpriced model: `≥ $0.3000`.
fn saved_sessions(dir: &Path) {
    let day2 = DAY + 24 * HOUR;
    write_log(
        dir,
        A,
        DAY,
        &[
            Ev::Cwd("/work/alpha"),
            Ev::Turn(1),
            Ev::Model("deepseek-v4-flash"),
            Ev::Usage(1, 1, DAY + 2 * HOUR, 1_000_000, 1_000_000, 100_000),
            Ev::Call(1, 1),
            Ev::Usage(1, 2, DAY + 12 * HOUR, 1_000_000, 0, 0),
        ],
    );
    write_log(
        dir,
        B,
        day2,
        &[
            Ev::Cwd("/work/beta"),
            Ev::Turn(1),
            Ev::Model("deepseek-v4-pro"),
            Ev::Usage(1, 1, day2 + 2 * HOUR, 1_000_000, 0, 0),
        ],
    );
    write_log(
        dir,
        C,
        day2 + 1,
        &[
            Ev::Cwd("/work/beta"),
            Ev::Turn(1),
            Ev::Model("mystery"),
            Ev::Usage(1, 1, day2 + 2 * HOUR, 1_000, 0, 10),
        ],
    );
    write_log(
        dir,
        D,
        day2 + 2,
        &[
            Ev::Cwd("/work/alpha"),
            Ev::Turn(1),
            Ev::Model("deepseek-v4-flash"),
            Ev::Usage(1, 1, day2 + 2 * HOUR, 1_000_000, 0, 0),
            Ev::Switch("mystery"),
            Ev::Turn(2),
            Ev::Usage(2, 1, day2 + 3 * HOUR, 1_000, 0, 10),
        ],
    );
}

/// The COST cell of session `id` in `dsh session list`'s output.
fn cost_of(list: &str, id: &str) -> String {
    let row = list
        .lines()
        .find(|l| l.starts_with(id))
        .unwrap_or_else(|| panic!("{id} not listed:\n{list}"));
    let cells: Vec<&str> = row.split("  ").filter(|c| !c.trim().is_empty()).collect();
    cells[4].trim().to_string()
}

#[test]
fn session_list_has_a_cost_column_and_unknown_is_never_zero() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions");
    saved_sessions(&dir);
    let out = dsh(
        home.path(),
        &["session", "list", "--session-dir", dir.to_str().unwrap()],
        None,
    );
    assert!(out.status.success(), "{}", err(&out));
    let list = text(&out);
    assert!(list.lines().next().unwrap().contains("COST"), "{list}");
    assert_eq!(cost_of(&list, A), "$0.5760", "{list}");
    assert_eq!(cost_of(&list, B), "$1.3200", "{list}");
    assert_eq!(cost_of(&list, C), "?", "{list}");
    assert_eq!(cost_of(&list, D), "≥ $0.3000", "{list}");

    // A price in the user config makes the unknown model known.
    let config = home.path().join("config/dsh");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("dsh.toml"),
        "[models.mystery]\ninput_price = 10\noutput_price = 10\n",
    )
    .unwrap();
    let out = dsh(
        home.path(),
        &["session", "list", "--session-dir", dir.to_str().unwrap()],
        None,
    );
    let list = text(&out);
    assert_eq!(cost_of(&list, C), "$0.0101", "{list}");
    assert_eq!(cost_of(&list, D), "$0.3101", "{list}");
}

#[test]
fn usage_groups_by_model_day_and_project() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions");
    saved_sessions(&dir);
    let usage = |by: &str| {
        let out = dsh(
            home.path(),
            &[
                "usage",
                "--by",
                by,
                "--json",
                "--session-dir",
                dir.to_str().unwrap(),
            ],
            None,
        );
        assert!(out.status.success(), "{}", err(&out));
        serde_json::from_str::<serde_json::Value>(&text(&out)).unwrap()
    };
    let row = |v: &serde_json::Value, key: &str| -> (u64, u64, String) {
        let r = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == key)
            .unwrap_or_else(|| panic!("no row {key}: {v}"));
        (
            r["sessions"].as_u64().unwrap(),
            r["tokens"]["requests"].as_u64().unwrap(),
            r["costText"].as_str().unwrap().to_string(),
        )
    };

    let by_model = usage("model");
    assert_eq!(by_model["sessions"], 4);
    assert_eq!(
        row(&by_model, "deepseek-v4-flash"),
        (2, 3, "$0.8760".into())
    );
    assert_eq!(row(&by_model, "deepseek-v4-pro"), (1, 1, "$1.3200".into()));
    assert_eq!(row(&by_model, "mystery"), (2, 2, "?".into()));
    // Costliest first, unknown last.
    let keys: Vec<&str> = by_model["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["deepseek-v4-pro", "deepseek-v4-flash", "mystery"]);
    assert_eq!(by_model["total"]["costText"], "≥ $2.1960");
    assert_eq!(by_model["total"]["tokens"]["cacheHit"], 1_000_000);
    assert_eq!(by_model["total"]["tokens"]["input"], 4_002_000);
    assert_eq!(by_model["total"]["cost"]["unpriced"], 2);

    let by_day = usage("day");
    assert_eq!(row(&by_day, "2026-10-27"), (1, 2, "$0.5760".into()));
    assert_eq!(row(&by_day, "2026-10-28"), (3, 4, "≥ $1.6200".into()));

    let by_project = usage("project");
    assert_eq!(row(&by_project, "/work/alpha"), (2, 4, "≥ $0.8760".into()));
    assert_eq!(row(&by_project, "/work/beta"), (2, 2, "≥ $1.3200".into()));

    // The table says the same, with the note on unknown costs.
    let out = dsh(
        home.path(),
        &[
            "usage",
            "--by",
            "model",
            "--session-dir",
            dir.to_str().unwrap(),
        ],
        None,
    );
    let table = text(&out);
    assert!(table.starts_with("MODEL"), "{table}");
    let flash = table
        .lines()
        .find(|l| l.starts_with("deepseek-v4-flash"))
        .unwrap();
    assert!(flash.ends_with("$0.8760"), "{flash}");
    assert!(
        table.contains("? : 2 request(s) on a model without a price"),
        "{table}"
    );
    assert!(table.contains("2026-10-27"), "the prices' date: {table}");
}

#[test]
fn usage_since_counts_only_recent_requests() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions");
    saved_sessions(&dir);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let recent = "s-0000000e-0000-7000-8000-000000000000";
    write_log(
        &dir,
        recent,
        now - 2 * HOUR,
        &[
            Ev::Cwd("/work/gamma"),
            Ev::Turn(1),
            Ev::Model("echo"),
            Ev::Usage(1, 1, now - 2 * HOUR, 0, 0, 0),
            Ev::Model("deepseek-v4-pro"),
            Ev::Usage(1, 2, now - 40 * 24 * HOUR, 5, 0, 0),
        ],
    );
    let out = dsh(
        home.path(),
        &[
            "usage",
            "--since",
            "1d",
            "--by",
            "project",
            "--json",
            "--session-dir",
            dir.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", err(&out));
    let v: serde_json::Value = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(v["sessions"], 1, "{v}");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["key"], "/work/gamma");
    assert_eq!(
        rows[0]["tokens"]["requests"], 1,
        "the old request is left out"
    );
    assert_eq!(rows[0]["costText"], "$0.0000", "echo is free: {v}");
    assert!(v["sinceMs"].as_u64().unwrap() > now - 25 * HOUR);

    let out = dsh(
        home.path(),
        &[
            "usage",
            "--since",
            "7x",
            "--session-dir",
            dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "a bad age is a usage error");
}

#[test]
fn session_stats_gives_the_cost_per_turn_and_the_costliest_tool_steps() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions");
    saved_sessions(&dir);
    let out = dsh(
        home.path(),
        &[
            "session",
            "stats",
            A,
            "--json",
            "--session-dir",
            dir.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", err(&out));
    let v: serde_json::Value = serde_json::from_str(&text(&out)).unwrap();
    let cost = &v["cost"];
    assert_eq!(cost["text"], "$0.5760", "{v}");
    assert_eq!(cost["turns"].as_array().unwrap().len(), 1);
    assert_eq!(cost["turns"][0]["steps"], 2);
    let steps = cost["costliestToolSteps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "only step 1 called a tool: {cost}");
    assert_eq!(steps[0]["step"], 1);
    assert_eq!(steps[0]["toolCalls"], 1);
    assert_eq!(steps[0]["model"], "deepseek-v4-flash");
    assert!((steps[0]["cost"]["amount"].as_f64().unwrap() - 0.426).abs() < 1e-9);
    // The validation stats are still there.
    assert_eq!(v["turns"], 1);

    let out = dsh(
        home.path(),
        &[
            "session",
            "stats",
            D,
            "--session-dir",
            dir.to_str().unwrap(),
        ],
        None,
    );
    let shown = text(&out);
    assert!(shown.contains("cost: ≥ $0.3000"), "{shown}");
    assert!(shown.contains("  turn 1: $0.3000"), "{shown}");
    assert!(shown.contains("  turn 2: ?"), "{shown}");
}

#[test]
fn bad_prices_and_budgets_are_config_errors_naming_the_key() {
    let home = tempfile::tempdir().unwrap();
    for (config, key) in [
        (
            "[models.echo]\ninput_price = -1\noutput_price = 1\n",
            "input_price",
        ),
        ("[models.echo]\ninput_price = 1\n", "output_price"),
        (
            "[models.echo]\ninput_price = 1\noutput_price = 1\ncurrency = \"US$\"\n",
            "currency",
        ),
        (
            "[budget]\nmax_cost_per_session = -0.5\n",
            "max_cost_per_session",
        ),
    ] {
        let file = home.path().join("bad.toml");
        std::fs::write(&file, config).unwrap();
        let out = dsh(
            home.path(),
            &["run", "--config", file.to_str().unwrap(), "echo hi"],
            None,
        );
        assert_eq!(out.status.code(), Some(2), "{config}: {}", err(&out));
        let e = err(&out);
        assert!(e.contains(key), "{config}: {e}");
        assert!(e.contains("bad.toml"), "names the file: {e}");
    }
}

// ---------------------------------------------------------------------------
// Live: a loopback DeepSeek server that reports usage.

fn sse(
    delta: serde_json::Value,
    finish: &str,
    usage: serde_json::Value,
) -> dsh_testkit::ScriptedResponse {
    dsh_testkit::ScriptedResponse::sse(&[
        serde_json::json!({"choices":[{"index":0,"delta":delta,"finish_reason":null}]}).to_string(),
        serde_json::json!({"choices":[{"index":0,"delta":{},"finish_reason":finish}],"usage":usage}).to_string(),
        "[DONE]".to_string(),
    ])
}

/// What a live run leaves: `dsh`'s output, the server (for the requests
/// it received) and the private HOME (for the session logs).
struct Live {
    out: Output,
    server: dsh_testkit::LoopbackServer,
    home: tempfile::TempDir,
}

/// Starts a loopback DeepSeek server answering `script`, writes a config
/// (`deepseek-v4-flash` by default, `[deepseek]` at the server, the extra
/// model `deepseek-v4-exp`, then `extra`) into a fresh HOME and runs
/// `dsh <command> --config <file> <rest…>` there with stdin from `input`.
async fn live(
    script: Vec<dsh_testkit::ScriptedResponse>,
    extra: &str,
    command: &'static str,
    rest: &'static [&'static str],
    input: Option<&'static str>,
) -> Result<Live, Box<dyn std::error::Error>> {
    let server = dsh_testkit::LoopbackServer::start(script).await?;
    let home = tempfile::tempdir()?;
    let cfg = home.path().join("cfg.toml");
    std::fs::write(
        &cfg,
        format!(
            "model = \"deepseek-v4-flash\"\n[deepseek]\napi_key = \"sk-test\"\nbase_url = \"{}\"\nmodels = [\"deepseek-v4-exp\"]\n{extra}",
            server.base_url()
        ),
    )?;
    let h = home.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let cfg = cfg.to_string_lossy().into_owned();
        let mut args = vec![command, "--config", cfg.as_str()];
        args.extend_from_slice(rest);
        dsh(&h, &args, input)
    })
    .await?;
    Ok(Live { out, server, home })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_cost_shows_tokens_by_kind_the_cost_and_the_price_source(
) -> Result<(), Box<dyn std::error::Error>> {
    let Live { out, server, .. } = live(
        vec![sse(
            serde_json::json!({"role":"assistant","content":"hello there"}),
            "stop",
            serde_json::json!({"prompt_tokens":2_000_000,"prompt_cache_hit_tokens":1_500_000,"prompt_cache_miss_tokens":500_000,"completion_tokens":1000,"completion_tokens_details":{"reasoning_tokens":400}}),
        )],
        "[models.deepseek-v4-flash]\ninput_price = 1\ncached_input_price = 0.1\noutput_price = 2\n",
        "chat",
        &[],
        Some("hi\n/cost\n"),
    )
    .await?;
    assert!(out.status.success(), "{}", err(&out));
    assert!(text(&out).contains("hello there"));
    // The line mode answers commands on stderr.
    let shown = err(&out);
    // 0.5M × 1 + 1.5M × 0.1 + 1000 × 2 per million.
    assert!(
        shown.contains("cost: $0.6520 (USD) this session, $0.6520 the last turn (turn 1)"),
        "{shown}"
    );
    assert!(
        shown.contains("input 2000000 (cache hit 1500000, miss 500000), output 1000 (reasoning 400); cache-hit rate 75%; 1 request(s)"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "prices of deepseek-v4-flash: [models.\"deepseek-v4-flash\"] in the configuration"
        ),
        "{shown}"
    );
    assert_eq!(server.requests().len(), 1, "/cost sends nothing");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_stops_the_turn_before_a_request_that_would_pass_it(
) -> Result<(), Box<dyn std::error::Error>> {
    let args = serde_json::json!({"command": "echo step output", "description": "d"}).to_string();
    // $0.40 spent by the first request; the second would add about $0.40.
    let Live { out, server, home } = live(
        vec![
            sse(
                serde_json::json!({"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"bash","arguments":args}}]}),
                "tool_calls",
                serde_json::json!({"prompt_tokens":400_000,"completion_tokens":10}),
            ),
            sse(
                serde_json::json!({"role":"assistant","content":"done"}),
                "stop",
                serde_json::json!({"prompt_tokens":400_100,"completion_tokens":1}),
            ),
        ],
        "[models.deepseek-v4-flash]\ninput_price = 1\noutput_price = 1\n[budget]\nmax_cost_per_session = 0.5\n",
        "run",
        &["go"],
        None,
    )
    .await?;
    let e = err(&out);
    assert_eq!(out.status.code(), Some(1), "a turn error: {e}");
    assert!(e.contains("BUDGET_EXCEEDED"), "{e}");
    assert!(e.contains("session cost $0.4000 + about $0.4"), "{e}");
    assert!(
        e.contains("would pass the budget of $0.5000 ([budget] max_cost_per_session)"),
        "{e}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the second request was not sent"
    );
    // The log says why the turn ended.
    let sessions = home.path().join("data/dsh/sessions");
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let logged = std::fs::read_to_string(log).unwrap();
    assert!(logged.contains("\"code\":\"BUDGET_EXCEEDED\""), "{logged}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unpriced_model_cannot_be_budgeted_and_is_not_blocked(
) -> Result<(), Box<dyn std::error::Error>> {
    let Live { out, server, .. } = live(
        vec![sse(
            serde_json::json!({"role":"assistant","content":"fine"}),
            "stop",
            serde_json::json!({"prompt_tokens":9_000_000,"completion_tokens":10}),
        )],
        "[budget]\nmax_cost_per_session = 0.01\n",
        "run",
        &["--model", "deepseek-v4-exp", "go"],
        None,
    )
    .await?;
    let e = err(&out);
    assert!(out.status.success(), "{e}");
    assert_eq!(text(&out), "fine\n");
    assert_eq!(
        e.matches("max_cost_per_session cannot be checked").count(),
        1,
        "said once: {e}"
    );
    assert!(e.contains("\"deepseek-v4-exp\""), "{e}");
    assert_eq!(server.requests().len(), 1);
    Ok(())
}
