//! Derivation rules and the envelope format (reference §2).

mod common;

use dsh_llm::{ContentBlock, Message, MessageSource, Role};
use dsh_session::{derive_messages, envelope, EventPayload, Session, ToolResultEvent};

#[test]
fn envelope_is_byte_identical_to_the_reference() {
    let blocks = envelope(
        "context",
        &[ContentBlock::text("file changed: a.ts")],
        &MessageSource::plugin("watcher"),
    );
    assert_eq!(
        serde_json::to_string(&blocks).unwrap(),
        r#"[{"type":"text","text":"<context source=\"plugin\">"},{"type":"text","text":"file changed: a.ts"},{"type":"text","text":"</context>"}]"#
    );
    let wire: String = blocks.iter().filter_map(|b| b.as_text()).collect();
    assert_eq!(
        wire,
        r#"<context source="plugin">file changed: a.ts</context>"#
    );

    let steering = envelope("steering", &[], &MessageSource::User);
    assert_eq!(steering[0].as_text(), Some(r#"<steering source="user">"#));
    assert_eq!(steering[1].as_text(), Some("</steering>"));
    let agent = envelope(
        "context",
        &[ContentBlock::reasoning("r")],
        &MessageSource::Agent {
            agent_id: "a-7".into(),
        },
    );
    assert_eq!(agent[0].as_text(), Some(r#"<context source="agent">"#));
    assert_eq!(agent[1], ContentBlock::reasoning("r"));
    assert_eq!(agent.len(), 3);
}

#[test]
fn sample_log_derives_the_reference_history() {
    let events = common::as_events(common::sample_log());
    let messages = derive_messages(&events);
    let json = serde_json::to_value(&messages).unwrap();
    let expected = serde_json::json!([
        {"role":"user","content":[{"type":"text","text":"list files"}]},
        {"role":"assistant","content":[
            {"type":"text","text":"Let me look."},
            {"type":"tool-call","id":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}]},
        {"role":"user","content":[{"type":"tool-result","toolCallId":"call_1",
            "content":[{"type":"text","text":"a.ts\nb.ts\n"}],"isError":false}]},
        {"role":"user","content":[
            {"type":"text","text":"<context source=\"plugin\">"},
            {"type":"text","text":"file changed: a.ts"},
            {"type":"text","text":"</context>"}]},
        {"role":"user","content":[
            {"type":"text","text":"<steering source=\"user\">"},
            {"type":"text","text":"only .ts please"},
            {"type":"text","text":"</steering>"}]},
        {"role":"assistant","content":[{"type":"text","text":"a.ts and b.ts"}]},
        {"role":"user","content":[{"type":"text","text":"run it"}]},
        {"role":"user","content":[{"type":"tool-result","toolCallId":"call_2",
            "content":[{"type":"text","text":"Error: invalid JSON"}],"isError":true}]}
    ]);
    assert_eq!(json, expected);
}

#[test]
fn tool_result_always_carries_is_error() {
    let events = common::as_events(vec![EventPayload::ToolResult(ToolResultEvent {
        turn: 1,
        step: 1,
        result: common::tool_result("c", vec![], false, Some("X".into())),
    })]);
    let messages = derive_messages(&events);
    assert_eq!(
        serde_json::to_string(&messages).unwrap(),
        r#"[{"role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[],"isError":false}]}]"#
    );
}

#[test]
fn session_history_matches_pure_derivation_and_snapshots_are_stable() {
    let session = Session::detached("t", vec![]);
    let mut snapshots = Vec::new();
    for data in common::sample_log() {
        session.append(data);
        snapshots.push(session.derive_messages());
    }
    let events: Vec<_> = session.events().iter().map(|e| (**e).clone()).collect();
    assert_eq!(session.derive_messages().to_vec(), derive_messages(&events));
    // Every snapshot still shows the history as of its time.
    for (i, snap) in snapshots.iter().enumerate() {
        assert_eq!(snap.to_vec(), derive_messages(&events[..=i]));
    }
    assert_eq!(
        session.derive_messages().get(0),
        Some(Message {
            role: Role::User,
            content: vec![ContentBlock::text("list files")]
        })
    );
}
