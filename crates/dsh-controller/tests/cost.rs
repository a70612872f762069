//! `/cost` through the controller (what chat and ACP run), and the budget
//! ending a turn before its request is sent, on the offline echo model
//! (free unless the configuration prices it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{open, read_until};
use dsh_controller::{Controller, EventBody, Reply, Session, SessionOptions};
use dsh_session::TurnEndReason;

fn controller(dir: &Path, config: &str) -> Controller {
    Controller::new(common::echo_settings(dir, config))
}

/// Prompts and waits for the turn's end; returns its reason.
async fn turn(s: &Session, prompt: &str) -> TurnEndReason {
    let from = s.next_seq();
    s.prompt(prompt).await.unwrap();
    let seen = read_until(s, from, |b| matches!(b, EventBody::TurnEnded { .. })).await;
    match seen.last().map(|e| &e.body) {
        Some(EventBody::TurnEnded { reason, .. }) => reason.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_cost_reports_the_sessions_requests_priced() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path(), "");
    let s = open(&c, SessionOptions::default()).await;
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
    let s = open(&c, SessionOptions::default()).await;
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
