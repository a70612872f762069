//! Turns that run to completion: event order, hook order, tool dispatch, the
//! bad-arguments round trip, batching, inject, prompts, seeded sessions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use dsh_agent::{Agent, AgentError, AgentOptions, AgentStatus};
use dsh_agent_loop::AgentLoop;
use dsh_llm::scripted::ReplyBuilder;
use dsh_llm::{ContentBlock, Message, MessageSource, ModelRequest, Role, ToolResultBlock};
use dsh_prompt::{PromptService, Section};
use dsh_session::{
    derive_messages, AssistantMessageEvent, EventPayload, MessageEvent, StepEvent, ToolCallEvent,
    TurnEndReason, TurnStartEvent, TurnTrigger,
};
use dsh_tools::{define_tool, ToolArgs, ToolError};

/// Arguments of the test tools.
#[derive(serde::Deserialize, ToolArgs)]
struct PathArgs {
    /// The file.
    path: String,
}

fn last_kind(agent: &Arc<dyn Agent>) -> String {
    agent
        .session()
        .events()
        .last()
        .map(|e| e.data.kind().to_string())
        .unwrap_or_default()
}

fn last_message_of(req: &ModelRequest) -> Message {
    req.messages.last().expect("a non-empty history")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_step_text_turn_logs_and_emits_in_reference_order() {
    let h = Harness::scripted([say(&["Hel", "lo"])]);
    let mut tap = Tap::install(&h.registry);
    // What each boundary listener saw as the last logged event.
    let seen: Arc<Mutex<Vec<(&'static str, String)>>> = Default::default();
    let hooks = h.registry.hooks();
    let mut regs = Vec::new();
    let s = seen.clone();
    regs.push(hooks.event.on(move |e| {
        let boundary = match &e.event.data {
            EventPayload::TurnStart(_) => "turn-start",
            EventPayload::StepStart(_) => "step-start",
            EventPayload::AssistantChunk(_) => "chunk",
            EventPayload::StepEnd(_) => "step-end",
            EventPayload::TurnEnd(_) => "turn-end",
            _ => return,
        };
        s.lock().unwrap().push((boundary, last_kind(&e.agent)));
    }));

    let handle = h.agent("a1");
    let agent = handle.agent();
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert_eq!(agent.session().id(), "a1-session");
    send(&agent, "hi");
    tap.idle().await;

    // dsh: the request log comes first (the options; no system prompt, no tools).
    let chunks = 6; // block-start, 2 deltas, block-end, usage, finish
    let mut expected = vec![
        "user/message",
        "turn/start",
        "step/start",
        "request/options",
        "request/sent",
    ];
    expected.extend(std::iter::repeat_n("assistant/chunk", chunks));
    expected.extend(["assistant/message", "usage", "step/end", "turn/end"]);
    assert_eq!(kinds(&agent.session()), expected);

    let events = agent.session().events();
    assert!(matches!(
        &events[1].data,
        EventPayload::TurnStart(TurnStartEvent {
            turn: 1,
            trigger: TurnTrigger::Message {
                source: MessageSource::User
            }
        })
    ));
    match &events[5 + chunks].data {
        EventPayload::AssistantMessage(AssistantMessageEvent {
            turn,
            step,
            content,
        }) => {
            assert_eq!((*turn, *step), (1, 1));
            assert_eq!(text_of(content), "Hello");
        }
        other => panic!("expected assistant/message, got {other:?}"),
    }
    assert_eq!(
        turn_ends(&agent.session()),
        vec![(1, TurnEndReason::Completed)]
    );

    assert_eq!(
        tap.boundaries(),
        vec![
            Obs::TurnStart(1),
            Obs::StepStart(1, 1),
            Obs::StepEnd(1, 1),
            Obs::TurnEnd(1, TurnEndReason::Completed)
        ]
    );
    assert_eq!(
        tap.statuses(),
        vec![AgentStatus::Running, AgentStatus::Idle]
    );
    let mut want: Vec<(&str, String)> = vec![
        ("turn-start", "turn/start".into()),
        // step/start is observed AFTER it is appended (it used to be
        // emitted before, when the hook saw `turn/start` last)
        ("step-start", "step/start".into()),
    ];
    want.extend(std::iter::repeat_n(
        ("chunk", "assistant/chunk".to_string()),
        chunks,
    ));
    want.push(("step-end", "step/end".into()));
    want.push(("turn-end", "turn/end".into()));
    assert_eq!(*seen.lock().unwrap(), want);

    let reqs = h.model.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].model, MODEL);
    assert_eq!(reqs[0].messages.to_vec(), vec![Message::user_text("hi")]);
    assert_eq!(reqs[0].system, None);
    assert!(
        reqs[0].tools.is_none(),
        "no tool registered, no tools field"
    );

    for r in regs {
        r.undo();
    }
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_turn_runs_the_tool_with_the_agent_and_feeds_back_the_result() {
    let mut h = Harness::scripted([call("c1", "read", r#"{"path":"a.txt"}"#), say(&["done"])]);
    let seen_agent: Arc<Mutex<Option<String>>> = Default::default();
    let sa = seen_agent.clone();
    let tool = define_tool("read", "Reads a file", move |args: PathArgs, ctx| {
        let sa = sa.clone();
        async move {
            let agent = ctx
                .get::<Arc<dyn Agent>>()
                .expect("the loop puts its agent in the extensions");
            *sa.lock().unwrap() = Some(agent.id().to_string());
            Ok::<_, ToolError>(vec![ContentBlock::text(format!(
                "contents of {}",
                args.path
            ))])
        }
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "read a.txt");
    tap.idle().await;

    assert_eq!(seen_agent.lock().unwrap().as_deref(), Some("a1"));
    let k = kinds(&agent.session());
    let pos = |kind: &str| k.iter().position(|x| x == kind).unwrap();
    assert!(pos("assistant/message") < pos("usage"));
    assert!(pos("usage") < pos("tool/call"));
    assert!(pos("tool/call") < pos("tool/result"));
    assert!(pos("tool/result") < pos("step/end"));
    assert_eq!(k.iter().filter(|x| *x == "step/start").count(), 2);
    assert_eq!(k.last().unwrap(), "turn/end");
    let events = agent.session().events();
    let call = events
        .iter()
        .find_map(|e| match &e.data {
            EventPayload::ToolCall(ToolCallEvent { turn, step, call }) => Some((
                *turn,
                *step,
                call.call_id.to_string(),
                call.name.clone(),
                call.arguments.clone(),
            )),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        call,
        (
            1,
            1,
            "c1".into(),
            "read".into(),
            r#"{"path":"a.txt"}"#.into()
        )
    );
    assert_eq!(
        tool_results(&agent.session()),
        vec![("c1".into(), "contents of a.txt".into(), false, None)]
    );

    let reqs = h.model.requests();
    assert_eq!(reqs.len(), 2);
    let tools = reqs[0]
        .tools
        .as_ref()
        .expect("the registry's schemas are sent");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "read");
    assert_eq!(
        last_message_of(&reqs[1]),
        Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result(
                "c1",
                vec![ContentBlock::text("contents of a.txt")],
                false
            )],
        }
    );
    assert_eq!(
        turn_ends(&agent.session()),
        vec![(1, TurnEndReason::Completed)]
    );
    assert_eq!(
        tap.boundaries(),
        vec![
            Obs::TurnStart(1),
            Obs::StepStart(1, 1),
            Obs::StepEnd(1, 1),
            Obs::StepStart(1, 2),
            Obs::StepEnd(1, 2),
            Obs::TurnEnd(1, TurnEndReason::Completed)
        ]
    );
    handle.dispose().await;
    h.assert_no_violations();
}

/// The issue's "Done when": bad arguments → the violation text reaches the
/// model → corrected call → the tool runs once → final answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_reported_to_the_model_which_corrects_itself() {
    let mut h = Harness::scripted([
        call("c1", "write", r#"{"path": 42}"#),
        call("c2", "write", r#"{"path": "notes.md"}"#),
        say(&["Wrote ", "notes.md."]),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let tool = define_tool("write", "Writes a file", move |args: PathArgs, _ctx| {
        let r = r.clone();
        async move {
            r.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(vec![ContentBlock::text(format!("wrote {}", args.path))])
        }
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "write the notes");
    tap.idle().await;

    let violation = r#"Error: invalid arguments: "path" must be a string"#;
    // The error result reaches the next request, answering c1.
    let reqs = h.model.requests();
    assert_eq!(reqs.len(), 3);
    let second = reqs[1].messages.to_vec();
    assert_eq!(
        second.len(),
        3,
        "user, assistant(call), tool result: {second:#?}"
    );
    assert_eq!(second[0], Message::user_text("write the notes"));
    assert!(
        matches!(&second[1].content[0], ContentBlock::ToolCall(c) if c.call_id == "c1" && c.arguments == r#"{"path": 42}"#)
    );
    match &second[2].content[..] {
        [ContentBlock::ToolResult(ToolResultBlock {
            tool_call_id,
            content,
            is_error,
            ..
        })] => {
            assert_eq!(tool_call_id, "c1");
            assert_eq!(*is_error, Some(true));
            assert_eq!(content[0].as_text(), Some(violation));
        }
        other => panic!("expected one tool result, got {other:?}"),
    }
    // The corrected call ran the body exactly once.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let third = reqs[2].messages.to_vec();
    assert_eq!(
        third.last().unwrap().content,
        vec![ContentBlock::tool_result(
            "c2",
            vec![ContentBlock::text("wrote notes.md")],
            false
        )]
    );

    // All of it is in the session log.
    assert_eq!(
        tool_results(&agent.session()),
        vec![
            (
                "c1".into(),
                violation.into(),
                true,
                Some("INVALID_ARGS".into())
            ),
            ("c2".into(), "wrote notes.md".into(), false, None),
        ]
    );
    let log = agent.session();
    let history = log.derive_messages().to_vec();
    assert_eq!(history.len(), 6);
    assert_eq!(history[5].role, Role::Assistant);
    assert_eq!(text_of(&history[5].content), "Wrote notes.md.");
    assert_eq!(turn_ends(&log), vec![(1, TurnEndReason::Completed)]);
    assert!(
        error_events(&log).is_empty(),
        "a tool error is not a turn error"
    );
    assert_eq!(history, derive_messages(&events(&log)));
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_json_arguments_give_an_error_result_and_the_loop_continues() {
    let mut h = Harness::scripted([call("c1", "write", r#"{"path": "#), say(&["sorry"])]);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let tool = define_tool("write", "Writes a file", move |_args: PathArgs, _ctx| {
        let r = r.clone();
        async move {
            r.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(vec![])
        }
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "go");
    tap.idle().await;

    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let results = tool_results(&agent.session());
    assert_eq!(results.len(), 1);
    assert!(
        results[0]
            .1
            .starts_with("Error: arguments are not valid JSON"),
        "{}",
        results[0].1
    );
    assert!(results[0].2);
    assert_eq!(results[0].3.as_deref(), Some("INVALID_JSON"));
    assert_eq!(h.model.requests().len(), 2, "the loop ran a second step");
    assert_eq!(
        turn_ends(&agent.session()),
        vec![(1, TurnEndReason::Completed)]
    );
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_queued_during_a_turn_batch_into_the_next_turn() {
    let h = Harness::scripted([say(&["one"]), say(&["two"])]);
    let mut tap = Tap::install(&h.registry);
    let fired = Arc::new(AtomicBool::new(false));
    let f = fired.clone();
    let reg = h.registry.hooks().event.on(move |t| {
        if !matches!(t.event.data, EventPayload::TurnStart(_)) {
            return;
        }
        if !f.swap(true, Ordering::SeqCst) {
            assert_eq!(t.agent.status(), AgentStatus::Running);
            t.agent.send(text("second"), MessageSource::User).unwrap();
            t.agent
                .send(
                    text("third"),
                    MessageSource::Agent {
                        agent_id: "peer".into(),
                    },
                )
                .unwrap();
        }
    });
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "first");
    tap.idle().await;

    let log = agent.session();
    let k = kinds(&log);
    assert_eq!(k.iter().filter(|x| *x == "turn/start").count(), 2);
    let second_start = k.iter().rposition(|x| x == "turn/start").unwrap();
    assert_eq!(
        &k[second_start - 3..second_start],
        ["turn/end", "user/message", "user/message"]
    );
    let events = log.events();
    let users: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::UserMessage(MessageEvent { content, .. }) => Some(text_of(content)),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["first", "second", "third"]);
    assert!(matches!(
        &events[second_start].data,
        EventPayload::TurnStart(TurnStartEvent {
            turn: 2,
            trigger: TurnTrigger::Message {
                source: MessageSource::User
            }
        })
    ));
    // Both go to one request.
    let reqs = h.model.requests();
    assert_eq!(reqs.len(), 2);
    let tail: Vec<Message> = reqs[1].messages.to_vec().into_iter().skip(2).collect();
    assert_eq!(
        tail,
        vec![Message::user_text("second"), Message::user_text("third")]
    );
    // The next turn started at once: no idle in between.
    assert_eq!(
        tap.statuses(),
        vec![AgentStatus::Running, AgentStatus::Idle]
    );
    // agent/queued fires after the push, so "first" (sent from this thread)
    // may be announced after the driver already queued the other two; the
    // two sent from the listener keep their order.
    let queued: Vec<Obs> = tap
        .all()
        .into_iter()
        .filter(|o| matches!(o, Obs::Queued { .. }))
        .collect();
    let q = |t: &str| Obs::Queued {
        text: t.into(),
        steering: false,
    };
    assert_eq!(queued.len(), 3);
    assert!(queued.contains(&q("first")));
    let pos = |t: &str| queued.iter().position(|o| *o == q(t)).unwrap();
    assert!(pos("second") < pos("third"));
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inject_appends_context_without_starting_a_turn() {
    let h = Harness::scripted([call("c1", "nothing", ""), say(&["ok"])]);
    let tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();

    agent
        .inject(text("file changed: a.ts"), MessageSource::plugin("watcher"))
        .unwrap();
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert_eq!(kinds(&agent.session()), ["context/message"]);
    assert!(h.model.requests().is_empty());
    assert_eq!(
        tap.all(),
        vec![Obs::Created("a1".into())],
        "inject emits no agent/queued and no status change"
    );

    // Inject again between step 1 and step 2 (from a step-end listener):
    // it lands after the tool result, before the next request.
    let once = Arc::new(AtomicBool::new(false));
    let o = once.clone();
    let reg = h.registry.hooks().event.on(move |s| {
        if !matches!(s.event.data, EventPayload::StepEnd(StepEvent { .. })) {
            return;
        }
        if !o.swap(true, Ordering::SeqCst) {
            s.agent
                .inject(text("mid-turn"), MessageSource::User)
                .unwrap();
        }
    });
    let mut tap2 = Tap::install(&h.registry);
    send(&agent, "go");
    tap2.idle().await;

    let reqs = h.model.requests();
    assert_eq!(reqs.len(), 2);
    let first = reqs[0].messages.to_vec();
    assert_eq!(
        first[0].content,
        vec![
            ContentBlock::text("<context source=\"plugin\">"),
            ContentBlock::text("file changed: a.ts"),
            ContentBlock::text("</context>"),
        ]
    );
    assert_eq!(first[1], Message::user_text("go"));
    let second = reqs[1].messages.to_vec();
    assert_eq!(second.len(), 5);
    assert!(matches!(&second[3].content[0], ContentBlock::ToolResult(r) if r.tool_call_id == "c1"));
    assert_eq!(
        text_of(&second[4].content),
        "<context source=\"user\">mid-turn</context>"
    );
    // Exactly one turn: neither inject started one.
    assert_eq!(turn_ends(&agent.session()).len(), 1);
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_prompt_is_the_assembly_then_the_agent_suffix() {
    let mut h = Harness::scripted([say(&["ok"])]);
    let prompt = Arc::new(PromptService::new());
    let reg = h.kernel.provide(prompt.clone()).unwrap();
    h.keep(reg);
    h.keep(prompt.add_section(Section::fixed("intro", 0, "You are a test agent.")));
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent_with(
        "a1",
        AgentOptions {
            model: Some(MODEL.into()),
            system_prompt: Some("Agent-specific suffix.".into()),
            ..Default::default()
        },
    );
    send(&handle.agent(), "hi");
    tap.idle().await;
    assert_eq!(
        h.model.requests()[0].system.as_deref(),
        Some("You are a test agent.\n\nAgent-specific suffix.")
    );
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_numbers_continue_across_a_seeded_session() {
    let h = Harness::scripted([say(&["a"]), say(&["b"]), say(&["c"])]);
    let mut tap = Tap::install(&h.registry);
    let first = h.agent("a1");
    let agent = first.agent();
    send(&agent, "one");
    tap.idle().await;
    send(&agent, "two");
    tap.idle().await;
    let seed = events(&agent.session());
    first.dispose().await;

    let fork = h.agent_seeded("a2", seed.clone());
    let forked = fork.agent();
    assert_eq!(forked.session().len(), seed.len());
    send(&forked, "three");
    let (turn, reason) = tap.turn_end().await;
    assert_eq!((turn, reason), (3, TurnEndReason::Completed));
    tap.idle().await;
    let starts: Vec<u64> = forked
        .session()
        .events()
        .iter()
        .filter_map(|e| match e.data {
            EventPayload::TurnStart(TurnStartEvent { turn, .. }) => Some(turn),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [1, 2, 3]);
    // The forked history continues the original one.
    let reqs = h.model.requests();
    assert_eq!(reqs[2].messages.len(), 5);
    fork.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_the_turn_fails_and_agent_request_can_supply_one() {
    let h = Harness::scripted([say(&["ok"])]);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent_with("a1", AgentOptions::default());
    let agent = handle.agent();
    send(&agent, "hi");
    let (_, reason) = tap.turn_end().await;
    let message = "agent \"a1\" has no model: set AgentOptions.model or supply one via the agent/request waterfall";
    assert_eq!(
        reason,
        TurnEndReason::Error {
            message: message.into(),
            code: Some("NO_MODEL".into())
        }
    );
    tap.idle().await;
    assert_eq!(
        error_events(&agent.session()),
        vec![(1, 1, message.into(), Some("NO_MODEL".into()))]
    );
    assert!(h.model.requests().is_empty());

    let reg = h.registry.hooks().request.on(|mut ctx, next| async move {
        ctx.request.model = MODEL.into();
        next.run(ctx).await
    });
    send(&agent, "again");
    let (turn, reason) = tap.turn_end().await;
    assert_eq!((turn, reason), (2, TurnEndReason::Completed));
    tap.idle().await;
    assert_eq!(h.model.requests()[0].model, MODEL);
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_agent_with_the_same_id_is_refused() {
    let h = Harness::scripted([]);
    let tap = Tap::install(&h.registry);
    let handle = h.agent("x");
    let err = AgentLoop::create(&h.kernel, "x", AgentOptions::default())
        .err()
        .expect("duplicate id refused");
    assert_eq!(err, AgentError::Duplicate("x".into()));
    assert_eq!(err.to_string(), "agent \"x\" is already registered");
    assert_eq!(h.registry.list().len(), 1);
    assert!(h.registry.get("x").is_some());
    handle.dispose().await;
    assert!(h.registry.get("x").is_none());
    assert!(
        h.store.get("x-session").is_none(),
        "dispose removes the session"
    );
    assert_eq!(
        tap.all(),
        vec![
            Obs::Created("x".into()),
            Obs::Status(AgentStatus::Disposed),
            Obs::Disposed("x".into())
        ]
    );
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_result_runs_before_logging_and_its_rewrite_is_what_is_logged_and_dispatched() {
    let reply = ReplyBuilder::new()
        .text(&["raw"])
        .tool_call("c1", "read", &[r#"{"path":"a"}"#])
        .reply();
    let mut h = Harness::scripted([reply]);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let tool = define_tool("read", "Reads", move |_: PathArgs, _ctx| {
        r.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, ToolError>(vec![]) }
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let seen_last: Arc<Mutex<Option<String>>> = Default::default();
    let s = seen_last.clone();
    let reg = h.registry.hooks().step_result.on(move |mut ctx, next| {
        *s.lock().unwrap() = Some(last_kind(&ctx.agent));
        // Drop the tool call and rewrite the text.
        ctx.message.content = vec![ContentBlock::text("rewritten")];
        next.run(ctx)
    });
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    tap.idle().await;
    assert_eq!(
        seen_last.lock().unwrap().as_deref(),
        Some("assistant/chunk")
    );
    let events = agent.session().events();
    let logged: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::AssistantMessage(AssistantMessageEvent { content, .. }) => {
                Some(content.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(logged, vec![vec![ContentBlock::text("rewritten")]]);
    assert!(!kinds(&agent.session()).contains(&"tool/call".to_string()));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the dropped call is not dispatched"
    );
    assert_eq!(h.model.requests().len(), 1, "no tool call, no second step");
    assert_eq!(
        turn_ends(&agent.session()),
        vec![(1, TurnEndReason::Completed)]
    );
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_step_result_and_continuation_listeners_end_the_turn_with_an_error() {
    let h = Harness::scripted([say(&["one"]), say(&["two"]), say(&["three"])]);
    let n = Arc::new(AtomicUsize::new(0));
    let c = n.clone();
    let step_result = h.registry.hooks().step_result.on(move |ctx, next| {
        let fail = c.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if fail {
                Err(dsh_kernel::DshError::new("REWRITE", "step-result refused"))
            } else {
                next.run(ctx).await
            }
        }
    });
    let failed = Arc::new(AtomicBool::new(false));
    let f = failed.clone();
    let continuation = h.registry.hooks().turn_continuation.on(move |ctx, next| {
        let fail = !f.swap(true, Ordering::SeqCst);
        async move {
            if fail {
                Err(dsh_kernel::DshError::new("DECIDE", "cannot decide"))
            } else {
                next.run(ctx).await
            }
        }
    });
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "one");
    assert_eq!(
        tap.turn_end().await,
        (
            1,
            TurnEndReason::Error {
                message: "step-result refused".into(),
                code: Some("REWRITE".into())
            }
        )
    );
    tap.idle().await;
    send(&agent, "two");
    assert_eq!(
        tap.turn_end().await,
        (
            2,
            TurnEndReason::Error {
                message: "cannot decide".into(),
                code: Some("DECIDE".into())
            }
        )
    );
    tap.idle().await;
    send(&agent, "three");
    assert_eq!(tap.turn_end().await, (3, TurnEndReason::Completed));
    tap.idle().await;
    let log = agent.session();
    assert_eq!(
        error_events(&log),
        vec![
            (1, 1, "step-result refused".into(), Some("REWRITE".into())),
            (2, 1, "cannot decide".into(), Some("DECIDE".into())),
        ]
    );
    // Turn 1 never logged its message; turn 2 did (the decision came after).
    let messages = kinds(&log)
        .iter()
        .filter(|k| *k == "assistant/message")
        .count();
    assert_eq!(messages, 2);
    step_result.undo();
    continuation.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_continuation_can_end_a_turn_after_tool_calls() {
    let mut h = Harness::scripted([call("c1", "read", r#"{"path":"a"}"#)]);
    let tool = define_tool("read", "Reads", |args: PathArgs, _ctx| async move {
        Ok::<_, ToolError>(vec![ContentBlock::text(args.path)])
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let defaults: Arc<Mutex<Vec<bool>>> = Default::default();
    let d = defaults.clone();
    let reg = h.registry.hooks().turn_continuation.on(move |ctx, _next| {
        d.lock().unwrap().push(ctx.default);
        async { Ok(false) }
    });
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    assert_eq!(tap.turn_end().await, (1, TurnEndReason::Completed));
    tap.idle().await;
    assert_eq!(
        *defaults.lock().unwrap(),
        [true],
        "the loop's own decision was to continue"
    );
    assert_eq!(h.model.requests().len(), 1);
    assert_eq!(tool_results(&agent.session()).len(), 1);
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_without_usage_logs_no_usage_event() {
    let h = Harness::scripted([ReplyBuilder::new().text(&["plain"]).reply()]);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    tap.idle().await;
    let k = kinds(&agent.session());
    assert!(!k.contains(&"usage".to_string()));
    assert_eq!(
        &k[k.len() - 3..],
        ["assistant/message", "step/end", "turn/end"]
    );
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_registration_disposes_the_agent() {
    let h = Harness::scripted([]);
    let tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    let scope = dsh_kernel::Scope::new();
    scope.add(handle.into_registration());
    assert_eq!(agent.status(), AgentStatus::Idle);
    scope.close();
    assert_eq!(agent.status(), AgentStatus::Disposed);
    assert!(h.registry.get("a1").is_none());
    assert!(agent.send(text("x"), MessageSource::User).is_err());
    assert_eq!(
        tap.all(),
        vec![
            Obs::Created("a1".into()),
            Obs::Status(AgentStatus::Disposed),
            Obs::Disposed("a1".into())
        ]
    );
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_id_can_be_reused_after_dispose() {
    let h = Harness::scripted([say(&["one"]), say(&["two"])]);
    let mut tap = Tap::install(&h.registry);
    for round in 1..=2 {
        let handle = h.agent("a1");
        let agent = handle.agent();
        assert!(agent.session().is_empty(), "a fresh session");
        send(&agent, "hi");
        assert_eq!(
            tap.turn_end().await,
            (1, TurnEndReason::Completed),
            "round {round}"
        );
        tap.idle().await;
        handle.dispose().await;
    }
    h.assert_no_violations();
}
