//! The registry and the execute pipeline: every failure becomes an
//! `is_error` result, bad arguments never reach a body, raw tools are
//! untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use dsh_kernel::{Kernel, Scope};
use dsh_llm::{ContentBlock, FinishReason, ToolSchema};
use dsh_tools::{
    define_tool, define_tool_from_spec, error_result, raw_tool, success_result, CallEnv, ErrorCode,
    Execution, SchemaProp, SchemaSpec, ToolArgs, ToolCall, ToolContext, ToolError, ToolRegistry,
    ToolResult,
};
use serde::Deserialize;
use serde_json::{json, Value};

#[allow(dead_code)]
#[derive(Debug, Deserialize, ToolArgs)]
struct BashArgs {
    command: String,
    description: String,
    #[serde(rename = "timeoutMs")]
    timeout_ms: Option<f64>,
    workdir: Option<String>,
    #[serde(default)]
    run_in_background: bool,
}

#[derive(Debug, Deserialize, ToolArgs)]
struct Count {
    n: u8,
}

/// A registry with `bash` (counts body runs, echoes the command), `count`,
/// `boom` (panics), `fail` (own code) and `slow` (waits for cancellation).
fn setup() -> (ToolRegistry, Arc<AtomicUsize>) {
    let registry = ToolRegistry::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let bash = define_tool(
        "bash",
        "Runs a command",
        move |args: BashArgs, _ctx: ToolContext| {
            r.fetch_add(1, Ordering::SeqCst);
            async move { Ok(vec![ContentBlock::text(format!("ran {}", args.command))]) }
        },
    );
    let count = define_tool("count", "Counts", |args: Count, _ctx| async move {
        Ok(vec![ContentBlock::text(args.n.to_string())])
    });
    let boom = define_tool("boom", "Panics", |_: dsh_tools::NoArgs, _ctx| async move {
        if true {
            panic!("kaboom");
        }
        Ok(vec![])
    });
    let fail = define_tool("fail", "Fails", |_: dsh_tools::NoArgs, _ctx| async move {
        Err(ToolError::new(
            "BAD_WORKDIR",
            "workdir /nope does not exist",
        ))
    });
    // Ignores its cancellation token: the registry must drop it.
    let slow = define_tool(
        "slow",
        "Waits",
        |_: dsh_tools::NoArgs, _ctx: ToolContext| async move {
            std::future::pending::<()>().await;
            Ok(vec![])
        },
    );
    for t in [
        bash.into_arc(),
        count.into_arc(),
        boom.into_arc(),
        fail.into_arc(),
        slow.into_arc(),
    ] {
        let reg = registry.register(t).unwrap();
        std::mem::forget(reg);
    }
    (registry, runs)
}

async fn run(registry: &ToolRegistry, name: &str, args: &str) -> ToolResult {
    registry
        .execute(&ToolCall::new("call-1", name, args), CallEnv::default())
        .await
}

#[tokio::test]
async fn success_returns_the_body_content() {
    let (registry, runs) = setup();
    let r = run(
        &registry,
        "bash",
        r#"{"command":"ls","description":"list"}"#,
    )
    .await;
    assert!(!r.is_error);
    assert_eq!(r.call_id, "call-1");
    assert_eq!(r.content, vec![ContentBlock::text("ran ls")]);
    assert_eq!(r.failure, None);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bad_args_never_reach_the_body_and_list_every_violation() {
    let (registry, runs) = setup();
    let r = run(&registry, "bash", r#"{"timeoutMs":"5","workdir":null}"#).await;
    assert!(r.is_error);
    assert_eq!(
        r.text(),
        "Error: invalid arguments: missing required property \"command\"; missing required property \"description\"; \"timeoutMs\" must be a number; \"workdir\" must be a string"
    );
    let failure = r.failure.unwrap();
    assert_eq!(failure.code, "INVALID_ARGS");
    // The failure no longer names its tool (the result answers call-1).
    assert_eq!(r.call_id, "call-1");
    assert_eq!(
        failure.message,
        "invalid arguments: missing required property \"command\"; missing required property \"description\"; \"timeoutMs\" must be a number; \"workdir\" must be a string"
    );
    assert_eq!(failure.violations.len(), 4);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn empty_arguments_mean_an_empty_object() {
    let (registry, _) = setup();
    let r = run(&registry, "bash", "").await;
    assert_eq!(
        r.text(),
        "Error: invalid arguments: missing required property \"command\"; missing required property \"description\""
    );
    let r = run(&registry, "fail", "").await;
    assert_eq!(r.code(), Some("BAD_WORKDIR"));
}

#[tokio::test]
async fn non_object_arguments() {
    let (registry, _) = setup();
    let r = run(&registry, "bash", "[1,2]").await;
    assert_eq!(
        r.text(),
        "Error: invalid arguments: \"arguments\" must be an object"
    );
}

#[tokio::test]
async fn invalid_json_says_where() {
    let (registry, runs) = setup();
    let r = run(&registry, "bash", r#"{"command": ls}"#).await;
    assert_eq!(r.code(), Some("INVALID_JSON"));
    let text = r.text();
    assert!(
        text.starts_with(
            "Error: arguments are not valid JSON: expected value at line 1 column 13 (byte 12)"
        ),
        "{text}"
    );
    assert!(!text.contains("cut off"), "{text}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn truncated_json_at_the_token_limit_says_cut_off() {
    let (registry, _) = setup();
    let raw = r#"{"command": "cat <<EOF\nlots of text"#;
    let call = ToolCall::new("c", "bash", raw);
    let env = CallEnv {
        finish: Some(FinishReason::MaxTokens),
        ..CallEnv::default()
    };
    let r = registry.execute(&call, env).await;
    assert_eq!(r.code(), Some("INVALID_JSON"));
    let text = r.text();
    assert!(
        text.contains(&format!(
            "the arguments were cut off at byte {} because the model hit its output token limit",
            raw.len()
        )),
        "{text}"
    );
    assert!(text.contains("shorter call"), "{text}");
}

#[tokio::test]
async fn near_miss_keys_get_a_note_on_success_and_on_error() {
    let (registry, _) = setup();
    let r = run(
        &registry,
        "bash",
        r#"{"command":"ls","description":"d","timeout_ms":5}"#,
    )
    .await;
    assert!(!r.is_error);
    assert_eq!(
        r.content,
        vec![
            ContentBlock::text("ran ls"),
            ContentBlock::text("note: argument \"timeout_ms\" is not a parameter of bash and was ignored; did you mean \"timeoutMs\"?"),
        ]
    );
    let r = run(&registry, "bash", r#"{"comand":"ls","description":"d"}"#).await;
    assert!(r.is_error);
    assert_eq!(
        r.content,
        vec![
            ContentBlock::text("Error: invalid arguments: missing required property \"command\""),
            ContentBlock::text("note: argument \"comand\" is not a parameter of bash and was ignored; did you mean \"command\"?"),
        ]
    );
    // A far-off extra key is silently allowed.
    let r = run(
        &registry,
        "bash",
        r#"{"command":"ls","description":"d","unrelated":1}"#,
    )
    .await;
    assert_eq!(r.content.len(), 1);
}

#[tokio::test]
async fn integral_floats_read_as_integers_and_bounds_hold() {
    let (registry, _) = setup();
    assert_eq!(run(&registry, "count", r#"{"n": 7.0}"#).await.text(), "7");
    assert_eq!(run(&registry, "count", r#"{"n": 2e2}"#).await.text(), "200");
    assert_eq!(
        run(&registry, "count", r#"{"n": 256}"#).await.text(),
        "Error: invalid arguments: \"n\" must be at most 255"
    );
}

#[tokio::test]
async fn unknown_tool_lists_tools_and_suggests() {
    let (registry, _) = setup();
    let r = run(&registry, "bsh", "{}").await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("UNKNOWN_TOOL"));
    assert_eq!(
        r.text(),
        "Error: unknown tool \"bsh\"; did you mean \"bash\"? Available tools: \"bash\", \"count\", \"boom\", \"fail\", \"slow\""
    );
    let empty = ToolRegistry::new();
    assert_eq!(
        run(&empty, "x", "").await.text(),
        "Error: unknown tool \"x\"; no tools are available"
    );
}

#[tokio::test]
async fn tool_errors_keep_their_code() {
    let (registry, _) = setup();
    let r = run(&registry, "fail", "{}").await;
    assert_eq!(r.text(), "Error: workdir /nope does not exist");
    assert_eq!(r.code(), Some("BAD_WORKDIR"));
}

#[tokio::test]
async fn a_panicking_tool_does_not_take_the_process_down() {
    let (registry, _) = setup();
    let r = run(&registry, "boom", "{}").await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("TOOL_PANICKED"));
    assert_eq!(r.text(), "Error: tool \"boom\" panicked: kaboom");
    // The registry still works afterwards.
    assert!(!run(&registry, "count", r#"{"n":1}"#).await.is_error);
}

#[tokio::test]
async fn a_tool_that_panics_before_returning_a_future_is_contained() {
    struct Eager(ToolSchema);
    impl dsh_tools::Tool for Eager {
        fn schema(&self) -> &ToolSchema {
            &self.0
        }
        fn call(
            &self,
            _: &str,
            _: ToolContext,
        ) -> dsh_kernel::BoxFuture<'static, Result<dsh_tools::ToolOutput, ToolError>> {
            panic!("eager")
        }
    }
    let registry = ToolRegistry::new();
    let schema = ToolSchema {
        name: "eager".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
        strict: None,
    };
    registry
        .register(Arc::new(Eager(schema)))
        .unwrap()
        .undo_on_drop_never();
    let r = run(&registry, "eager", "").await;
    assert_eq!(r.text(), "Error: tool \"eager\" panicked: eager");
}

trait Leak {
    fn undo_on_drop_never(self);
}
impl Leak for dsh_kernel::Registration {
    fn undo_on_drop_never(self) {
        std::mem::forget(self);
    }
}

#[tokio::test]
async fn cancellation_aborts_before_and_during_the_call() {
    let (registry, runs) = setup();
    let call = ToolCall::new("c", "bash", r#"{"command":"ls","description":"d"}"#);
    let env = CallEnv::default();
    env.cancel.cancel();
    let r = registry.execute(&call, env).await;
    assert_eq!(r.code(), Some("ABORTED"));
    assert_eq!(r.text(), "Error: tool \"bash\" was aborted");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let env = CallEnv::default();
    let token = env.cancel.clone();
    let pending = tokio::spawn(registry.execute(&ToolCall::new("c", "slow", ""), env));
    tokio::task::yield_now().await;
    token.cancel();
    let r = pending.await.unwrap();
    assert_eq!(r.code(), Some("ABORTED"));
    assert_eq!(r.text(), "Error: tool \"slow\" was aborted");
}

#[tokio::test]
async fn a_cancelled_tool_that_answers_promptly_keeps_its_own_text() {
    use dsh_tools::{define_tool, NoArgs, ToolContext, ToolError};
    let registry = ToolRegistry::new();
    let reg = registry
        .register(
            define_tool(
                "polite",
                "stops on cancel",
                |_: NoArgs, ctx: ToolContext| async move {
                    ctx.cancel.cancelled().await;
                    Err::<Vec<dsh_llm::ContentBlock>, _>(ToolError::new(
                        "ABORTED",
                        "stopped cleanly",
                    ))
                },
            )
            .into_arc(),
        )
        .unwrap();
    let env = CallEnv::default();
    let token = env.cancel.clone();
    let pending = tokio::spawn(registry.execute(&ToolCall::new("c", "polite", ""), env));
    tokio::task::yield_now().await;
    token.cancel();
    let r = pending.await.unwrap();
    assert_eq!(r.code(), Some("ABORTED"));
    assert_eq!(r.text(), "Error: stopped cleanly");
    reg.undo();
}

#[tokio::test]
async fn a_tool_that_handles_cancellation_itself_keeps_its_text() {
    let tool = define_tool(
        "polite",
        "p",
        |_: dsh_tools::NoArgs, ctx: ToolContext| async move {
            ctx.cancel.cancelled().await;
            Err(ToolError::aborted("command aborted"))
        },
    );
    let registry = ToolRegistry::new();
    registry
        .register(tool.into_arc())
        .unwrap()
        .undo_on_drop_never();
    let env = CallEnv::default();
    let token = env.cancel.clone();
    let pending = tokio::spawn(registry.execute(&ToolCall::new("c", "polite", ""), env));
    tokio::task::yield_now().await;
    token.cancel();
    let r = pending.await.unwrap();
    assert_eq!(r.code(), Some("ABORTED"));
    assert_eq!(r.text(), "Error: command aborted");
}

#[tokio::test]
async fn raw_tools_run_without_validation() {
    let registry = ToolRegistry::new();
    let seen = Arc::new(Mutex::new(Vec::<Value>::new()));
    let s = seen.clone();
    let schema = ToolSchema {
        name: "mcp_search".into(),
        description: "search".into(),
        parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        strict: None,
    };
    let tool = raw_tool(schema.clone(), move |args: Value, _ctx| {
        s.lock().unwrap().push(args);
        async move { Ok(vec![ContentBlock::text("ok")]) }
    });
    registry
        .register(tool.into_arc())
        .unwrap()
        .undo_on_drop_never();
    assert_eq!(registry.schemas(), vec![schema]);
    // Violates the schema, yet reaches the body untouched.
    let r = run(&registry, "mcp_search", r#"{"q": 5, "extra": [1.0]}"#).await;
    assert!(!r.is_error);
    let r = run(&registry, "mcp_search", "[1]").await;
    assert!(!r.is_error);
    let r = run(&registry, "mcp_search", "").await;
    assert!(!r.is_error);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![json!({"q": 5, "extra": [1.0]}), json!([1]), json!({})]
    );
    // Unparsable text is still INVALID_JSON.
    assert_eq!(
        run(&registry, "mcp_search", "{").await.code(),
        Some("INVALID_JSON")
    );
}

#[tokio::test]
async fn runtime_spec_tools_get_the_validated_value() {
    let spec: SchemaSpec = serde_json::from_value(json!({
        "path": {"type": "string", "required": true},
        "limit": {"type": "integer"}
    }))
    .unwrap();
    let tool = define_tool_from_spec("read", "Reads", spec, |args: Value, _ctx| async move {
        Ok(vec![ContentBlock::text(args.to_string())])
    });
    let registry = ToolRegistry::new();
    registry
        .register(tool.into_arc())
        .unwrap()
        .undo_on_drop_never();
    assert_eq!(
        run(&registry, "read", r#"{"path":"a","limit":3.0}"#)
            .await
            .text(),
        r#"{"path":"a","limit":3}"#
    );
    assert_eq!(
        run(&registry, "read", r#"{"limit":"x"}"#).await.text(),
        "Error: invalid arguments: missing required property \"path\"; \"limit\" must be an integer"
    );
}

#[tokio::test]
async fn duplicates_undo_change_events_and_scopes() {
    let registry = ToolRegistry::new();
    let changes = Arc::new(AtomicUsize::new(0));
    let c = changes.clone();
    registry
        .on_change()
        .on(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .undo_on_drop_never();
    let mk = |name: &str| {
        define_tool(
            name.to_string(),
            "t",
            |_: dsh_tools::NoArgs, _ctx| async move { Ok(vec![]) },
        )
        .into_arc()
    };
    let first = registry.register(mk("a")).unwrap();
    let dup = registry.register(mk("a")).unwrap_err();
    assert_eq!(dup.code(), "DUPLICATE_TOOL");
    assert_eq!(changes.load(Ordering::SeqCst), 1);
    let scope = Scope::new();
    registry.register_in(&scope, mk("b")).unwrap();
    assert_eq!(registry.names(), ["a", "b"]);
    assert_eq!(changes.load(Ordering::SeqCst), 2);
    first.undo();
    assert_eq!(registry.names(), ["b"]);
    assert!(registry.get("a").is_none());
    assert_eq!(changes.load(Ordering::SeqCst), 3);
    // Re-registering after undo works; the old handle cannot remove the new one.
    let again = registry.register(mk("b2")).unwrap();
    scope.close();
    assert_eq!(registry.names(), ["b2"]);
    assert_eq!(changes.load(Ordering::SeqCst), 5);
    again.undo();
    assert!(registry.is_empty());
}

#[tokio::test]
async fn the_waterfall_can_veto_rewrite_and_wrap() {
    let (registry, runs) = setup();
    // Veto every call to `bash`.
    registry
        .on_execute()
        .on(|(call, env): Execution, next| async move {
            if call.name == "bash" {
                error_result(
                    call.call_id,
                    &ToolError::new("DENIED", "bash is not allowed here"),
                )
            } else {
                next.run((call, env)).await
            }
        })
        .undo_on_drop_never();
    let r = run(&registry, "bash", r#"{"command":"ls","description":"d"}"#).await;
    assert_eq!(r.text(), "Error: bash is not allowed here");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // A listener that panics is contained.
    registry
        .on_execute()
        .prepend(|(call, _env): Execution, _next| async move {
            if call.name == "count" {
                panic!("listener bug");
            }
            success_result(call.call_id, dsh_tools::ToolOutput::text("wrapped"))
        })
        .undo_on_drop_never();
    let r = run(&registry, "count", r#"{"n":1}"#).await;
    assert_eq!(r.code(), Some("LISTENER_PANICKED"));
    assert_eq!(run(&registry, "fail", "").await.text(), "wrapped");
}

#[tokio::test]
async fn extensions_reach_the_body() {
    #[derive(Debug)]
    struct AgentId(&'static str);
    let tool = define_tool(
        "who",
        "w",
        |_: dsh_tools::NoArgs, ctx: ToolContext| async move {
            let id = ctx.get::<AgentId>().map(|a| a.0).unwrap_or("none");
            Ok(vec![ContentBlock::text(format!("{id} {}", ctx.call_id))])
        },
    );
    let registry = ToolRegistry::new();
    registry
        .register(tool.into_arc())
        .unwrap()
        .undo_on_drop_never();
    let mut env = CallEnv::default();
    env.extensions.insert(AgentId("agent-1"));
    assert_eq!(
        registry
            .execute(&ToolCall::new("call-9", "who", ""), env)
            .await
            .text(),
        "agent-1 call-9"
    );
}

#[tokio::test]
async fn schemas_feed_the_prompt_and_the_kernel() {
    let kernel = Kernel::new();
    let (registry, _reg) = ToolRegistry::provide(&kernel).unwrap();
    assert!(kernel.service::<ToolRegistry>().is_ok());
    let prompt = dsh_prompt::PromptService::new();
    // What `ToolRegistry::provide_to` used to do (the composition library
    // wires it now): the registry's schemas feed the prompt, and its
    // changes are forwarded as prompt changes.
    let link = {
        let weak = Arc::downgrade(&registry);
        let provider = prompt
            .add_tool_provider(move || weak.upgrade().map(|r| r.schemas()).unwrap_or_default());
        let forward_to = prompt.clone();
        let forward = registry.on_change().on(move |_| forward_to.notify_change());
        dsh_kernel::Registration::merge(vec![provider, forward])
    };
    let prompt_changes = Arc::new(AtomicUsize::new(0));
    let c = prompt_changes.clone();
    prompt
        .on_change()
        .on(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .undo_on_drop_never();
    let t = define_tool(
        "t",
        "d",
        |_: dsh_tools::NoArgs, _ctx| async move { Ok(vec![]) },
    );
    let reg = registry.register(t.into_arc()).unwrap();
    assert_eq!(prompt_changes.load(Ordering::SeqCst), 1);
    let assembly = prompt.assemble().await;
    assert_eq!(assembly.tools.len(), 1);
    assert_eq!(assembly.tools[0].name, "t");
    assert_eq!(
        assembly.tools[0].parameters,
        json!({"type": "object", "properties": {}})
    );
    reg.undo();
    assert!(prompt.assemble().await.tools.is_empty());
    link.undo();
    let t = define_tool(
        "u",
        "d",
        |_: dsh_tools::NoArgs, _ctx| async move { Ok(vec![]) },
    );
    registry
        .register(t.into_arc())
        .unwrap()
        .undo_on_drop_never();
    assert!(prompt.assemble().await.tools.is_empty());
}

#[test]
fn tool_schemas_show_the_derived_spec() {
    let tool = define_tool(
        "bash",
        "Runs",
        |_: BashArgs, _ctx| async move { Ok(vec![]) },
    );
    let schema = dsh_tools::Tool::schema(&tool);
    assert_eq!(
        schema.parameters["required"],
        json!(["command", "description"])
    );
    assert_eq!(tool.spec(), &BashArgs::schema_spec());
    let _ = SchemaProp::string();
}

#[tokio::test]
async fn closing_a_scope_waits_for_running_calls() {
    use futures_util::FutureExt;
    let registry = Arc::new(ToolRegistry::new());
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(Mutex::new(Some(started_tx)));
    let release_rx = Arc::new(tokio::sync::Mutex::new(Some(release_rx)));
    let tool = define_tool("wait", "w", move |_: dsh_tools::NoArgs, _ctx| {
        let started = started_tx.lock().unwrap().take();
        let release = release_rx.clone();
        async move {
            if let Some(tx) = started {
                let _ = tx.send(());
            }
            if let Some(rx) = release.lock().await.take() {
                let _ = rx.await;
            }
            Ok(vec![ContentBlock::text("done")])
        }
    });
    let scope = Scope::new();
    registry.register_in(&scope, tool.into_arc()).unwrap();
    let call = tokio::spawn(registry.execute(&ToolCall::new("c", "wait", ""), CallEnv::default()));
    started_rx.await.unwrap();
    let mut closing = Box::pin(scope.close_and_wait());
    // The tool is gone for new calls at once, but the running call is awaited.
    assert!((&mut closing).now_or_never().is_none());
    assert!(registry.get("wait").is_none());
    assert_eq!(
        run(&registry, "wait", "").await.code(),
        Some("UNKNOWN_TOOL")
    );
    release_tx.send(()).unwrap();
    assert_eq!(call.await.unwrap().text(), "done");
    closing.await;
}

#[test]
fn the_tool_set_is_one_shared_set_until_the_tools_change() {
    let registry = ToolRegistry::new();
    let tool = |name: &str| {
        define_tool(
            name.to_string(),
            "d",
            |_: dsh_tools::NoArgs, _ctx| async move { Ok(vec![]) },
        )
        .into_arc()
    };
    let a = registry.register(tool("a")).unwrap();
    let first = registry.tool_set();
    assert!(first.same(&registry.tool_set()), "unchanged: the same set");
    let wire = first.wire_json().get().to_string();
    assert!(
        std::ptr::eq(first.wire_json(), registry.tool_set().wire_json()),
        "serialized once"
    );
    let wire_value: Value = serde_json::from_str(&wire).unwrap();
    assert_eq!(
        wire_value,
        json!([{"type": "function", "function": {
            "name": "a", "description": "d",
            "parameters": {"type": "object", "properties": {}}}}])
    );
    let b = registry.register(tool("b")).unwrap();
    let second = registry.tool_set();
    assert!(!second.same(&first));
    assert_eq!(
        second.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    a.undo();
    let third = registry.tool_set();
    assert!(!third.same(&second));
    assert_eq!(
        third.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    b.undo();
    assert!(registry.tool_set().is_empty());
}

/// An unlisted tool stays callable but is not named by an unknown-tool
/// result (nor suggested); undoing `unlist` names it again.
#[tokio::test]
async fn an_unlisted_tool_is_callable_but_not_named_to_an_unknown_call() {
    let (registry, runs) = setup();
    let unlisted = registry.unlist("bash");
    let r = run(&registry, "bsh", "{}").await;
    assert_eq!(r.code(), Some("UNKNOWN_TOOL"));
    assert_eq!(
        r.text(),
        "Error: unknown tool \"bsh\". Available tools: \"count\", \"boom\", \"fail\", \"slow\""
    );
    let called = run(&registry, "bash", r#"{"command":"ls","description":"d"}"#).await;
    assert!(!called.is_error, "{}", called.text());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    unlisted.undo();
    assert!(run(&registry, "bsh", "{}")
        .await
        .text()
        .contains("did you mean \"bash\"?"));
}
