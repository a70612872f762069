//! The agent registry and the agent surface types, with a stub agent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use dsh_agent::{Agent, AgentError, AgentOptions, AgentRegistry, AgentStatus};
use dsh_kernel::ErrorCode;
use dsh_llm::{ContentBlock, MessageSource};
use dsh_protocol::AgentId;
use dsh_session::Session;

/// An agent that does nothing: enough to exercise the registry.
struct Stub {
    id: AgentId,
    options: AgentOptions,
    session: Arc<Session>,
}

impl Stub {
    fn arc(id: &str) -> Arc<dyn Agent> {
        Arc::new(Stub {
            id: id.into(),
            options: AgentOptions::default(),
            session: Session::detached(format!("{id}-session"), Vec::new()),
        })
    }
}

impl Agent for Stub {
    fn id(&self) -> &AgentId {
        &self.id
    }
    fn options(&self) -> &AgentOptions {
        &self.options
    }
    fn session(&self) -> Arc<Session> {
        self.session.clone()
    }
    fn status(&self) -> AgentStatus {
        AgentStatus::Idle
    }
    fn send(&self, _: Vec<ContentBlock>, _: MessageSource) -> Result<(), AgentError> {
        Ok(())
    }
    fn steer(&self, _: Vec<ContentBlock>, _: MessageSource) -> Result<(), AgentError> {
        Ok(())
    }
    fn inject(&self, _: Vec<ContentBlock>, _: MessageSource) -> Result<(), AgentError> {
        Ok(())
    }
    fn abort(&self, _: Option<String>) {}
}

fn record(registry: &AgentRegistry) -> (Arc<Mutex<Vec<String>>>, dsh_kernel::Registration) {
    let log: Arc<Mutex<Vec<String>>> = Default::default();
    let l = log.clone();
    let created = registry
        .hooks()
        .created
        .on(move |a| l.lock().unwrap().push(format!("created {}", a.id())));
    let l = log.clone();
    let disposed = registry
        .hooks()
        .disposed
        .on(move |a| l.lock().unwrap().push(format!("disposed {}", a.id())));
    (
        log,
        dsh_kernel::Registration::merge(vec![created, disposed]),
    )
}

#[test]
fn register_emits_created_and_undo_emits_disposed() {
    let registry = Arc::new(AgentRegistry::new());
    let (log, _reg) = record(&registry);
    let a = registry.register(Stub::arc("a")).unwrap();
    let b = registry.register(Stub::arc("b")).unwrap();
    assert_eq!(registry.get("a").unwrap().id(), "a");
    let ids: Vec<String> = registry.list().iter().map(|a| a.id().to_string()).collect();
    assert_eq!(ids, ["a", "b"], "registration order");
    a.undo();
    assert!(registry.get("a").is_none());
    assert_eq!(registry.list().len(), 1);
    b.undo();
    assert!(registry.list().is_empty());
    assert_eq!(
        *log.lock().unwrap(),
        ["created a", "created b", "disposed a", "disposed b"]
    );
}

#[test]
fn a_duplicate_id_is_refused_without_side_effects() {
    let registry = Arc::new(AgentRegistry::new());
    let (log, _reg) = record(&registry);
    let first = Stub::arc("x");
    let _keep = registry.register(first.clone()).unwrap();
    let err = registry.register(Stub::arc("x")).expect_err("refused");
    assert_eq!(err, AgentError::Duplicate("x".into()));
    assert_eq!(err.to_string(), "agent \"x\" is already registered");
    assert_eq!(err.code(), "DUPLICATE_AGENT");
    assert_eq!(registry.list().len(), 1);
    assert!(Arc::ptr_eq(&registry.get("x").unwrap(), &first));
    assert_eq!(
        *log.lock().unwrap(),
        ["created x"],
        "no second agent/created"
    );
}

#[test]
fn undo_removes_exactly_its_own_agent() {
    let registry = Arc::new(AgentRegistry::new());
    let old = registry.register(Stub::arc("x")).unwrap();
    old.undo();
    let newer = Stub::arc("x");
    let _keep = registry.register(newer.clone()).unwrap();
    assert!(Arc::ptr_eq(&registry.get("x").unwrap(), &newer));
}

#[test]
fn a_panicking_created_listener_does_not_fail_registration() {
    let registry = Arc::new(AgentRegistry::new());
    let _bad = registry.hooks().created.on(|_| panic!("observer broke"));
    let reg = registry.register(Stub::arc("a")).unwrap();
    assert!(registry.get("a").is_some());
    reg.undo();
    assert!(registry.get("a").is_none());
}

#[test]
fn surface_types_keep_their_contract() {
    let o = AgentOptions::default();
    assert_eq!(
        (
            o.model,
            o.system_prompt,
            o.max_steps,
            o.repeat_failure_limit
        ),
        (None, None, 100, 3)
    );
    assert_eq!(
        [
            AgentStatus::Idle,
            AgentStatus::Running,
            AgentStatus::Disposed
        ]
        .map(|s| s.as_str()),
        ["idle", "running", "disposed"]
    );
    let disposed = AgentError::Disposed("a1".into());
    assert_eq!(disposed.to_string(), "agent \"a1\" is disposed");
    assert_eq!(disposed.code(), "AGENT_DISPOSED");
    assert_eq!(
        AgentError::MissingService("x".into()).code(),
        "MISSING_SERVICE"
    );
    let hooks = AgentRegistry::new();
    let h = hooks.hooks();
    assert_eq!(
        [
            h.created.name(),
            h.disposed.name(),
            h.status.name(),
            h.queued.name(),
            h.event.name(),
            h.request.name(),
            h.step_result.name(),
            h.turn_continuation.name(),
        ],
        [
            "agent/created",
            "agent/disposed",
            "agent/status",
            "agent/queued",
            "agent/event",
            "agent/request",
            "agent/step-result",
            "agent/turn-continuation",
        ]
    );
}
