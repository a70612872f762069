//! `ask_user`: the model asks the user structured questions (up to
//! [`MAX_QUESTIONS`], each with up to [`MAX_OPTIONS`] choices; the user may
//! always answer in free text instead).
//!
//! The tool does not talk to anybody itself: it puts the questions to the
//! [`Asker`] in the stack's [`UserQuestions`] slot (a front end's, set by
//! the controller while a client that can answer is attached). Without one
//! (`dsh run`) the call returns [`NO_USER_TEXT`] and the model goes on.
//! Every call is logged: [`QUESTION_ASKED_EVENT`] with the questions, then
//! [`QUESTION_ANSWERED_EVENT`] with the answers (or `declined`, or
//! `noUser`).
//!
//! Only a root agent may ask: a sub-agent's call fails with
//! `ASK_USER_NOT_ROOT` (its parent talks to the user). The tool is not
//! concurrency-safe: it waits for a person.

use std::sync::{Arc, Mutex};

use dsh_agent::Agent;
use dsh_kernel::sync::lock;
use dsh_kernel::BoxFuture;
use dsh_llm::ContentBlock;
use dsh_protocol::codes;
use dsh_session::EventPayload;
use dsh_tools::{ArgsTool, Tool, ToolArgs, ToolContext, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The tool's name.
pub const ASK_USER_TOOL: &str = "ask_user";

/// Kind of the log event written when the questions are put:
/// `{"callId", "questions": [<the call's questions>]}`.
pub const QUESTION_ASKED_EVENT: &str = "question/asked";

/// Kind of the log event written when the call is settled:
/// `{"callId", "answers": [<answer text> | null, …]}` (one per question,
/// `null` for a question left unanswered), `{"callId", "declined": true}`
/// (the user dismissed the questions), or `{"callId", "noUser": true}`
/// (nobody could be asked: `dsh run`).
pub const QUESTION_ANSWERED_EVENT: &str = "question/answered";

/// The most questions one call may ask.
pub const MAX_QUESTIONS: usize = 4;

/// The most options one question may offer.
pub const MAX_OPTIONS: usize = 4;

/// The (non-error) result when nobody can be asked (`dsh run`, a chat
/// reading piped input with no answers left, a server with no client).
pub const NO_USER_TEXT: &str = "no user to ask: this session has no user who can answer (it runs unattended). Decide yourself and say what you assumed in your final answer.";

/// The error result when the user dismissed the questions.
pub const DECLINED_TEXT: &str =
    "the user declined to answer; go on with your own judgement and say what you assumed";

/// What an unanswered question reads as in the result.
pub const NO_ANSWER: &str = "(no answer)";

/// One choice offered for a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// The choice, a few words (what the answer reads as).
    #[tool(min_length = 1, max_length = 120)]
    pub label: String,
    /// What choosing it means, when the label does not say it all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[tool(max_length = 500)]
    pub description: Option<String>,
}

/// One question for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct UserQuestion {
    /// The question, complete and specific (ends with a question mark).
    #[tool(min_length = 1, max_length = 2000)]
    pub question: String,
    /// A very short label shown above the question (`Database`, `Scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[tool(max_length = 40)]
    pub header: Option<String>,
    /// Up to 4 choices; the user may still answer in their own words.
    /// Leave out for an open question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[tool(max_items = 4)]
    pub options: Option<Vec<QuestionOption>>,
    /// Whether more than one option may be chosen (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_select: Option<bool>,
}

impl UserQuestion {
    /// The options offered (none for an open question).
    pub fn choices(&self) -> &[QuestionOption] {
        self.options.as_deref().unwrap_or(&[])
    }

    /// Whether several options may be chosen.
    pub fn is_multi_select(&self) -> bool {
        self.multi_select.unwrap_or(false)
    }
}

/// Arguments of `ask_user`.
#[derive(Debug, Clone, Serialize, Deserialize, ToolArgs)]
pub struct AskUserArgs {
    /// 1 to 4 questions, asked in order.
    #[tool(min_items = 1, max_items = 4)]
    pub questions: Vec<UserQuestion>,
}

/// The user's answer to one question: the options chosen (indexes into
/// its options, in the order chosen) and/or their own words. Neither:
/// the question was skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// Indexes of the chosen options (from 0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<usize>,
    /// The user's own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// How a person settled a call's questions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// One answer per question, in order.
    Answered(Vec<Answer>),
    /// The person dismissed the questions (Esc, a reject, the turn was
    /// aborted, the client went away).
    Declined,
}

/// Somebody who can answer questions: a front end, through the controller.
pub trait Asker: Send + Sync {
    /// Puts `questions` (of tool call `call_id`) to the person and resolves
    /// with their reply. Dropping the future withdraws the questions.
    fn ask(&self, call_id: &str, questions: &[UserQuestion]) -> BoxFuture<'static, Reply>;
}

/// The stack's slot for the [`Asker`]: empty (nobody can be asked) until a
/// front end that can answer sets one.
#[derive(Default)]
pub struct UserQuestions {
    asker: Mutex<Option<Arc<dyn Asker>>>,
}

impl UserQuestions {
    /// An empty slot.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Sets who is asked from now on (`None`: nobody; calls return
    /// [`NO_USER_TEXT`]).
    pub fn set_asker(&self, asker: Option<Arc<dyn Asker>>) {
        *lock(&self.asker) = asker;
    }

    /// Who is asked now.
    pub fn asker(&self) -> Option<Arc<dyn Asker>> {
        lock(&self.asker).clone()
    }
}

/// Checks that `answers` answer `questions`: one per question, chosen
/// indexes inside its options, at most one chosen for a single-select
/// question, no index twice.
///
/// # Errors
/// What is wrong, naming the question (from 1) and the offending index.
pub fn check_answers(questions: &[UserQuestion], answers: &[Answer]) -> Result<(), String> {
    if answers.len() != questions.len() {
        return Err(format!(
            "{} answers for {} questions: give one answer per question, in order (an empty answer {{}} skips one)",
            answers.len(),
            questions.len()
        ));
    }
    for (n, (q, a)) in questions.iter().zip(answers).enumerate() {
        let n = n + 1;
        let offered = q.choices().len();
        if let Some(&bad) = a.selected.iter().find(|&&i| i >= offered) {
            return Err(format!(
                "question {n}: option {bad} does not exist (it offers {offered}, numbered from 0)"
            ));
        }
        if a.selected.len() > 1 && !q.is_multi_select() {
            return Err(format!(
                "question {n} takes one option, and {} were chosen",
                a.selected.len()
            ));
        }
        let mut seen = a.selected.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != a.selected.len() {
            return Err(format!("question {n}: an option was chosen twice"));
        }
    }
    Ok(())
}

/// The answer as the model reads it: the chosen labels joined by `", "`,
/// then the user's own words (verbatim); `None` when there is neither.
/// Indexes outside the options are left out.
pub fn answer_text(question: &UserQuestion, answer: &Answer) -> Option<String> {
    let mut parts: Vec<String> = answer
        .selected
        .iter()
        .filter_map(|&i| question.choices().get(i).map(|o| o.label.clone()))
        .collect();
    if let Some(text) = answer.text.as_ref().filter(|t| !t.trim().is_empty()) {
        parts.push(text.clone());
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The call's result text: `Q: <question>\nA: <answer>` per question, in
/// order, [`NO_ANSWER`] for a question left unanswered.
pub fn result_text(questions: &[UserQuestion], answers: &[Answer]) -> String {
    questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let answer = answers
                .get(i)
                .and_then(|a| answer_text(q, a))
                .unwrap_or_else(|| NO_ANSWER.to_string());
            format!("Q: {}\nA: {answer}", q.question)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const DESCRIPTION: &str = "Ask the user up to 4 structured questions and wait for the answers. Use it only for ambiguity you cannot resolve by exploring the code, the docs or the environment yourself: a choice between approaches with real trade-offs, a preference, a missing requirement. Give each question up to 4 short options (label, optional description) when the likely answers are known; the user may always answer in their own words instead, or skip a question. Set multi_select when several options may apply. The result lists each question with its answer. When nobody can answer (an unattended run) the result says so: then decide yourself and say what you assumed.";

/// The `ask_user` tool: puts the questions to the asker in `slot`; a call
/// by an agent that `is_root` says is not a root agent fails with
/// `ASK_USER_NOT_ROOT`.
pub fn ask_user_tool(
    slot: Arc<UserQuestions>,
    is_root: Arc<dyn Fn(&str) -> bool + Send + Sync>,
) -> Arc<dyn Tool> {
    AskUser { slot, is_root }.into_tool().into_arc()
}

struct AskUser {
    slot: Arc<UserQuestions>,
    is_root: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

impl ArgsTool for AskUser {
    type Args = AskUserArgs;

    fn name(&self) -> &str {
        ASK_USER_TOOL
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn run(
        self: Arc<Self>,
        args: AskUserArgs,
        ctx: ToolContext,
    ) -> Result<Vec<ContentBlock>, ToolError> {
        let agent = ctx.get::<Arc<dyn Agent>>().cloned();
        if let Some(agent) = &agent {
            if !(self.is_root)(agent.id().as_str()) {
                return Err(ToolError::new(
                    codes::ASK_USER_NOT_ROOT,
                    "ask_user is only for the main agent: a sub-agent cannot reach the user. Decide yourself, or end your task and say in your answer what your parent agent should ask the user",
                ));
            }
        }
        let call_id = ctx.call_id.as_str().to_string();
        let log = |kind: &str, data: serde_json::Value| {
            if let Some(agent) = &agent {
                agent.session().append(EventPayload::Other {
                    kind: kind.to_string(),
                    data,
                });
            }
        };
        log(
            QUESTION_ASKED_EVENT,
            json!({ "callId": call_id, "questions": args.questions }),
        );
        let Some(asker) = self.slot.asker() else {
            log(
                QUESTION_ANSWERED_EVENT,
                json!({ "callId": call_id, "noUser": true }),
            );
            return Ok(vec![ContentBlock::text(NO_USER_TEXT)]);
        };
        let reply = tokio::select! {
            reply = asker.ask(&call_id, &args.questions) => reply,
            // Dropping the asker's future withdraws the questions.
            () = ctx.cancel.cancelled() => Reply::Declined,
        };
        match reply {
            Reply::Answered(answers) => {
                let texts: Vec<Option<String>> = args
                    .questions
                    .iter()
                    .enumerate()
                    .map(|(i, q)| answers.get(i).and_then(|a| answer_text(q, a)))
                    .collect();
                log(
                    QUESTION_ANSWERED_EVENT,
                    json!({ "callId": call_id, "answers": texts }),
                );
                Ok(vec![ContentBlock::text(result_text(
                    &args.questions,
                    &answers,
                ))])
            }
            Reply::Declined => {
                log(
                    QUESTION_ANSWERED_EVENT,
                    json!({ "callId": call_id, "declined": true }),
                );
                Err(ToolError::new(codes::QUESTION_DECLINED, DECLINED_TEXT))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(question: &str, options: &[&str], multi: bool) -> UserQuestion {
        UserQuestion {
            question: question.into(),
            header: None,
            options: (!options.is_empty()).then(|| {
                options
                    .iter()
                    .map(|l| QuestionOption {
                        label: (*l).into(),
                        description: None,
                    })
                    .collect()
            }),
            multi_select: multi.then_some(true),
        }
    }

    #[test]
    fn ask_user_args_do_not_drift() {
        dsh_tools::testing::assert_no_drift::<AskUserArgs>(256);
    }

    #[test]
    fn the_schema_bounds_questions_and_options() {
        let schema = dsh_schema::to_json_schema(&AskUserArgs::schema_spec());
        let questions = &schema["properties"]["questions"];
        assert_eq!(questions["minItems"], 1, "{schema}");
        assert_eq!(questions["maxItems"], MAX_QUESTIONS, "{schema}");
        let options = &questions["items"]["properties"]["options"];
        assert_eq!(options["maxItems"], MAX_OPTIONS, "{schema}");
    }

    #[test]
    fn results_read_q_and_a_with_labels_text_and_no_answer() {
        let qs = [
            q("Which database?", &["Postgres", "SQLite"], false),
            q("Which targets?", &["linux", "mac", "windows"], true),
            q("Anything else?", &[], false),
            q("Name?", &["a"], false),
        ];
        let answers = [
            Answer {
                selected: vec![1],
                text: None,
            },
            Answer {
                selected: vec![2, 0],
                text: None,
            },
            Answer {
                selected: vec![],
                text: Some("keep it\nsmall".into()),
            },
            Answer::default(),
        ];
        check_answers(&qs, &answers).unwrap();
        assert_eq!(
            result_text(&qs, &answers),
            "Q: Which database?\nA: SQLite\nQ: Which targets?\nA: windows, linux\nQ: Anything else?\nA: keep it\nsmall\nQ: Name?\nA: (no answer)"
        );
    }

    #[test]
    fn answers_that_do_not_fit_are_refused_with_the_question_named() {
        let qs = [q("One?", &["a", "b"], false)];
        let one = |selected: Vec<usize>| {
            vec![Answer {
                selected,
                text: None,
            }]
        };
        assert!(check_answers(&qs, &[]).unwrap_err().contains("0 answers"));
        assert!(check_answers(&qs, &one(vec![2]))
            .unwrap_err()
            .contains("option 2"));
        assert!(check_answers(&qs, &one(vec![0, 1]))
            .unwrap_err()
            .contains("takes one"));
        let multi = [q("Many?", &["a", "b"], true)];
        assert!(check_answers(&multi, &one(vec![1, 1]))
            .unwrap_err()
            .contains("twice"));
        assert!(check_answers(&multi, &one(vec![1, 0])).is_ok());
    }
}
