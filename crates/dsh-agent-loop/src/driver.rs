//! The driver task: the idle wait, turns and steps.
//!
//! A step is two halves: [`stream_step`] (assemble the request, stream the
//! model, log the raw chunks, assemble the reply) and [`dispatch_tools`] (log
//! the reply, run each tool call through the registry, log each result).

use std::sync::Arc;

use dsh_agent::{
    Agent, AgentEvent, AgentStatus, ContinuationContext, RequestContext, StepResultContext,
};
use dsh_kernel::sync::lock;
use dsh_kernel::{DshError, ErrorCode, Extensions};
use dsh_llm::{
    BlockAssembler, CallIds, ContentBlock, FinishReason, Message, MessageSource, ModelRequest,
    StepMeter, TokenUsage,
};
use dsh_protocol::codes;
use dsh_session::{
    AssistantMessageEvent, ChunkEvent, ErrorEvent, EventPayload, MessageEvent, SteeringEvent,
    StepEvent, ToolCallEvent, ToolResultEvent, TurnEndEvent, TurnEndReason, TurnStartEvent,
    TurnTrigger, UsageEvent,
};
use dsh_tools::{
    error_result, unknown_tool, CallEnv, Concurrency, ContextSink, ToolCall, ToolError, ToolResult,
};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::retry_guard::TurnGuard;
use crate::{LoopAgent, Pending, StepControl, LOOP_PLUGIN_NAME};

/// Runs the agent until it is disposed.
pub(crate) async fn run(agent: Arc<LoopAgent>) {
    let mut turn = agent.session.last_turn();
    let mut call_ids = SessionCallIds::default();
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
        if let Err(err) = run_turn(&agent, turn, &mut call_ids).await {
            // Backstop: an exception escaped the turn body (a turn-start or
            // turn-end listener). Failures inside the backstop are contained.
            append_error(&agent, turn, 0, &err);
        }
        // Re-queue leftover steering and go idle under one lock: a `steer`
        // made between the two would still see `running`, land in the
        // steering FIFO and be stranded there while the loop idles.
        // Notices the turn never showed the model start the next turn
        // (a wake-up) or, without wake-ups left, wait in the log.
        let (went_idle, unseen) = {
            let mut st = agent.lock();
            let leftover: Vec<Pending> = st.steering.drain(..).collect();
            st.queued.extend(leftover);
            st.stepped = false;
            if st.queued.is_empty() {
                // A kept abort is for a turn already queued, not for a
                // wake-up started below.
                st.abort_pending = None;
            }
            let mut unseen: Vec<Pending> = st.notices.drain(..).collect();
            if !unseen.is_empty() && st.queued.is_empty() && !st.disposed {
                if st.wakes < agent.options.max_consecutive_wakes {
                    st.wakes += 1;
                    st.queued
                        .push_back(merge_notices(std::mem::take(&mut unseen)));
                }
            } else if !st.queued.is_empty() {
                // The queued turn logs them before its first step.
                st.notices.extend(unseen.drain(..));
            }
            (
                st.queued.is_empty() && st.change_status(AgentStatus::Idle),
                unseen,
            )
        };
        for n in unseen {
            agent.record(EventPayload::ContextMessage(MessageEvent {
                content: n.content,
                source: n.source,
            }));
        }
        if went_idle {
            agent.announce_status();
        }
    }
}

impl LoopAgent {
    /// Appends `data` to the session and emits `agent/event` (listener
    /// failures contained and logged).
    pub(crate) fn record(&self, data: EventPayload) {
        // The failure was logged by the hook; observers of these kinds
        // cannot stop the turn.
        let _ = self.record_checked(data);
    }

    /// [`LoopAgent::record`] for the events whose observers may stop the
    /// turn: a listener failure is returned.
    fn record_checked(&self, data: EventPayload) -> Result<(), DshError> {
        let event = self.session.append(data);
        self.services
            .registry
            .hooks()
            .event
            .emit_checked(&AgentEvent {
                agent: self.handle(),
                event,
            })
    }
}

/// Logs an `error` event (its observers' failures are contained).
fn append_error(agent: &LoopAgent, turn: u64, step: u64, err: &DshError) {
    agent.record(EventPayload::Error(ErrorEvent {
        turn,
        step,
        message: err.message().to_string(),
        code: code_of(err),
    }));
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

/// One message carrying every notice (a wake-up turn starts with them
/// all), from the first one's source.
fn merge_notices(notices: Vec<Pending>) -> Pending {
    let source = notices
        .first()
        .map(|n| n.source.clone())
        .unwrap_or_default();
    Pending {
        content: notices.into_iter().flat_map(|n| n.content).collect(),
        source,
    }
}

/// Logs the background notices delivered since the last step as context
/// messages, so the step's request shows them.
fn drain_notices(agent: &LoopAgent) {
    let drained: Vec<Pending> = agent.lock().notices.drain(..).collect();
    for n in drained {
        agent.record(EventPayload::ContextMessage(MessageEvent {
            content: n.content,
            source: n.source,
        }));
    }
}

/// Takes every steering message and logs it. Returns whether any existed.
fn drain_steering(agent: &LoopAgent, turn: u64) -> Result<bool, DshError> {
    let drained: Vec<Pending> = agent.lock().steering.drain(..).collect();
    let any = !drained.is_empty();
    for m in drained {
        agent.record_checked(EventPayload::SteeringMessage(SteeringEvent {
            turn,
            content: m.content,
            source: m.source,
        }))?;
    }
    Ok(any)
}

async fn run_turn(
    agent: &Arc<LoopAgent>,
    turn: u64,
    call_ids: &mut SessionCallIds,
) -> Result<(), DshError> {
    let hooks = agent.services.registry.hooks();
    // Notices from the end of the last turn come before the new messages.
    drain_notices(agent);
    let drained: Vec<Pending> = agent.lock().queued.drain(..).collect();
    let trigger_source = drained
        .first()
        .map(|m| m.source.clone())
        .unwrap_or_default();
    for m in drained {
        agent.record(EventPayload::UserMessage(MessageEvent {
            content: m.content,
            source: m.source,
        }));
    }
    agent.record_checked(EventPayload::TurnStart(TurnStartEvent {
        turn,
        trigger: TurnTrigger::Message {
            source: trigger_source,
        },
    }))?;

    let guard = Arc::new(TurnGuard::new(agent.options.repeat_failure_limit));
    let extensions = call_extensions(agent, &guard);
    let mut reason = TurnEndReason::Completed;
    let mut step = 0u64;
    loop {
        step += 1;
        drain_notices(agent);
        drain_steering(agent, turn)?;
        let boundary = StepEvent { turn, step };
        agent.record_checked(EventPayload::StepStart(boundary))?;

        let cancel = CancellationToken::new();
        {
            let mut st = agent.lock();
            st.step = Some(StepControl {
                cancel: cancel.clone(),
                reason: None,
            });
            if step == 1 {
                st.stepped = true;
                if let Some(reason) = st.abort_pending.take() {
                    if let Some(s) = st.step.as_mut() {
                        s.reason = Some(reason);
                    }
                    cancel.cancel();
                }
            }
            if st.disposed {
                if let Some(s) = st.step.as_mut() {
                    s.reason = Some("disposed".into());
                }
                cancel.cancel();
            }
        }
        let outcome = run_step(agent, boundary, &cancel, &guard, &extensions, call_ids).await;
        let abort_reason = agent.lock().step.take().and_then(|s| s.reason);

        match outcome {
            Err(err) => {
                agent.record_checked(EventPayload::StepEnd(boundary))?;
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
                agent.record_checked(EventPayload::StepEnd(boundary))?;
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

    agent.record_checked(EventPayload::TurnEnd(TurnEndEvent { turn, reason }))?;
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
    DshError::new(codes::ABORTED, reason)
}

/// One model call and its tool calls. `Ok(had_tool_calls)` on success.
async fn run_step(
    agent: &Arc<LoopAgent>,
    at: StepEvent,
    cancel: &CancellationToken,
    guard: &Arc<TurnGuard>,
    extensions: &Extensions,
    call_ids: &mut SessionCallIds,
) -> Result<bool, DshError> {
    let mut reply = stream_step(agent, at, cancel).await?;
    call_ids.make_unique(agent, at, &mut reply.message.content);
    dispatch_tools(agent, at, reply, cancel, guard, extensions).await
}

/// The tool-call ids of the agent's session, caught up from the log before
/// each reply is recorded (so a seeded or forked log's ids, and calls
/// another writer logged, count as taken).
#[derive(Default)]
struct SessionCallIds {
    ids: CallIds,
    /// Events of the log observed so far.
    observed: usize,
}

impl SessionCallIds {
    /// Gives every tool call of a reply an id no call of the session has
    /// (see [`CallIds::claim`]); each repeat is logged (`tracing` warning
    /// and a `tool/call-renamed` event before the reply's
    /// `assistant/message`), and the message, the `tool/call` events and
    /// the results carry the new id. The raw `assistant/chunk` events keep
    /// the model's.
    fn make_unique(&mut self, agent: &LoopAgent, at: StepEvent, content: &mut [ContentBlock]) {
        for e in agent.session.events_since(self.observed) {
            self.observed += 1;
            match &e.data {
                EventPayload::AssistantMessage(m) => self.ids.observe(&m.content),
                EventPayload::ToolCall(c) => self.ids.observe_id(c.call.call_id.as_str()),
                _ => {}
            }
        }
        for renamed in self.ids.claim(content) {
            tracing::warn!(
                target: "dsh_agent_loop",
                agent = %agent.id,
                "the model repeated tool-call id {:?} (turn {}, step {}): the call is recorded as {:?}",
                renamed.from.as_str(),
                at.turn,
                at.step,
                renamed.to.as_str()
            );
            agent.record(EventPayload::Other {
                kind: crate::CALL_RENAMED_KIND.to_string(),
                data: serde_json::json!({
                    "turn": at.turn,
                    "step": at.step,
                    "from": renamed.from,
                    "to": renamed.to,
                }),
            });
        }
    }
}

/// What [`stream_step`] produced: the assistant message (after
/// `agent/step-result`), how the model finished and what it reported using.
struct Reply {
    message: Message,
    finish: FinishReason,
    usage: Option<TokenUsage>,
}

/// [`stream_once`], and once more with `overflowed` set when the provider
/// rejected the first attempt as longer than the context window before any
/// output (an `agent/request` listener compacts for the retry). A second
/// overflow fails the step with `CONTEXT_WINDOW_EXCEEDED`.
async fn stream_step(
    agent: &Arc<LoopAgent>,
    at: StepEvent,
    cancel: &CancellationToken,
) -> Result<Reply, DshError> {
    match stream_once(agent, at, cancel, false).await {
        Err(Attempt::Overflow(_)) => match stream_once(agent, at, cancel, true).await {
            Ok(reply) => Ok(reply),
            Err(Attempt::Overflow(e) | Attempt::Failed(e)) => Err(e),
        },
        Ok(reply) => Ok(reply),
        Err(Attempt::Failed(e)) => Err(e),
    }
}

/// How one attempt at a step's model call failed.
enum Attempt {
    /// `CONTEXT_WINDOW_EXCEEDED` before any chunk: worth one retry.
    Overflow(DshError),
    /// Anything else.
    Failed(DshError),
}

impl From<DshError> for Attempt {
    fn from(e: DshError) -> Self {
        Attempt::Failed(e)
    }
}

/// Builds the request, runs `agent/request`, streams the model (logging each
/// raw chunk) and assembles the reply; runs `agent/step-result` on it.
async fn stream_once(
    agent: &Arc<LoopAgent>,
    at: StepEvent,
    cancel: &CancellationToken,
    overflowed: bool,
) -> Result<Reply, Attempt> {
    let hooks = agent.services.registry.hooks();
    let StepEvent { turn, step } = at;
    let request = build_request(agent, cancel).await;
    let ctx = RequestContext {
        agent: agent.handle(),
        turn,
        step,
        request,
        overflowed,
    };
    let request = hooks
        .request
        .call(ctx, |c| async move { Ok(c.request) })
        .await?;
    if request.model.is_empty() {
        return Err(Attempt::Failed(DshError::new(
            codes::NO_MODEL,
            format!(
                "agent \"{}\" has no model: set AgentOptions.model or supply one via the agent/request waterfall",
                agent.id
            ),
        )));
    }

    record_request(agent, at, &request);
    // What the model is about to be asked follows from the log on disk.
    agent.services.store.flush(&agent.session).await?;
    let mut stream = agent.services.llm.stream(request).await;
    let mut asm = BlockAssembler::new();
    let mut meter = StepMeter::new(agent.step_limits);
    let mut chunks = 0usize;
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(aborted_error(agent).into()),
            item = stream.next() => item,
        };
        let chunk = match item {
            None => break,
            Some(Err(e)) => {
                let e = DshError::from(e);
                if chunks == 0 && !overflowed && e.code() == codes::CONTEXT_WINDOW_EXCEEDED {
                    return Err(Attempt::Overflow(e));
                }
                return Err(e.into());
            }
            Some(Ok(chunk)) => chunk,
        };
        chunks += 1;
        if cancel.is_cancelled() {
            return Err(aborted_error(agent).into());
        }
        // Checked before the chunk is logged: the step ends like a stream
        // error (no assistant message is recorded, so no call dangles).
        if let Err(e) = meter.observe(&chunk) {
            return Err(DshError::new(e.code, e.message).into());
        }
        asm.push(&chunk);
        agent.record_checked(EventPayload::AssistantChunk(ChunkEvent {
            turn,
            step,
            chunk,
        }))?;
    }
    drop(stream);

    let finish = asm.finish();
    match &finish {
        FinishReason::Error { message, code } => {
            return Err(DshError::new(
                code.clone()
                    .unwrap_or_else(|| codes::MODEL_ERROR.to_string()),
                message.clone(),
            )
            .into())
        }
        FinishReason::Aborted => {
            return Err(DshError::new(codes::ABORTED, "model stream aborted").into())
        }
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
    Ok(Reply {
        message,
        finish,
        usage: asm.usage(),
    })
}

/// Logs the reply and its usage, then runs the tool calls through the
/// registry in batches (a run of consecutive concurrency-safe calls, or one
/// exclusive call; see [`run_batch`]), logging a batch's calls before any
/// of them runs and the results in the model's order. An abort answers
/// every call not yet run with a synthesized result.
async fn dispatch_tools(
    agent: &Arc<LoopAgent>,
    at: StepEvent,
    reply: Reply,
    cancel: &CancellationToken,
    guard: &Arc<TurnGuard>,
    extensions: &Extensions,
) -> Result<bool, DshError> {
    let StepEvent { turn, step } = at;
    let Reply {
        message,
        finish,
        usage,
    } = reply;
    let calls: Vec<ToolCall> = message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    agent.record(EventPayload::AssistantMessage(AssistantMessageEvent {
        turn,
        step,
        content: message.content,
    }));
    if let Some(usage) = usage {
        agent.record(EventPayload::Usage(UsageEvent { turn, step, usage }));
    }
    record_context_usage(agent, at);

    let mut next = 0;
    while next < calls.len() {
        if cancel.is_cancelled() {
            let err = aborted_error(agent);
            synthesize_results(agent, at, &calls[next..], &err);
            return Err(err);
        }
        let end = batch_end(agent, &calls, next);
        let batch = &calls[next..end];
        for call in batch {
            agent.record(EventPayload::ToolCall(ToolCallEvent {
                turn,
                step,
                call: call.clone(),
            }));
        }
        // A tool's side effect is never ahead of the log: the calls are on
        // disk before their bodies run (a crash then leaves unanswered
        // calls, which resuming answers with INTERRUPTED).
        if let Err(err) = agent.services.store.flush(&agent.session).await {
            synthesize_results(agent, at, &calls[next..], &err);
            return Err(err);
        }
        let env = CallEnv {
            finish: Some(finish.clone()),
            cancel: cancel.clone(),
            extensions: extensions.clone(),
        };
        let answered = run_batch(agent, at, batch, &env, guard).await;
        if answered < batch.len() || cancel.is_cancelled() {
            let err = aborted_error(agent);
            synthesize_results(agent, at, &calls[next + answered..], &err);
            return Err(err);
        }
        next = end;
    }
    Ok(!calls.is_empty())
}

/// Where the batch starting at `calls[start]` ends (exclusive): a run of
/// consecutive concurrency-safe calls, or the one exclusive call. Without a
/// registry, or with parallelism off, every call is its own batch.
fn batch_end(agent: &LoopAgent, calls: &[ToolCall], start: usize) -> usize {
    let Some(tools) = &agent.services.tools else {
        return start + 1;
    };
    if agent.options.max_parallel_tool_calls <= 1 {
        return start + 1;
    }
    let safe = |c: &ToolCall| tools.concurrency(c) == Concurrency::Safe;
    if !safe(&calls[start]) {
        return start + 1;
    }
    start + calls[start..].iter().take_while(|c| safe(c)).count()
}

/// Runs one batch: calls start in the model's order, at most
/// `max_parallel_tool_calls` at once; each result is logged as soon as
/// every call before it has its own, so results enter the history in the
/// model's order whatever order they finish in. One call's failure never
/// cancels another. Once the step is cancelled no further call starts;
/// those running end (the registry answers them `ABORTED` after its
/// grace). Returns how many calls, from the first, have a logged result.
async fn run_batch(
    agent: &LoopAgent,
    at: StepEvent,
    batch: &[ToolCall],
    env: &CallEnv,
    guard: &TurnGuard,
) -> usize {
    let limit = agent.options.max_parallel_tool_calls.max(1);
    let mut results: Vec<Option<ToolResult>> = vec![None; batch.len()];
    let mut running = futures_util::stream::FuturesUnordered::new();
    let (mut started, mut logged) = (0, 0);
    loop {
        while started < batch.len() && running.len() < limit && !env.cancel.is_cancelled() {
            let i = started;
            let result = match &agent.services.tools {
                Some(tools) => tools.execute(&batch[i], env.clone()),
                None => Box::pin(std::future::ready(unknown_tool(&batch[i], &[]))),
            };
            running.push(async move { (i, result.await) });
            started += 1;
        }
        let Some((i, result)) = running.next().await else {
            return logged;
        };
        results[i] = Some(result);
        while let Some(result) = results.get_mut(logged).and_then(Option::take) {
            agent.record(EventPayload::ToolResult(ToolResultEvent {
                turn: at.turn,
                step: at.step,
                result,
            }));
            if let Some(note) = guard.take_note() {
                agent.lock().steering.push_back(Pending {
                    content: vec![ContentBlock::text(note)],
                    source: MessageSource::plugin(LOOP_PLUGIN_NAME),
                });
            }
            logged += 1;
        }
    }
}

/// Logs what the model is about to be sent that the log does not hold
/// yet: the system prompt, the tool schemas and the options when they
/// differ from the ones logged last (compared in place, so an unchanged
/// part costs no serialization), then the `request/sent` marker (see
/// [`crate::REQUEST_SENT_KIND`]).
fn record_request(agent: &LoopAgent, at: StepEvent, request: &ModelRequest) {
    let tools = request.tools.clone().unwrap_or_default();
    let mut options = serde_json::json!({ "model": request.model });
    if let Some(m) = request.max_tokens {
        options["maxTokens"] = m.into();
    }
    if let Some(t) = request.temperature {
        options["temperature"] = t.into();
    }
    if let Some(s) = &request.stop {
        options["stop"] = serde_json::json!(s);
    }
    let mut changed = Vec::new();
    {
        let mut logged = lock(&agent.logged);
        if logged.system != request.system {
            logged.system.clone_from(&request.system);
            changed.push((
                crate::REQUEST_SYSTEM_KIND,
                serde_json::json!({ "text": request.system }),
            ));
        }
        // One tool set step after step is one shared set: equal by pointer.
        if logged.tools != tools {
            logged.tools = tools.clone();
            changed.push((
                crate::REQUEST_TOOLS_KIND,
                serde_json::json!({ "tools": tools }),
            ));
        }
        if logged.options.as_ref() != Some(&options) {
            logged.options = Some(options.clone());
            changed.push((crate::REQUEST_OPTIONS_KIND, options));
        }
    }
    for (kind, data) in changed {
        agent.record(EventPayload::Other {
            kind: kind.to_string(),
            data,
        });
    }
    let mut sent = serde_json::json!({ "turn": at.turn, "step": at.step });
    if !request
        .messages
        .same_snapshot(&agent.session.derive_messages())
    {
        sent["messages"] = serde_json::to_value(&request.messages).unwrap_or_default();
    }
    agent.record(EventPayload::Other {
        kind: crate::REQUEST_SENT_KIND.to_string(),
        data: sent,
    });
}

/// Brings the agent's meter up to date with its log and, when the context
/// window is known, logs `context/usage` `{turn, step, tokens, window,
/// percent}`: the estimated size of the next request.
fn record_context_usage(agent: &LoopAgent, at: StepEvent) {
    let Some(window) = agent.options.context_window else {
        return;
    };
    let tokens = {
        let mut m = lock(&agent.meter);
        let (meter, fixed) = &mut *m;
        for e in agent.session.events_since(meter.observed()) {
            meter.observe(&e.data);
        }
        meter.estimate(*fixed)
    };
    let percent = dsh_session::percent(tokens, window);
    agent.record(EventPayload::Other {
        kind: crate::CONTEXT_USAGE_KIND.to_string(),
        data: serde_json::json!({
            "turn": at.turn,
            "step": at.step,
            "tokens": tokens,
            "window": window,
            "percent": percent,
        }),
    });
}

/// What every tool call of a turn carries in its extensions: the agent (as
/// `Arc<dyn Agent>` and as the tools' [`ContextSink`]) and the turn's retry
/// guard. Built once per turn; each call shares it.
fn call_extensions(agent: &Arc<LoopAgent>, guard: &Arc<TurnGuard>) -> Extensions {
    let mut extensions = Extensions::new();
    extensions.insert::<Arc<dyn Agent>>(agent.handle());
    extensions.insert::<Arc<dyn ContextSink>>(agent.clone());
    extensions.insert::<Arc<TurnGuard>>(guard.clone());
    extensions
}

/// Assembles the prompt and builds the step's request.
async fn build_request(agent: &LoopAgent, cancel: &CancellationToken) -> ModelRequest {
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
                .map(|t| t.tool_set())
                .unwrap_or_default(),
        ),
    };
    let system = crate::system_text(&rendered, agent.options.system_prompt.as_deref());
    if agent.options.context_window.is_some() {
        // The fixed part of the request, for the meter while no usage
        // report anchors it.
        let mut m = lock(&agent.meter);
        if !m.0.is_anchored() {
            m.1 = dsh_session::fixed_bytes(Some(&system), Some(&tools));
        }
    }
    ModelRequest {
        model: agent.options.model.clone().unwrap_or_default(),
        messages: agent.session.derive_messages(),
        system: (!system.is_empty()).then_some(system),
        tools: (!tools.is_empty()).then_some(tools),
        cancel: cancel.clone(),
        ..Default::default()
    }
}

/// Logs an error result for every call the failed step never ran, so the
/// history stays valid for providers that require an answer to every call.
fn synthesize_results(agent: &LoopAgent, at: StepEvent, unanswered: &[ToolCall], err: &DshError) {
    let error = ToolError::new(
        err.code().to_string(),
        format!(
            "tool call not executed: the step ended first ({})",
            err.message()
        ),
    );
    for call in unanswered {
        agent.record(EventPayload::ToolResult(ToolResultEvent {
            turn: at.turn,
            step: at.step,
            result: error_result(call.call_id.clone(), &error),
        }));
    }
}
