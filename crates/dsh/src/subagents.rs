//! Sub-agents: the `subagent` and `subagent_fork` tools.
//!
//! A call starts a child agent on the caller's model and options, with the
//! same tools (the registry is shared; at the depth limit the child's
//! requests leave out `subagent` and `subagent_fork`), the same permission
//! mode and approver (the executor, the file fence and the approval policy
//! are the stack's, so a child is never wider than its parent), and its own
//! session file. That file's first event is [`SUBAGENT_START_EVENT`] naming
//! the parent's session and the call; the parent's log records
//! [`SUBAGENT_SPAWNED_EVENT`] with the child's session id.
//!
//! `subagent` starts from a fresh history: the prompt is the child's first
//! message. `subagent_fork` starts from a copy of the parent's history
//! (everything before the reply that made the call), one-shot and in the
//! foreground only. In the foreground the call's result is the child's
//! final answer (an error result, `SUBAGENT_FAILED`, when its turn did not
//! complete, naming how it ended); with `run_in_background: true` the call
//! returns the child's id (`agent-N`, a job of the caller) at once and the
//! answer arrives as a notice when the child finishes (waking an idle
//! parent). A child is disposed once its turn ended; its session file
//! stays and can be resumed.
//!
//! Limits: children nest at most `[subagents] max_depth` deep (default 3;
//! 0 forbids them), an agent runs at most [`MAX_RUNNING_CHILDREN`] at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use dsh_agent::{Agent, AgentRegistry, RequestContext};
use dsh_agent_loop::{AgentLoop, LoopSetup};
use dsh_jobs::{JobInfo, JobSource, JobTable};
use dsh_kernel::sync::lock;
use dsh_kernel::{BoxFuture, Kernel, Registration};
use dsh_llm::{ContentBlock, MessageSource};
use dsh_protocol::codes;
use dsh_session::{EventPayload, SessionEvent, TurnEndReason};
use dsh_tools::{define_tool, ContextSink, ToolArgs, ToolContext, ToolError, ToolRegistry};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Kind of the first event of a child's session: `{"parentSessionId",
/// "parentAgentId", "callId", "description", "depth", "fork"}`.
pub const SUBAGENT_START_EVENT: &str = "subagent/start";

/// Kind of the event in the parent's log when a child starts:
/// `{"agentId", "sessionId", "callId", "description", "background",
/// "fork"}`.
pub const SUBAGENT_SPAWNED_EVENT: &str = "subagent/spawned";

/// Default of `[subagents] max_depth`.
pub const DEFAULT_MAX_DEPTH: u32 = 3;

/// At most this many children of one agent run at once.
pub const MAX_RUNNING_CHILDREN: usize = 4;

/// The source of a background child's completion notice.
pub const NOTICE_SOURCE: &str = "subagent";

/// How long an aborted child may take to end its turn before it is
/// disposed anyway.
const ABORT_GRACE: Duration = Duration::from_secs(5);

/// Description of `subagent`.
pub const SUBAGENT_DESCRIPTION: &str = "Start a subagent: a fresh agent with your tools that works on one task in its own context and returns its final answer. It sees none of this conversation, so put everything it needs in `prompt` (goal, files, constraints, what to report). Use it for research or a scoped change that would fill your context. With run_in_background: true the call returns the subagent's job id at once; its answer arrives as a notice when it finishes (or read it with job_output).";

/// Description of `subagent_fork`.
pub const SUBAGENT_FORK_DESCRIPTION: &str = "Start a subagent from a copy of this conversation so far: it knows everything you know and works on `prompt` in its own context, then returns its final answer. Foreground only.";

/// Arguments of `subagent` and `subagent_fork`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct SubagentArgs {
    /// A short (3-5 words) description of the task, shown to the user.
    #[tool(min_length = 1)]
    pub description: String,
    /// The task for the subagent.
    #[tool(min_length = 1)]
    pub prompt: String,
    /// Run in the background: return the subagent's job id at once (not for subagent_fork).
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// The sub-agent service: spawns children, tracks their depth and their
/// background runs (the `agent` jobs).
pub struct Subagents {
    me: Weak<Subagents>,
    kernel: Kernel,
    agents: Arc<AgentRegistry>,
    jobs: Arc<JobTable>,
    max_depth: u32,
    step_limits: dsh_llm::StepLimits,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The depth of every live child by agent id (an agent not here is a
    /// root: depth 0).
    depth: HashMap<String, u32>,
    /// Children by agent id.
    children: HashMap<String, Child>,
    next: u64,
}

struct Child {
    parent: String,
    description: String,
    agent: Arc<dyn Agent>,
    /// Set once the child's turn ended: completed?, the answer or what
    /// went wrong.
    outcome: Option<(bool, String)>,
    /// Whether `job_output` has returned the outcome already.
    read: bool,
    /// Cancelled when the outcome is set.
    ended: CancellationToken,
}

impl Subagents {
    /// The service for agents made in `kernel` (which must hold the loop's
    /// services, `agents` among them); background children are jobs of
    /// `jobs`.
    pub fn new(
        kernel: Kernel,
        agents: Arc<AgentRegistry>,
        jobs: Arc<JobTable>,
        max_depth: u32,
        step_limits: dsh_llm::StepLimits,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Subagents {
            me: me.clone(),
            kernel,
            agents,
            jobs,
            max_depth,
            step_limits,
            state: Mutex::new(State::default()),
        })
    }

    /// Registers `subagent` and `subagent_fork` (those `keep` accepts), the
    /// `agent` job source and the request filter that hides them from
    /// children at the depth limit. Undo removes all of it.
    ///
    /// # Errors
    /// A tool name is taken (nothing stays registered then).
    pub fn install(
        self: &Arc<Self>,
        tools: &ToolRegistry,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Registration, ToolError> {
        let kept: Vec<_> = [self.tool(false), self.tool(true)]
            .into_iter()
            .filter(|t| keep(&t.schema().name))
            .collect();
        let registered = tools.register_all(kept)?;
        let source = self
            .jobs
            .add_source("agent", Arc::new(AgentJobs(self.me.clone())));
        let me = self.me.clone();
        let filter = self
            .agents
            .hooks()
            .request
            .on(move |mut ctx: RequestContext, next| {
                let at_limit = me
                    .upgrade()
                    .is_some_and(|me| me.depth_of(ctx.agent.id().as_str()) >= me.max_depth);
                if at_limit {
                    if let Some(tools) = &ctx.request.tools {
                        let kept: Vec<_> = tools
                            .iter()
                            .filter(|t| t.name != "subagent" && t.name != "subagent_fork")
                            .cloned()
                            .collect();
                        ctx.request.tools = (!kept.is_empty()).then(|| kept.into());
                    }
                }
                next.run(ctx)
            });
        Ok(Registration::merge(vec![registered, source, filter]))
    }

    /// The depth of agent `id`: 0 for a root agent, 1 for its children, ….
    pub fn depth_of(&self, id: &str) -> u32 {
        lock(&self.state).depth.get(id).copied().unwrap_or(0)
    }

    /// Aborts every running child (their runs then dispose them). For
    /// shutdown.
    pub fn abort_all(&self) {
        let running: Vec<Arc<dyn Agent>> = lock(&self.state)
            .children
            .values()
            .filter(|c| c.outcome.is_none())
            .map(|c| c.agent.clone())
            .collect();
        for agent in running {
            agent.abort(Some("dsh is shutting down".into()));
        }
    }

    fn tool(&self, fork: bool) -> Arc<dyn dsh_tools::Tool> {
        let me = self.me.clone();
        let (name, description) = if fork {
            ("subagent_fork", SUBAGENT_FORK_DESCRIPTION)
        } else {
            ("subagent", SUBAGENT_DESCRIPTION)
        };
        define_tool(name, description, move |args: SubagentArgs, ctx| {
            let me = me.upgrade();
            async move {
                let Some(me) = me else {
                    return Err(ToolError::new(
                        codes::DISPOSED,
                        "subagents are no longer available",
                    ));
                };
                me.call(args, ctx, fork).await
            }
        })
        .concurrency_safe()
        .into_arc()
    }

    async fn call(
        self: Arc<Self>,
        args: SubagentArgs,
        ctx: ToolContext,
        fork: bool,
    ) -> Result<Vec<ContentBlock>, ToolError> {
        let Some(parent) = ctx.get::<Arc<dyn Agent>>().cloned() else {
            return Err(ToolError::new(
                codes::TOOL_FAILED,
                "subagents can only be started by an agent",
            ));
        };
        let background = args.run_in_background == Some(true);
        if fork && background {
            return Err(ToolError::new(
                codes::INVALID_ARGS,
                "invalid arguments: subagent_fork runs in the foreground only; drop run_in_background or use subagent",
            ));
        }
        let depth = self.depth_of(parent.id().as_str());
        if depth >= self.max_depth {
            return Err(ToolError::new(
                codes::SUBAGENT_DEPTH_LIMIT,
                format!(
                    "subagents may nest at most {} deep and this agent is at depth {depth}; do the task yourself",
                    self.max_depth
                ),
            ));
        }
        let slot = if background {
            Some(self.jobs.reserve(&dsh_jobs::owner_of(&ctx))?)
        } else {
            None
        };
        let (id, handle) = self.spawn(&parent, &args, &ctx, fork, depth + 1)?;
        let agent = handle.agent();
        let run = self.clone().run(id.clone(), handle, args.prompt);
        if let Some(slot) = slot {
            slot.adopt(&id);
            let sink = ctx.sink().cloned();
            let me = self.clone();
            let description = args.description.clone();
            tokio::spawn(async move {
                let (completed, text) = run.await;
                // The notice first: once the job reads as ended, whoever
                // waits for it (job_output, `dsh run`) finds the parent
                // already told.
                let told = me.notify(sink, &id, &description, completed, &text);
                me.finish(&id, (completed, text), told);
            });
            return Ok(vec![ContentBlock::text(format!(
                "started subagent {} in the background (session {}); its answer arrives as a notice when it finishes, or read it with job_output",
                agent.id(),
                agent.session().id()
            ))]);
        }
        let mut run = std::pin::pin!(run);
        let (completed, text) = tokio::select! {
            out = &mut run => out,
            () = ctx.cancel.cancelled() => {
                agent.abort(Some("the subagent call was aborted".into()));
                run.await
            }
        };
        self.finish(&id, (completed, text.clone()), false);
        if completed {
            Ok(vec![ContentBlock::text(text)])
        } else {
            Err(ToolError::new(codes::SUBAGENT_FAILED, text))
        }
    }

    /// Creates the child and records it in both logs.
    fn spawn(
        &self,
        parent: &Arc<dyn Agent>,
        args: &SubagentArgs,
        ctx: &ToolContext,
        fork: bool,
        depth: u32,
    ) -> Result<(String, dsh_agent_loop::AgentHandle), ToolError> {
        let parent_id = parent.id().to_string();
        let id = {
            let mut st = lock(&self.state);
            let running = st
                .children
                .values()
                .filter(|c| c.parent == parent_id && c.outcome.is_none())
                .count();
            if running >= MAX_RUNNING_CHILDREN {
                return Err(ToolError::new(
                    codes::TOO_MANY_SUBAGENTS,
                    format!(
                        "this agent already runs {running} subagents (at most {MAX_RUNNING_CHILDREN}); wait for one to finish"
                    ),
                ));
            }
            st.next += 1;
            format!("agent-{}", st.next)
        };
        let parent_session = parent.session();
        let session_id = dsh_session::new_session_id().into_string();
        let link = EventPayload::Other {
            kind: SUBAGENT_START_EVENT.to_string(),
            data: json!({
                "parentSessionId": parent_session.id().as_str(),
                "parentAgentId": parent_id,
                "callId": ctx.call_id.as_str(),
                "description": args.description,
                "depth": depth,
                "fork": fork,
            }),
        };
        let now = now_ms();
        let seed = if fork {
            let events: Vec<SessionEvent> = parent_session
                .events()
                .iter()
                .map(|e| (**e).clone())
                .collect();
            let cut = reply_of(&events, ctx.call_id.as_str()).unwrap_or(events.len());
            dsh_session::fork_seed(&events[..cut], link, now)
        } else {
            vec![SessionEvent {
                seq: 0,
                time: now,
                data: link,
            }]
        };
        let handle = AgentLoop::create_with(
            &self.kernel,
            &id,
            parent.options().clone(),
            LoopSetup {
                session_id: Some(session_id.clone()),
                seed,
                step_limits: self.step_limits,
            },
        )
        .map_err(|e| ToolError::new(codes::TOOL_FAILED, format!("cannot start a subagent: {e}")))?;
        parent_session.append(EventPayload::Other {
            kind: SUBAGENT_SPAWNED_EVENT.to_string(),
            data: json!({
                "agentId": id,
                "sessionId": session_id,
                "callId": ctx.call_id.as_str(),
                "description": args.description,
                "background": args.run_in_background == Some(true),
                "fork": fork,
            }),
        });
        let mut st = lock(&self.state);
        st.depth.insert(id.clone(), depth);
        st.children.insert(
            id.clone(),
            Child {
                parent: parent_id,
                description: args.description.clone(),
                agent: handle.agent(),
                outcome: None,
                read: false,
                ended: CancellationToken::new(),
            },
        );
        Ok((id, handle))
    }

    /// Sends the prompt, waits for the child's turn to end and disposes
    /// the child. Resolves to (completed, answer or what went wrong); the
    /// caller records it with [`Subagents::finish`].
    async fn run(
        self: Arc<Self>,
        id: String,
        handle: dsh_agent_loop::AgentHandle,
        prompt: String,
    ) -> (bool, String) {
        let agent = handle.agent();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let tx = Mutex::new(Some(tx));
        let child = id.clone();
        let listener = self.agents.hooks().event.on(move |e| {
            if e.agent.id().as_str() != child {
                return;
            }
            if let EventPayload::TurnEnd(end) = &e.event.data {
                if let Some(tx) = lock(&tx).take() {
                    let _ = tx.send(end.reason.clone());
                }
            }
        });
        let reason = match agent.send(vec![ContentBlock::text(prompt)], MessageSource::User) {
            Ok(()) => rx.await.ok(),
            Err(e) => Some(TurnEndReason::Error {
                message: e.to_string(),
                code: None,
            }),
        };
        listener.undo();
        let answer = final_answer(&agent);
        let outcome = match reason {
            Some(TurnEndReason::Completed) => (
                true,
                answer.unwrap_or_else(|| "(the subagent ended without an answer)".into()),
            ),
            Some(reason) => {
                let how = match &reason {
                    TurnEndReason::Error { message, code } => format!(
                        "failed{}: {message}",
                        code.as_deref()
                            .map(|c| format!(" ({c})"))
                            .unwrap_or_default()
                    ),
                    TurnEndReason::Aborted { reason } => {
                        format!("was aborted: {}", reason.as_deref().unwrap_or("aborted"))
                    }
                    other => format!("ended: {}", other.kind()),
                };
                let mut text = format!("the subagent {id} did not finish: it {how}");
                if let Some(a) = answer {
                    text.push_str(&format!("\nIts last answer:\n{a}"));
                }
                (false, text)
            }
            None => (false, format!("the subagent {id} was disposed")),
        };
        let _ = tokio::time::timeout(ABORT_GRACE, handle.dispose()).await;
        lock(&self.state).depth.remove(&id);
        outcome
    }

    /// Records child `id`'s outcome (`read`: its parent has the answer
    /// already, so `job_output` need not repeat it) and ends its job.
    fn finish(&self, id: &str, outcome: (bool, String), read: bool) {
        let mut st = lock(&self.state);
        if let Some(c) = st.children.get_mut(id) {
            c.outcome = Some(outcome);
            c.read |= read;
            c.ended.cancel();
        }
    }

    /// Delivers a background child's outcome to its parent; returns
    /// whether it was delivered.
    fn notify(
        &self,
        sink: Option<Arc<dyn ContextSink>>,
        id: &str,
        description: &str,
        completed: bool,
        text: &str,
    ) -> bool {
        let Some(sink) = sink else { return false };
        let head = if completed {
            format!("background subagent {id} ({description}) finished. Its answer:")
        } else {
            format!("background subagent {id} ({description}) did not finish.")
        };
        let notice = format!("{head}\n\n{text}");
        match sink.deliver_notice(
            vec![ContentBlock::text(notice)],
            MessageSource::plugin(NOTICE_SOURCE),
        ) {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(target: "dsh", subagent = %id, "subagent notice not delivered: {e}");
                false
            }
        }
    }
}

/// The position of the `assistant/message` holding the call `call_id`.
fn reply_of(events: &[SessionEvent], call_id: &str) -> Option<usize> {
    events.iter().rposition(|e| match &e.data {
        EventPayload::AssistantMessage(m) => m
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall(c) if c.call_id.as_str() == call_id)),
        _ => false,
    })
}

/// The text of the agent's last reply, when it has text.
fn final_answer(agent: &Arc<dyn Agent>) -> Option<String> {
    agent
        .session()
        .events()
        .iter()
        .rev()
        .find_map(|e| match &e.data {
            EventPayload::AssistantMessage(m) => {
                let text: String = m.content.iter().filter_map(ContentBlock::as_text).collect();
                Some(text).filter(|t| !t.trim().is_empty())
            }
            _ => None,
        })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Background children as `agent-N` jobs.
struct AgentJobs(Weak<Subagents>);

impl JobSource for AgentJobs {
    fn info(&self, id: &str) -> Option<JobInfo> {
        let me = self.0.upgrade()?;
        let st = lock(&me.state);
        let c = st.children.get(id)?;
        Some(JobInfo {
            id: id.to_string(),
            title: c.description.clone(),
            running: c.outcome.is_none(),
            status: match &c.outcome {
                None => "[status: running]".into(),
                Some((true, _)) => "[status: completed]".into(),
                Some((false, _)) => "[status: failed]".into(),
            },
        })
    }

    fn read(&self, id: &str) -> Result<String, ToolError> {
        let me = self
            .0
            .upgrade()
            .ok_or_else(|| ToolError::new(codes::DISPOSED, "subagents are gone"))?;
        let mut st = lock(&me.state);
        let Some(c) = st.children.get_mut(id) else {
            return Err(ToolError::new(
                codes::UNKNOWN_JOB,
                format!("no job \"{id}\""),
            ));
        };
        Ok(match &c.outcome {
            None => "[status: running]".to_string(),
            Some((ok, text)) => {
                let status = if *ok { "completed" } else { "failed" };
                if c.read {
                    format!("[status: {status}]")
                } else {
                    let text = text.clone();
                    c.read = true;
                    format!("{text}\n\n[status: {status}]")
                }
            }
        })
    }

    fn wait(&self, id: &str) -> BoxFuture<'static, ()> {
        let ended = self
            .0
            .upgrade()
            .and_then(|me| lock(&me.state).children.get(id).map(|c| c.ended.clone()));
        Box::pin(async move {
            if let Some(ended) = ended {
                ended.cancelled().await;
            }
        })
    }

    fn kill(
        &self,
        id: &str,
        reason: Option<&str>,
    ) -> BoxFuture<'static, Result<String, ToolError>> {
        let found = self.0.upgrade().and_then(|me| {
            lock(&me.state)
                .children
                .get(id)
                .map(|c| (c.agent.clone(), c.ended.clone(), c.outcome.is_some()))
        });
        let id = id.to_string();
        let reason = reason.map_or_else(|| "killed by its parent".to_string(), str::to_string);
        Box::pin(async move {
            let Some((agent, ended, done)) = found else {
                return Err(ToolError::new(
                    codes::UNKNOWN_JOB,
                    format!("no job \"{id}\""),
                ));
            };
            if done {
                return Ok(format!("subagent {id} had already finished"));
            }
            agent.abort(Some(reason));
            let _ = tokio::time::timeout(ABORT_GRACE, ended.cancelled()).await;
            Ok(format!("stopped subagent {id}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subagent_args_do_not_drift() {
        dsh_tools::testing::assert_no_drift::<SubagentArgs>(256);
    }
}
