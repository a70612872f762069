//! `exit_plan_mode`: presents the plan and asks to leave plan mode (see
//! [`crate::plan`]). Always registered, so the tool list is the same in
//! both modes; outside plan mode it is an error (`PLAN_MODE_INACTIVE`).

use std::sync::Arc;

use dsh_agent::Agent;
use dsh_llm::ContentBlock;
use dsh_protocol::codes;
use dsh_tools::{Approval, Approver, ArgsTool, Question, Tool, ToolArgs, ToolContext, ToolError};
use serde::{Deserialize, Serialize};

use crate::plan::{PlanMode, PlanReview, EXIT_PLAN_MODE_TOOL};

/// Arguments of `exit_plan_mode`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct ExitPlanModeArgs {
    /// The plan in markdown: the steps in order, the files each changes,
    /// how the result will be checked.
    #[tool(min_length = 1)]
    pub plan: String,
}

const DESCRIPTION: &str = "In plan mode, present your finished plan (markdown) to the user and ask to leave plan mode. Call it once you have explored enough to know what to change; the user approves the plan (plan mode ends and you carry it out) or rejects it with feedback (you stay in plan mode and revise). Only valid in plan mode.";

/// The summary of the question put to the user.
pub const QUESTION: &str = "carry out this plan (leaves plan mode)";

/// The result when the user approved the plan.
pub const APPROVED_TEXT: &str = "The user approved the plan. Plan mode is off: you may now edit files and run commands. Carry out the plan step by step.";

/// The result under [`PlanReview::Present`] (`dsh run --plan`).
pub const PRESENTED_TEXT: &str = "The plan was handed to the user (dsh run --plan prints it and ends the run here). Plan mode stays on; do not carry out the plan.";

/// The `exit_plan_mode` tool switching `plan`. Plans are put to the
/// approver in the call's extensions, else to `approver` (the stack's
/// session approver); without either nobody can approve and the call fails
/// with `PLAN_NOT_APPROVED`.
pub fn exit_plan_mode_tool(
    plan: Arc<PlanMode>,
    approver: Option<Arc<dyn Approver>>,
) -> Arc<dyn Tool> {
    ExitPlanMode { plan, approver }.into_tool().into_arc()
}

struct ExitPlanMode {
    plan: Arc<PlanMode>,
    approver: Option<Arc<dyn Approver>>,
}

impl ArgsTool for ExitPlanMode {
    type Args = ExitPlanModeArgs;

    fn name(&self) -> &str {
        EXIT_PLAN_MODE_TOOL
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn run(
        self: Arc<Self>,
        args: ExitPlanModeArgs,
        ctx: ToolContext,
    ) -> Result<Vec<ContentBlock>, ToolError> {
        if !self.plan.is_active() {
            return Err(ToolError::new(
                codes::PLAN_MODE_INACTIVE,
                "plan mode is not active, so there is nothing to exit: go ahead with the task (exit_plan_mode is only for presenting a plan while in plan mode)",
            ));
        }
        if self.plan.review() == PlanReview::Present {
            self.plan.present(&args.plan);
            return Ok(vec![ContentBlock::text(PRESENTED_TEXT)]);
        }
        let approver = ctx
            .get::<Arc<dyn Approver>>()
            .cloned()
            .or_else(|| self.approver.clone());
        let question = Question {
            summary: QUESTION.to_string(),
            detail: Some(args.plan.clone()),
            justification: None,
            grant_key: None,
        };
        let call = dsh_protocol::ToolCall::new(
            ctx.call_id.clone(),
            EXIT_PLAN_MODE_TOOL,
            serde_json::json!({ "plan": args.plan }).to_string(),
        );
        let answer = match approver {
            Some(a) => a.decide(&call, &question, &ctx.extensions).await,
            None => Approval::Unavailable("no user to approve".into()),
        };
        let stays = "You are still in plan mode: revise the plan with read-only tools and call exit_plan_mode again.";
        let refused = match answer {
            Approval::AllowedOnce | Approval::AllowedForSession => {
                let agent = ctx.get::<Arc<dyn Agent>>().map(|a| a.as_ref());
                self.plan.set(false, EXIT_PLAN_MODE_TOOL, agent);
                return Ok(vec![ContentBlock::text(APPROVED_TEXT)]);
            }
            Approval::Rejected { note: Some(note) } => {
                format!("the user rejected the plan and said: {note}\n{stays}")
            }
            Approval::Rejected { note: None } => format!("the user rejected the plan. {stays}"),
            Approval::Cancelled => {
                format!("the user dismissed the plan without approving it. {stays}")
            }
            Approval::Unavailable(reason) => {
                // NO_USER's advice (a wider permission mode) does not apply
                // to a plan.
                let reason = if reason == crate::approval::NO_USER {
                    "there is no user to ask".to_string()
                } else {
                    reason
                };
                format!(
                    "nobody could approve the plan ({reason}). Plan mode stays on: give the plan in your answer and end your turn."
                )
            }
        };
        Err(ToolError::new(codes::PLAN_NOT_APPROVED, refused))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_plan_mode_args_do_not_drift() {
        dsh_tools::testing::assert_no_drift::<ExitPlanModeArgs>(256);
    }
}
