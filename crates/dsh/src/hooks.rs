//! Command hooks on the stack's seams (see the `dsh-hooks` crate for the
//! protocol):
//!
//! - `PreToolUse`: a `tools/pre-execute` guard. A block is a denial the
//!   model reads (`PERMISSION_DENIED`, "blocked by a PreToolUse hook:
//!   *reason*"); an ask goes to the approver like any question. A hook can
//!   only narrow: "allow" is "proceed" and never skips the sandbox or
//!   another guard. The arguments are never rewritten.
//! - `PostToolUse`: a `tools/execute` listener; after a call that
//!   succeeded, a block reason or additional context is appended to the
//!   result as a note for the model (the call already ran).
//! - `UserPromptSubmit`: [`Installed::submit_prompt`], which front ends call before
//!   sending a prompt: a block keeps the prompt from the model and tells
//!   the user why; context rides along in the same message.
//! - `Stop`: an `agent/turn-continuation` listener; when the turn is about
//!   to end and a hook blocks, its reason is steered to the model and the
//!   turn goes on (`stop_hook_active` is then true for the next stop).
//!
//! Every run is logged to the agent's session as `hook/ran`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use dsh_agent::{Agent, AgentRegistry};
use dsh_bash_local::LocalBashExecutor;
use dsh_hooks::{Effect, HookContext, HookEvent, Hooks, Outcome};
use dsh_kernel::sync::lock;
use dsh_kernel::Registration;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::EventPayload;
use dsh_tools::{Execution, PreExecute, Question, ToolRegistry, Verdict};

/// Event kind of one hook run in the session log.
pub const HOOK_RAN_KIND: &str = "hook/ran";

/// The plugin name steered `Stop` reasons carry.
pub const HOOK_SOURCE: &str = "hooks";

/// What the wiring needs to describe an event.
#[derive(Clone)]
struct Where {
    cwd: PathBuf,
    session_dir: Option<PathBuf>,
    executor: Arc<LocalBashExecutor>,
}

impl Where {
    fn context(&self, agent: Option<&Arc<dyn Agent>>) -> HookContext {
        let session_id = agent
            .map(|a| a.session().id().to_string())
            .unwrap_or_default();
        let transcript_path = match (&self.session_dir, agent) {
            (Some(dir), Some(_)) => Some(dir.join(format!("{session_id}.jsonl"))),
            _ => None,
        };
        HookContext {
            session_id,
            transcript_path,
            cwd: self.cwd.clone(),
            permission_mode: self.executor.sandbox_mode().as_str().to_string(),
        }
    }
}

/// Logs each run of `outcome` to `agent`'s session.
fn log_runs(agent: Option<&Arc<dyn Agent>>, outcome: &Outcome) {
    let Some(agent) = agent else { return };
    for run in &outcome.runs {
        agent.session().append(EventPayload::Other {
            kind: HOOK_RAN_KIND.to_string(),
            data: run.to_json(),
        });
    }
}

/// The hooks installed on a stack; [`Installed::submit_prompt`] is the
/// `UserPromptSubmit` entry point.
pub struct Installed {
    hooks: Arc<Hooks>,
    place: Where,
}

/// Installs `hooks` on the registries. `session_dir`: where session logs
/// are (the hooks' `transcript_path`), `None` when sessions are not
/// persisted. Undo the registration to remove every listener.
pub fn install(
    hooks: Arc<Hooks>,
    tools: &ToolRegistry,
    agents: &AgentRegistry,
    executor: Arc<LocalBashExecutor>,
    cwd: PathBuf,
    session_dir: Option<PathBuf>,
) -> (Arc<Installed>, Registration) {
    let place = Where {
        cwd,
        session_dir,
        executor,
    };
    let mut regs = Vec::new();
    if hooks.has(HookEvent::PreToolUse) {
        let (h, p) = (hooks.clone(), place.clone());
        regs.push(tools.add_guard(move |pre: &PreExecute| {
            let agent = pre.extensions.get::<Arc<dyn Agent>>().cloned();
            let run = h.pre_tool_use(
                &p.context(agent.as_ref()),
                &pre.call.name,
                &pre.call.arguments,
            );
            let call = pre.call.clone();
            Box::pin(async move {
                let outcome = run.await;
                log_runs(agent.as_ref(), &outcome);
                match outcome.effect {
                    Effect::Proceed => Verdict::Allow,
                    Effect::Block(reason) => Verdict::Deny(format!(
                        "blocked by a PreToolUse hook: {}",
                        or_default(&reason, "no reason given")
                    )),
                    Effect::Ask(reason) => Verdict::Ask(Question {
                        summary: format!(
                            "run {} (a PreToolUse hook asks: {})",
                            call.name,
                            or_default(&reason, "no reason given")
                        ),
                        detail: Some(call.arguments.clone()),
                        justification: None,
                        grant_key: Some(format!("hook {} {}", call.name, call.arguments)),
                    }),
                }
            })
        }));
    }
    if hooks.has(HookEvent::PostToolUse) {
        let (h, p) = (hooks.clone(), place.clone());
        regs.push(tools.on_execute().on(move |(call, env): Execution, next| {
            let h = h.clone();
            let p = p.clone();
            let agent = env.extensions.get::<Arc<dyn Agent>>().cloned();
            async move {
                let (name, arguments) = (call.name.clone(), call.arguments.clone());
                let mut result = next.run((call, env)).await;
                if result.is_error {
                    return result;
                }
                let outcome = h
                    .post_tool_use(
                        &p.context(agent.as_ref()),
                        &name,
                        &arguments,
                        &result.text(),
                    )
                    .await;
                log_runs(agent.as_ref(), &outcome);
                if let Effect::Block(reason) = &outcome.effect {
                    if !reason.is_empty() {
                        result
                            .content
                            .push(ContentBlock::text(format!("[PostToolUse hook: {reason}]")));
                    }
                }
                if let Some(context) = outcome.context_text() {
                    result.content.push(ContentBlock::text(format!(
                        "[PostToolUse hook context: {context}]"
                    )));
                }
                result
            }
        }));
    }
    if hooks.has(HookEvent::Stop) {
        let (h, p) = (hooks.clone(), place.clone());
        // Per agent: the turn that already went on because of a Stop hook.
        let continued: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
        regs.push(agents.hooks().turn_continuation.on(move |ctx, next| {
            let (h, p, continued) = (h.clone(), p.clone(), continued.clone());
            async move {
                let agent = ctx.agent.clone();
                let turn = ctx.turn;
                let cont = next.run(ctx).await?;
                if cont {
                    return Ok(true);
                }
                let key = agent.id().to_string();
                let active = lock(&continued).get(&key) == Some(&turn);
                let outcome = h.stop(&p.context(Some(&agent)), active).await;
                log_runs(Some(&agent), &outcome);
                let Effect::Block(reason) = outcome.effect else {
                    return Ok(false);
                };
                lock(&continued).insert(key, turn);
                let note = format!(
                    "A Stop hook kept the turn going: {}",
                    or_default(&reason, "no reason given")
                );
                let source = MessageSource::Plugin {
                    plugin: HOOK_SOURCE.to_string(),
                };
                // A disposed agent refuses; the turn then ends as planned.
                Ok(agent.steer(vec![ContentBlock::text(note)], source).is_ok())
            }
        }));
    }
    let installed = Arc::new(Installed { hooks, place });
    (installed, Registration::merge(regs))
}

fn or_default<'a>(text: &'a str, default: &'a str) -> &'a str {
    if text.trim().is_empty() {
        default
    } else {
        text
    }
}

/// What the user is told about a prompt a hook blocked.
pub fn blocked_prompt_message(reason: &str) -> String {
    format!("prompt blocked by a UserPromptSubmit hook: {reason}")
}

/// A prompt after the `UserPromptSubmit` hooks.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptDecision {
    /// Send these blocks (the prompt, then any hook context).
    Send(Vec<ContentBlock>),
    /// A hook blocked the prompt; the reason is for the user.
    Blocked(String),
}

impl Installed {
    /// Runs the `UserPromptSubmit` hooks on `prompt` for `agent` and says
    /// what to send. Warnings of failing hooks are logged (and in the
    /// `hook/ran` records); they never block.
    pub async fn submit_prompt(&self, agent: &Arc<dyn Agent>, prompt: &str) -> PromptDecision {
        if !self.hooks.has(HookEvent::UserPromptSubmit) {
            return PromptDecision::Send(vec![ContentBlock::text(prompt)]);
        }
        let outcome = self
            .hooks
            .user_prompt_submit(&self.place.context(Some(agent)), prompt)
            .await;
        log_runs(Some(agent), &outcome);
        if let Effect::Block(reason) = &outcome.effect {
            return PromptDecision::Blocked(
                or_default(reason, "blocked by a UserPromptSubmit hook").to_string(),
            );
        }
        let mut blocks = vec![ContentBlock::text(prompt)];
        if let Some(context) = outcome.context_text() {
            blocks.push(ContentBlock::text(format!(
                "<user-prompt-submit-hook>\n{context}\n</user-prompt-submit-hook>"
            )));
        }
        PromptDecision::Send(blocks)
    }

    /// The configured hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }
}
