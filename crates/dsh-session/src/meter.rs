//! [`TokenMeter`]: how big the next request of a session will be, in
//! tokens, without a tokenizer.
//!
//! The anchor is the provider's own count: the last `usage` event's prompt
//! tokens (uncached + cache read + cache write) plus its output tokens (the
//! reply is in the next request too). What the log gained after that
//! anchor (tool results, messages, steering) is estimated at
//! [`BYTES_PER_TOKEN`] bytes of text per token, rounded up. Before any
//! usage (a new session, a model that reports none) the whole history plus
//! the request's fixed part (system prompt and tool schemas, given by the
//! caller) is estimated the same way.
//!
//! The heuristic: DeepSeek's tokenizer averages about 3.5–4.5 bytes per
//! token on English prose, code and JSON; 4 errs on the large side for
//! code, which is what fills a coding agent's context.

use dsh_llm::ContentBlock;
use dsh_protocol::{EventPayload, SessionEvent, TokenUsage, ToolSet};

/// Bytes of a request's fixed part, its system prompt and its tools' wire form,
/// as [`TokenMeter::estimate`] counts them.
pub fn fixed_bytes(system: Option<&str>, tools: Option<&ToolSet>) -> u64 {
    let tools = tools
        .filter(|t| !t.is_empty())
        .map_or(0, |t| t.wire_json().get().len());
    (system.map_or(0, str::len) + tools) as u64
}

/// Bytes of text counted as one token by the estimate.
pub const BYTES_PER_TOKEN: u64 = 4;

/// Tokens an image block is estimated at, whatever its URL's length.
pub const IMAGE_ESTIMATE_TOKENS: u64 = 1_600;

/// The context size of a session's next request, updated event by event.
/// Cheap to update: each event adds the byte lengths of its blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenMeter {
    /// Tokens the provider counted for the last request and its reply.
    anchor: Option<u64>,
    /// Bytes of message text since the anchor (or since the start).
    bytes: u64,
    /// Events observed, for [`TokenMeter::catch_up`].
    seen: usize,
}

/// Bytes of text a block adds to a request.
fn block_bytes(b: &ContentBlock) -> u64 {
    let n = match b {
        ContentBlock::Text(t) => t.text.len(),
        ContentBlock::Reasoning(r) => r.text.len(),
        ContentBlock::ToolCall(c) => c.name.len() + c.arguments.len() + c.call_id.as_str().len(),
        ContentBlock::ToolResult(r) => {
            return r.content.iter().map(block_bytes).sum::<u64>()
                + r.tool_call_id.as_str().len() as u64
        }
        // Providers bill an image by its pixels, not its base64: about
        // 1,600 tokens for one scaled to 1,568 px (w × h / 750, Anthropic's
        // rule); a URL's own length would count a 1 MB image as 330k.
        ContentBlock::Image(_) => return IMAGE_ESTIMATE_TOKENS * BYTES_PER_TOKEN,
        _ => 0,
    };
    n as u64
}

/// Bytes of text blocks add to a request (what the estimate counts).
pub fn blocks_bytes(blocks: &[ContentBlock]) -> u64 {
    blocks.iter().map(block_bytes).sum()
}

/// Tokens a usage report counts for the request and its reply: uncached
/// input, cached input (read and written) and output. Counts come from
/// the provider and the log, so negative ones count as 0 and the sum
/// saturates.
pub fn usage_total(u: &TokenUsage) -> u64 {
    [
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens.unwrap_or(0),
        u.cache_write_tokens.unwrap_or(0),
    ]
    .into_iter()
    .map(|n| u64::try_from(n).unwrap_or(0))
    .fold(0u64, u64::saturating_add)
}

/// [`usage_total`], `None` for a report of nothing (a model that does not
/// count).
fn usage_tokens(u: &TokenUsage) -> Option<u64> {
    Some(usage_total(u)).filter(|t| *t > 0)
}

impl TokenMeter {
    /// A meter for an empty session.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one event into account (events must come in log order).
    pub fn observe(&mut self, data: &EventPayload) {
        self.seen += 1;
        match data {
            EventPayload::Usage(u) => {
                if let Some(tokens) = usage_tokens(&u.usage) {
                    self.anchor = Some(tokens);
                    self.bytes = 0;
                }
            }
            EventPayload::UserMessage(m) | EventPayload::ContextMessage(m) => {
                self.bytes += blocks_bytes(&m.content);
            }
            EventPayload::SteeringMessage(m) => self.bytes += blocks_bytes(&m.content),
            EventPayload::AssistantMessage(m) => self.bytes += blocks_bytes(&m.content),
            // The compactor measured the new history; start from there.
            EventPayload::Compaction(c) => {
                self.anchor = Some(c.tokens_after);
                self.bytes = 0;
            }
            EventPayload::Prune(p) => {
                self.anchor = Some(p.tokens_after);
                self.bytes = 0;
            }
            EventPayload::ToolResult(r) => {
                self.bytes +=
                    blocks_bytes(&r.result.content) + r.result.call_id.as_str().len() as u64;
            }
            _ => {}
        }
    }

    /// Observes the events of `log` not seen yet (`log` is the same log,
    /// grown).
    pub fn catch_up(&mut self, log: &[impl AsRef<SessionEvent>]) {
        let start = self.seen.min(log.len());
        for e in &log[start..] {
            self.observe(&e.as_ref().data);
        }
    }

    /// The estimated tokens of the next request; `fixed_bytes` is the size
    /// of its system prompt and tool schemas (counted only while no usage
    /// anchors the estimate: the provider's count already includes them).
    pub fn estimate(&self, fixed_bytes: u64) -> u64 {
        match self.anchor {
            Some(anchor) => anchor.saturating_add(self.bytes.div_ceil(BYTES_PER_TOKEN)),
            None => self
                .bytes
                .saturating_add(fixed_bytes)
                .div_ceil(BYTES_PER_TOKEN),
        }
    }

    /// How many events were observed: the index of the next one in the log.
    pub fn observed(&self) -> usize {
        self.seen
    }

    /// Whether a provider count anchors the estimate.
    pub fn is_anchored(&self) -> bool {
        self.anchor.is_some()
    }
}

/// The context meter line a front end shows: `ctx 31% · 412k/1.0M`.
pub fn format_usage(tokens: u64, window: u64) -> String {
    format!(
        "ctx {}% · {}/{}",
        percent(tokens, window),
        short(tokens),
        short(window)
    )
}

/// `tokens` as a whole percentage of `window`, rounded (0 for an empty
/// window).
pub fn percent(tokens: u64, window: u64) -> u64 {
    (tokens.saturating_mul(100).saturating_add(window / 2))
        .checked_div(window)
        .unwrap_or(0)
}

/// `412`, `31k`, `1.0M`.
fn short(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    } else if n >= 1_000 {
        format!("{}k", (n + 500) / 1_000)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{
        AssistantMessageEvent, MessageEvent, MessageSource, ToolResult, ToolResultEvent, UsageEvent,
    };

    fn usage(input: i64, output: i64, cached: i64) -> EventPayload {
        EventPayload::Usage(UsageEvent {
            turn: 1,
            step: 1,
            usage: TokenUsage {
                input_tokens: input,
                output_tokens: output,
                cache_read_tokens: Some(cached),
                cache_write_tokens: None,
                reasoning_tokens: None,
            },
        })
    }

    fn user(text: &str) -> EventPayload {
        EventPayload::UserMessage(MessageEvent {
            content: vec![ContentBlock::text(text)],
            source: MessageSource::User,
        })
    }

    #[test]
    fn without_usage_everything_is_estimated_with_the_fixed_part() {
        let mut m = TokenMeter::new();
        m.observe(&user(&"x".repeat(400)));
        assert!(!m.is_anchored());
        assert_eq!(m.estimate(0), 100);
        assert_eq!(m.estimate(401), 201, "rounded up");
    }

    #[test]
    fn usage_anchors_and_later_text_is_added_by_estimate() {
        let mut m = TokenMeter::new();
        m.observe(&user(&"x".repeat(4000)));
        m.observe(&EventPayload::AssistantMessage(AssistantMessageEvent {
            turn: 1,
            step: 1,
            content: vec![ContentBlock::text("ok")],
        }));
        m.observe(&usage(900, 50, 100));
        assert_eq!(
            m.estimate(1_000_000),
            1050,
            "the provider's count, fixed part included"
        );
        m.observe(&EventPayload::ToolResult(ToolResultEvent {
            turn: 1,
            step: 1,
            result: ToolResult::success("c", vec![ContentBlock::text("y".repeat(800))]),
        }));
        assert_eq!(
            m.estimate(0),
            1050 + 201,
            "800 + the 1-byte call id, rounded up"
        );
        // A report of nothing (the echo model) does not reset the anchor.
        m.observe(&usage(0, 0, 0));
        assert_eq!(m.estimate(0), 1251);
        // Hostile counts from a log saturate instead of overflowing.
        m.observe(&usage(i64::MAX, i64::MAX, -5));
        assert!(m.estimate(0) > i64::MAX as u64);
    }

    #[test]
    fn catch_up_observes_only_new_events() {
        let log: Vec<std::sync::Arc<SessionEvent>> = (0..3)
            .map(|i| {
                std::sync::Arc::new(SessionEvent {
                    seq: i,
                    time: 0,
                    data: user("abcd"),
                })
            })
            .collect();
        let mut m = TokenMeter::new();
        m.catch_up(&log[..2]);
        m.catch_up(&log);
        assert_eq!(m.estimate(0), 3);
        m.catch_up(&log);
        assert_eq!(m.estimate(0), 3);
    }

    #[test]
    fn the_meter_line_reads_like_the_issue() {
        assert_eq!(format_usage(412_000, 1_048_576), "ctx 39% · 412k/1.0M");
        assert_eq!(format_usage(2_480, 8_000), "ctx 31% · 2k/8k");
        assert_eq!(format_usage(12, 0), "ctx 0% · 12/0");
    }
}
