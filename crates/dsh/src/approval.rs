//! [`SessionApprover`]: dsh's answerer of `ask` verdicts. It applies the
//! approval policy, remembers "allow for the rest of the session" grants,
//! puts the question to a [`Person`] when there is one, and logs every
//! question and decision to the agent's session (`approval/asked`,
//! `approval/decided`), so `dsh session show` tells who allowed what.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use dsh_kernel::sync::lock;
use dsh_kernel::{BoxFuture, Extensions};
use dsh_protocol::ToolCall;
use dsh_session::EventPayload;
use dsh_tools::{Approval, Approver, Question};
use serde_json::{json, Value};

/// Event kind of a question put to the user.
pub const ASKED_KIND: &str = "approval/asked";
/// Event kind of the answer.
pub const DECIDED_KIND: &str = "approval/decided";

/// The reason given to the model when nobody can be asked (`dsh run`).
pub const NO_USER: &str = "no user to approve; run with --permission danger-full-access to allow";

/// The reason given to the model under the policy `never`.
pub const POLICY_NEVER: &str =
    "approval policy is \"never\": calls that need approval are denied; work within the current permission mode";

/// Whether questions are put to the user at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Ask the user (the default); without a user, deny.
    #[default]
    Ask,
    /// Never ask: every call that needs approval is denied.
    Never,
}

impl std::str::FromStr for ApprovalPolicy {
    type Err = String;

    /// `ask` or `never`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ask" => Ok(ApprovalPolicy::Ask),
            "never" => Ok(ApprovalPolicy::Never),
            other => Err(format!(
                "unknown approval policy {other:?}; expected \"ask\" or \"never\""
            )),
        }
    }
}

impl std::fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ApprovalPolicy::Ask => "ask",
            ApprovalPolicy::Never => "never",
        })
    }
}

/// Somebody who can answer a question: the chat's terminal.
pub trait Person: Send + Sync {
    /// The answer to `question` about `call`. Ctrl-C is
    /// [`Approval::Cancelled`]; the person's note for the model rides in
    /// [`Approval::Rejected`].
    fn ask(&self, call: &ToolCall, question: &Question) -> BoxFuture<'static, Approval>;
}

/// The approver of one process: policy, grants, the person (if any).
pub struct SessionApprover {
    policy: Mutex<ApprovalPolicy>,
    person: Mutex<Option<Arc<dyn Person>>>,
    grants: Arc<Mutex<HashSet<String>>>,
    /// Held while the person answers: calls that run together ask one
    /// question at a time, in the order they asked.
    asking: Arc<tokio::sync::Mutex<()>>,
    /// The lasting permission rules: an allow rule answers some
    /// questions ([`crate::rules::Rules::answers`]).
    rules: Mutex<Option<Arc<crate::rules::Rules>>>,
}

impl SessionApprover {
    /// An approver under `policy` that asks `person` (`None`: nobody can
    /// be asked, as in `dsh run`).
    pub fn new(policy: ApprovalPolicy, person: Option<Arc<dyn Person>>) -> Self {
        Self {
            policy: Mutex::new(policy),
            person: Mutex::new(person),
            grants: Arc::new(Mutex::new(HashSet::new())),
            asking: Arc::new(tokio::sync::Mutex::new(())),
            rules: Mutex::new(None),
        }
    }

    /// Consults `rules` before asking from now on: a question an allow
    /// rule answers is allowed once, decided `by: "rule"` (the rule in the
    /// log's `rule`).
    pub fn set_rules(&self, rules: Arc<crate::rules::Rules>) {
        *lock(&self.rules) = Some(rules);
    }

    /// Sets who is asked from now on (`None`: nobody, questions are
    /// denied with [`NO_USER`]); the chat sets its terminal.
    pub fn set_person(&self, person: Option<Arc<dyn Person>>) {
        *lock(&self.person) = person;
    }

    /// Changes the policy for the calls from now on.
    pub fn set_policy(&self, policy: ApprovalPolicy) {
        *lock(&self.policy) = policy;
    }

    /// The policy in force.
    pub fn policy(&self) -> ApprovalPolicy {
        *lock(&self.policy)
    }
}

fn log(extensions: &Extensions, kind: &str, data: Value) {
    if let Some(agent) = extensions.get::<Arc<dyn dsh_agent::Agent>>() {
        agent.session().append(EventPayload::Other {
            kind: kind.to_string(),
            data,
        });
    }
}

fn outcome_name(a: &Approval) -> &'static str {
    match a {
        Approval::AllowedOnce => "allowed-once",
        Approval::AllowedForSession => "allowed-for-session",
        Approval::Rejected { .. } => "rejected",
        Approval::Cancelled => "cancelled",
        Approval::Unavailable(_) => "unavailable",
    }
}

impl Approver for SessionApprover {
    fn decide(
        &self,
        call: &ToolCall,
        question: &Question,
        extensions: &Extensions,
    ) -> BoxFuture<'static, Approval> {
        let mut asked = json!({
            "callId": call.call_id.as_str(),
            "tool": call.name,
            "summary": question.summary,
        });
        if let Some(d) = &question.detail {
            asked["detail"] = json!(d);
        }
        if let Some(j) = &question.justification {
            asked["justification"] = json!(j);
        }
        log(extensions, ASKED_KIND, asked);
        let granted = question
            .grant_key
            .as_ref()
            .is_some_and(|k| lock(&self.grants).contains(k));
        let rule = match lock(&self.rules).as_ref() {
            Some(rules) if !granted => rules.answers(call, question),
            _ => None,
        };
        let (pending, by): (BoxFuture<'static, Approval>, &'static str) = if granted {
            (
                Box::pin(async { Approval::AllowedForSession }),
                "session grant",
            )
        } else if rule.is_some() {
            (Box::pin(async { Approval::AllowedOnce }), "rule")
        } else if self.policy() == ApprovalPolicy::Never {
            (
                Box::pin(async { Approval::Unavailable(POLICY_NEVER.to_string()) }),
                "policy",
            )
        } else if let Some(person) = lock(&self.person).clone() {
            let asking = self.asking.clone();
            let (call, question) = (call.clone(), question.clone());
            let ask: BoxFuture<'static, Approval> = Box::pin(async move {
                let _one_at_a_time = asking.lock().await;
                person.ask(&call, &question).await
            });
            (ask, "user")
        } else {
            (
                Box::pin(async { Approval::Unavailable(NO_USER.to_string()) }),
                "nobody",
            )
        };
        let extensions = extensions.clone();
        let call_id = call.call_id.as_str().to_string();
        let key = question.grant_key.clone();
        let grants = self.grants.clone();
        let answer_and_log = async move {
            let answer = pending.await;
            if answer == Approval::AllowedForSession && by == "user" {
                if let Some(key) = key {
                    lock(&grants).insert(key);
                }
            }
            let mut data = json!({
                "callId": call_id,
                "outcome": outcome_name(&answer),
                "by": by,
            });
            if let Some(rule) = rule {
                data["rule"] = json!(rule);
            }
            match &answer {
                Approval::Rejected { note: Some(n) } => data["note"] = json!(n),
                Approval::Unavailable(r) => data["reason"] = json!(r),
                _ => {}
            }
            log(&extensions, DECIDED_KIND, data);
            answer
        };
        Box::pin(answer_and_log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scripted(Mutex<Vec<Approval>>, Mutex<usize>);

    impl Person for Scripted {
        fn ask(&self, _call: &ToolCall, _q: &Question) -> BoxFuture<'static, Approval> {
            *lock(&self.1) += 1;
            let a = lock(&self.0).remove(0);
            Box::pin(async move { a })
        }
    }

    fn question(key: &str) -> Question {
        Question {
            summary: "run it".into(),
            detail: Some(key.into()),
            justification: None,
            grant_key: Some(key.into()),
        }
    }

    async fn decide(a: &SessionApprover, key: &str) -> Approval {
        let call = ToolCall::new("c1", "bash", "{}");
        a.decide(&call, &question(key), &Extensions::default())
            .await
    }

    #[tokio::test]
    async fn nobody_and_never_deny_with_reasons_the_model_can_act_on() {
        let run = SessionApprover::new(ApprovalPolicy::Ask, None);
        assert_eq!(
            decide(&run, "ls").await,
            Approval::Unavailable(NO_USER.to_string())
        );
        let person = Arc::new(Scripted(
            Mutex::new(vec![Approval::AllowedOnce]),
            Mutex::new(0),
        ));
        let never = SessionApprover::new(ApprovalPolicy::Never, Some(person.clone()));
        assert_eq!(
            decide(&never, "ls").await,
            Approval::Unavailable(POLICY_NEVER.to_string())
        );
        assert_eq!(
            *lock(&person.1),
            0,
            "never is applied before anybody is asked"
        );
    }

    #[tokio::test]
    async fn a_session_grant_covers_the_same_key_only() {
        let person = Arc::new(Scripted(
            Mutex::new(vec![
                Approval::AllowedForSession,
                Approval::Rejected { note: None },
            ]),
            Mutex::new(0),
        ));
        let a = SessionApprover::new(ApprovalPolicy::Ask, Some(person.clone()));
        assert_eq!(decide(&a, "make test").await, Approval::AllowedForSession);
        assert_eq!(decide(&a, "make test").await, Approval::AllowedForSession);
        assert_eq!(*lock(&person.1), 1, "the grant answered the second time");
        assert_eq!(
            decide(&a, "make clean").await,
            Approval::Rejected { note: None }
        );
        assert_eq!(*lock(&person.1), 2);
    }

    #[test]
    fn policies_parse_and_print() {
        assert_eq!("ask".parse::<ApprovalPolicy>(), Ok(ApprovalPolicy::Ask));
        assert_eq!("never".parse::<ApprovalPolicy>(), Ok(ApprovalPolicy::Never));
        assert!("sometimes"
            .parse::<ApprovalPolicy>()
            .unwrap_err()
            .contains("\"ask\" or \"never\""));
        assert_eq!(ApprovalPolicy::Never.to_string(), "never");
    }
}
