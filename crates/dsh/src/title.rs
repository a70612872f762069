//! Session titles. A session's title is the last `session/title` event's
//! `title` when one was logged, else its first user message on one line,
//! cut to 60 characters (derived when listing). `dsh chat` with a real
//! model asks it, once the first turn has ended, for a title of at most
//! five words ([`generate`]) and logs it as `session/title` `{"title"}`;
//! a failed or empty answer logs nothing (the offline title stands).

use std::sync::Arc;

use dsh_llm::{ContentBlock, LlmService, Message, ModelRequest};
use dsh_session::{EventPayload, MessageEvent, Session};

/// Event kind of a generated title.
pub const TITLE_KIND: &str = "session/title";

/// Longest offline title, in characters.
pub const OFFLINE_TITLE_CHARS: usize = 60;

/// Most characters of the first prompt sent for a title.
const PROMPT_CHARS: usize = 2_000;

/// The instruction of the title request.
pub const TITLE_INSTRUCTION: &str = "Write a title of at most five words for a coding session that starts with the user's message below. Reply with the title only: no quotes, no final punctuation.";

/// A model's answer made into a title: its first non-empty line without
/// quotes, markup or a final period, at most five words (and 60
/// characters); `None` when nothing is left.
pub fn clean_title(answer: &str) -> Option<String> {
    let line: String = answer
        .lines()
        .find(|l| !l.trim().is_empty())?
        .chars()
        .filter(|c| !matches!(c, '"' | '`' | '*' | '#'))
        .collect();
    let words: Vec<&str> = line
        .trim()
        .trim_matches('\'')
        .split_whitespace()
        .take(5)
        .collect();
    let title = words.join(" ");
    let title = title.trim_end_matches(['.', ':', ';', ',']).trim();
    (!title.is_empty()).then(|| offline_title(title))
}

/// Asks `model` through `llm` for a title of `session` (from its first
/// user message) and logs it. Does nothing when the session has a title
/// already or no user message; a failed request logs nothing.
pub async fn generate(llm: Arc<LlmService>, model: String, session: Arc<Session>) {
    let events = session.events();
    if events.iter().any(|e| e.data.kind() == TITLE_KIND) {
        return;
    }
    let Some(first) = events.iter().find_map(|e| match &e.data {
        EventPayload::UserMessage(MessageEvent { content, .. }) => content
            .iter()
            .find_map(ContentBlock::as_text)
            .map(|t| t.chars().take(PROMPT_CHARS).collect::<String>()),
        _ => None,
    }) else {
        return;
    };
    let request = ModelRequest {
        model,
        messages: vec![Message::user_text(first)].into(),
        system: Some(TITLE_INSTRUCTION.to_string()),
        max_tokens: Some(32),
        ..Default::default()
    };
    let Ok(reply) = llm.generate(request).await else {
        return;
    };
    let text: String = reply
        .message
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect();
    if let Some(title) = clean_title(&text) {
        session.append(EventPayload::Other {
            kind: TITLE_KIND.to_string(),
            data: serde_json::json!({ "title": title }),
        });
    }
}

/// The offline title: the text's first line(s) on one line, cut to
/// [`OFFLINE_TITLE_CHARS`] characters (with `…` when cut).
pub fn offline_title(first_prompt: &str) -> String {
    let one_line = first_prompt
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match one_line.char_indices().nth(OFFLINE_TITLE_CHARS) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_titles_are_one_line_and_cut() {
        assert_eq!(offline_title("fix the\n  build"), "fix the build");
        let long = "word ".repeat(30);
        let t = offline_title(&long);
        assert_eq!(t.chars().count(), OFFLINE_TITLE_CHARS + 1);
        assert!(t.ends_with('…'));
    }

    #[test]
    fn model_answers_are_cleaned_to_five_words() {
        assert_eq!(
            clean_title("\"Fix the flaky CI build.\"\n").as_deref(),
            Some("Fix the flaky CI build")
        );
        assert_eq!(
            clean_title("\n**Parser refactor** now please do it").as_deref(),
            Some("Parser refactor now please do")
        );
        assert_eq!(clean_title("  \n\n"), None);
        assert_eq!(clean_title("\"\""), None);
    }
}
