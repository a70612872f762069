//! Context management on the `agent/request` seam: prune old tool results,
//! then summarise the oldest part of the history (see the README).
//!
//! Start at [`Compactor`]: [`Compactor::install`] registers the automatic
//! check before each step; [`Compactor::compact`] compacts now (manual
//! `/compact`, `dsh session compact`). [`plan`] is the pure planning step:
//! given the history, decide which tool results to prune and where to cut.

#![warn(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dsh_agent::{Agent, AgentRegistry, RequestContext};
use dsh_kernel::sync::lock;
use dsh_kernel::{DshError, ErrorCode, Registration};
use dsh_llm::{ContentBlock, LlmService, Message, ModelRequest, Role};
use dsh_session::{
    blocks_bytes, pruned_len, summary_message, CompactionEvent, EventPayload, PruneEvent, Session,
    TokenMeter, BYTES_PER_TOKEN,
};
use serde_json::json;
use std::borrow::Borrow;

/// Event kind opening a compaction: `{reason, fromSeq, toSeq, tokensBefore}`.
pub const START_KIND: &str = "compaction/start";
/// Event kind closing one: `{ok, tokensAfter, fallback?, error?}`.
pub const END_KIND: &str = "compaction/end";

/// The instruction appended to the replayed history for the summary.
pub const INSTRUCTION: &str = "Your context window is nearly full, so the conversation so far will be replaced by a summary you write now. Do not call tools. Write the summary in Markdown with exactly these sections, keeping every fact needed to continue the work:\n\n## User goal and constraints\n## Key decisions\n## Files touched and why\n## Errors met and how they were fixed\n## Open background tasks\n## Current work\n## Next step\n\nBe specific (paths, names, commands, values) and brief. Reply with the summary only.";

/// Texts of pruned tool results in the fallback keep this many characters.
const FALLBACK_HEAD: usize = 200;

/// Settings (`[compaction]` in dsh.toml).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionConfig {
    /// The model's context window, in tokens.
    pub window: u64,
    /// Compact before a step when the next request passes this fraction of
    /// the window (default 0.8).
    pub threshold: f64,
    /// Keep this fraction of the window of the most recent history
    /// verbatim (default 0.16).
    pub retain: f64,
    /// Tool results longer than this many characters are pruned (8,192).
    pub prune_above: usize,
    /// Characters a pruned result keeps from its start (4,096).
    pub prune_head: usize,
    /// Characters a pruned result keeps from its end (1,024).
    pub prune_tail: usize,
    /// Output budget of the summary request, in tokens (8,192).
    pub summary_max_tokens: u32,
}

impl CompactionConfig {
    /// The defaults for a model with `window` tokens.
    pub fn for_window(window: u64) -> Self {
        Self {
            window,
            threshold: 0.8,
            retain: 0.16,
            prune_above: 8_192,
            prune_head: 4_096,
            prune_tail: 1_024,
            summary_max_tokens: 8_192,
        }
    }

    fn limit(&self) -> u64 {
        (self.window as f64 * self.threshold) as u64
    }
}

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The meter passed the threshold before a step.
    Threshold,
    /// The provider rejected the request as too long.
    Overflow,
    /// Asked for (`/compact`, `dsh session compact`).
    Manual,
}

impl Reason {
    /// `threshold`, `overflow`, `manual`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Threshold => "threshold",
            Reason::Overflow => "overflow",
            Reason::Manual => "manual",
        }
    }
}

/// What [`plan`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Estimated tokens of the request now.
    pub tokens_before: u64,
    /// The `seq`s of the tool results to prune (ascending).
    pub prune: Vec<u64>,
    /// Estimated tokens after the prune.
    pub tokens_after_prune: u64,
    /// Messages `[..cut]` are to be summarised; `None` when no valid cut
    /// leaves something to replace.
    pub cut: Option<usize>,
}

/// Estimated tokens of `bytes` of text.
fn tokens(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

fn message_bytes(m: &Message) -> u64 {
    blocks_bytes(&m.content)
}

/// Whether `m` is a tool result with a text longer than `limit`
/// characters (counted only for texts with more bytes than that).
fn has_text_longer_than(m: &Message, limit: usize) -> bool {
    m.content.iter().any(|b| match b {
        ContentBlock::ToolResult(r) => r
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .any(|t| t.len() > limit && t.chars().count() > limit),
        _ => false,
    })
}

fn is_tool_result(m: &Message) -> bool {
    m.role == Role::User
        && m.content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult(_)))
}

/// Bytes saved by cutting every tool-result text of `m` to `head + tail`
/// characters and the marker, as the derivation will; `None` when that
/// saves nothing or makes one of the texts longer (a text only a little
/// longer than `head + tail` grows by the marker), so such a message is
/// never pruned and a prune never grows the request.
fn pruned_savings(m: &Message, head: usize, tail: usize) -> Option<u64> {
    let mut saved = 0u64;
    let texts = m
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r),
            _ => None,
        })
        .flat_map(|r| r.content.iter().filter_map(ContentBlock::as_text));
    for t in texts {
        let after = pruned_len(t, head, tail);
        if after > t.len() {
            return None;
        }
        saved += (t.len() - after) as u64;
    }
    (saved > 0).then_some(saved)
}

/// Plans a compaction of `messages` (whose positions are `seqs`, as
/// [`dsh_session::Deriver::seqs`] gives them) for a
/// request whose system prompt and tools take `fixed_bytes`: the old tool
/// results to prune (outside the retained tail, longer than
/// `prune_above`) and the cut (the latest step boundary before the
/// retained tail: never between a tool call and its result). O(history).
pub fn plan<M: Borrow<Message>>(
    messages: &[M],
    seqs: &[u64],
    fixed_bytes: u64,
    config: &CompactionConfig,
) -> Plan {
    let sizes: Vec<u64> = messages.iter().map(|m| message_bytes(m.borrow())).collect();
    let total: u64 = sizes.iter().sum::<u64>() + fixed_bytes;
    let tokens_before = tokens(total);
    // The retained tail: the most recent messages within `retain` of the window.
    let budget = (config.window as f64 * config.retain) as u64;
    let mut kept = 0u64;
    let mut retain_start = messages.len();
    while retain_start > 0 {
        let t = tokens(sizes[retain_start - 1]);
        if kept + t > budget {
            break;
        }
        kept += t;
        retain_start -= 1;
    }
    let mut prune = Vec::new();
    let mut saved = 0u64;
    for (i, m) in messages[..retain_start].iter().enumerate() {
        if !has_text_longer_than(m.borrow(), config.prune_above) {
            continue;
        }
        if let Some(s) = pruned_savings(m.borrow(), config.prune_head, config.prune_tail) {
            prune.push(seqs[i]);
            saved += s;
        }
    }
    // A step boundary: the message opens a step (an assistant reply) or is
    // a user message that is not a tool result.
    let cut = (1..=retain_start.min(messages.len().saturating_sub(1)))
        .rev()
        .find(|&i| !is_tool_result(messages[i].borrow()))
        .filter(|&i| !(i == 1 && is_summary(messages[0].borrow())));
    Plan {
        tokens_before,
        prune,
        tokens_after_prune: tokens(total.saturating_sub(saved)),
        cut,
    }
}

/// The `(fromSeq, toSeq)` of a compaction that replaces messages `[..cut]`
/// of a history whose positions are `seqs` ([`dsh_session::Deriver::seqs`]):
/// the positions of the first and the last replaced message. `None` when
/// `cut` is 0 or past the end, or when the positions are not strictly
/// increasing (then no range names exactly those messages). A range
/// returned is never inverted, and replay replaces exactly `[..cut]`.
pub fn summary_range(seqs: &[u64], cut: usize) -> Option<(u64, u64)> {
    if cut == 0 || cut > seqs.len() || !seqs.windows(2).all(|w| w[0] < w[1]) {
        return None;
    }
    Some((seqs[0], seqs[cut - 1]))
}

fn is_summary(m: &Message) -> bool {
    m.role == Role::User
        && m.content
            .first()
            .and_then(ContentBlock::as_text)
            .is_some_and(|t| t.starts_with("<compacted-summary>"))
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing needed or possible.
    Nothing,
    /// Old tool results were pruned; enough on its own.
    Pruned {
        /// Estimated tokens after.
        tokens_after: u64,
    },
    /// The oldest part was summarised (after any prune).
    Summarised {
        /// Estimated tokens after.
        tokens_after: u64,
    },
    /// The summary was not shorter twice: the replaced part's tool results
    /// were cut instead.
    FellBack {
        /// Estimated tokens after.
        tokens_after: u64,
    },
}

/// The compactor of one process: settings, the model service, and one
/// token meter per agent (updated from each agent's log as it grows).
pub struct Compactor {
    config: CompactionConfig,
    llm: Arc<LlmService>,
    meters: Mutex<HashMap<String, TokenMeter>>,
}

impl Compactor {
    /// A compactor with `config`, asking `llm` for summaries.
    pub fn new(config: CompactionConfig, llm: Arc<LlmService>) -> Arc<Self> {
        Arc::new(Self {
            config,
            llm,
            meters: Mutex::new(HashMap::new()),
        })
    }

    /// The settings.
    pub fn config(&self) -> &CompactionConfig {
        &self.config
    }

    /// Registers the check on `agent/request`: before each step, when the
    /// meter passes the threshold or the step's first attempt overflowed,
    /// compact and hand the step the compacted history. A failing
    /// compaction is logged (`compaction/end` with `ok: false`) and the
    /// step goes on with the history it had.
    pub fn install(self: &Arc<Self>, agents: &AgentRegistry) -> Registration {
        let me = self.clone();
        agents
            .hooks()
            .request
            .prepend(move |mut ctx: RequestContext, next| {
                let me = me.clone();
                async move {
                    let estimate = me.estimate(&ctx.agent, &ctx.request);
                    let reason = if ctx.overflowed {
                        Some(Reason::Overflow)
                    } else if estimate > me.config.limit() {
                        Some(Reason::Threshold)
                    } else {
                        None
                    };
                    if let Some(reason) = reason {
                        match me.compact(&ctx.agent, &ctx.request, reason, None).await {
                            Ok(Outcome::Nothing) => {}
                            Ok(_) => ctx.request.messages = ctx.agent.session().derive_messages(),
                            Err(e) => {
                                tracing::warn!(target: "dsh_compaction", "compaction failed: {e}")
                            }
                        }
                    }
                    next.run(ctx).await
                }
            })
    }

    /// The meter's estimate of `agent`'s next request, shaped like
    /// `request` (its system prompt and tools are measured only while no
    /// usage report anchors the meter: the provider's count covers them).
    pub fn estimate(&self, agent: &Arc<dyn Agent>, request: &ModelRequest) -> u64 {
        let session = agent.session();
        let mut meters = lock(&self.meters);
        let meter = meters.entry(session.id().to_string()).or_default();
        for e in session.events_since(meter.observed()) {
            meter.observe(&e.data);
        }
        let fixed = if meter.is_anchored() {
            0
        } else {
            dsh_session::fixed_bytes(request.system.as_deref(), request.tools.as_ref())
        };
        meter.estimate(fixed)
    }

    /// Compacts `agent`'s history now for a request shaped like `request`
    /// (its model, system prompt and tools are reused for the summary, so
    /// the provider's prompt cache serves the replayed prefix). `focus`
    /// is added to the instruction (manual compaction). Prunes first; a
    /// threshold compaction stops there when the prune alone gets under
    /// the threshold.
    ///
    /// # Errors
    /// The summary request's error (after `compaction/end` `ok: false` was
    /// logged); nothing was replaced then.
    pub async fn compact(
        &self,
        agent: &Arc<dyn Agent>,
        request: &ModelRequest,
        reason: Reason,
        focus: Option<&str>,
    ) -> Result<Outcome, DshError> {
        self.compact_session(&agent.session(), request, reason, focus)
            .await
    }

    /// [`Compactor::compact`] on a session log directly (what it does for
    /// an agent's session; tests and tools that hold only a log use it).
    ///
    /// # Errors
    /// As [`Compactor::compact`].
    pub async fn compact_session(
        &self,
        session: &Session,
        request: &ModelRequest,
        reason: Reason,
        focus: Option<&str>,
    ) -> Result<Outcome, DshError> {
        let fixed = dsh_session::fixed_bytes(request.system.as_deref(), request.tools.as_ref());
        let (history, seqs) = session.derive_messages_with_seqs();
        let mut plan = history.with(|messages| plan(messages, &seqs, fixed, &self.config));
        if plan.cut.is_none() && reason != Reason::Threshold {
            // The provider (or the user) says compact although the
            // retained tail holds everything: keep only the last step.
            let tight = CompactionConfig {
                retain: 0.0,
                ..self.config.clone()
            };
            plan.cut = history.with(|messages| self::plan(messages, &seqs, fixed, &tight).cut);
        }
        let mut outcome = Outcome::Nothing;
        if !plan.prune.is_empty() {
            session.append(EventPayload::Prune(PruneEvent {
                seqs: plan.prune.clone(),
                head_chars: self.config.prune_head,
                tail_chars: self.config.prune_tail,
                tokens_after: plan.tokens_after_prune,
            }));
            outcome = Outcome::Pruned {
                tokens_after: plan.tokens_after_prune,
            };
            if reason == Reason::Threshold && plan.tokens_after_prune <= self.config.limit() {
                return Ok(outcome);
            }
        }
        let Some(cut) = plan.cut else {
            return Ok(outcome);
        };
        // The history after the prune (if any), as the summary request
        // replays it.
        let (history, seqs) = if plan.prune.is_empty() {
            (history, seqs)
        } else {
            session.derive_messages_with_seqs()
        };
        let cut = cut.min(history.len());
        let Some((from_seq, to_seq)) = summary_range(&seqs, cut) else {
            // Only a log an earlier version broke (its second compaction
            // named an inverted range) has positions out of order: a
            // summary could not replace what it names, so none is asked for.
            tracing::warn!(
                target: "dsh_compaction",
                "not summarising: the history's positions are out of order (a compaction an earlier version logged)"
            );
            return Ok(outcome);
        };
        let (replaced_bytes, kept_bytes) = history.with(|m| {
            (
                m[..cut].iter().map(|m| message_bytes(m)).sum::<u64>(),
                m[cut..].iter().map(|m| message_bytes(m)).sum::<u64>(),
            )
        });
        let replaced_tokens = tokens(replaced_bytes);
        let before = tokens(fixed + replaced_bytes + kept_bytes);
        session.append(EventPayload::Other {
            kind: START_KIND.to_string(),
            data: json!({
                "reason": reason.as_str(),
                "fromSeq": from_seq,
                "toSeq": to_seq,
                "tokensBefore": before,
            }),
        });
        let mut instruction = INSTRUCTION.to_string();
        if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
            instruction.push_str(&format!("\n\nFocus the summary on: {}", f.trim()));
        }
        // The replaced prefix and the instruction, shared by both attempts:
        // the prefix's messages are the history's own (pointers copied).
        let mut replay = history.prefix(cut);
        replay.push(Message::user_text(instruction));
        let mut budget = self.config.summary_max_tokens;
        for attempt in 0..2 {
            let summary_request = ModelRequest {
                model: request.model.clone(),
                system: request.system.clone(),
                tools: request.tools.clone(),
                messages: replay.clone(),
                max_tokens: Some(budget),
                cancel: request.cancel.clone(),
                ..Default::default()
            };
            let reply = match self.llm.generate(summary_request).await {
                Ok(r) => r,
                Err(e) => {
                    let e = DshError::from(e);
                    session.append(EventPayload::Other {
                        kind: END_KIND.to_string(),
                        data: json!({"ok": false, "error": e.message(), "code": e.code()}),
                    });
                    return Err(e);
                }
            };
            let summary: String = reply
                .message
                .content
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<String>()
                .trim()
                .to_string();
            let summary_tokens = tokens(message_bytes(&summary_message(&summary)));
            if !summary.is_empty() && summary_tokens < replaced_tokens {
                let tokens_after =
                    tokens(fixed + message_bytes(&summary_message(&summary)) + kept_bytes);
                session.append(EventPayload::Compaction(CompactionEvent {
                    from_seq,
                    to_seq,
                    summary,
                    tokens_after,
                }));
                session.append(EventPayload::Other {
                    kind: END_KIND.to_string(),
                    data: json!({"ok": true, "tokensAfter": tokens_after, "attempts": attempt + 1}),
                });
                return Ok(Outcome::Summarised { tokens_after });
            }
            // Not shorter: once more with half the replaced size as budget.
            budget = u32::try_from((replaced_tokens / 2).max(64)).unwrap_or(u32::MAX);
        }
        // Fallback: cut the replaced part's tool results to a stub.
        let (results, saved) = replay.with(|replayed| {
            let replaced = &replayed[..cut];
            // Only the results the cut makes shorter.
            let (results, savings): (Vec<u64>, Vec<u64>) = replaced
                .iter()
                .zip(&seqs)
                .filter(|(m, _)| is_tool_result(m))
                .filter_map(|(m, s)| Some((*s, pruned_savings(m, FALLBACK_HEAD, 0)?)))
                .unzip();
            (results, savings.iter().sum::<u64>())
        });
        let tokens_after = before.saturating_sub(tokens(saved));
        if !results.is_empty() {
            session.append(EventPayload::Prune(PruneEvent {
                seqs: results,
                head_chars: FALLBACK_HEAD,
                tail_chars: 0,
                tokens_after,
            }));
        }
        session.append(EventPayload::Other {
            kind: END_KIND.to_string(),
            data: json!({"ok": true, "fallback": "pruned", "tokensAfter": tokens_after}),
        });
        Ok(Outcome::FellBack { tokens_after })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_llm::ToolCall;

    fn user(t: &str) -> Message {
        Message::user_text(t)
    }

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall(ToolCall::new(id, "bash", "{}"))],
        }
    }

    fn result(id: &str, text: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![
                dsh_protocol::ToolResult::success(id, vec![ContentBlock::text(text)]).to_block(),
            ],
        }
    }

    fn config(window: u64) -> CompactionConfig {
        CompactionConfig::for_window(window)
    }

    #[test]
    fn the_cut_never_separates_a_call_from_its_result() {
        let messages = vec![
            user("start"),
            call("a"),
            result("a", &"x".repeat(400)),
            call("b"),
            result("b", &"y".repeat(400)),
            call("c"),
            result("c", "z"),
        ];
        let seqs: Vec<u64> = (0..messages.len() as u64).map(|i| i * 3).collect();
        // Retain ~16 tokens: only the last step fits.
        let p = plan(&messages, &seqs, 0, &config(100));
        let cut = p.cut.expect("a cut");
        assert_eq!(cut, 5, "before call c, after result b");
        assert!(!is_tool_result(&messages[cut]));
        assert!(p.prune.is_empty(), "nothing above 8,192 characters");
    }

    #[test]
    fn long_old_results_are_pruned_but_not_the_retained_tail() {
        let long = "r".repeat(10_000);
        let messages = vec![
            user("go"),
            call("a"),
            result("a", &long),
            call("b"),
            result("b", &long),
        ];
        let seqs = vec![0, 1, 2, 3, 4];
        // A window whose retained 16 % holds the last result (2,500 tokens).
        let p = plan(&messages, &seqs, 0, &config(20_000));
        assert_eq!(p.prune, vec![2]);
        assert!(p.tokens_after_prune < p.tokens_before);
        let saved = p.tokens_before - p.tokens_after_prune;
        assert!(
            (1_100..1_300).contains(&saved),
            "≈ (10,000 − 5,120 − marker) / 4: {saved}"
        );
    }

    #[test]
    fn nothing_to_cut_in_a_lone_summary_or_a_single_message() {
        let one = vec![user("only")];
        assert_eq!(plan(&one, &[0], 0, &config(10)).cut, None);
        let after_summary = vec![
            summary_message("s"),
            call("a"),
            result("a", &"q".repeat(999)),
        ];
        assert_eq!(plan(&after_summary, &[5, 6, 7], 0, &config(10)).cut, None);
    }
}
