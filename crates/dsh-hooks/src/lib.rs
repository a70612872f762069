//! Command hooks compatible with Claude Code's hook protocol.
//!
//! A hook is a shell command run on an agent event: `PreToolUse` (before a
//! tool call runs), `PostToolUse` (after it succeeded), `UserPromptSubmit`
//! (when the user sends a prompt) and `Stop` (when a turn is about to
//! end). It reads the event as JSON on stdin (`session_id`,
//! `transcript_path`, `cwd`, `permission_mode`, `hook_event_name`, and per
//! event `tool_name`, `tool_input`, `tool_response`, `prompt`,
//! `stop_hook_active`) and answers by exit code and stdout ([`decision`]).
//!
//! Start at [`Hooks`]: built from a [`HookSet`] (dsh.toml's
//! `[[hooks.<Event>]]`, a pasted Claude Code `hooks.json`) and the
//! environment hooks get (the caller scrubs it, as for bash), it runs the
//! hooks matching an event concurrently and combines their answers into one
//! [`Outcome`]: the most restrictive effect, every context text, every
//! warning, and a record of each run for the session log.
//!
//! Hooks run unconfined (they are the user's own programs), each in its own
//! session without a terminal, killed with its process group at its
//! timeout (60 s by default) or when the event's future is dropped.

#![warn(missing_docs)]

pub mod decision;
pub mod run;
pub mod spec;

use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{json, Map, Value};

pub use decision::Effect;
pub use spec::{claude_code_name, Dialect, Hook, HookEntry, HookEvent, HookSet, HooksSection};

/// A boxed, sendable, `'static` future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Who and where: the fields every event carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookContext {
    /// The session's id (`session_id`).
    pub session_id: String,
    /// The session log (`transcript_path`), when it is a file.
    pub transcript_path: Option<PathBuf>,
    /// The working directory (`cwd`; hooks run there, and it is
    /// `CLAUDE_PROJECT_DIR` and `DSH_PROJECT_DIR` in their environment).
    pub cwd: PathBuf,
    /// The permission mode in force (`permission_mode`, dsh's names:
    /// `read-only`, `workspace-write`, `danger-full-access`).
    pub permission_mode: String,
}

/// One hook run, for the session log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    /// The event.
    pub event: HookEvent,
    /// The command.
    pub command: String,
    /// Its exit code (`None`: killed, timed out or not started).
    pub exit: Option<i32>,
    /// It was killed at its timeout.
    pub timed_out: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// What it decided.
    pub effect: Effect,
}

impl RunRecord {
    /// The record as the `hook/ran` event's data.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "event": self.event.name(),
            "command": self.command,
            "exit": self.exit,
            "timedOut": self.timed_out,
            "durationMs": self.duration_ms,
            "effect": self.effect.name(),
        });
        if let Effect::Ask(r) | Effect::Block(r) = &self.effect {
            v["reason"] = json!(r);
        }
        v
    }
}

/// The combined answer of every hook that ran on one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The most restrictive effect ([`Effect::Proceed`] when no hook ran).
    pub effect: Effect,
    /// Context texts for the model, in configuration order.
    pub context: Vec<String>,
    /// Warnings for the user (failing hooks, `systemMessage`).
    pub warnings: Vec<String>,
    /// One record per hook run, in configuration order.
    pub runs: Vec<RunRecord>,
}

impl Outcome {
    /// No hook ran.
    pub fn none() -> Self {
        Outcome {
            effect: Effect::Proceed,
            context: Vec::new(),
            warnings: Vec::new(),
            runs: Vec::new(),
        }
    }

    /// The context texts joined by blank lines; `None` when there is none.
    pub fn context_text(&self) -> Option<String> {
        (!self.context.is_empty()).then(|| self.context.join("\n\n"))
    }
}

/// The hooks of a process and the environment they run with.
#[derive(Debug, Default)]
pub struct Hooks {
    set: HookSet,
    env: Vec<(OsString, OsString)>,
}

impl Hooks {
    /// Hooks from `set`, run with exactly `env` (plus
    /// `CLAUDE_PROJECT_DIR` and `DSH_PROJECT_DIR`); scrub it first.
    pub fn new(set: HookSet, env: Vec<(OsString, OsString)>) -> Arc<Self> {
        Arc::new(Hooks { set, env })
    }

    /// The configured hooks.
    pub fn set(&self) -> &HookSet {
        &self.set
    }

    /// Whether any hook runs on `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.set.has(event)
    }

    /// `PreToolUse` for a call of `tool` with the model's raw `arguments`
    /// (`tool_input`: the parsed JSON, or the text when it does not parse).
    pub fn pre_tool_use(
        self: &Arc<Self>,
        ctx: &HookContext,
        tool: &str,
        arguments: &str,
    ) -> BoxFuture<Outcome> {
        let mut fields = Map::new();
        fields.insert("tool_input".into(), tool_input(arguments));
        self.dispatch(HookEvent::PreToolUse, ctx, Some(tool), fields)
    }

    /// `PostToolUse` after a call of `tool` succeeded with the result text
    /// `response` (`tool_response`).
    pub fn post_tool_use(
        self: &Arc<Self>,
        ctx: &HookContext,
        tool: &str,
        arguments: &str,
        response: &str,
    ) -> BoxFuture<Outcome> {
        let mut fields = Map::new();
        fields.insert("tool_input".into(), tool_input(arguments));
        fields.insert("tool_response".into(), json!(response));
        self.dispatch(HookEvent::PostToolUse, ctx, Some(tool), fields)
    }

    /// `UserPromptSubmit` for the user's `prompt`.
    pub fn user_prompt_submit(
        self: &Arc<Self>,
        ctx: &HookContext,
        prompt: &str,
    ) -> BoxFuture<Outcome> {
        let mut fields = Map::new();
        fields.insert("prompt".into(), json!(prompt));
        self.dispatch(HookEvent::UserPromptSubmit, ctx, None, fields)
    }

    /// `Stop` when a turn is about to end; `stop_hook_active`: the turn
    /// already went on once because a `Stop` hook blocked.
    pub fn stop(self: &Arc<Self>, ctx: &HookContext, stop_hook_active: bool) -> BoxFuture<Outcome> {
        let mut fields = Map::new();
        fields.insert("stop_hook_active".into(), json!(stop_hook_active));
        self.dispatch(HookEvent::Stop, ctx, None, fields)
    }

    /// Runs every hook of `event` matching `tool`, concurrently; the
    /// outcome lists them in configuration order. Dropping the future
    /// kills the hooks still running.
    fn dispatch(
        self: &Arc<Self>,
        event: HookEvent,
        ctx: &HookContext,
        tool: Option<&str>,
        fields: Map<String, Value>,
    ) -> BoxFuture<Outcome> {
        let hooks: Vec<Hook> = self.set.matching(event, tool).cloned().collect();
        if hooks.is_empty() {
            return Box::pin(async { Outcome::none() });
        }
        let mut env = self.env.clone();
        for name in ["CLAUDE_PROJECT_DIR", "DSH_PROJECT_DIR"] {
            env.retain(|(k, _)| k != name);
            env.push((name.into(), ctx.cwd.clone().into_os_string()));
        }
        let runs = hooks.into_iter().map(|hook| {
            let input = payload(&hook, event, ctx, tool, &fields);
            let cwd = ctx.cwd.clone();
            let env = env.clone();
            async move {
                let run = run::run_command(&hook.command, &input, &cwd, &env, hook.timeout).await;
                (decision::read(event, &hook.command, &run), hook, run)
            }
        });
        let all = futures_util::future::join_all(runs);
        Box::pin(async move {
            let mut outcome = Outcome::none();
            for (reading, hook, run) in all.await {
                if let Some(w) = reading.warning {
                    tracing::warn!(target: "dsh_hooks", event = event.name(), "{w}");
                    outcome.warnings.push(w);
                }
                if let Some(c) = reading.context {
                    outcome.context.push(c);
                }
                outcome.runs.push(RunRecord {
                    event,
                    command: hook.command,
                    exit: run.exit,
                    timed_out: run.timed_out,
                    duration_ms: u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX),
                    effect: reading.effect.clone(),
                });
                outcome.effect = outcome.effect.narrow(reading.effect);
            }
            outcome
        })
    }
}

fn tool_input(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| json!(arguments))
}

/// The JSON a hook reads on stdin.
fn payload(
    hook: &Hook,
    event: HookEvent,
    ctx: &HookContext,
    tool: Option<&str>,
    fields: &Map<String, Value>,
) -> Vec<u8> {
    let mut v = Map::new();
    v.insert("session_id".into(), json!(ctx.session_id));
    if let Some(t) = &ctx.transcript_path {
        v.insert("transcript_path".into(), json!(t));
    }
    v.insert("cwd".into(), json!(ctx.cwd));
    v.insert("permission_mode".into(), json!(ctx.permission_mode));
    v.insert("hook_event_name".into(), json!(event.name()));
    if let Some(tool) = tool {
        v.insert("tool_name".into(), json!(hook.tool_name_for(tool)));
    }
    for (k, val) in fields {
        v.insert(k.clone(), val.clone());
    }
    let mut bytes = serde_json::to_vec(&Value::Object(v)).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}
