//! The driver task: the idle wait, turns and steps.

use std::sync::Arc;

use dsh_agent::{
    Agent, AgentFailure, AgentStatus, ChunkReceived, ContinuationContext, RequestContext,
    SteeringDelivered, StepBoundary, StepResultContext, TurnEnd, TurnStart,
};
use dsh_kernel::{DshError, Extensions};
use dsh_llm::{BlockAssembler, ContentBlock, FinishReason, GenerateOptions, MessageSource};
use dsh_session::{EventData, TurnEndReason, TurnTrigger};
use dsh_tools::{ToolExecution, ToolExecutionResult};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::retry_guard::RetryGuard;
use crate::{LoopAgent, Pending, StepControl, LOOP_PLUGIN_NAME};

/// Code of the error when neither the options nor `agent/request` name a model.
const NO_MODEL: &str = "NO_MODEL";
/// Code of aborts and of results synthesized for calls an abort skipped.
const ABORTED: &str = "ABORTED";

/// Runs the agent until it is disposed.
pub(crate) async fn run(agent: Arc<LoopAgent>) {
    let mut turn = agent.session.last_turn();
    loop {
        // Idle until something is queued or the agent is disposed.
        loop {
            {
                let st = agent.lock();
                if st.disposed {
                    return;
                }
                if !st.queued.is_empty() {
                    break;
                }
            }
            agent.wake.notified().await;
        }
        agent.set_status(AgentStatus::Running);
        turn += 1;
        if let Err(err) = run_turn(&agent, turn).await {
            // Backstop: an exception escaped the turn body (a turn-start or
            // turn-end listener). Failures inside the backstop are swallowed.
            append_error(&agent, turn, 0, &err);
        }
        // Re-queue leftover steering and go idle under one lock: a `steer`
        // made between the two would still see `running`, land in the
        // steering FIFO and be stranded there while the loop idles.
        let went_idle = {
            let mut st = agent.lock();
            let leftover: Vec<Pending> = st.steering.drain(..).collect();
            st.queued.extend(leftover);
            st.queued.is_empty() && st.change_status(AgentStatus::Idle)
        };
        if went_idle {
            agent.announce_status();
        }
    }
}

/// Appends an `error` event and emits `agent/error` (listener failures are
/// contained by the hook).
fn append_error(agent: &LoopAgent, turn: u64, step: u64, err: &DshError) {
    agent.session.append(EventData::Error {
        turn,
        step,
        message: err.message().to_string(),
        code: code_of(err),
    });
    let _ = agent.services.registry.hooks().error.emit(&AgentFailure {
        agent: agent.handle(),
        turn,
        step,
        error: err.clone(),
    });
}

/// The code to log for `err` (absent when it has none).
fn code_of(err: &DshError) -> Option<String> {
    Some(err.code().to_string()).filter(|c| !c.is_empty())
}

/// The turn-end reason of a turn that failed with `err`.
fn error_reason(err: &DshError) -> TurnEndReason {
    TurnEndReason::Error {
        message: err.message().to_string(),
        code: code_of(err),
    }
}

/// Takes every steering message, logs it and emits `agent/steering`.
/// Returns whether any existed.
fn drain_steering(agent: &LoopAgent, turn: u64) -> Result<bool, DshError> {
    let drained: Vec<Pending> = agent.lock().steering.drain(..).collect();
    let any = !drained.is_empty();
    for m in drained {
        agent.session.append(EventData::SteeringMessage {
            turn,
            content: m.content.clone(),
            source: m.source.clone(),
        });
        agent
            .services
            .registry
            .hooks()
            .steering
            .emit(&SteeringDelivered {
                agent: agent.handle(),
                turn,
                content: m.content,
                source: m.source,
            })?;
    }
    Ok(any)
}

async fn run_turn(agent: &Arc<LoopAgent>, turn: u64) -> Result<(), DshError> {
    let hooks = agent.services.registry.hooks();
    let drained: Vec<Pending> = agent.lock().queued.drain(..).collect();
    let trigger_source = drained
        .first()
        .map(|m| m.source.clone())
        .unwrap_or_default();
    for m in drained {
        agent.session.append(EventData::UserMessage {
            content: m.content,
            source: m.source,
        });
    }
    agent.session.append(EventData::TurnStart {
        turn,
        trigger: TurnTrigger::Message {
            source: trigger_source,
        },
    });
    hooks.turn_start.emit(&TurnStart {
        agent: agent.handle(),
        turn,
    })?;

    let mut guard = RetryGuard::new(agent.options.repeat_failure_limit);
    let mut reason = TurnEndReason::Completed;
    let mut step = 0u64;
    loop {
        step += 1;
        drain_steering(agent, turn)?;
        let boundary = StepBoundary {
            agent: agent.handle(),
            turn,
            step,
        };
        hooks.step_start.emit(&boundary)?;
        agent.session.append(EventData::StepStart { turn, step });

        let cancel = CancellationToken::new();
        {
            let mut st = agent.lock();
            st.step = Some(StepControl {
                cancel: cancel.clone(),
                reason: None,
            });
            if st.disposed {
                if let Some(s) = st.step.as_mut() {
                    s.reason = Some("disposed".into());
                }
                cancel.cancel();
            }
        }
        let outcome = run_step(agent, turn, step, &cancel, &mut guard).await;
        let abort_reason = agent.lock().step.take().and_then(|s| s.reason);

        match outcome {
            Err(err) => {
                agent.session.append(EventData::StepEnd { turn, step });
                hooks.step_end.emit(&boundary)?;
                reason = if agent.is_disposed() {
                    TurnEndReason::Disposed
                } else if cancel.is_cancelled() {
                    TurnEndReason::Aborted {
                        reason: Some(abort_reason.unwrap_or_else(|| "aborted".into())),
                    }
                } else {
                    append_error(agent, turn, step, &err);
                    error_reason(&err)
                };
                break;
            }
            Ok(had_tool_calls) => {
                let steered = drain_steering(agent, turn)?;
                agent.session.append(EventData::StepEnd { turn, step });
                hooks.step_end.emit(&boundary)?;
                let ctx = ContinuationContext {
                    agent: agent.handle(),
                    turn,
                    default: had_tool_calls || steered,
                };
                let decision = hooks
                    .turn_continuation
                    .call(ctx, |c| async move { Ok(c.default) })
                    .await;
                let mut cont = match decision {
                    Ok(c) => c,
                    Err(err) => {
                        append_error(agent, turn, step, &err);
                        reason = error_reason(&err);
                        break;
                    }
                };
                // Steering from step-end or continuation listeners is never stranded.
                if !cont && !agent.lock().steering.is_empty() {
                    cont = true;
                }
                if agent.is_disposed() {
                    reason = TurnEndReason::Disposed;
                    break;
                }
                if !cont {
                    break;
                }
                if step >= u64::from(agent.options.max_steps) {
                    reason = TurnEndReason::MaxSteps;
                    break;
                }
            }
        }
    }

    agent.session.append(EventData::TurnEnd {
        turn,
        reason: reason.clone(),
    });
    hooks.turn_end.emit(&TurnEnd {
        agent: agent.handle(),
        turn,
        reason,
    })?;
    if let Err(err) = agent.services.store.flush(&agent.session).await {
        append_error(agent, turn, step, &err);
    }
    Ok(())
}

fn aborted_error(agent: &LoopAgent) -> DshError {
    let reason = agent
        .lock()
        .step
        .as_ref()
        .and_then(|s| s.reason.clone())
        .unwrap_or_else(|| "aborted".into());
    DshError::new(ABORTED, reason)
}

/// One model call and its tool calls. `Ok(had_tool_calls)` on success.
async fn run_step(
    agent: &Arc<LoopAgent>,
    turn: u64,
    step: u64,
    cancel: &CancellationToken,
    guard: &mut RetryGuard,
) -> Result<bool, DshError> {
    let hooks = agent.services.registry.hooks();
    let request = build_request(agent, cancel).await;
    let ctx = RequestContext {
        agent: agent.handle(),
        turn,
        step,
        request,
    };
    let request = hooks
        .request
        .call(ctx, |c| async move { Ok(c.request) })
        .await?;
    if request.model.is_empty() {
        return Err(DshError::new(
            NO_MODEL,
            format!(
                "agent \"{}\" has no model: set AgentOptions.model or supply one via the agent/request waterfall",
                agent.id
            ),
        ));
    }

    let mut stream = agent.services.llm.stream(request).await;
    let mut asm = BlockAssembler::new();
    let wants_chunks = !hooks.stream_chunk.is_empty();
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(aborted_error(agent)),
            item = stream.next() => item,
        };
        let chunk = match item {
            None => break,
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(chunk)) => chunk,
        };
        if cancel.is_cancelled() {
            return Err(aborted_error(agent));
        }
        agent.session.append(EventData::AssistantChunk {
            turn,
            step,
            chunk: chunk.clone(),
        });
        if wants_chunks {
            hooks.stream_chunk.emit(&ChunkReceived {
                agent: agent.handle(),
                turn,
                step,
                chunk: chunk.clone(),
            })?;
        }
        asm.push(&chunk);
    }
    drop(stream);

    let finish = asm.finish();
    match &finish {
        FinishReason::Error { message, code } => {
            return Err(DshError::new(
                code.clone().unwrap_or_else(|| "MODEL_ERROR".into()),
                message.clone(),
            ))
        }
        FinishReason::Aborted => return Err(DshError::new(ABORTED, "model stream aborted")),
        _ => {}
    }
    let message = asm.message().map_err(DshError::from)?;
    let ctx = StepResultContext {
        agent: agent.handle(),
        turn,
        step,
        message,
    };
    let message = hooks
        .step_result
        .call(ctx, |c| async move { Ok(c.message) })
        .await?;
    agent.session.append(EventData::AssistantMessage {
        turn,
        step,
        content: message.content.clone(),
    });
    if let Some(usage) = asm.usage() {
        agent.session.append(EventData::Usage { turn, step, usage });
    }

    let calls: Vec<dsh_llm::ToolCallBlock> = message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    for (i, call) in calls.iter().enumerate() {
        if cancel.is_cancelled() {
            let err = aborted_error(agent);
            synthesize_results(agent, turn, step, &calls[i..], &err);
            return Err(err);
        }
        agent.session.append(EventData::ToolCall {
            turn,
            step,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let mut extensions = Extensions::new();
        extensions.insert::<Arc<dyn Agent>>(agent.handle());
        let exec = ToolExecution {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            finish: Some(finish.clone()),
            cancel: cancel.clone(),
            extensions,
        };
        let mut result = match &agent.services.tools {
            Some(tools) => tools.execute(exec).await,
            None => no_registry_result(&call.id, &call.name),
        };
        let steer_note = guard.observe(&call.name, &mut result, agent.services.tools.as_deref());
        agent.session.append(EventData::ToolResult {
            turn,
            step,
            call_id: result.call_id.clone(),
            content: result.content,
            is_error: result.is_error,
            error_code: result.failure.map(|f| f.code),
        });
        if let Some(note) = steer_note {
            agent.lock().steering.push_back(Pending {
                content: vec![ContentBlock::text(note)],
                source: MessageSource::plugin(LOOP_PLUGIN_NAME),
            });
        }
        if cancel.is_cancelled() {
            let err = aborted_error(agent);
            synthesize_results(agent, turn, step, &calls[i + 1..], &err);
            return Err(err);
        }
    }
    Ok(!calls.is_empty())
}

/// Assembles the prompt and builds the step's request.
async fn build_request(agent: &LoopAgent, cancel: &CancellationToken) -> GenerateOptions {
    let (rendered, tools) = match &agent.services.prompt {
        Some(prompt) => {
            let assembly = prompt.assemble().await;
            (dsh_prompt::render(&assembly), assembly.tools)
        }
        None => (
            String::new(),
            agent
                .services
                .tools
                .as_ref()
                .map(|t| t.schemas())
                .unwrap_or_default(),
        ),
    };
    let system: Vec<&str> = [
        rendered.as_str(),
        agent.options.system_prompt.as_deref().unwrap_or(""),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect();
    let system = system.join("\n\n");
    GenerateOptions {
        model: agent.options.model.clone().unwrap_or_default(),
        messages: agent.session.derive_messages(),
        system: (!system.is_empty()).then_some(system),
        tools: (!tools.is_empty()).then_some(tools),
        cancel: cancel.clone(),
        ..Default::default()
    }
}

fn no_registry_result(call_id: &str, name: &str) -> ToolExecutionResult {
    let message = format!("unknown tool \"{name}\" (no tools are available)");
    ToolExecutionResult {
        call_id: call_id.to_string(),
        content: vec![ContentBlock::text(format!("Error: {message}"))],
        is_error: true,
        failure: Some(dsh_tools::ToolFailure {
            tool: name.to_string(),
            code: "UNKNOWN_TOOL".into(),
            message,
            violations: Vec::new(),
        }),
    }
}

/// Logs an error result for every call the failed step never answered, so the
/// history stays valid for providers that require an answer to every call.
fn synthesize_results(
    agent: &LoopAgent,
    turn: u64,
    step: u64,
    unanswered: &[dsh_llm::ToolCallBlock],
    err: &DshError,
) {
    for call in unanswered {
        agent.session.append(EventData::ToolResult {
            turn,
            step,
            call_id: call.id.clone(),
            content: vec![ContentBlock::text(format!(
                "Error: tool call not executed: the step ended first ({})",
                err.message()
            ))],
            is_error: true,
            error_code: Some(err.code().to_string()),
        });
    }
}
