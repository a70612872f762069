//! End to end: the scripted model calls an MCP tool through the agent loop;
//! the result (and an error result) reach the session and the model.

use std::sync::Arc;
use std::time::Duration;

use dsh_agent::{AgentOptions, AgentRegistry};
use dsh_agent_loop::AgentLoop;
use dsh_kernel::Kernel;
use dsh_llm::scripted::{ReplyBuilder, ScriptedAdapter, ScriptedReply};
use dsh_llm::{ContentBlock, LlmService, MessageSource};
use dsh_mcp::{McpServer, McpServerConfig};
use dsh_session::{EventPayload, SessionStore, ToolResultEvent, TurnEndEvent, TurnEndReason};
use dsh_tools::ToolRegistry;
use tokio::sync::mpsc;

const HANG: Duration = Duration::from_secs(20);

fn call(id: &str, name: &str, args: &str) -> ScriptedReply {
    ReplyBuilder::new()
        .tool_call(id, name, &[args])
        .usage(10, 2)
        .reply()
}

fn say(text: &str) -> ScriptedReply {
    ReplyBuilder::new().text(&[text]).usage(10, 2).reply()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_mcp_tools_through_the_agent_loop() {
    let kernel = Kernel::new();
    let llm = Arc::new(LlmService::new());
    let store = Arc::new(SessionStore::new());
    let agents = Arc::new(AgentRegistry::new());
    let tools = Arc::new(ToolRegistry::new());
    let model = Arc::new(ScriptedAdapter::new([
        call("c1", "mcp__fx__add", r#"{"a": 20, "b": 22}"#),
        call("c2", "mcp__fx__fail", r#"{"message": "no such file"}"#),
        say("the answer is 42"),
    ]));
    let _regs = [
        kernel.provide(llm.clone()).expect("fresh kernel"),
        kernel.provide(store.clone()).expect("fresh kernel"),
        kernel.provide(agents.clone()).expect("fresh kernel"),
        kernel.provide(tools.clone()).expect("fresh kernel"),
        llm.register_adapter(&["m"], model.clone())
            .expect("first adapter"),
    ];
    let server = McpServer::start(
        McpServerConfig::new("fx", env!("CARGO_BIN_EXE_dsh-mcp-fixture")),
        &tools,
    )
    .await
    .expect("fixture starts");

    let (tx, mut turn_ends) = mpsc::unbounded_channel();
    let _tap = agents.hooks().event.on(move |e| {
        if let EventPayload::TurnEnd(TurnEndEvent { reason, .. }) = &e.event.data {
            // The receiver lives as long as the test.
            let _ = tx.send(reason.clone());
        }
    });
    let handle = AgentLoop::create(
        &kernel,
        "a1",
        AgentOptions {
            model: Some("m".into()),
            ..Default::default()
        },
    )
    .expect("agent created");
    let agent = handle.agent();
    agent
        .send(
            vec![ContentBlock::text("what is 20 + 22?")],
            MessageSource::User,
        )
        .expect("agent alive");
    let reason = tokio::time::timeout(HANG, turn_ends.recv())
        .await
        .expect("the turn ends")
        .expect("hook alive");
    assert_eq!(reason, TurnEndReason::Completed);

    let results: Vec<(String, String, bool, Option<String>)> = agent
        .session()
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventPayload::ToolResult(ToolResultEvent { result, .. }) => Some((
                result.call_id.to_string(),
                result
                    .content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect::<String>(),
                result.is_error,
                result.code().map(str::to_string),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("c1".to_string(), "42".to_string(), false, None),
            (
                "c2".to_string(),
                "Error: no such file".to_string(),
                true,
                Some("MCP_TOOL_ERROR".to_string())
            ),
        ]
    );
    // The model was shown the MCP tools and got the results back.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let shown = requests[0].tools.as_deref().unwrap_or_default();
    assert!(shown.iter().any(|t| t.name == "mcp__fx__add"), "{shown:?}");
    handle.dispose().await;
    server.shutdown().await;
}
