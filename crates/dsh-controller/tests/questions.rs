//! The model's `ask_user` questions through the controller, with the
//! offline echo model: asked as an event, answered (first reply wins,
//! answers checked against the questions), declined, withdrawn when the
//! turn is aborted or the last watcher leaves, "no user to ask" with
//! nobody watching, refused to sub-agents; every call logged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{open, read_until};
use dsh_controller::{
    Controller, Event, EventBody, QuestionAnswer, QuestionReply, QuestionSpec, Session,
    SessionOptions,
};
use serde_json::{json, Value};

fn controller(dir: &Path) -> Controller {
    Controller::new(common::echo_settings(dir, ""))
}

fn turn_ended(b: &EventBody) -> bool {
    matches!(b, EventBody::TurnEnded { .. })
}

fn two_questions() -> Value {
    json!({"questions": [
        {"question": "Which database?", "header": "Database",
         "options": [{"label": "SQLite", "description": "one file"}, {"label": "Postgres"}]},
        {"question": "Which platforms?", "multi_select": true,
         "options": [{"label": "linux"}, {"label": "mac"}, {"label": "windows"}]},
        {"question": "Anything else?"}
    ]})
}

/// Prompts `call ask_user <args>` and waits for the questions.
async fn ask(s: &Session, args: &Value) -> (u64, String, Vec<QuestionSpec>) {
    let from = s.next_seq();
    s.prompt(&format!("call ask_user {args}")).await.unwrap();
    let events = read_until(s, from, |b| matches!(b, EventBody::QuestionAsked { .. })).await;
    match &events.last().unwrap().body {
        EventBody::QuestionAsked {
            question_id,
            questions,
            ..
        } => (from, question_id.clone(), questions.clone()),
        _ => unreachable!(),
    }
}

/// The call's result: (is_error, output).
fn result(events: &[Arc<Event>]) -> (bool, String) {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolFinished {
                name,
                is_error,
                output,
                ..
            } if name == "ask_user" => Some((*is_error, output.clone())),
            _ => None,
        })
        .expect("the call finished")
}

/// The data of the log's events of `kind`.
fn logged(s: &Session, kind: &str) -> Vec<Value> {
    s.log_events()
        .iter()
        .filter_map(|e| {
            let v = serde_json::to_value(e).unwrap();
            (v["type"] == kind).then(|| v["data"].clone())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_are_answered_by_the_first_fitting_reply_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path());
    let s = open(&c, SessionOptions::default()).await;
    let _watching = s.attach_approver();
    let (from, id, questions) = ask(&s, &two_questions()).await;
    assert_eq!(questions.len(), 3);
    assert_eq!(questions[0].header.as_deref(), Some("Database"));
    assert_eq!(
        questions[0].options[0].description.as_deref(),
        Some("one file")
    );
    assert!(questions[1].multi_select && !questions[0].multi_select);
    assert!(questions[2].options.is_empty());
    assert_eq!(s.waiting_questions(), vec![id.clone()]);
    let waiting = read_until(
        &s,
        from,
        |b| matches!(b, EventBody::Activity { state, .. } if state == "waiting"),
    )
    .await;
    assert!(!waiting.is_empty());

    // Answers that do not fit are refused and the questions stay open.
    let unfit = [
        vec![QuestionAnswer::options(vec![0])],
        vec![
            QuestionAnswer::options(vec![0, 1]),
            QuestionAnswer::default(),
            QuestionAnswer::default(),
        ],
        vec![
            QuestionAnswer::options(vec![2]),
            QuestionAnswer::default(),
            QuestionAnswer::default(),
        ],
    ];
    for answers in unfit {
        let e = s
            .answer_question(&id, QuestionReply::Answered { answers })
            .unwrap_err();
        assert_eq!(e.code, "INVALID_ANSWER", "{}", e.message);
    }
    assert_eq!(s.waiting_questions(), vec![id.clone()]);

    let answers = vec![
        QuestionAnswer::options(vec![1]),
        QuestionAnswer::options(vec![2, 0]),
        QuestionAnswer::text("keep it small"),
    ];
    s.answer_question(
        &id,
        QuestionReply::Answered {
            answers: answers.clone(),
        },
    )
    .unwrap();
    let late = s.answer_question(&id, QuestionReply::Declined).unwrap_err();
    assert_eq!(late.code, "UNKNOWN_QUESTION");
    let events = read_until(&s, from, turn_ended).await;
    let replies: Vec<&QuestionReply> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::QuestionAnswered { reply, .. } => Some(reply),
            _ => None,
        })
        .collect();
    assert_eq!(replies, vec![&QuestionReply::Answered { answers }]);
    assert_eq!(
        result(&events),
        (
            false,
            "Q: Which database?\nA: Postgres\nQ: Which platforms?\nA: windows, linux\nQ: Anything else?\nA: keep it small"
                .to_string()
        )
    );
    let asked = logged(&s, "question/asked");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["questions"], two_questions()["questions"]);
    assert!(asked[0]["callId"].is_string());
    let answered = logged(&s, "question/answered");
    assert_eq!(
        answered[0]["answers"],
        json!(["Postgres", "windows, linux", "keep it small"])
    );
    assert_eq!(answered[0]["callId"], asked[0]["callId"]);
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_call_is_an_error_result_and_a_skipped_question_reads_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path());
    let s = open(&c, SessionOptions::default()).await;
    let _watching = s.attach_approver();
    let (from, id, _) = ask(&s, &two_questions()).await;
    s.answer_question(&id, QuestionReply::Declined).unwrap();
    let events = read_until(&s, from, turn_ended).await;
    let (is_error, output) = result(&events);
    assert!(is_error);
    assert!(output.contains("the user declined to answer"), "{output}");
    assert_eq!(
        logged(&s, "question/answered")[0],
        json!({"callId": logged(&s, "question/asked")[0]["callId"], "declined": true})
    );

    let one = json!({"questions": [{"question": "Name?"}]});
    let (from, id, _) = ask(&s, &one).await;
    s.answer_question(
        &id,
        QuestionReply::Answered {
            answers: vec![QuestionAnswer::default()],
        },
    )
    .unwrap();
    let events = read_until(&s, from, turn_ended).await;
    assert_eq!(
        result(&events),
        (false, "Q: Name?\nA: (no answer)".to_string())
    );
    assert_eq!(logged(&s, "question/answered")[1]["answers"], json!([null]));
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nobody_watching_the_model_is_told_there_is_no_user() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path());
    let s = open(&c, SessionOptions::default()).await;
    let from = s.next_seq();
    s.prompt(&format!("call ask_user {}", two_questions()))
        .await
        .unwrap();
    let events = read_until(&s, from, turn_ended).await;
    assert!(!events
        .iter()
        .any(|e| matches!(e.body, EventBody::QuestionAsked { .. })));
    let (is_error, output) = result(&events);
    assert!(!is_error);
    assert!(output.starts_with("no user to ask"), "{output}");
    assert!(output.contains("Decide yourself and say what you assumed"));
    assert_eq!(logged(&s, "question/answered")[0]["noUser"], json!(true));
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_or_the_last_watcher_leaving_withdraws_the_questions() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path());
    let s = open(&c, SessionOptions::default()).await;
    let guard = s.attach_approver();
    let (from, id, _) = ask(&s, &two_questions()).await;
    s.abort("user interrupt");
    let events = read_until(&s, from, turn_ended).await;
    assert!(events.iter().any(|e| matches!(
        &e.body,
        EventBody::QuestionAnswered { question_id, reply: QuestionReply::Declined } if *question_id == id
    )));
    assert!(s.waiting_questions().is_empty());

    let (from, id, _) = ask(&s, &two_questions()).await;
    drop(guard);
    let events = read_until(&s, from, turn_ended).await;
    assert!(events.iter().any(|e| matches!(
        &e.body,
        EventBody::QuestionAnswered { question_id, reply: QuestionReply::Declined } if *question_id == id
    )));
    let (is_error, output) = result(&events);
    assert!(is_error && output.contains("declined"), "{output}");
    c.shutdown("test over").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_may_not_ask_and_bad_calls_never_reach_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let c = controller(dir.path());
    let s = open(&c, SessionOptions::default()).await;
    let _watching = s.attach_approver();
    let child_prompt = format!(
        "call ask_user {}",
        json!({"questions": [{"question": "Hm?"}]})
    );
    let from = s.next_seq();
    s.prompt(&format!(
        "call subagent {}",
        json!({"description": "asks", "prompt": child_prompt})
    ))
    .await
    .unwrap();
    let events = read_until(&s, from, turn_ended).await;
    assert!(!events
        .iter()
        .any(|e| matches!(e.body, EventBody::QuestionAsked { .. })));
    let logs: String = walk(&dir.path().join("sessions"));
    assert!(
        logs.contains("ASK_USER_NOT_ROOT"),
        "the child's log says why"
    );

    // Five questions, five options: refused by the schema, nobody asked.
    let q = |n: usize| json!({"question": "?", "options": (0..n).map(|i| json!({"label": i.to_string()})).collect::<Vec<_>>()});
    for args in [
        json!({"questions": (0..5).map(|_| q(0)).collect::<Vec<_>>()}),
        json!({"questions": [q(5)]}),
        json!({"questions": []}),
    ] {
        let from = s.next_seq();
        s.prompt(&format!("call ask_user {args}")).await.unwrap();
        let events = read_until(&s, from, turn_ended).await;
        let (is_error, output) = result(&events);
        assert!(is_error && output.contains("invalid arguments"), "{output}");
        assert!(!events
            .iter()
            .any(|e| matches!(e.body, EventBody::QuestionAsked { .. })));
    }
    c.shutdown("test over").await;
}

/// Every file's text under `dir`.
fn walk(dir: &Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.push_str(&walk(&path));
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            all.push_str(&text);
        }
    }
    all
}
