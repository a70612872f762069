//! Turns that do not complete: model failures, abort, dispose, failing
//! listeners. The loop must survive every one and keep the history valid.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use dsh_agent::{Agent, AgentError, AgentStatus};
use dsh_kernel::DshError;
use dsh_llm::scripted::{ReplyBuilder, ScriptedReply};
use dsh_llm::{ContentBlock, FinishReason, LlmError, LlmErrorKind, MessageSource};
use dsh_session::{EventPayload, TurnEndReason};
use dsh_tools::{define_tool, NoArgs, ToolError};
use tokio::sync::{mpsc, oneshot};

fn has(kinds: &[String], kind: &str) -> bool {
    kinds.iter().any(|k| k == kind)
}

/// Runs one turn against `reply` and returns the harness, the agent handle
/// and the turn's end reason (after the agent is idle again).
async fn one_failing_turn(
    reply: ScriptedReply,
) -> (Harness, dsh_agent_loop::AgentHandle, Tap, TurnEndReason) {
    let h = Harness::scripted([reply]);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    send(&handle.agent(), "hi");
    let (_, reason) = tap.turn_end().await;
    tap.idle().await;
    (h, handle, tap, reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_error_ends_the_turn_with_its_code_and_no_assistant_message() {
    let reply = ReplyBuilder::new()
        .text(&["partial"])
        .finish(FinishReason::Error {
            message: "content filtered".into(),
            code: Some("CONTENT_FILTER".into()),
        })
        .reply();
    let (h, handle, tap, reason) = one_failing_turn(reply).await;
    assert_eq!(
        reason,
        TurnEndReason::Error {
            message: "content filtered".into(),
            code: Some("CONTENT_FILTER".into())
        }
    );
    let log = handle.agent().session();
    let k = kinds(&log);
    assert!(!has(&k, "assistant/message"));
    assert!(has(&k, "assistant/chunk"), "the raw chunks stay in the log");
    assert_eq!(
        error_events(&log),
        vec![(
            1,
            1,
            "content filtered".into(),
            Some("CONTENT_FILTER".into())
        )]
    );
    // A failed step is closed first, then the error, then the turn.
    assert_eq!(&k[k.len() - 3..], ["step/end", "error", "turn/end"]);
    assert!(tap.all().contains(&Obs::Error {
        turn: 1,
        step: 1,
        code: "CONTENT_FILTER".into(),
        message: "content filtered".into()
    }));
    assert!(log
        .derive_messages()
        .to_vec()
        .iter()
        .all(|m| text_of(&m.content) != "partial"));
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_aborted_is_an_error_model_stream_aborted() {
    let reply = ReplyBuilder::new()
        .text(&["par"])
        .finish(FinishReason::Aborted)
        .reply();
    let (h, handle, _tap, reason) = one_failing_turn(reply).await;
    assert_eq!(
        reason,
        TurnEndReason::Error {
            message: "model stream aborted".into(),
            code: Some("ABORTED".into())
        }
    );
    let log = handle.agent().session();
    assert!(!has(&kinds(&log), "assistant/message"));
    assert_eq!(
        error_events(&log),
        vec![(1, 1, "model stream aborted".into(), Some("ABORTED".into()))]
    );
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapter_error_ends_the_turn_with_the_adapters_code_and_the_loop_serves_on() {
    let chunks = ReplyBuilder::new().text(&["x"]).build();
    let reply = ScriptedReply::ChunksThenError(
        chunks[..2].to_vec(),
        LlmError::new(LlmErrorKind::RateLimit, "slow down"),
    );
    let h = Harness::scripted([reply, say(&["fine"])]);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    let (_, reason) = tap.turn_end().await;
    assert_eq!(
        reason,
        TurnEndReason::Error {
            message: "slow down".into(),
            code: Some("RATE_LIMIT".into())
        }
    );
    tap.idle().await;
    assert!(!has(&kinds(&agent.session()), "assistant/message"));
    assert_eq!(
        error_events(&agent.session()),
        vec![(1, 1, "slow down".into(), Some("RATE_LIMIT".into()))]
    );
    send(&agent, "again");
    assert_eq!(tap.turn_end().await, (2, TurnEndReason::Completed));
    tap.idle().await;
    handle.dispose().await;
    h.assert_no_violations();
}

fn hang_after_text() -> ScriptedReply {
    let chunks = ReplyBuilder::new().text(&["thinking", " hard"]).build();
    // Block start and both deltas, then silence until cancelled.
    ScriptedReply::ChunksThenHang(chunks[..3].to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_from_a_chunk_listener_ends_the_turn_aborted_with_the_reason() {
    let h = Harness::scripted([hang_after_text()]);
    let mut tap = Tap::install(&h.registry);
    let reg = h.registry.hooks().event.on(|c| {
        if matches!(c.event.data, EventPayload::AssistantChunk(_)) {
            c.agent.abort(Some("user interrupt".into()))
        }
    });
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    let (_, reason) = tap.turn_end().await;
    assert_eq!(
        reason,
        TurnEndReason::Aborted {
            reason: Some("user interrupt".into())
        }
    );
    tap.idle().await;
    let log = agent.session();
    let k = kinds(&log);
    assert!(!has(&k, "assistant/message"));
    assert!(!has(&k, "error"));
    assert_eq!(
        k.iter().filter(|x| *x == "assistant/chunk").count(),
        1,
        "aborted at the first chunk"
    );
    assert_eq!(&k[k.len() - 2..], ["step/end", "turn/end"]);
    assert!(!tap.all().iter().any(|o| matches!(o, Obs::Error { .. })));
    assert_eq!(
        log.derive_messages().len(),
        1,
        "the partial answer is not history"
    );
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_after_the_first_chunk_interrupts_a_silent_stream() {
    let h = Harness::scripted([hang_after_text(), say(&["next"])]);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    // No step in flight: a no-op.
    agent.abort(Some("too early".into()));
    send(&agent, "hi");
    tap.wait_for("first chunk", |o| matches!(o, Obs::Chunk(1, 1)))
        .await;
    agent.abort(None);
    assert_eq!(
        tap.turn_end().await,
        (
            1,
            TurnEndReason::Aborted {
                reason: Some("aborted".into())
            }
        )
    );
    tap.idle().await;
    assert!(!has(&kinds(&agent.session()), "error"));
    // The loop serves the next message.
    send(&agent, "again");
    assert_eq!(tap.turn_end().await, (2, TurnEndReason::Completed));
    tap.idle().await;
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_before_the_first_step_aborts_the_turn_and_only_that_one() {
    let h = Harness::scripted([say(&["never shown"]), say(&["next"])]);
    let mut tap = Tap::install(&h.registry);
    // At turn/start no step is in flight yet: the abort waits for it.
    let first = Arc::new(AtomicBool::new(true));
    let reg = h.registry.hooks().event.on(move |c| {
        if matches!(c.event.data, EventPayload::TurnStart(_)) && first.swap(false, Ordering::SeqCst)
        {
            c.agent.abort(Some("cancelled before it ran".into()));
        }
    });
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    assert_eq!(
        tap.turn_end().await,
        (
            1,
            TurnEndReason::Aborted {
                reason: Some("cancelled before it ran".into())
            }
        )
    );
    tap.idle().await;
    assert!(!has(&kinds(&agent.session()), "assistant/message"));
    // Nothing is left over for the next turn.
    send(&agent, "again");
    assert_eq!(tap.turn_end().await, (2, TurnEndReason::Completed));
    tap.idle().await;
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_between_two_steps_is_a_no_op() {
    let h = Harness::scripted([call("c1", "nothing", "{}"), say(&["done"])]);
    let mut tap = Tap::install(&h.registry);
    // At the first step's end no step is in flight and the turn has
    // stepped: as in the reference, the abort is ignored.
    let reg = h.registry.hooks().event.on(|c| {
        if let EventPayload::StepEnd(s) = &c.event.data {
            if s.step == 1 {
                c.agent.abort(Some("between steps".into()));
            }
        }
    });
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    assert_eq!(tap.turn_end().await, (1, TurnEndReason::Completed));
    tap.idle().await;
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_during_a_tool_answers_every_call_and_keeps_the_history_valid() {
    let two_calls = ReplyBuilder::new()
        .tool_call("c1", "block", &["{}"])
        .tool_call("c2", "block", &["{}"])
        .reply();
    let mut h = Harness::scripted([two_calls, say(&["after"])]);
    let (started_tx, mut started_rx) = mpsc::unbounded_channel::<String>();
    let (release_tx, release_rx) = oneshot::channel::<()>();
    let release_rx = Arc::new(Mutex::new(Some(release_rx)));
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let tool = define_tool("block", "Blocks until released", move |_: NoArgs, ctx| {
        let started_tx = started_tx.clone();
        let release_rx = release_rx.lock().unwrap().take();
        r.fetch_add(1, Ordering::SeqCst);
        async move {
            let _ = started_tx.send(ctx.call_id.to_string());
            if let Some(rx) = release_rx {
                let _ = rx.await;
            }
            Ok::<_, ToolError>(vec![ContentBlock::text("released")])
        }
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "go");
    let started = guard("tool start", started_rx.recv()).await.unwrap();
    assert_eq!(started, "c1");
    agent.abort(Some("stop".into()));
    assert_eq!(
        tap.turn_end().await,
        (
            1,
            TurnEndReason::Aborted {
                reason: Some("stop".into())
            }
        )
    );
    // Released only now: the registry dropped the blocked body at the abort.
    assert!(
        release_tx.send(()).is_err(),
        "the tool's future was dropped"
    );
    tap.idle().await;

    assert_eq!(runs.load(Ordering::SeqCst), 1, "the second call never ran");
    let log = agent.session();
    let results = tool_results(&log);
    assert_eq!(results.len(), 2);
    assert_eq!(
        (results[0].0.as_str(), results[0].2, results[0].3.as_deref()),
        ("c1", true, Some("ABORTED"))
    );
    assert_eq!(
        (results[1].0.as_str(), results[1].2, results[1].3.as_deref()),
        ("c2", true, Some("ABORTED"))
    );
    assert!(results[1].1.contains("stop"), "{}", results[1].1);
    let k = kinds(&log);
    assert_eq!(
        k.iter().filter(|x| *x == "tool/call").count(),
        1,
        "c2 was never dispatched"
    );
    assert!(!has(&k, "error"));
    assert!(!has(
        &k[k.iter().position(|x| x == "tool/result").unwrap()..],
        "step/start"
    ));

    // The next request is valid: every tool call has its result.
    send(&agent, "continue");
    assert_eq!(tap.turn_end().await, (2, TurnEndReason::Completed));
    tap.idle().await;
    let reqs = h.model.requests();
    assert_eq!(reqs.len(), 2, "no model call after the abort");
    assert_calls_answered(&reqs[1].messages.to_vec());
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_returns_after_the_abort_keeps_its_result_and_the_rest_are_synthesized() {
    let three_calls = ReplyBuilder::new()
        .tool_call("c1", "stopper", &["{}"])
        .tool_call("c2", "stopper", &["{}"])
        .tool_call("c3", "stopper", &["{}"])
        .reply();
    let mut h = Harness::scripted([three_calls, say(&["after"])]);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    // Aborts its own step, then returns normally in the same poll.
    let tool = define_tool("stopper", "Aborts the step", move |_: NoArgs, ctx| {
        r.fetch_add(1, Ordering::SeqCst);
        async move {
            let agent = ctx.get::<Arc<dyn Agent>>().unwrap();
            agent.abort(Some("user interrupt".into()));
            Ok::<_, ToolError>(vec![ContentBlock::text("finished anyway")])
        }
    });
    let reg = h.tools.register(tool.into_arc()).unwrap();
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "go");
    assert_eq!(
        tap.turn_end().await,
        (
            1,
            TurnEndReason::Aborted {
                reason: Some("user interrupt".into())
            }
        )
    );
    tap.idle().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let results = tool_results(&agent.session());
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0],
        ("c1".into(), "finished anyway".into(), false, None)
    );
    for (r, id) in results[1..].iter().zip(["c2", "c3"]) {
        assert_eq!(
            (r.0.as_str(), r.2, r.3.as_deref()),
            (id, true, Some("ABORTED"))
        );
        assert!(r.1.starts_with("Error: "), "{}", r.1);
    }
    assert_calls_answered(&agent.session().derive_messages().to_vec());
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_mid_turn_ends_it_disposed_and_waits_for_the_loop() {
    let mut h = Harness::scripted([hang_after_text()]);
    let flushes = Arc::new(AtomicUsize::new(0));
    let f = flushes.clone();
    let reg = h.store.on_flush().on(move |_| {
        f.fetch_add(1, Ordering::SeqCst);
        async { Ok(()) }
    });
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    tap.wait_for("first chunk", |o| matches!(o, Obs::Chunk(1, 1)))
        .await;
    guard("dispose", handle.dispose()).await;

    // Everything happened before dispose returned.
    let log = agent.session();
    let len = log.len();
    assert_eq!(turn_ends(&log), vec![(1, TurnEndReason::Disposed)]);
    assert_eq!(kinds(&log).last().unwrap(), "turn/end");
    assert!(!has(&kinds(&log), "error"));
    assert!(
        flushes.load(Ordering::SeqCst) >= 1,
        "the disposed turn was flushed"
    );
    assert_eq!(
        tap.statuses(),
        vec![AgentStatus::Running, AgentStatus::Disposed]
    );
    assert_eq!(agent.status(), AgentStatus::Disposed);
    let all = tap.all();
    assert_eq!(all.last(), Some(&Obs::Disposed("a1".into())));
    assert!(h.registry.get("a1").is_none());

    let err = agent.send(text("late"), MessageSource::User).unwrap_err();
    assert_eq!(err, AgentError::Disposed("a1".into()));
    assert_eq!(err.to_string(), "agent \"a1\" is disposed");
    assert!(agent.steer(text("late"), MessageSource::User).is_err());
    assert!(agent.inject(text("late"), MessageSource::User).is_err());
    agent.abort(None);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(log.len(), len, "nothing is appended after dispose returned");
    assert_eq!(
        tap.all().len(),
        all.len(),
        "nothing is emitted after dispose returned"
    );
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_while_idle_exits_the_loop() {
    let h = Harness::scripted([]);
    let tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    guard("dispose", handle.dispose()).await;
    assert!(agent.session().is_empty());
    assert_eq!(tap.statuses(), vec![AgentStatus::Disposed]);
    assert!(agent.send(text("x"), MessageSource::User).is_err());
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_request_listener_ends_the_turn_not_the_loop() {
    let h = Harness::scripted([say(&["ok"])]);
    let mut tap = Tap::install(&h.registry);
    let failed = Arc::new(AtomicBool::new(false));
    let f = failed.clone();
    let reg = h.registry.hooks().request.on(move |ctx, next| {
        let fail = !f.swap(true, Ordering::SeqCst);
        async move {
            if fail {
                Err(DshError::new("POLICY", "request refused by policy"))
            } else {
                next.run(ctx).await
            }
        }
    });
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "one");
    assert_eq!(
        tap.turn_end().await,
        (
            1,
            TurnEndReason::Error {
                message: "request refused by policy".into(),
                code: Some("POLICY".into())
            }
        )
    );
    tap.idle().await;
    assert_eq!(
        error_events(&agent.session()),
        vec![(
            1,
            1,
            "request refused by policy".into(),
            Some("POLICY".into())
        )]
    );
    assert!(h.model.requests().is_empty());
    send(&agent, "two");
    assert_eq!(tap.turn_end().await, (2, TurnEndReason::Completed));
    tap.idle().await;
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_turn_start_listener_is_caught_by_the_backstop() {
    let h = Harness::scripted([say(&["ok"])]);
    let mut tap = Tap::install(&h.registry);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let reg = h.registry.hooks().event.try_on(move |e| {
        if !matches!(e.event.data, EventPayload::TurnStart(_)) {
            return Ok(());
        }
        match c.fetch_add(1, Ordering::SeqCst) {
            0 => Err("listener exploded".into()),
            1 => panic!("listener panicked hard"),
            _ => Ok(()),
        }
    });
    let handle = h.agent("a1");
    let agent = handle.agent();

    send(&agent, "one");
    let err = tap
        .wait_for("agent/error", |o| matches!(o, Obs::Error { .. }))
        .await;
    assert_eq!(
        err,
        Obs::Error {
            turn: 1,
            step: 0,
            code: "LISTENER_FAILED".into(),
            message: "listener exploded".into()
        }
    );
    tap.idle().await;
    let log = agent.session();
    assert_eq!(kinds(&log), ["user/message", "turn/start", "error"]);
    assert_eq!(
        error_events(&log),
        vec![(
            1,
            0,
            "listener exploded".into(),
            Some("LISTENER_FAILED".into())
        )]
    );
    assert!(
        turn_ends(&log).is_empty(),
        "no turn/end when the backstop caught the turn"
    );

    // A panicking listener is contained the same way.
    send(&agent, "two");
    let err = tap
        .wait_for("agent/error", |o| matches!(o, Obs::Error { .. }))
        .await;
    assert_eq!(
        err,
        Obs::Error {
            turn: 2,
            step: 0,
            code: "LISTENER_PANICKED".into(),
            message: "listener panicked hard".into()
        }
    );
    tap.idle().await;

    // And the loop still serves.
    send(&agent, "three");
    assert_eq!(tap.turn_end().await, (3, TurnEndReason::Completed));
    tap.idle().await;
    assert!(h.model.requests().len() == 1);
    reg.undo();
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_failure_fails_the_step_before_the_model_is_asked_and_the_agent_goes_idle() {
    let mut h = Harness::scripted([say(&["ok"])]);
    let reg = h
        .store
        .on_flush()
        .on(|_| async { Err::<(), _>(DshError::new("DISK_FULL", "disk full").into()) });
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "hi");
    tap.idle().await;
    let log = agent.session();
    let k = kinds(&log);
    assert_eq!(&k[k.len() - 2..], ["turn/end", "error"]);
    // The request is never sent while the log cannot reach disk.
    assert!(h.model.requests().is_empty());
    assert_eq!(
        turn_ends(&log),
        vec![(
            1,
            TurnEndReason::Error {
                message: "disk full".into(),
                code: Some("DISK_FULL".into())
            }
        )]
    );
    // Once for the step, once for the flush after `turn/end`.
    assert_eq!(
        error_events(&log),
        vec![
            (1, 1, "disk full".into(), Some("DISK_FULL".into())),
            (1, 1, "disk full".into(), Some("DISK_FULL".into()))
        ]
    );
    let all = tap.all();
    // The flush error after `turn/end` is the last error emitted.
    let err_at = all
        .iter()
        .rposition(|o| matches!(o, Obs::Error { .. }))
        .expect("agent/error emitted");
    let end_at = all
        .iter()
        .position(|o| matches!(o, Obs::TurnEnd(..)))
        .unwrap();
    let idle_at = all
        .iter()
        .position(|o| *o == Obs::Status(AgentStatus::Idle))
        .unwrap();
    assert!(end_at < err_at && err_at < idle_at, "{all:?}");
    assert_eq!(agent.status(), AgentStatus::Idle);
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_while_idle_is_a_send_and_abort_while_idle_is_a_no_op() {
    // abort with nothing in flight and steer while idle never disturb an idle agent.
    let h = Harness::scripted([say(&["ok"])]);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent: Arc<dyn Agent> = handle.agent();
    agent.abort(None);
    agent
        .steer(text("steered while idle"), MessageSource::User)
        .unwrap();
    tap.idle().await;
    let log = agent.session();
    assert_eq!(kinds(&log)[0], "user/message", "steer when idle is a send");
    assert!(!has(&kinds(&log), "steering/message"));
    assert!(tap.all().contains(&Obs::Queued {
        text: "steered while idle".into(),
        steering: false
    }));
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_turn_end_listener_keeps_turn_end_but_skips_the_flush() {
    let mut h = Harness::scripted([say(&["ok"]), say(&["ok"])]);
    let flushes = Arc::new(AtomicUsize::new(0));
    let f = flushes.clone();
    let reg = h.store.on_flush().on(move |_| {
        f.fetch_add(1, Ordering::SeqCst);
        async { Ok(()) }
    });
    h.keep(reg);
    let failed = Arc::new(AtomicBool::new(false));
    let fl = failed.clone();
    let reg = h.registry.hooks().event.try_on(move |e| {
        if !matches!(e.event.data, EventPayload::TurnEnd(_)) {
            return Ok(());
        }
        if fl.swap(true, Ordering::SeqCst) {
            Ok(())
        } else {
            Err("turn-end observer failed".into())
        }
    });
    h.keep(reg);
    let mut tap = Tap::install(&h.registry);
    let handle = h.agent("a1");
    let agent = handle.agent();
    send(&agent, "one");
    tap.idle().await;
    let log = agent.session();
    let k = kinds(&log);
    assert_eq!(&k[k.len() - 2..], ["turn/end", "error"]);
    assert_eq!(
        error_events(&log),
        vec![(
            1,
            0,
            "turn-end observer failed".into(),
            Some("LISTENER_FAILED".into())
        )]
    );
    assert_eq!(
        flushes.load(Ordering::SeqCst),
        1,
        "only the flush before the model request; the one after turn/end was skipped"
    );
    send(&agent, "two");
    assert_eq!(tap.turn_end().await, (2, TurnEndReason::Completed));
    tap.idle().await;
    assert_eq!(flushes.load(Ordering::SeqCst), 3);
    handle.dispose().await;
    h.assert_no_violations();
}
