//! `dsh run [--model M] [--session-dir DIR] [--resume ID] [--json] PROMPT`
//!
//! One turn. With `--plan` the turn runs in plan mode ([`dsh::plan`]):
//! changing tools are denied, and when the model presents its plan with
//! `exit_plan_mode` the plan is printed (instead of the answer) and the run
//! ends there, exit 0.
//!
//! Prints the final answer (or, with `--json`, every session event
//! as one JSON line as it happens, the JSONL log format). Exit codes: 0 the
//! turn completed, 1 it ended in error (message with code on stderr) or its
//! output could not be written, 2 usage or configuration error; a signal
//! aborts the turn (open tool calls answered, processes killed, log flushed)
//! and exits 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP) or 131 (SIGQUIT).

use dsh_kernel::ErrorCode;
use std::io::Write;

use clap::Args;
use dsh::hooks::PromptDecision;
use dsh_llm::MessageSource;
use dsh_session::{AssistantMessageEvent, ErrorEvent, EventPayload, TurnEndReason};

use crate::app::StackArgs;
use crate::commands::{block_on, exit_code_for, start_agent, wait_turn_end};
use crate::output::WriteFailure;

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
    /// Plan only: commands and file changes are denied; the plan the model
    /// presents (exit_plan_mode) is printed and the run ends.
    #[arg(long)]
    plan: bool,
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
    let written = std::sync::Arc::new(WriteFailure::default());
    let json_listener = args.json.then(|| {
        let sid = session.id().to_string();
        let written = written.clone();
        app.store.on_event().on(move |(s, event)| {
            if *s.id() == sid && !written.failed() {
                let line = serde_json::to_string(&**event).unwrap_or_default();
                let line = crate::sanitize::json_visible(&line);
                let mut out = std::io::stdout().lock();
                // A closed stdout (e.g. `| head`) must not kill the turn:
                // the failure is noted and decides the exit code.
                written.note(writeln!(out, "{line}").and_then(|()| out.flush()));
            }
        })
    });
    app.announce_permission(agent.as_ref());
    // The flag decides the mode of this run, a resumed session's included.
    if args.plan {
        app.plan.set_review(dsh::plan::PlanReview::Present);
    }
    let source = if args.plan { "--plan" } else { "dsh run" };
    app.set_plan_mode(args.plan, source, Some(agent.as_ref()));
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
    let mut signals = crate::signals::get();
    let mut stopped = None;
    let blocks = match app.submit_prompt(&agent, &prompt).await {
        PromptDecision::Send(blocks) => Ok(blocks),
        PromptDecision::Blocked(reason) => Err(reason),
    };
    let reason = match blocks.map(|b| agent.send(b, MessageSource::User)) {
        Err(blocked) => Some(TurnEndReason::Error {
            message: dsh::hooks::blocked_prompt_message(&blocked),
            code: Some(dsh_protocol::codes::PROMPT_BLOCKED.into()),
        }),
        Ok(Ok(())) => {
            tokio::select! {
                reason = turn_end.recv() => reason,
                stop = signals.next() => {
                    stopped = Some(stop);
                    agent.abort(Some(stop.reason().into()));
                    turn_end.recv().await
                }
            }
        }
        Ok(Err(e)) => Some(TurnEndReason::Error {
            message: e.to_string(),
            code: Some(e.code().into()),
        }),
    };
    let presented = app.plan.take_presented();
    if !args.json && stopped.is_none() {
        let mut answer = match presented {
            Some(plan) => plan,
            None => final_answer(&session.events_since(start)),
        };
        if !answer.ends_with('\n') && !answer.is_empty() {
            answer.push('\n');
        }
        let mut out = std::io::stdout().lock();
        let text = crate::sanitize::visible(&answer);
        written.note(out.write_all(text.as_bytes()).and_then(|()| out.flush()));
    }
    drop(json_listener);
    crate::commands::shutdown_bounded(async {
        handle.dispose().await;
        error_listener.undo();
        app.shutdown().await;
    })
    .await;
    let code = match stopped {
        Some(stop) => {
            eprintln!("dsh: aborted: {}", stop.reason());
            return stop.exit_code();
        }
        None => exit_code_for(reason.as_ref()),
    };
    if code == 0 && written.code() != 0 {
        return written.code();
    }
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
