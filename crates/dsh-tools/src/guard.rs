//! The guard stage: `tools/pre-execute` decides, per call and before
//! `tools/execute`, whether it may run (allow), must not (deny, with a
//! reason the model reads) or needs a person's consent (ask).
//!
//! Guards only narrow: each one's verdict is combined with the verdicts of
//! the guards after it, and the most restrictive wins (deny over ask over
//! allow), so no guard can let through what another refused. Guards see the
//! call read-only: what the model sent is what is logged and what runs.
//!
//! An `ask` goes to the [`Approver`] in the call's extensions, else to the
//! registry's ([`ToolRegistry::set_approver`](crate::ToolRegistry::set_approver));
//! without one, or when it cannot ask anybody, the call is denied (fail
//! closed).

use std::sync::Arc;

use dsh_kernel::{BoxFuture, Extensions};
use dsh_protocol::{SandboxMode, ToolCall};

/// A guard's answer for one call. Ordered by restrictiveness:
/// `Allow` < `Ask` < `Deny`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The call may run.
    Allow,
    /// The call may run only if a person agrees.
    Ask(Question),
    /// The call must not run; the reason is shown to the model.
    Deny(String),
}

impl Verdict {
    fn rank(&self) -> u8 {
        match self {
            Verdict::Allow => 0,
            Verdict::Ask(_) => 1,
            Verdict::Deny(_) => 2,
        }
    }

    /// The more restrictive of `self` and `other`; on a tie the first
    /// (`self`), so the outermost guard's question or reason is kept.
    pub fn narrow(self, other: Verdict) -> Verdict {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// What a person is asked before a call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// One line: what the call wants to do and why it needs consent
    /// (`run a command outside the sandbox`).
    pub summary: String,
    /// What will run or change, shown in full: the command, the diff.
    pub detail: Option<String>,
    /// The model's own reason for the request (`justification`).
    pub justification: Option<String>,
    /// What an "allow for the rest of the session" answer covers: calls
    /// whose key is equal (the exact command). `None`: only once.
    pub grant_key: Option<String>,
}

/// What the guards see: the call exactly as the model made it, and the
/// caller's extensions (the agent, the permission state).
#[derive(Debug, Clone)]
pub struct PreExecute {
    /// The call, shared read-only.
    pub call: Arc<ToolCall>,
    /// The caller's extensions of the call (see
    /// [`CallEnv::extensions`](crate::CallEnv::extensions)).
    pub extensions: Extensions,
}

/// Put into a call's extensions by the registry when a guard asked and
/// the approver allowed the call: the body may then do what the question
/// asked for (an escalation). A body that needs consent and finds no
/// `Approved` refuses: without a guard nobody was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    /// The question that was answered yes.
    pub question: Question,
}

/// A wider permission mode a call asks to run under: the
/// `sandbox_permissions` argument of `bash`, `write` and `edit`, given
/// together with a `justification`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, crate::ToolArgs,
)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxPermissions {
    /// Writes under the working directory and the temp directory.
    WorkspaceWrite,
    /// No confinement.
    DangerFullAccess,
}

impl SandboxPermissions {
    /// The permission mode asked for.
    pub fn mode(self) -> SandboxMode {
        match self {
            SandboxPermissions::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            SandboxPermissions::DangerFullAccess => SandboxMode::DangerFullAccess,
        }
    }
}

/// The mode a tool body may use for this call: `None` when the call asks
/// for no escalation, the asked mode when the registry marked the call
/// [`Approved`].
///
/// # Errors
/// `PERMISSION_DENIED` when the call asks for a wider mode and nobody
/// approved it (no guard asked, or the body runs outside the registry).
pub fn approved_escalation(
    ctx: &crate::ToolContext,
    asked: Option<SandboxPermissions>,
) -> Result<Option<SandboxMode>, crate::ToolError> {
    let Some(asked) = asked else {
        return Ok(None);
    };
    if ctx.get::<Approved>().is_none() {
        return Err(crate::ToolError::new(
            dsh_protocol::codes::PERMISSION_DENIED,
            "permission denied: sandbox_permissions needs the user's approval and nobody approved this call",
        ));
    }
    Ok(Some(asked.mode()))
}

/// A person's answer to a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run this call.
    AllowedOnce,
    /// Run this call and, for the rest of the session, calls with the same
    /// [`Question::grant_key`] (the approver remembers it).
    AllowedForSession,
    /// Do not run it; the note, if any, reaches the model.
    Rejected {
        /// The person's words for the model.
        note: Option<String>,
    },
    /// The question was withdrawn (Ctrl-C, the turn was aborted).
    Cancelled,
    /// Nobody can be asked (`dsh run`, policy `never`); the reason reaches
    /// the model.
    Unavailable(String),
}

impl Approval {
    /// Whether the call may run.
    pub fn allows(&self) -> bool {
        matches!(self, Approval::AllowedOnce | Approval::AllowedForSession)
    }
}

/// Answers [`Question`]s: the chat asks on the terminal, `dsh run` has
/// nobody and answers [`Approval::Unavailable`]. Put one into the call's
/// extensions as `Arc<dyn Approver>`.
pub trait Approver: Send + Sync {
    /// The answer for `call`; `extensions` are the call's (an approver that
    /// logs finds the agent there). Must not fail: a question that cannot
    /// be put is [`Approval::Unavailable`]; an approver that keeps session
    /// grants answers [`Approval::AllowedForSession`] for a remembered key
    /// without asking again.
    fn decide(
        &self,
        call: &ToolCall,
        question: &Question,
        extensions: &Extensions,
    ) -> BoxFuture<'static, Approval>;
}

/// The reason a call is denied when the verdict is `ask` and no approver
/// is in the call's extensions.
pub const NO_APPROVER: &str = "no user to approve";

/// The model-facing reason for a refused approval.
pub(crate) fn refusal(approval: &Approval) -> String {
    match approval {
        Approval::AllowedOnce | Approval::AllowedForSession => String::new(),
        Approval::Rejected { note: Some(note) } => format!("the user denied it: {note}"),
        Approval::Rejected { note: None } => "the user denied it".to_string(),
        Approval::Cancelled => "the user cancelled the approval".to_string(),
        Approval::Unavailable(reason) => reason.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn verdict(i: u8) -> Verdict {
        match i % 3 {
            0 => Verdict::Allow,
            1 => Verdict::Ask(Question {
                summary: format!("q{i}"),
                detail: None,
                justification: None,
                grant_key: None,
            }),
            _ => Verdict::Deny(format!("r{i}")),
        }
    }

    proptest! {
        /// Narrowing is never wider than any input and its rank does not
        /// depend on the order of the guards.
        #[test]
        fn narrowing_is_monotone_and_order_free(xs in proptest::collection::vec(0u8..30, 0..8)) {
            let vs: Vec<Verdict> = xs.iter().map(|i| verdict(*i)).collect();
            let fwd = vs.iter().cloned().fold(Verdict::Allow, Verdict::narrow);
            let back = vs.iter().rev().cloned().fold(Verdict::Allow, Verdict::narrow);
            prop_assert_eq!(fwd.rank(), back.rank());
            for v in &vs {
                prop_assert!(fwd.rank() >= v.rank());
            }
            let max = vs.iter().map(Verdict::rank).max().unwrap_or(0);
            prop_assert_eq!(fwd.rank(), max);
        }
    }
}
