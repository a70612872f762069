//! Plan mode: the model explores and writes a plan before it changes
//! anything.
//!
//! [`PlanMode`] is the one switch, kept on the [`Stack`](crate::Stack) and
//! shared by the guard ([`install_guard`]), the `exit_plan_mode` tool
//! ([`crate::tools::exit_plan_mode_tool`]) and the front ends (`/plan` in
//! chat, `--plan` on `dsh run`). While it is on, the guard denies the tools
//! that change files or run commands ([`DENIED_WHILE_PLANNING`]) with a
//! reason the model reads; everything else, `exit_plan_mode` included, runs
//! as usual. The tool list never changes between modes, so the provider's
//! prompt cache keeps serving the request prefix: the mode reaches the model
//! as a context message ([`ENTERED_TEXT`], [`LEFT_TEXT`]) and the log as a
//! [`PLAN_MODE_EVENT`].
//!
//! How a plan is reviewed is the front end's choice ([`PlanReview`]): the
//! chat asks the user (the session approver puts the question on the
//! terminal), `dsh run --plan` prints the plan and ends the turn.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dsh_agent::{Agent, AgentRegistry};
use dsh_kernel::sync::lock;
use dsh_kernel::Registration;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{EventPayload, SessionEvent};
use dsh_tools::{PreExecute, ToolRegistry, Verdict};

/// Kind of the log-only event recording a change of mode:
/// `{"active": bool, "source": "/plan" | "--plan" | "exit_plan_mode" | …}`.
pub const PLAN_MODE_EVENT: &str = "plan/mode";

/// The name of the tool that presents the plan and asks to leave plan mode.
pub const EXIT_PLAN_MODE_TOOL: &str = "exit_plan_mode";

/// The tools the guard denies while planning (`str_replace_editor` is
/// allowed with `command: "view"`; `bash_kill` is the hidden alias of
/// `job_kill`, still denied for the sessions that call it).
pub const DENIED_WHILE_PLANNING: [&str; 5] =
    ["write", "edit", "bash", "bash_kill", "str_replace_editor"];

/// The plugin name context messages about the mode come from.
pub const PLAN_SOURCE: &str = "plan";

/// The context message that tells the model it is planning.
pub const ENTERED_TEXT: &str = "Plan mode is on: you are planning, not executing. Explore with read-only tools (read, glob, grep, job_output) and change nothing: write, edit, bash and str_replace_editor (except its view command) are denied until the plan is approved. When the plan is ready, call exit_plan_mode with the whole plan in markdown (the steps, the files to change, how to verify); the user approves it or asks you to revise it.";

/// The context message that tells the model planning is over.
pub const LEFT_TEXT: &str = "Plan mode is off: you may edit files and run commands again.";

/// How `exit_plan_mode` has its plan reviewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlanReview {
    /// Ask the approver (the chat's terminal): approved leaves plan mode,
    /// rejected stays in it.
    #[default]
    Ask,
    /// No one to ask (`dsh run --plan`): the plan is kept for the front end
    /// to print ([`PlanMode::take_presented`]) and the turn ends after the
    /// step that presented it; plan mode stays on.
    Present,
}

/// The plan-mode switch of one stack.
#[derive(Debug, Default)]
pub struct PlanMode {
    active: AtomicBool,
    review: Mutex<PlanReview>,
    /// The plan presented under [`PlanReview::Present`], for the front end.
    presented: Mutex<Option<String>>,
    /// Set when a plan was presented under [`PlanReview::Present`]: the
    /// turn ends after the current step.
    end_turn: AtomicBool,
}

impl PlanMode {
    /// A switch, off, reviewing by asking.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Whether plan mode is on.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }

    /// Turns plan mode on or off. When it changes and `agent` is given, the
    /// agent's session logs [`PLAN_MODE_EVENT`] with `source`, and the model
    /// is told through a context message ([`ENTERED_TEXT`] or
    /// [`LEFT_TEXT`], from the plugin [`PLAN_SOURCE`]) visible to its next
    /// request. Returns whether the mode changed (setting the mode in force
    /// logs and announces nothing).
    pub fn set(&self, on: bool, source: &str, agent: Option<&dyn Agent>) -> bool {
        if self.active.swap(on, Ordering::SeqCst) == on {
            return false;
        }
        if let Some(agent) = agent {
            agent.session().append(EventPayload::Other {
                kind: PLAN_MODE_EVENT.to_string(),
                data: serde_json::json!({ "active": on, "source": source }),
            });
            let text = if on { ENTERED_TEXT } else { LEFT_TEXT };
            // A disposed agent has no next request to tell.
            let _ = agent.inject(
                vec![ContentBlock::text(text)],
                MessageSource::plugin(PLAN_SOURCE),
            );
        }
        true
    }

    /// Sets how plans are reviewed from now on.
    pub fn set_review(&self, review: PlanReview) {
        *lock(&self.review) = review;
    }

    /// How plans are reviewed.
    pub fn review(&self) -> PlanReview {
        *lock(&self.review)
    }

    /// Keeps `plan` for the front end and ends the turn after this step
    /// (what `exit_plan_mode` does under [`PlanReview::Present`]). A later
    /// plan replaces an earlier one.
    pub fn present(&self, plan: &str) {
        *lock(&self.presented) = Some(plan.to_string());
        self.end_turn.store(true, Ordering::SeqCst);
    }

    /// The plan presented last, taken (`None` when none was).
    pub fn take_presented(&self) -> Option<String> {
        lock(&self.presented).take()
    }

    /// Whether a presented plan asks the turn to end, clearing the request.
    fn take_end_turn(&self) -> bool {
        self.end_turn.swap(false, Ordering::SeqCst)
    }
}

/// Whether the session log `events` leaves plan mode on: the last
/// [`PLAN_MODE_EVENT`] says `active: true`. A resumed session keeps its
/// mode (the model was last told so).
pub fn active_in_log(events: &[SessionEvent]) -> bool {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.data {
            EventPayload::Other { kind, data } if kind == PLAN_MODE_EVENT => {
                Some(data.get("active").and_then(serde_json::Value::as_bool) == Some(true))
            }
            _ => None,
        })
        .unwrap_or(false)
}

/// The guard's verdict for a call of `tool` with the raw `arguments`:
/// [`Verdict::Allow`] when plan mode is off or the tool does not change
/// anything, else a denial starting with `plan mode:`.
/// `str_replace_editor` is allowed only for `command: "view"` (arguments
/// that do not parse are denied: while planning, doubt means no).
pub fn verdict(active: bool, tool: &str, arguments: &str) -> Verdict {
    if !active || !DENIED_WHILE_PLANNING.contains(&tool) {
        return Verdict::Allow;
    }
    if tool == "str_replace_editor" {
        let command = serde_json::from_str::<serde_json::Value>(arguments)
            .ok()
            .and_then(|v| v.get("command").and_then(|c| c.as_str()).map(String::from));
        if command.as_deref() == Some("view") {
            return Verdict::Allow;
        }
        return Verdict::Deny(format!(
            "plan mode: str_replace_editor {} is not allowed while planning (only its view command is); explore with read-only tools and call exit_plan_mode with your plan",
            command.as_deref().unwrap_or("without a command")
        ));
    }
    Verdict::Deny(format!(
        "plan mode: {tool} is not allowed while planning; explore with read-only tools (read, glob, grep) and call exit_plan_mode with your plan"
    ))
}

/// Installs the plan-mode guard on `registry`. Undo the registration to
/// remove it.
pub fn install_guard(registry: &ToolRegistry, plan: Arc<PlanMode>) -> Registration {
    registry.add_guard(move |pre: &PreExecute| {
        let verdict = verdict(plan.is_active(), &pre.call.name, &pre.call.arguments);
        Box::pin(async move { verdict })
    })
}

/// Ends the turn after a step in which `exit_plan_mode` presented a plan
/// under [`PlanReview::Present`] (no further model step: the front end
/// prints the plan). Undo the registration to remove it.
pub fn install_turn_end(agents: &AgentRegistry, plan: Arc<PlanMode>) -> Registration {
    agents.hooks().turn_continuation.on(move |ctx, next| {
        let end = plan.take_end_turn();
        async move {
            if end {
                return Ok(false);
            }
            next.run(ctx).await
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changing_tools_are_denied_and_only_while_planning() {
        for tool in ["write", "edit", "bash", "bash_kill"] {
            let Verdict::Deny(reason) = verdict(true, tool, "{}") else {
                panic!("{tool} is denied while planning");
            };
            assert!(reason.starts_with(&format!("plan mode: {tool} is not allowed")));
            assert!(reason.ends_with("call exit_plan_mode with your plan"));
            assert_eq!(verdict(false, tool, "{}"), Verdict::Allow);
        }
        for tool in [
            "read",
            "glob",
            "grep",
            "bash_output",
            "todo_write",
            "exit_plan_mode",
        ] {
            assert_eq!(verdict(true, tool, "{}"), Verdict::Allow, "{tool}");
        }
        let view = r#"{"command":"view","path":"/x"}"#;
        assert_eq!(verdict(true, "str_replace_editor", view), Verdict::Allow);
        let create = r#"{"command":"create","path":"/x","file_text":""}"#;
        let Verdict::Deny(reason) = verdict(true, "str_replace_editor", create) else {
            panic!("create is denied");
        };
        assert!(
            reason.starts_with("plan mode: str_replace_editor create"),
            "{reason}"
        );
        assert!(matches!(
            verdict(true, "str_replace_editor", "{bad"),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn the_last_mode_event_of_a_log_decides() {
        let ev = |seq, active| SessionEvent {
            seq,
            time: 0,
            data: EventPayload::Other {
                kind: PLAN_MODE_EVENT.into(),
                data: serde_json::json!({"active": active, "source": "/plan"}),
            },
        };
        assert!(!active_in_log(&[]));
        assert!(active_in_log(&[ev(0, true)]));
        assert!(!active_in_log(&[ev(0, true), ev(1, false)]));
        assert!(active_in_log(&[ev(0, false), ev(1, true)]));
    }
}
