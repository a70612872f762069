//! The offline `echo` model: a scripted model that exercises the real loop,
//! tools, validation and sessions without a network.
//!
//! - `echo <text>` → a call to the built-in `echo` tool with `{"text": …}`;
//! - `run <command>` → a `bash` tool call;
//! - `call <tool> <json-arguments>` → a call to any tool, arguments passed raw
//!   (so MCP tools and the boundary's error results can be tried offline);
//! - after a tool result → a one-paragraph summary of it;
//! - anything else → how to configure a real model.

use dsh_llm::scripted::{ReplyBuilder, ScriptedAdapter, ScriptedReply};
use dsh_llm::{ContentBlock, Message, ModelRequest, Role};

/// The model name of the offline model.
pub const ECHO_MODEL: &str = "echo";

/// The reply for any input the echo model does not script.
pub const HELP_REPLY: &str = "I am dsh's offline echo model. Try `echo hello` (calls the echo tool), `run ls -la` (runs a bash command) or `call <tool> <json-arguments>` (calls any tool). To talk to DeepSeek, set DEEPSEEK_API_KEY (or `[deepseek] api_key` in dsh.toml) and pick a model with `--model deepseek-v4-flash`.";

/// The adapter serving [`ECHO_MODEL`].
pub fn adapter() -> ScriptedAdapter {
    ScriptedAdapter::with_responder(respond)
}

/// The message's text, without context a `UserPromptSubmit` hook added
/// (it rides in its own block after the prompt).
fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| b.as_text())
        .filter(|t| !t.starts_with("<user-prompt-submit-hook>"))
        .collect()
}

/// Strips a context/steering envelope so a steered `echo x` still works.
fn unwrap_envelope(text: &str) -> &str {
    let t = text.trim();
    for tag in ["steering", "context"] {
        if let Some(rest) = t.strip_prefix(&format!("<{tag} source=")) {
            if let (Some(open_end), Some(inner)) =
                (rest.find('>'), rest.strip_suffix(&format!("</{tag}>")))
            {
                return inner[open_end + 1..].trim();
            }
        }
    }
    t
}

fn split_words(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if c == ' ' && i > start {
            out.push(&s[start..i]);
            start = i;
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

fn text_reply(s: &str) -> ScriptedReply {
    ReplyBuilder::new()
        .text(&split_words(s))
        .usage(0, 0)
        .reply()
}

fn respond(options: &ModelRequest) -> ScriptedReply {
    let messages = options.messages.to_vec();
    let Some(last) = messages.last() else {
        return text_reply(HELP_REPLY);
    };
    let results: Vec<&dsh_llm::ToolResultBlock> = last
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect();
    if last.role == Role::User && !results.is_empty() {
        return text_reply(&summarize(&messages, &results));
    }
    let text = text_of(&last.content);
    let input = unwrap_envelope(&text);
    let call_id = format!("echo-call-{}", messages.len());
    if let Some(rest) = input
        .strip_prefix("echo ")
        .or_else(|| input.strip_prefix("echo\t"))
    {
        let args = serde_json::json!({ "text": rest.trim() }).to_string();
        return ReplyBuilder::new()
            .text(&["Calling the echo tool."])
            .tool_call(&call_id, "echo", &[&args])
            .usage(0, 0)
            .reply();
    }
    if let Some(rest) = input.strip_prefix("run ") {
        let args = serde_json::json!({
            "command": rest.trim(),
            "description": "Run the command the user asked for",
        })
        .to_string();
        return ReplyBuilder::new()
            .text(&["Running it with bash."])
            .tool_call(&call_id, "bash", &[&args])
            .usage(0, 0)
            .reply();
    }
    if let Some(rest) = input.strip_prefix("call ") {
        let rest = rest.trim();
        let (tool, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if !tool.is_empty() {
            return ReplyBuilder::new()
                .text(&["Calling ", tool, "."])
                .tool_call(&call_id, tool, &[args.trim()])
                .usage(0, 0)
                .reply();
        }
    }
    text_reply(HELP_REPLY)
}

fn summarize(messages: &[Message], results: &[&dsh_llm::ToolResultBlock]) -> String {
    let mut out = String::new();
    for r in results {
        let name = messages
            .iter()
            .flat_map(|m| m.content.iter())
            .find_map(|b| match b {
                ContentBlock::ToolCall(c) if c.call_id == r.tool_call_id => Some(c.name.clone()),
                _ => None,
            })
            .unwrap_or_else(|| "tool".into());
        // One line per text block (notes follow the result on their own line).
        let body = r
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n");
        let body = body.trim_end();
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        if r.is_error == Some(true) {
            out.push_str(&format!("The {name} tool reported an error:\n{body}"));
        } else if name == "echo" {
            out.push_str(&format!("The echo tool says: {body}"));
        } else {
            out.push_str(&format!("The {name} tool returned:\n{body}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_llm::{FinishReason, StreamChunk};

    fn reply_for(messages: Vec<Message>) -> Vec<StreamChunk> {
        let opts = ModelRequest {
            model: ECHO_MODEL.into(),
            messages: messages.into(),
            ..Default::default()
        };
        match respond(&opts) {
            ScriptedReply::Chunks(c) => c,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn assembled(chunks: &[StreamChunk]) -> Vec<ContentBlock> {
        let mut a = dsh_llm::BlockAssembler::new();
        chunks.iter().for_each(|c| {
            a.push(c);
        });
        a.blocks().unwrap()
    }

    #[test]
    fn echo_becomes_a_tool_call() {
        let chunks = reply_for(vec![Message::user_text("echo hi there")]);
        let blocks = assembled(&chunks);
        assert!(matches!(&blocks[1], ContentBlock::ToolCall(c)
            if c.name == "echo" && c.arguments == r#"{"text":"hi there"}"#));
        assert!(matches!(
            chunks.last(),
            Some(StreamChunk::Finish {
                reason: FinishReason::ToolCalls
            })
        ));
    }

    #[test]
    fn run_becomes_a_bash_call_and_results_are_summarised() {
        let chunks = reply_for(vec![Message::user_text("run ls -la")]);
        let blocks = assembled(&chunks);
        let ContentBlock::ToolCall(call) = &blocks[1] else {
            panic!("expected a tool call")
        };
        assert_eq!(call.name, "bash");
        let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
        assert_eq!(args["command"], "ls -la");
        let history = vec![
            Message::user_text("run ls -la"),
            Message::assistant(blocks.clone()),
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result(
                    call.call_id.clone(),
                    vec![ContentBlock::text("a.txt\n")],
                    false,
                )],
            },
        ];
        let summary = assembled(&reply_for(history));
        assert_eq!(
            summary,
            vec![ContentBlock::text("The bash tool returned:\na.txt")]
        );
    }

    #[test]
    fn call_passes_the_raw_arguments_to_any_tool() {
        let blocks = assembled(&reply_for(vec![Message::user_text(
            "call fx__add {\"a\": 1, \"b\": 2}",
        )]));
        assert!(matches!(&blocks[1], ContentBlock::ToolCall(c)
            if c.name == "fx__add" && c.arguments == "{\"a\": 1, \"b\": 2}"));
        let blocks = assembled(&reply_for(vec![Message::user_text("call echo {bad")]));
        assert!(matches!(&blocks[1], ContentBlock::ToolCall(c) if c.arguments == "{bad"));
    }

    #[test]
    fn anything_else_gets_help_and_steering_is_unwrapped() {
        let blocks = assembled(&reply_for(vec![Message::user_text("hello")]));
        assert_eq!(blocks, vec![ContentBlock::text(HELP_REPLY)]);
        let steered = Message {
            role: Role::User,
            content: vec![
                ContentBlock::text("<steering source=\"user\">"),
                ContentBlock::text("echo x"),
                ContentBlock::text("</steering>"),
            ],
        };
        let blocks = assembled(&reply_for(vec![steered]));
        assert!(matches!(&blocks[1], ContentBlock::ToolCall(c) if c.name == "echo"));
    }
}
