//! The guard stage (`tools/pre-execute`): guards narrow and never widen, a
//! denial is a `PERMISSION_DENIED` result the body never sees, an `ask`
//! goes to the approver in the call's extensions (denied without one), and
//! the arguments that run are the ones the model sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use dsh_kernel::BoxFuture;
use dsh_llm::ContentBlock;
use dsh_tools::{
    define_tool_from_spec, Approval, Approver, CallEnv, PreExecute, Question, SchemaProp,
    SchemaSpec, ToolCall, ToolRegistry, ToolResult, Verdict,
};
use serde_json::Value;

/// A registry with `run {command}`, which records the raw arguments it got.
fn setup() -> (ToolRegistry, Arc<Mutex<Vec<String>>>) {
    let registry = ToolRegistry::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let spec = SchemaSpec::new().with("command", SchemaProp::string());
    let tool = define_tool_from_spec("run", "Runs", spec, move |args: Value, _ctx| {
        s.lock().unwrap().push(args.to_string());
        async move { Ok(vec![ContentBlock::text("ran")]) }
    });
    std::mem::forget(registry.register(Arc::new(tool)).unwrap());
    (registry, seen)
}

fn call(args: &str) -> ToolCall {
    ToolCall::new("c1", "run", args)
}

async fn run(registry: &ToolRegistry, env: CallEnv) -> ToolResult {
    registry.execute(&call(r#"{"command": "ls"}"#), env).await
}

fn verdict(v: Verdict) -> impl Fn(&PreExecute) -> BoxFuture<'static, Verdict> + Send + Sync {
    move |_| {
        let v = v.clone();
        Box::pin(async move { v })
    }
}

fn ask(summary: &str) -> Verdict {
    Verdict::Ask(Question {
        summary: summary.to_string(),
        detail: Some("ls".into()),
        justification: None,
        grant_key: Some("ls".into()),
    })
}

/// Answers every question with `answer` and records what it was asked.
struct Scripted {
    answer: Approval,
    asked: Mutex<Vec<(String, String)>>,
}

impl Approver for Scripted {
    fn decide(
        &self,
        call: &ToolCall,
        question: &Question,
        _extensions: &dsh_kernel::Extensions,
    ) -> BoxFuture<'static, Approval> {
        self.asked
            .lock()
            .unwrap()
            .push((call.arguments.clone(), question.summary.clone()));
        let a = self.answer.clone();
        Box::pin(async move { a })
    }
}

fn env_with(approver: &Arc<Scripted>) -> CallEnv {
    let mut env = CallEnv::default();
    let dynamic: Arc<dyn Approver> = approver.clone();
    env.extensions.insert(dynamic);
    env
}

#[tokio::test]
async fn a_denial_is_a_coded_result_and_the_body_never_runs() {
    let (registry, seen) = setup();
    let _g = registry.add_guard(verdict(Verdict::Deny("writes are off".into())));
    let r = run(&registry, CallEnv::default()).await;
    assert!(r.is_error);
    assert_eq!(r.code(), Some("PERMISSION_DENIED"));
    assert_eq!(r.text(), "Error: permission denied: writes are off");
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_earlier_allow_cannot_override_a_later_deny() {
    let (registry, seen) = setup();
    let _a = registry.add_guard(verdict(Verdict::Allow));
    let _b = registry.add_guard(verdict(ask("needs consent")));
    let _c = registry.add_guard(verdict(Verdict::Deny("no".into())));
    let approver = Arc::new(Scripted {
        answer: Approval::AllowedOnce,
        asked: Mutex::new(Vec::new()),
    });
    let r = run(&registry, env_with(&approver)).await;
    assert_eq!(r.code(), Some("PERMISSION_DENIED"));
    assert!(
        approver.asked.lock().unwrap().is_empty(),
        "deny wins before asking"
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn undoing_a_guard_lets_calls_through_again() {
    let (registry, seen) = setup();
    let g = registry.add_guard(verdict(Verdict::Deny("no".into())));
    assert!(run(&registry, CallEnv::default()).await.is_error);
    g.undo();
    let r = run(&registry, CallEnv::default()).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn ask_without_an_approver_is_denied() {
    let (registry, seen) = setup();
    let _g = registry.add_guard(verdict(ask("run ls")));
    let r = run(&registry, CallEnv::default()).await;
    assert_eq!(r.code(), Some("PERMISSION_DENIED"));
    assert_eq!(r.text(), "Error: permission denied: no user to approve");
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_approver_decides_an_ask_and_sees_the_exact_call() {
    for (answer, runs, text) in [
        (Approval::AllowedOnce, true, "ran"),
        (Approval::AllowedForSession, true, "ran"),
        (
            Approval::Rejected {
                note: Some("use the staging dir".into()),
            },
            false,
            "Error: permission denied: the user denied it: use the staging dir",
        ),
        (
            Approval::Rejected { note: None },
            false,
            "Error: permission denied: the user denied it",
        ),
        (
            Approval::Cancelled,
            false,
            "Error: permission denied: the user cancelled the approval",
        ),
        (
            Approval::Unavailable("no user to approve; run with --permission danger-full-access to allow".into()),
            false,
            "Error: permission denied: no user to approve; run with --permission danger-full-access to allow",
        ),
    ] {
        let (registry, seen) = setup();
        let _g = registry.add_guard(verdict(ask("run ls")));
        let approver = Arc::new(Scripted {
            answer: answer.clone(),
            asked: Mutex::new(Vec::new()),
        });
        let raw = r#"{"command":   "ls"}"#;
        let r = registry.execute(&call(raw), env_with(&approver)).await;
        assert_eq!(r.text(), text, "{answer:?}");
        assert_eq!(!r.is_error, runs, "{answer:?}");
        assert_eq!(
            *approver.asked.lock().unwrap(),
            [(raw.to_string(), "run ls".to_string())],
            "asked once, with the model's own bytes"
        );
        assert_eq!(seen.lock().unwrap().len(), usize::from(runs));
    }
}

#[tokio::test]
async fn guards_see_the_call_read_only_and_the_body_gets_what_the_model_sent() {
    let (registry, seen) = setup();
    let guarded = Arc::new(Mutex::new(Vec::new()));
    let g = guarded.clone();
    let _g = registry.add_guard(move |pre: &PreExecute| {
        g.lock().unwrap().push(pre.call.arguments.clone());
        Box::pin(async { Verdict::Allow })
    });
    let raw = r#"{"command": "echo \"hi\""}"#;
    let r = registry.execute(&call(raw), CallEnv::default()).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(*guarded.lock().unwrap(), [raw.to_string()]);
    assert_eq!(
        *seen.lock().unwrap(),
        [serde_json::from_str::<Value>(raw).unwrap().to_string()]
    );
}

#[tokio::test]
async fn a_panicking_guard_denies_and_the_others_still_run() {
    let (registry, seen) = setup();
    let later = Arc::new(Mutex::new(0));
    let l = later.clone();
    let _a =
        registry.add_guard(|_: &PreExecute| -> BoxFuture<'static, Verdict> { panic!("guard bug") });
    let _b = registry.add_guard(move |_: &PreExecute| {
        *l.lock().unwrap() += 1;
        Box::pin(async { Verdict::Allow })
    });
    let r = run(&registry, CallEnv::default()).await;
    assert_eq!(r.code(), Some("PERMISSION_DENIED"));
    assert!(r.text().contains("guard bug"), "{}", r.text());
    assert_eq!(*later.lock().unwrap(), 1, "every guard sees every call");
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_registry_approver_answers_when_the_call_brings_none() {
    let (registry, seen) = setup();
    let _g = registry.add_guard(verdict(ask("run ls")));
    let approver = Arc::new(Scripted {
        answer: Approval::AllowedOnce,
        asked: Mutex::new(Vec::new()),
    });
    let reg = registry.set_approver(approver.clone());
    assert!(!run(&registry, CallEnv::default()).await.is_error);
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
    // The call's own approver comes first.
    let own = Arc::new(Scripted {
        answer: Approval::Rejected { note: None },
        asked: Mutex::new(Vec::new()),
    });
    assert!(run(&registry, env_with(&own)).await.is_error);
    assert_eq!(own.asked.lock().unwrap().len(), 1);
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
    reg.undo();
    let r = run(&registry, CallEnv::default()).await;
    assert_eq!(r.text(), "Error: permission denied: no user to approve");
    assert_eq!(seen.lock().unwrap().len(), 1);
}
