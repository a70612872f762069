//! Background notices (`ContextSink::deliver_notice`): during a turn they
//! wait for the next step, whose request shows them as context; an idle
//! agent is woken by one (a turn starts with it) at most
//! `max_consecutive_wakes` times until its user speaks again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use dsh_agent::{AgentOptions, AgentStatus};
use dsh_llm::MessageSource;
use dsh_session::{EventPayload, TurnTrigger};
use dsh_tools::{define_tool, ContextSink, NoArgs};

fn plugin() -> MessageSource {
    MessageSource::plugin("test-jobs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_during_a_turn_reaches_the_next_step_and_wakes_nobody() {
    let mut h = Harness::scripted([call("c1", "notify", "{}"), say(&["ok"])]);
    let tool = define_tool("notify", "delivers a notice", |_: NoArgs, ctx| async move {
        ctx.sink()
            .unwrap()
            .deliver_notice(text("job done"), MessageSource::plugin("test-jobs"))
            .unwrap();
        Ok(text("delivered"))
    })
    .into_arc();
    h.keep(h.tools.register(tool).unwrap());
    let handle = h.agent("a");
    let agent = handle.agent();
    let mut tap = Tap::install(&h.registry);
    send(&agent, "go");
    tap.idle().await;
    // The second request holds the notice after the tool result.
    let requests = h.model.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].messages.to_vec();
    assert!(
        text_of(&last.last().unwrap().content).contains("job done"),
        "{last:?}"
    );
    // One turn only: the notice was seen, so nothing woke the agent.
    let turns = agent
        .session()
        .events()
        .iter()
        .filter(|e| matches!(e.data, EventPayload::TurnStart(_)))
        .count();
    assert_eq!(turns, 1);
    handle.dispose().await;
    h.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notices_wake_an_idle_agent_until_the_limit_then_wait() {
    let h = Harness::scripted([
        call("g", "grab", "{}"),
        say(&["grabbed"]),
        say(&["woken 1"]),
        say(&["woken 2"]),
        say(&["hello"]),
        say(&["woken 3"]),
    ]);
    let handle = h.agent_with(
        "a",
        AgentOptions {
            model: Some(MODEL.into()),
            max_consecutive_wakes: 2,
            ..Default::default()
        },
    );
    let agent = handle.agent();
    let sink: Arc<dyn ContextSink> = {
        // The loop's agent is its own sink, found in a call's extensions.
        let got = Arc::new(std::sync::Mutex::new(None));
        let g = got.clone();
        let tool = define_tool("grab", "keeps the sink", move |_: NoArgs, ctx| {
            let g = g.clone();
            async move {
                *g.lock().unwrap() = ctx.sink().cloned();
                Ok(text("ok"))
            }
        })
        .into_arc();
        let _reg = h.tools.register(tool).unwrap();
        let mut tap = Tap::install(&h.registry);
        send(&agent, "grab");
        tap.idle().await;
        let sink = got.lock().unwrap().clone().expect("the sink");
        sink
    };
    let mut tap = Tap::install(&h.registry);
    let triggers = || -> Vec<MessageSource> {
        agent
            .session()
            .events()
            .iter()
            .filter_map(|e| match &e.data {
                EventPayload::TurnStart(t) => match &t.trigger {
                    TurnTrigger::Message { source } => Some(source.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    for n in 1..=2 {
        sink.deliver_notice(text(&format!("notice {n}")), plugin())
            .unwrap();
        tap.idle().await;
    }
    assert_eq!(triggers()[1..], [plugin(), plugin()]);
    // The third waits in the log as context.
    sink.deliver_notice(text("notice 3"), plugin()).unwrap();
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert_eq!(triggers().len(), 3);
    let last = agent.session().events().last().cloned().unwrap();
    assert!(
        matches!(&last.data, EventPayload::ContextMessage(m) if text_of(&m.content) == "notice 3"),
        "{last:?}"
    );
    // A user message resets the count.
    send(&agent, "hi");
    tap.idle().await;
    sink.deliver_notice(text("notice 4"), plugin()).unwrap();
    tap.idle().await;
    assert_eq!(triggers().last(), Some(&plugin()));
    handle.dispose().await;
}
