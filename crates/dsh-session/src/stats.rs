//! Validation telemetry computed from a session log alone: per tool, how
//! often calls fail, with which codes and on which argument paths, and how
//! often the model corrects itself; per session, turns, steps and tokens.
//!
//! [`session_stats`] is pure and total: any sequence of events, including a
//! hand-edited or generated one, gives figures (never a panic), so it works
//! on every saved session. The exact definitions are in
//! `docs/reference/session-log.md` ("Session stats").

use std::collections::{BTreeMap, HashMap, VecDeque};

use dsh_llm::{ContentBlock, TokenUsage};
use dsh_protocol::event::{EventPayload, SessionEvent};
use serde::Serialize;

/// The code bucket of an error result logged without a structured failure.
pub const UNKNOWN_CODE: &str = "UNKNOWN";

/// The tool name of a result whose call appears nowhere in the log.
pub const UNKNOWN_TOOL: &str = "?";

/// How many violation paths [`ToolStats::top_violation_paths`] keeps.
pub const TOP_VIOLATION_PATHS: usize = 5;

/// How many steps after a failure a success still counts as its
/// self-correction (steps `s`, `s + 1` and `s + 2` of the same turn).
pub const CORRECTION_WINDOW_STEPS: u64 = 2;

/// The figures of one session log. JSON field names are camelCase.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    /// Number of `turn/start` events.
    pub turns: u64,
    /// Number of `step/start` events.
    pub steps: u64,
    /// Number of tool calls: `tool/call` events plus `tool/result` events
    /// that answer no logged `tool/call` (synthesized results).
    pub tool_calls: u64,
    /// Calls whose result has `isError` set, over all tools.
    pub failures: u64,
    /// Failures followed by a success of the same tool within
    /// [`CORRECTION_WINDOW_STEPS`] steps of the same turn, over all tools.
    pub self_corrections: u64,
    /// `selfCorrections / failures`; `null` when there are no failures.
    pub self_correction_rate: Option<f64>,
    /// Mean of (recovery step − failure step) over corrected failures;
    /// `null` when none was corrected.
    pub mean_steps_to_recovery: Option<f64>,
    /// Token usage summed over `usage` events.
    pub tokens: TokenTotals,
    /// Per tool, keyed (and so sorted) by tool name.
    pub tools: BTreeMap<String, ToolStats>,
}

/// Token usage summed over a log's `usage` events. Sums saturate at the
/// `i64` bounds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    /// Uncached input tokens.
    pub input: i64,
    /// Output tokens (reasoning included).
    pub output: i64,
    /// Input tokens read from the provider's cache; `null` when no `usage`
    /// event reported them.
    pub cache_read: Option<i64>,
    /// Input tokens written to the provider's cache; `null` when no `usage`
    /// event reported them.
    pub cache_write: Option<i64>,
    /// Reasoning tokens; `null` when no `usage` event reported them.
    pub reasoning: Option<i64>,
}

/// The figures of one tool within a session.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolStats {
    /// Calls of this tool (answered or not).
    pub calls: u64,
    /// Calls whose result has `isError` set.
    pub failures: u64,
    /// Failures per code; error results without a code count under
    /// [`UNKNOWN_CODE`].
    pub failures_by_code: BTreeMap<String, u64>,
    /// The most frequent violation paths of this tool's failures, at most
    /// [`TOP_VIOLATION_PATHS`], by count (descending) then path.
    pub top_violation_paths: Vec<PathCount>,
    /// Failures followed, later in the log, by a successful call of this
    /// tool in the same turn at step `s`, `s + 1` or `s + 2` (`s` the
    /// failure's step). Each failure counts at most once.
    pub self_corrections: u64,
    /// `selfCorrections / failures`; `null` when there are no failures.
    pub self_correction_rate: Option<f64>,
    /// Mean of (first recovery step − failure step) over the corrected
    /// failures; `null` when none was corrected.
    pub mean_steps_to_recovery: Option<f64>,
}

/// A violation path and how many violations named it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathCount {
    /// The path (`a.b[2]`), `""` for a violation without a quoted path.
    pub path: String,
    /// Number of violations naming it.
    pub count: u64,
}

/// The argument path a violation names: the text inside its first pair of
/// double quotes (`missing required property "a.b"` → `a.b`, `"n" must be
/// at least 0` → `n`); `""` when it has no quoted text.
pub fn violation_path(violation: &str) -> &str {
    let Some((_, rest)) = violation.split_once('"') else {
        return "";
    };
    match rest.split_once('"') {
        Some((path, _)) => path,
        None => "",
    }
}

/// A failure not yet corrected.
struct OpenFailure {
    step: u64,
}

#[derive(Default)]
struct ToolAcc {
    stats: ToolStats,
    paths: HashMap<String, u64>,
    recovery_steps: u64,
}

/// Computes the figures of a session log (see [`SessionStats`] for each).
///
/// A `tool/result` answers the oldest unanswered `tool/call` with its call
/// id. A result that answers none (synthesized, or a second result for the
/// same id) is a call of its own, named by the latest earlier `tool/call`
/// with that id, else the latest earlier `tool-call` block of an
/// `assistant/message` with that id, else [`UNKNOWN_TOOL`]. A result's turn and step are those of its
/// `tool/result` event.
pub fn session_stats(events: &[SessionEvent]) -> SessionStats {
    let mut turns = 0u64;
    let mut steps = 0u64;
    let mut tokens = TokenTotals::default();
    // The tool name of every call, in log order.
    let mut calls: Vec<String> = Vec::new();
    // Unanswered `tool/call`s per call id, oldest first.
    let mut pending: HashMap<&str, VecDeque<usize>> = HashMap::new();
    // Tool names of the `tool/call` events and of the tool-call blocks
    // seen so far, latest wins.
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    let mut block_names: HashMap<&str, &str> = HashMap::new();
    let mut tools: BTreeMap<String, ToolAcc> = BTreeMap::new();
    // Uncorrected failures per (tool, turn), in log order.
    let mut open: HashMap<(String, u64), Vec<OpenFailure>> = HashMap::new();

    for event in events {
        match &event.data {
            EventPayload::TurnStart(_) => turns += 1,
            EventPayload::StepStart(_) => steps += 1,
            EventPayload::AssistantMessage(m) => {
                for block in &m.content {
                    if let ContentBlock::ToolCall(call) = block {
                        block_names.insert(call.call_id.as_str(), call.name.as_str());
                    }
                }
            }
            EventPayload::ToolCall(e) => {
                call_names.insert(e.call.call_id.as_str(), e.call.name.as_str());
                pending
                    .entry(e.call.call_id.as_str())
                    .or_default()
                    .push_back(calls.len());
                calls.push(e.call.name.clone());
                tools.entry(e.call.name.clone()).or_default().stats.calls += 1;
            }
            EventPayload::ToolResult(e) => {
                let id = e.result.call_id.as_str();
                let index = match pending.get_mut(id).and_then(VecDeque::pop_front) {
                    Some(i) => i,
                    None => {
                        let tool = call_names
                            .get(id)
                            .or_else(|| block_names.get(id))
                            .copied()
                            .unwrap_or(UNKNOWN_TOOL);
                        calls.push(tool.to_string());
                        tools.entry(tool.to_string()).or_default().stats.calls += 1;
                        calls.len() - 1
                    }
                };
                let Some(tool) = calls.get(index) else {
                    continue;
                };
                let acc = tools.entry(tool.clone()).or_default();
                let key = (tool.clone(), e.turn);
                if e.result.is_error {
                    acc.stats.failures += 1;
                    let code = e.result.code().unwrap_or(UNKNOWN_CODE);
                    *acc.stats
                        .failures_by_code
                        .entry(code.to_string())
                        .or_default() += 1;
                    if let Some(f) = &e.result.failure {
                        for v in &f.violations {
                            *acc.paths.entry(violation_path(v).to_string()).or_default() += 1;
                        }
                    }
                    open.entry(key)
                        .or_default()
                        .push(OpenFailure { step: e.step });
                } else if let Some(failures) = open.get_mut(&key) {
                    failures.retain(|f| {
                        let in_window = e.step >= f.step
                            && e.step <= f.step.saturating_add(CORRECTION_WINDOW_STEPS);
                        if in_window {
                            acc.stats.self_corrections += 1;
                            acc.recovery_steps = acc.recovery_steps.saturating_add(e.step - f.step);
                        }
                        !in_window
                    });
                }
            }
            EventPayload::Usage(e) => add_usage(&mut tokens, &e.usage),
            _ => {}
        }
    }

    let mut stats = SessionStats {
        turns,
        steps,
        tool_calls: calls.len() as u64,
        failures: 0,
        self_corrections: 0,
        self_correction_rate: None,
        mean_steps_to_recovery: None,
        tokens,
        tools: BTreeMap::new(),
    };
    let mut recovery_steps = 0u64;
    for (name, acc) in tools {
        let ToolAcc {
            stats: mut tool,
            paths,
            recovery_steps: tool_recovery,
        } = acc;
        let mut ranked: Vec<PathCount> = paths
            .into_iter()
            .map(|(path, count)| PathCount { path, count })
            .collect();
        ranked.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.path.cmp(&b.path)));
        ranked.truncate(TOP_VIOLATION_PATHS);
        tool.top_violation_paths = ranked;
        tool.self_correction_rate = ratio(tool.self_corrections, tool.failures);
        tool.mean_steps_to_recovery = ratio(tool_recovery, tool.self_corrections);
        stats.failures += tool.failures;
        stats.self_corrections += tool.self_corrections;
        recovery_steps = recovery_steps.saturating_add(tool_recovery);
        stats.tools.insert(name, tool);
    }
    stats.self_correction_rate = ratio(stats.self_corrections, stats.failures);
    stats.mean_steps_to_recovery = ratio(recovery_steps, stats.self_corrections);
    stats
}

/// `n / d`, `None` when `d` is 0.
fn ratio(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

fn add_usage(t: &mut TokenTotals, u: &TokenUsage) {
    t.input = t.input.saturating_add(u.input_tokens);
    t.output = t.output.saturating_add(u.output_tokens);
    add_optional(&mut t.cache_read, u.cache_read_tokens);
    add_optional(&mut t.cache_write, u.cache_write_tokens);
    add_optional(&mut t.reasoning, u.reasoning_tokens);
}

/// Adds a reported count; an unreported one leaves the total as it was
/// (`None` until the first report).
fn add_optional(total: &mut Option<i64>, n: Option<i64>) {
    if let Some(n) = n {
        *total = Some(total.unwrap_or(0).saturating_add(n));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use dsh_llm::ToolCall;
    use dsh_protocol::event::{
        AssistantMessageEvent, StepEvent, ToolCallEvent, ToolResultEvent, TurnStartEvent,
        TurnTrigger, UsageEvent,
    };
    use dsh_protocol::{ToolFailure, ToolResult};

    /// Builds a log; `seq` = position.
    struct Log(Vec<EventPayload>);

    impl Log {
        fn new() -> Self {
            Log(Vec::new())
        }

        fn turn(mut self, turn: u64) -> Self {
            self.0.push(EventPayload::TurnStart(TurnStartEvent {
                turn,
                trigger: TurnTrigger::Continuation,
            }));
            self
        }

        fn step(mut self, turn: u64, step: u64) -> Self {
            self.0
                .push(EventPayload::StepStart(StepEvent { turn, step }));
            self
        }

        fn call(mut self, turn: u64, step: u64, id: &str, tool: &str) -> Self {
            self.0.push(EventPayload::ToolCall(ToolCallEvent {
                turn,
                step,
                call: ToolCall::new(id, tool, "{}"),
            }));
            self
        }

        fn result(mut self, turn: u64, step: u64, id: &str, failure: Option<ToolFailure>) -> Self {
            self.0.push(EventPayload::ToolResult(ToolResultEvent {
                turn,
                step,
                result: ToolResult {
                    call_id: id.into(),
                    content: vec![ContentBlock::text("x")],
                    is_error: failure.is_some(),
                    failure,
                },
            }));
            self
        }

        fn ok(self, turn: u64, step: u64, id: &str, tool: &str) -> Self {
            self.call(turn, step, id, tool).result(turn, step, id, None)
        }

        fn fail(self, turn: u64, step: u64, id: &str, tool: &str, code: &str) -> Self {
            self.fail_with(turn, step, id, tool, code, &[])
        }

        fn fail_with(
            self,
            turn: u64,
            step: u64,
            id: &str,
            tool: &str,
            code: &str,
            violations: &[&str],
        ) -> Self {
            let failure = ToolFailure {
                code: code.into(),
                message: "bad".into(),
                violations: violations.iter().map(|v| v.to_string()).collect(),
            };
            self.call(turn, step, id, tool)
                .result(turn, step, id, Some(failure))
        }

        fn push(mut self, data: EventPayload) -> Self {
            self.0.push(data);
            self
        }

        fn stats(self) -> SessionStats {
            let events: Vec<SessionEvent> = self
                .0
                .into_iter()
                .enumerate()
                .map(|(i, data)| SessionEvent {
                    seq: i as u64,
                    time: 0,
                    data,
                })
                .collect();
            session_stats(&events)
        }
    }

    fn tool<'a>(s: &'a SessionStats, name: &str) -> &'a ToolStats {
        s.tools.get(name).unwrap()
    }

    #[test]
    fn a_success_two_steps_later_corrects_a_failure() {
        let s = Log::new()
            .turn(1)
            .fail(1, 1, "a", "bash", "INVALID_ARGS")
            .ok(1, 3, "b", "bash")
            .stats();
        let t = tool(&s, "bash");
        assert_eq!((t.calls, t.failures, t.self_corrections), (2, 1, 1));
        assert_eq!(t.self_correction_rate, Some(1.0));
        assert_eq!(t.mean_steps_to_recovery, Some(2.0));
    }

    #[test]
    fn a_success_in_the_same_step_after_the_failure_corrects_it() {
        let s = Log::new()
            .fail(1, 4, "a", "bash", "X")
            .ok(1, 4, "b", "bash")
            .stats();
        assert_eq!(tool(&s, "bash").self_corrections, 1);
        assert_eq!(tool(&s, "bash").mean_steps_to_recovery, Some(0.0));
    }

    #[test]
    fn a_success_before_the_failure_does_not_correct_it() {
        let s = Log::new()
            .ok(1, 1, "b", "bash")
            .fail(1, 1, "a", "bash", "X")
            .stats();
        assert_eq!(tool(&s, "bash").self_corrections, 0);
        assert_eq!(tool(&s, "bash").self_correction_rate, Some(0.0));
        assert_eq!(tool(&s, "bash").mean_steps_to_recovery, None);
    }

    #[test]
    fn a_success_three_steps_later_does_not_correct() {
        let s = Log::new()
            .fail(1, 1, "a", "bash", "INVALID_ARGS")
            .ok(1, 4, "b", "bash")
            .stats();
        let t = tool(&s, "bash");
        assert_eq!((t.calls, t.failures, t.self_corrections), (2, 1, 0));
        assert_eq!(t.self_correction_rate, Some(0.0));
        assert_eq!(t.mean_steps_to_recovery, None);
    }

    #[test]
    fn a_success_in_the_next_turn_does_not_correct() {
        let s = Log::new()
            .turn(1)
            .fail(1, 2, "a", "bash", "INVALID_ARGS")
            .turn(2)
            .ok(2, 1, "b", "bash")
            .ok(2, 2, "c", "bash")
            .ok(2, 3, "d", "bash")
            .stats();
        assert_eq!(tool(&s, "bash").self_corrections, 0);
        assert_eq!(s.turns, 2);
    }

    #[test]
    fn a_success_of_another_tool_does_not_correct() {
        let s = Log::new()
            .fail(1, 1, "a", "bash", "X")
            .ok(1, 2, "b", "echo")
            .stats();
        assert_eq!(tool(&s, "bash").self_corrections, 0);
        assert_eq!(tool(&s, "echo").failures, 0);
        assert_eq!(tool(&s, "echo").self_correction_rate, None);
    }

    #[test]
    fn each_failure_counts_once_and_the_first_recovery_sets_its_steps() {
        // Failures at steps 1 and 2; successes at 3 and 3 again. Both
        // failures are corrected by the first success (steps 2 and 1), the
        // second success corrects nothing more.
        let s = Log::new()
            .fail(1, 1, "a", "bash", "X")
            .fail(1, 2, "b", "bash", "X")
            .ok(1, 3, "c", "bash")
            .ok(1, 3, "d", "bash")
            .stats();
        let t = tool(&s, "bash");
        assert_eq!((t.calls, t.failures, t.self_corrections), (4, 2, 2));
        assert_eq!(t.mean_steps_to_recovery, Some(1.5));

        // Failures at 1 and 3, success at 4: only the second is in reach.
        let s = Log::new()
            .fail(1, 1, "a", "bash", "X")
            .fail(1, 3, "b", "bash", "X")
            .ok(1, 4, "c", "bash")
            .stats();
        let t = tool(&s, "bash");
        assert_eq!((t.failures, t.self_corrections), (2, 1));
        assert_eq!(t.self_correction_rate, Some(0.5));
        assert_eq!(t.mean_steps_to_recovery, Some(1.0));
        assert_eq!(s.self_corrections, 1);
        assert_eq!(s.self_correction_rate, Some(0.5));
    }

    #[test]
    fn overall_figures_sum_the_tools() {
        let s = Log::new()
            .fail(1, 1, "a", "bash", "X")
            .ok(1, 2, "b", "bash")
            .fail(1, 1, "c", "read", "Y")
            .fail(1, 2, "d", "read", "Y")
            .ok(1, 4, "e", "read")
            .stats();
        // bash: 1 failure corrected after 1 step; read: failure at 1 not
        // reached by step 4, failure at 2 corrected after 2 steps.
        assert_eq!((s.tool_calls, s.failures, s.self_corrections), (5, 3, 2));
        assert_eq!(s.self_correction_rate, Some(2.0 / 3.0));
        assert_eq!(s.mean_steps_to_recovery, Some(1.5));
        assert_eq!(tool(&s, "read").mean_steps_to_recovery, Some(2.0));
    }

    #[test]
    fn failure_codes_bucket_with_unknown_for_codeless_errors() {
        let s = Log::new()
            .fail(1, 1, "a", "bash", "INVALID_ARGS")
            .fail(1, 1, "b", "bash", "INVALID_ARGS")
            .fail(1, 1, "c", "bash", "TIMEOUT")
            .call(1, 1, "d", "bash")
            .push(EventPayload::ToolResult(ToolResultEvent {
                turn: 1,
                step: 1,
                result: ToolResult {
                    call_id: "d".into(),
                    content: vec![ContentBlock::text("Error: ?")],
                    is_error: true,
                    failure: None,
                },
            }))
            .ok(1, 1, "e", "bash")
            .stats();
        let t = tool(&s, "bash");
        assert_eq!(t.calls, 5);
        assert_eq!(t.failures, 4);
        let codes: Vec<(&str, u64)> = t
            .failures_by_code
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        assert_eq!(
            codes,
            vec![("INVALID_ARGS", 2), ("TIMEOUT", 1), ("UNKNOWN", 1)]
        );
    }

    #[test]
    fn violation_paths_are_ranked_by_count_then_path_and_cut_at_five() {
        let s = Log::new()
            .fail_with(
                1,
                1,
                "a",
                "t",
                "INVALID_ARGS",
                &[
                    r#"missing required property "b""#,
                    r#""a.x[2]" must be a string"#,
                    r#""arguments" must be an object"#,
                ],
            )
            .fail_with(
                1,
                1,
                "b",
                "t",
                "INVALID_ARGS",
                &[
                    r#""b" is missing"#,
                    r#""a.x[2]" must be at least 0"#,
                    "(root) must be an object",
                    r#""c" x"#,
                    r#""d" x"#,
                    r#""e" x"#,
                ],
            )
            .fail_with(1, 1, "c", "t", "INVALID_ARGS", &[r#""a.x[2]" x"#])
            .stats();
        let paths: Vec<(&str, u64)> = tool(&s, "t")
            .top_violation_paths
            .iter()
            .map(|p| (p.path.as_str(), p.count))
            .collect();
        // Counts: a.x[2] 3, b 2, then 1 each: "" (root), arguments, c, d, e.
        assert_eq!(
            paths,
            vec![("a.x[2]", 3), ("b", 2), ("", 1), ("arguments", 1), ("c", 1)]
        );
    }

    #[test]
    fn violation_path_is_the_first_quoted_text() {
        assert_eq!(violation_path(r#""command" is missing"#), "command");
        assert_eq!(violation_path(r#""a.b" must be a string, got 3"#), "a.b");
        assert_eq!(
            violation_path(r#"missing required property "description""#),
            "description"
        );
        assert_eq!(violation_path("(root) must be an object"), "");
        assert_eq!(violation_path(r#"unterminated "quote"#), "");
        assert_eq!(violation_path(r#""" is empty"#), "");
        assert_eq!(violation_path(""), "");
    }

    #[test]
    fn results_without_a_call_event_are_named_from_the_assistant_message() {
        let s = Log::new()
            .push(EventPayload::AssistantMessage(AssistantMessageEvent {
                turn: 1,
                step: 1,
                content: vec![
                    ContentBlock::text("x"),
                    ContentBlock::tool_call("k1", "grep", "{}"),
                ],
            }))
            .result(
                1,
                1,
                "k1",
                Some(ToolFailure {
                    code: "INTERRUPTED".into(),
                    message: String::new(),
                    violations: vec![],
                }),
            )
            .result(1, 1, "nowhere", None)
            // A second result for an answered call is a call of its own,
            // named by the `tool/call` with its id.
            .call(1, 2, "z", "bash")
            .result(1, 2, "z", None)
            .result(1, 2, "z", None)
            .stats();
        assert_eq!(tool(&s, "grep").failures_by_code["INTERRUPTED"], 1);
        assert_eq!(tool(&s, "grep").calls, 1);
        assert_eq!(tool(&s, "?").calls, 1);
        assert_eq!(tool(&s, "bash").calls, 2);
        assert_eq!(s.tool_calls, 4);
    }

    #[test]
    fn unanswered_calls_count_as_calls_only() {
        let s = Log::new().call(1, 1, "a", "bash").stats();
        let t = tool(&s, "bash");
        assert_eq!((t.calls, t.failures), (1, 0));
        assert_eq!(t.self_correction_rate, None);
    }

    #[test]
    fn a_result_answers_the_oldest_open_call_with_its_id() {
        // The echo model reuses call ids across turns.
        let s = Log::new()
            .call(1, 1, "c1", "bash")
            .call(1, 1, "c1", "echo")
            .result(1, 1, "c1", None)
            .result(1, 1, "c1", None)
            .stats();
        assert_eq!(tool(&s, "bash").calls, 1);
        assert_eq!(tool(&s, "echo").calls, 1);
        assert_eq!(s.tool_calls, 2);
    }

    #[test]
    fn tokens_sum_with_null_for_unreported_fields() {
        let usage = |i, o, r| {
            EventPayload::Usage(UsageEvent {
                turn: 1,
                step: 1,
                usage: TokenUsage {
                    input_tokens: i,
                    output_tokens: o,
                    cache_read_tokens: r,
                    cache_write_tokens: None,
                    reasoning_tokens: None,
                },
            })
        };
        let s = Log::new()
            .turn(1)
            .step(1, 1)
            .push(usage(100, 20, Some(50)))
            .step(1, 2)
            .push(usage(10, 5, None))
            .push(usage(i64::MAX, 0, Some(1)))
            .stats();
        assert_eq!(s.steps, 2);
        assert_eq!(s.tokens.input, i64::MAX);
        assert_eq!(s.tokens.output, 25);
        assert_eq!(s.tokens.cache_read, Some(51));
        assert_eq!(s.tokens.cache_write, None);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json["tokens"],
            serde_json::json!({"input": i64::MAX, "output": 25, "cacheRead": 51,
                "cacheWrite": null, "reasoning": null})
        );
    }

    #[test]
    fn json_field_names_are_camel_case() {
        let s = Log::new()
            .fail_with(1, 1, "a", "bash", "INVALID_ARGS", &[r#""x" bad"#])
            .stats();
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "turns": 0, "steps": 0, "toolCalls": 1, "failures": 1,
                "selfCorrections": 0, "selfCorrectionRate": 0.0,
                "meanStepsToRecovery": null,
                "tokens": {"input": 0, "output": 0, "cacheRead": null,
                    "cacheWrite": null, "reasoning": null},
                "tools": {"bash": {
                    "calls": 1, "failures": 1,
                    "failuresByCode": {"INVALID_ARGS": 1},
                    "topViolationPaths": [{"path": "x", "count": 1}],
                    "selfCorrections": 0, "selfCorrectionRate": 0.0,
                    "meanStepsToRecovery": null
                }}
            })
        );
    }

    #[test]
    fn extreme_step_numbers_do_not_overflow() {
        let s = Log::new()
            .fail(1, u64::MAX, "a", "bash", "X")
            .ok(1, u64::MAX, "b", "bash")
            .fail(1, u64::MAX - 1, "c", "bash", "X")
            .ok(1, 0, "d", "bash")
            .stats();
        assert_eq!(tool(&s, "bash").self_corrections, 1);
    }
}
