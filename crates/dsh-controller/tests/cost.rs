//! `/cost` through the controller (what chat and ACP run), and the budget
//! ending a turn before its request is sent, on the offline echo model
//! (free unless the configuration prices it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dsh::Settings;
use dsh_controller::{Controller, EventBody, OpenError, Reply, Session, SessionOptions};
use dsh_session::TurnEndReason;

fn controller(dir: &Path, config: &str) -> Controller {
    let file = dir.join("cfg.toml");
    std::fs::write(&file, config).unwrap();
    Controller::new(Settings {
        model: Some("echo".into()),
        cwd: Some(dir.to_path_buf()),
        session_dir: Some(dir.join("sessions")),
        config: Some(file),
        ..Default::default()
    })
}

async fn open(c: &Controller) -> Arc<Session> {
    match c.open(SessionOptions::default()).await {
        Ok(s) => s,
        Err(OpenError::Failed { error, .. }) => panic!("open failed: {error}"),
        Err(OpenError::Stopped(never)) => match never {},
    }
}

/// Prompts and waits for the turn's end; returns its reason.
async fn turn(s: &Session, prompt: &str) -> TurnEndReason {
    let from = s.next_seq();
    s.prompt(prompt).await.unwrap();
    let mut sub = s.subscribe(Some(from));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let e = tokio::time::timeout_at(deadline, sub.next())
            .await
            .expect("in time")
            .expect("open")
            .expect("nothing lost");
        if let EventBody::TurnEnded { reason, .. } = &e.body {
            return reason.clone();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_cost_reports_the_sessions_requests_priced() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), "");
    let s = open(&c).await;
    assert_eq!(turn(&s, "echo hi").await, TurnEndReason::Completed);
    match s.command("cost", "").await {
        Reply::Cost(report) => {
            assert_eq!(report.model, "echo");
            assert_eq!(report.tokens.requests, 2, "two steps: {report:?}");
            assert_eq!((report.cost.priced, report.cost.unpriced), (2, 0));
            assert_eq!(report.cost.display(), "$0.0000");
            assert_eq!(report.last_turn.as_ref().map(|t| t.turn), Some(1));
            let text = report.text();
            assert!(
                text.starts_with("cost: $0.0000 (USD) this session"),
                "{text}"
            );
            assert!(
                text.contains("prices of echo: the offline echo model"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(s.command("cost", "now").await, Reply::Failed(_)));
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_ends_the_turn_before_a_request_that_would_pass_it() {
    let dir = tempfile::tempdir().unwrap();
    // Priced this way the first request (a few thousand tokens of system
    // prompt and tools) alone would cost dollars.
    let c = controller(
        dir.path(),
        "[models.echo]\ninput_price = 1000\noutput_price = 1000\n[budget]\nmax_cost_per_session = 0.5\n",
    );
    let s = open(&c).await;
    match turn(&s, "echo hi").await {
        TurnEndReason::Error { code, message } => {
            assert_eq!(code.as_deref(), Some("BUDGET_EXCEEDED"));
            assert!(
                message.starts_with("session cost $0.0000 + about $"),
                "{message}"
            );
            assert!(
                message
                    .ends_with("would pass the budget of $0.5000 ([budget] max_cost_per_session)"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Nothing was sent: no usage, no cost.
    match s.command("cost", "").await {
        Reply::Cost(report) => {
            assert_eq!(report.tokens.requests, 0);
            assert!(
                report.text().contains("budget: $0.5000 per session"),
                "{}",
                report.text()
            );
        }
        other => panic!("{other:?}"),
    }
    c.shutdown("test over").await;
}
