//! `dsh run [--model M] [--session-dir DIR] [--resume ID] [--json] PROMPT`
//!
//! One turn. Prints the final answer (or, with `--json`, every session event
//! as one JSON line as it happens, the JSONL log format). Exit codes: 0 the
//! turn completed, 1 it ended in error (message with code on stderr), 130 it
//! was aborted (Ctrl-C), 2 usage or configuration error.

use dsh_kernel::ErrorCode;
use std::io::Write;

use clap::Args;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{AssistantMessageEvent, ErrorEvent, EventPayload, TurnEndReason};

use crate::app::StackArgs;
use crate::commands::{block_on, exit_code_for, start_agent, wait_turn_end};

/// Arguments of `dsh run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    stack: StackArgs,
    /// Continue the saved session ID (its log is replayed, new events are appended).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Print every session event as one JSON line instead of the answer.
    #[arg(long)]
    json: bool,
    /// The prompt (several words are joined with spaces).
    #[arg(required = true, num_args = 1.., value_name = "PROMPT")]
    prompt: Vec<String>,
}

/// Runs `dsh run`; returns the exit code.
pub(crate) fn run(args: RunArgs) -> u8 {
    block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> u8 {
    let (app, handle) = match start_agent(&args.stack, args.resume.as_deref()).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    let agent = handle.agent();
    let session = agent.session();
    let json_listener = args.json.then(|| {
        let sid = session.id().to_string();
        app.store.on_event().on(move |(s, event)| {
            if *s.id() == sid {
                let line = serde_json::to_string(&**event).unwrap_or_default();
                let mut out = std::io::stdout().lock();
                // A closed stdout (e.g. `| head`) must not kill the turn.
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
        })
    });
    // A turn can complete while its log failed to reach disk (the flush
    // runs after turn/end); that must not look like success.
    let persistence_errors = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let errors = persistence_errors.clone();
    let error_listener = app.agents.hooks().event.on(move |e| {
        if let EventPayload::Error(ErrorEvent {
            code: Some(code),
            message,
            ..
        }) = &e.event.data
        {
            if code.starts_with("SESSION_") {
                if let Ok(mut v) = errors.lock() {
                    v.push(format!("[{code}]: {message}"));
                }
            }
        }
    });
    let start = session.len();
    let turn_end = wait_turn_end(&app);
    let prompt = args.prompt.join(" ");
    let reason = match agent.send(vec![ContentBlock::text(prompt)], MessageSource::User) {
        Ok(()) => {
            tokio::select! {
                reason = turn_end.recv() => reason,
                _ = tokio::signal::ctrl_c() => {
                    agent.abort(Some("user interrupt".into()));
                    turn_end.recv().await
                }
            }
        }
        Err(e) => Some(TurnEndReason::Error {
            message: e.to_string(),
            code: Some(e.code().into()),
        }),
    };
    if !args.json {
        let answer = final_answer(&session.events_since(start));
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "{answer}");
        if !answer.ends_with('\n') && !answer.is_empty() {
            let _ = writeln!(out);
        }
        let _ = out.flush();
    }
    drop(json_listener);
    handle.dispose().await;
    error_listener.undo();
    app.shutdown().await;
    let code = exit_code_for(reason.as_ref());
    let failures = persistence_errors
        .lock()
        .map(|v| v.clone())
        .unwrap_or_default();
    for f in &failures {
        eprintln!("dsh: session log not saved: error {f}");
    }
    if code == 0 && !failures.is_empty() {
        1
    } else {
        code
    }
}

/// The text of the last assistant message among `events`.
fn final_answer(events: &[std::sync::Arc<dsh_session::SessionEvent>]) -> String {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.data {
            EventPayload::AssistantMessage(AssistantMessageEvent { content, .. }) => Some(
                content
                    .iter()
                    .filter_map(|b| b.as_text())
                    .collect::<Vec<_>>()
                    .join(""),
            ),
            _ => None,
        })
        .unwrap_or_default()
}
