//! What a session cost in money, computed from its log alone.
//!
//! A [`Price`] is a model's price per 1,000,000 tokens of uncached input,
//! cached input (a cache hit) and output, in one currency, with an
//! optional off-peak schedule (cheaper rates outside the peak hours, by
//! the request's time in UTC). A `usage` event costs
//!
//! ```text
//! cache-hit input × cached price + uncached input × input price + output × output price
//! ```
//!
//! priced by the model that served the request (the `request/options`
//! event the loop logs before each request, or the last `model/change`)
//! at the event's time. Reasoning tokens are part of the output tokens
//! and are not priced again; cache-write tokens count as uncached input.
//!
//! A model without a price has an *unknown* cost, never 0: a [`Cost`]
//! keeps the priced part and counts the reports it could not price, and
//! [`Cost::display`] shows `?` (nothing priced) or `≥ $0.0123` (a part
//! unknown).
//!
//! [`CostMeter`] folds events one at a time (what the budget check and the
//! status line do live); [`session_cost`] folds a whole log into turns and
//! steps. [`scan_usage`] reads a JSONL log's bytes without parsing every
//! line (only the `usage`, `request/options`, `model/change` lines and the
//! first `request/system` line are parsed), for `dsh usage` over many logs.
//!
//! A forked session starts with a copy of its parent's events (a
//! `session/fork` event at `seq` 0, then the copies with their old times):
//! usage older than the fork was paid for by the parent and is not counted
//! again.

use std::collections::BTreeMap;

use dsh_protocol::{EventPayload, SessionEvent, TokenUsage};
use serde::Serialize;

/// Tokens a price is given for: prices are per 1,000,000 tokens.
pub const PRICE_UNIT_TOKENS: f64 = 1_000_000.0;

/// The log-only event the loop writes before a request whose options
/// changed: `{"model", …}` (`dsh_agent_loop::REQUEST_OPTIONS_KIND`).
pub const REQUEST_OPTIONS_KIND: &str = "request/options";

/// The log-only event of a `/model` switch: `{"model", "source"}`
/// (`dsh::MODEL_CHANGE_EVENT`).
pub const MODEL_CHANGE_KIND: &str = "model/change";

/// The log-only event a forked session starts with (`{"from": id}`).
pub const FORK_KIND: &str = "session/fork";

/// The log-only event holding the system prompt (`{"text"}`), whose
/// environment line names the working directory.
pub const REQUEST_SYSTEM_KIND: &str = "request/system";

/// The milliseconds of a day.
const DAY_MS: u64 = 86_400_000;

/// Rates per 1,000,000 tokens, in a price's currency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rates {
    /// Uncached (cache-miss) input tokens.
    pub input: f64,
    /// Input tokens served from the provider's cache (cache hits).
    pub cached_input: f64,
    /// Output tokens (reasoning included).
    pub output: f64,
}

impl Rates {
    /// Every rate multiplied by `factor` (an off-peak discount).
    pub fn scaled(self, factor: f64) -> Rates {
        Rates {
            input: self.input * factor,
            cached_input: self.cached_input * factor,
            output: self.output * factor,
        }
    }

    /// All three rates zero (a model that costs nothing).
    pub fn is_free(&self) -> bool {
        self.input == 0.0 && self.cached_input == 0.0 && self.output == 0.0
    }
}

/// Cheaper rates outside the peak hours.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OffPeak {
    /// The rates outside the peak windows.
    pub rates: Rates,
    /// The peak windows, as minutes of the UTC day `[start, end)`; every
    /// other minute is off-peak.
    pub peak_utc_minutes: Vec<(u16, u16)>,
}

/// A model's price.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    /// The currency (`USD`).
    pub currency: String,
    /// The rates (during peak hours when there is an off-peak schedule).
    pub rates: Rates,
    /// The off-peak schedule, when the price has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_peak: Option<OffPeak>,
}

impl Price {
    /// A price without an off-peak schedule.
    pub fn flat(currency: &str, rates: Rates) -> Price {
        Price {
            currency: currency.to_string(),
            rates,
            off_peak: None,
        }
    }

    /// Whether `time_ms` (Unix epoch milliseconds) falls outside every
    /// peak window of the off-peak schedule; `false` without one.
    pub fn is_off_peak(&self, time_ms: u64) -> bool {
        let Some(off) = &self.off_peak else {
            return false;
        };
        let minute = u16::try_from((time_ms % DAY_MS) / 60_000).unwrap_or(0);
        !off.peak_utc_minutes
            .iter()
            .any(|(start, end)| (*start..*end).contains(&minute))
    }

    /// The rates in force at `time_ms`.
    pub fn rates_at(&self, time_ms: u64) -> &Rates {
        match &self.off_peak {
            Some(off) if self.is_off_peak(time_ms) => &off.rates,
            _ => &self.rates,
        }
    }

    /// What the request `usage` reports cost at `time_ms`: cache hits at
    /// the cached rate, the other input (cache writes included) at the
    /// input rate, output at the output rate. Negative counts (a broken
    /// log) count as 0.
    pub fn cost_of(&self, usage: &TokenUsage, time_ms: u64) -> f64 {
        let r = self.rates_at(time_ms);
        let n = |v: i64| u64::try_from(v).unwrap_or(0) as f64;
        let hit = n(usage.cache_read_tokens.unwrap_or(0));
        let miss = n(usage.input_tokens) + n(usage.cache_write_tokens.unwrap_or(0));
        let out = n(usage.output_tokens);
        (hit * r.cached_input + miss * r.input + out * r.output) / PRICE_UNIT_TOKENS
    }

    /// What `tokens` of uncached input cost at `time_ms` (the budget's
    /// estimate of a request before it is sent).
    pub fn input_cost(&self, tokens: u64, time_ms: u64) -> f64 {
        tokens as f64 * self.rates_at(time_ms).input / PRICE_UNIT_TOKENS
    }
}

/// Token counts by kind, summed over usage reports (saturating).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    /// Uncached input tokens (cache writes included).
    pub input: u64,
    /// Input tokens served from the cache.
    pub cache_hit: u64,
    /// Output tokens (reasoning included).
    pub output: u64,
    /// Reasoning tokens (a part of `output`).
    pub reasoning: u64,
    /// Usage reports counted.
    pub requests: u64,
}

impl Tokens {
    /// Adds one usage report.
    pub fn add(&mut self, u: &TokenUsage) {
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        self.input = self
            .input
            .saturating_add(n(u.input_tokens))
            .saturating_add(n(u.cache_write_tokens.unwrap_or(0)));
        self.cache_hit = self
            .cache_hit
            .saturating_add(n(u.cache_read_tokens.unwrap_or(0)));
        self.output = self.output.saturating_add(n(u.output_tokens));
        self.reasoning = self
            .reasoning
            .saturating_add(n(u.reasoning_tokens.unwrap_or(0)));
        self.requests += 1;
    }

    /// Adds another sum.
    pub fn merge(&mut self, o: &Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.cache_hit = self.cache_hit.saturating_add(o.cache_hit);
        self.output = self.output.saturating_add(o.output);
        self.reasoning = self.reasoning.saturating_add(o.reasoning);
        self.requests = self.requests.saturating_add(o.requests);
    }

    /// All prompt tokens: uncached plus cache hits.
    pub fn prompt(&self) -> u64 {
        self.input.saturating_add(self.cache_hit)
    }

    /// The share of prompt tokens served from the cache; `None` without
    /// prompt tokens.
    pub fn cache_hit_rate(&self) -> Option<f64> {
        let prompt = self.prompt();
        (prompt > 0).then(|| self.cache_hit as f64 / prompt as f64)
    }
}

/// A sum of money over usage reports, with the reports it could not price.
///
/// Amounts in different currencies do not add: a report priced in another
/// currency than the first one counted is counted as unpriced.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// The priced part.
    pub amount: f64,
    /// Its currency; `None` until a report was priced.
    pub currency: Option<String>,
    /// Reports priced.
    pub priced: u64,
    /// Reports without a price (a model missing from the catalogue): their
    /// cost is unknown, so `amount` is a lower bound when this is not 0.
    pub unpriced: u64,
}

impl Cost {
    /// Adds a report priced at `amount` in `currency`.
    pub fn add_priced(&mut self, amount: f64, currency: &str) {
        match &self.currency {
            Some(c) if c != currency => {
                self.unpriced += 1;
                return;
            }
            Some(_) => {}
            None => self.currency = Some(currency.to_string()),
        }
        self.amount += amount;
        self.priced += 1;
    }

    /// Adds a report without a price.
    pub fn add_unpriced(&mut self) {
        self.unpriced += 1;
    }

    /// Adds another sum (its priced part as one amount).
    pub fn merge(&mut self, o: &Cost) {
        if let Some(currency) = &o.currency {
            match &self.currency {
                Some(c) if c != currency => {
                    self.unpriced += o.priced;
                }
                _ => {
                    self.currency.get_or_insert_with(|| currency.clone());
                    self.amount += o.amount;
                    self.priced += o.priced;
                }
            }
        }
        self.unpriced += o.unpriced;
    }

    /// No report could be priced (and there was at least one).
    pub fn is_unknown(&self) -> bool {
        self.priced == 0 && self.unpriced > 0
    }

    /// Some reports could be priced and some not.
    pub fn is_partial(&self) -> bool {
        self.priced > 0 && self.unpriced > 0
    }

    /// `$0.0123`; `≥ $0.0123` when a part is unknown; `?` when all of it
    /// is. No report at all is `$0.0000` (nothing was spent).
    pub fn display(&self) -> String {
        if self.is_unknown() {
            return "?".to_string();
        }
        let money = format_money(self.amount, self.currency.as_deref().unwrap_or("USD"));
        if self.unpriced > 0 {
            format!("≥ {money}")
        } else {
            money
        }
    }
}

/// `$1.2345` for US dollars, `1.2345 EUR` for another currency: four
/// decimals below 100, two from there.
pub fn format_money(amount: f64, currency: &str) -> String {
    let digits = if amount.abs() >= 100.0 { 2 } else { 4 };
    if currency == "USD" {
        format!("${amount:.digits$}")
    } else {
        format!("{amount:.digits$} {currency}")
    }
}

/// Follows a session's events and sums what its requests cost: the model
/// in force, the session's tokens and cost, the current turn's.
#[derive(Debug, Clone, Default)]
pub struct CostMeter {
    model: Option<String>,
    /// Usage older than this (ms) was copied from a forked parent.
    inherited_before: Option<u64>,
    tokens: Tokens,
    cost: Cost,
    turn: Option<(u64, Cost)>,
    seen: usize,
}

impl CostMeter {
    /// A meter that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Events observed so far (to feed only the new ones:
    /// `Session::events_since(meter.observed())`).
    pub fn observed(&self) -> usize {
        self.seen
    }

    /// The model of the requests from now on, as the log last said.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The session's tokens so far.
    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    /// The session's cost so far.
    pub fn cost(&self) -> &Cost {
        &self.cost
    }

    /// The last turn that reported usage: its number and cost.
    pub fn last_turn(&self) -> Option<(u64, &Cost)> {
        self.turn.as_ref().map(|(t, c)| (*t, c))
    }

    /// Observes one event; for a `usage` event, returns what it cost
    /// (`None`: unpriced, or copied from a forked parent and not counted).
    pub fn observe<P: std::borrow::Borrow<Price>>(
        &mut self,
        event: &SessionEvent,
        price_of: &impl Fn(&str) -> Option<P>,
    ) -> Option<f64> {
        self.seen += 1;
        match &event.data {
            EventPayload::Other { kind, data } => {
                if kind == REQUEST_OPTIONS_KIND || kind == MODEL_CHANGE_KIND {
                    if let Some(m) = data.get("model").and_then(serde_json::Value::as_str) {
                        self.model = Some(m.to_string());
                    }
                } else if kind == FORK_KIND && event.seq == 0 {
                    self.inherited_before = Some(event.time);
                }
                None
            }
            EventPayload::Usage(u) => {
                if self.inherited_before.is_some_and(|t| event.time < t) {
                    return None;
                }
                self.tokens.add(&u.usage);
                let priced = self.model.as_deref().and_then(price_of).map(|p| {
                    let p = p.borrow();
                    (p.cost_of(&u.usage, event.time), p.currency.clone())
                });
                let turn = match &mut self.turn {
                    Some((t, c)) if *t == u.turn => c,
                    slot => &mut slot.insert((u.turn, Cost::default())).1,
                };
                match &priced {
                    Some((amount, currency)) => turn.add_priced(*amount, currency),
                    None => turn.add_unpriced(),
                }
                match priced {
                    Some((amount, currency)) => {
                        self.cost.add_priced(amount, &currency);
                        Some(amount)
                    }
                    None => {
                        self.cost.add_unpriced();
                        None
                    }
                }
            }
            _ => None,
        }
    }
}

/// What one step's request cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepCost {
    /// The turn.
    pub turn: u64,
    /// The step.
    pub step: u64,
    /// The model that served it, when the log says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its tokens.
    pub tokens: Tokens,
    /// Its cost.
    pub cost: Cost,
    /// Tool calls the step's reply made.
    pub tool_calls: u64,
}

/// What one turn cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCost {
    /// The turn.
    pub turn: u64,
    /// Steps that reported usage.
    pub steps: u64,
    /// Its tokens.
    pub tokens: Tokens,
    /// Its cost.
    pub cost: Cost,
}

/// What a session cost, in total, per turn and per step.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionCost {
    /// All its tokens.
    pub tokens: Tokens,
    /// All its cost.
    pub cost: Cost,
    /// Per model that reported usage (`?` when the log names none).
    pub models: BTreeMap<String, ModelCost>,
    /// Per turn, in the order turns first reported usage.
    pub turns: Vec<TurnCost>,
    /// Per step that reported usage, in log order.
    pub steps: Vec<StepCost>,
}

/// Tokens and cost of one model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    /// Its tokens.
    pub tokens: Tokens,
    /// Its cost.
    pub cost: Cost,
}

/// The model name [`SessionCost::models`] uses when the log names none.
pub const UNKNOWN_MODEL: &str = "?";

impl SessionCost {
    /// The `n` costliest steps that called tools, costliest first (ties
    /// in log order).
    pub fn costliest_tool_steps(&self, n: usize) -> Vec<&StepCost> {
        let mut steps: Vec<&StepCost> = self.steps.iter().filter(|s| s.tool_calls > 0).collect();
        steps.sort_by(|a, b| b.cost.amount.total_cmp(&a.cost.amount));
        steps.truncate(n);
        steps
    }
}

/// What the session logged as `events` cost, priced by `price_of` (a
/// model's price, `None` when unknown). Pure and total: any sequence of
/// events gives figures.
pub fn session_cost<P: std::borrow::Borrow<Price>>(
    events: &[impl AsRef<SessionEvent>],
    price_of: impl Fn(&str) -> Option<P>,
) -> SessionCost {
    let mut meter = CostMeter::new();
    let mut out = SessionCost::default();
    let mut calls: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for e in events {
        let e = e.as_ref();
        if let EventPayload::ToolCall(c) = &e.data {
            *calls.entry((c.turn, c.step)).or_default() += 1;
        }
        let EventPayload::Usage(u) = &e.data else {
            meter.observe(e, &price_of);
            continue;
        };
        let before = meter.tokens().requests;
        let priced = meter.observe(e, &price_of);
        if meter.tokens().requests == before {
            continue; // inherited from a forked parent
        }
        let mut tokens = Tokens::default();
        tokens.add(&u.usage);
        let mut cost = Cost::default();
        let model = meter.model().map(str::to_string);
        match (priced, model.as_deref().and_then(&price_of)) {
            (Some(amount), Some(p)) => cost.add_priced(amount, &p.borrow().currency),
            _ => cost.add_unpriced(),
        }
        let by_model = out
            .models
            .entry(model.clone().unwrap_or_else(|| UNKNOWN_MODEL.to_string()))
            .or_default();
        by_model.tokens.merge(&tokens);
        by_model.cost.merge(&cost);
        match out.turns.iter_mut().find(|t| t.turn == u.turn) {
            Some(t) => {
                t.steps += 1;
                t.tokens.merge(&tokens);
                t.cost.merge(&cost);
            }
            None => out.turns.push(TurnCost {
                turn: u.turn,
                steps: 1,
                tokens,
                cost: cost.clone(),
            }),
        }
        out.steps.push(StepCost {
            turn: u.turn,
            step: u.step,
            model,
            tokens,
            cost,
            tool_calls: 0,
        });
    }
    for s in &mut out.steps {
        s.tool_calls = calls.get(&(s.turn, s.step)).copied().unwrap_or(0);
    }
    out.tokens = *meter.tokens();
    out.cost = meter.cost().clone();
    out
}

// ---------------------------------------------------------------------------
// Reading many logs quickly

/// One usage report of a log, as [`scan_usage`] found it.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRecord {
    /// When it was logged (Unix epoch milliseconds).
    pub time: u64,
    /// The model in force (the last `request/options` or `model/change`
    /// before it), when the log names one.
    pub model: Option<String>,
    /// The counts.
    pub usage: TokenUsage,
}

/// What [`scan_usage`] found in one log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogUsage {
    /// The time of the first event.
    pub created_ms: Option<u64>,
    /// The working directory the system prompt names (`Environment:
    /// working directory …;`), when the log holds one.
    pub cwd: Option<String>,
    /// The usage reports, in log order (a fork's inherited ones left out).
    pub records: Vec<UsageRecord>,
}

impl LogUsage {
    /// The log's cost and tokens, priced by `price_of`.
    pub fn cost<P: std::borrow::Borrow<Price>>(
        &self,
        price_of: impl Fn(&str) -> Option<P>,
    ) -> (Tokens, Cost) {
        let mut tokens = Tokens::default();
        let mut cost = Cost::default();
        for r in &self.records {
            tokens.add(&r.usage);
            match r.model.as_deref().and_then(&price_of) {
                Some(p) => {
                    let p = p.borrow();
                    cost.add_priced(p.cost_of(&r.usage, r.time), &p.currency);
                }
                None => cost.add_unpriced(),
            }
        }
        (tokens, cost)
    }
}

/// Reads the usage of a JSONL session log from its bytes without parsing
/// every line: a line is looked at only when it starts with the `type`
/// of a `usage`, `request/options`, `model/change`, `session/workspace`,
/// `session/fork` (at the start) or the first `request/system` event, as dsh writes them
/// (`{"type":…,"seq":…,"time":…,"data":…}`). Lines that do not parse
/// are skipped (a listing is best effort; `load_jsonl` validates).
pub fn scan_usage(bytes: &[u8]) -> LogUsage {
    const USAGE: &[u8] = b"{\"type\":\"usage\",";
    const OPTIONS: &[u8] = b"{\"type\":\"request/options\",";
    const CHANGE: &[u8] = b"{\"type\":\"model/change\",";
    const FORK: &[u8] = b"{\"type\":\"session/fork\",";
    const SYSTEM: &[u8] = b"{\"type\":\"request/system\",";
    const WORKSPACE: &[u8] = b"{\"type\":\"session/workspace\",";

    #[derive(serde::Deserialize)]
    struct Line<D> {
        time: u64,
        data: D,
    }
    #[derive(serde::Deserialize)]
    struct UsageData {
        usage: TokenUsage,
    }
    #[derive(serde::Deserialize)]
    struct ModelData {
        model: String,
    }
    #[derive(serde::Deserialize)]
    struct CwdData {
        cwd: String,
    }
    #[derive(serde::Deserialize)]
    struct TextData {
        #[serde(default)]
        text: Option<String>,
    }

    let mut out = LogUsage::default();
    let mut model: Option<String> = None;
    let mut inherited_before: Option<u64> = None;
    let mut first = true;
    let mut system_seen = false;
    // `session/workspace` names the directory; older logs only have the
    // system prompt's environment line.
    let mut workspace: Option<String> = None;
    // Line starts found with memchr (SIMD): most of a log's bytes are
    // skipped without looking at them one by one.
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    let mut start = 0;
    for end in ends {
        let line = &bytes[start..end];
        start = end + 1;
        if line.is_empty() {
            continue;
        }
        if first {
            first = false;
            out.created_ms = time_of(line);
            if line.starts_with(FORK) {
                inherited_before = out.created_ms;
            }
        }
        if line.starts_with(USAGE) {
            if let Ok(l) = serde_json::from_slice::<Line<UsageData>>(line) {
                if inherited_before.is_some_and(|t| l.time < t) {
                    continue;
                }
                out.records.push(UsageRecord {
                    time: l.time,
                    model: model.clone(),
                    usage: l.data.usage,
                });
            }
        } else if line.starts_with(OPTIONS) || line.starts_with(CHANGE) {
            if let Ok(l) = serde_json::from_slice::<Line<ModelData>>(line) {
                model = Some(l.data.model);
            }
        } else if line.starts_with(WORKSPACE) {
            if let Ok(l) = serde_json::from_slice::<Line<CwdData>>(line) {
                workspace = Some(l.data.cwd);
            }
        } else if !system_seen && line.starts_with(SYSTEM) {
            system_seen = true;
            if let Ok(l) = serde_json::from_slice::<Line<TextData>>(line) {
                out.cwd = l.data.text.as_deref().and_then(working_directory);
            }
        }
    }
    if workspace.is_some() {
        out.cwd = workspace;
    }
    out
}

/// The `"time":N` of a line written as dsh writes events.
fn time_of(line: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(line, b"\"time\":")? + 7;
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

/// The directory of a system prompt's environment line (`Environment:
/// working directory /src/app; OS linux …`).
pub fn working_directory(system: &str) -> Option<String> {
    const MARK: &str = "Environment: working directory ";
    let start = system.find(MARK)? + MARK.len();
    let rest = &system[start..];
    let end = rest.find("; OS ")?;
    Some(rest[..end].to_string()).filter(|d| !d.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::UsageEvent;

    /// 2026-10-27 00:00:00 UTC.
    const DAY: u64 = 1_793_059_200_000;
    const HOUR: u64 = 3_600_000;

    fn flash() -> Price {
        Price {
            currency: "USD".into(),
            rates: Rates {
                input: 0.30,
                cached_input: 0.006,
                output: 1.20,
            },
            off_peak: Some(OffPeak {
                rates: Rates {
                    input: 0.15,
                    cached_input: 0.003,
                    output: 0.60,
                },
                peak_utc_minutes: vec![(60, 240), (360, 600)],
            }),
        }
    }

    fn usage(input: i64, hit: Option<i64>, output: i64) -> TokenUsage {
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: hit,
            cache_write_tokens: None,
            reasoning_tokens: None,
        }
    }

    fn ev(seq: u64, time: u64, data: EventPayload) -> SessionEvent {
        SessionEvent { seq, time, data }
    }

    fn model(seq: u64, kind: &str, name: &str) -> SessionEvent {
        ev(
            seq,
            DAY + 2 * HOUR,
            EventPayload::Other {
                kind: kind.into(),
                data: serde_json::json!({ "model": name }),
            },
        )
    }

    fn used(seq: u64, time: u64, turn: u64, step: u64, u: TokenUsage) -> SessionEvent {
        ev(
            seq,
            time,
            EventPayload::Usage(UsageEvent {
                turn,
                step,
                usage: u,
            }),
        )
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn hit_miss_and_output_are_priced_apart() {
        // 1M hit + 1M miss + 1M out at peak: 0.006 + 0.30 + 1.20.
        let p = flash();
        let c = p.cost_of(
            &usage(1_000_000, Some(1_000_000), 1_000_000),
            DAY + 2 * HOUR,
        );
        assert!(close(c, 1.506), "{c}");
        // Reasoning is part of output: not priced twice.
        let mut u = usage(0, None, 1000);
        u.reasoning_tokens = Some(800);
        assert!(close(p.cost_of(&u, DAY + 2 * HOUR), 0.0012));
        // Negative counts from a broken log count as nothing.
        assert_eq!(p.cost_of(&usage(-5, Some(-1), -9), DAY), 0.0);
    }

    #[test]
    fn off_peak_boundaries_are_the_peak_windows_in_utc() {
        let p = flash();
        let u = usage(1_000_000, None, 0);
        let at = |ms: u64| p.cost_of(&u, DAY + ms);
        assert!(close(at(HOUR - 1), 0.15), "00:59:59.999 is off-peak");
        assert!(close(at(HOUR), 0.30), "01:00 is peak");
        assert!(close(at(4 * HOUR - 1), 0.30), "03:59:59.999 is peak");
        assert!(close(at(4 * HOUR), 0.15), "04:00 is off-peak");
        assert!(close(at(6 * HOUR), 0.30), "06:00 is peak");
        assert!(close(at(10 * HOUR - 1), 0.30));
        assert!(close(at(10 * HOUR), 0.15), "10:00 is off-peak");
        assert!(close(at(23 * HOUR), 0.15));
        // The next day the same.
        assert!(close(at(24 * HOUR + HOUR), 0.30));
        // A flat price never changes.
        let flat = Price::flat("EUR", flash().rates);
        assert!(!flat.is_off_peak(DAY));
        assert!(close(flat.cost_of(&u, DAY), 0.30));
    }

    #[test]
    fn a_session_is_priced_by_the_model_of_each_request() {
        let pro = Price::flat(
            "USD",
            Rates {
                input: 1.32,
                cached_input: 0.044,
                output: 3.96,
            },
        );
        let price_of = |m: &str| match m {
            "flash" => Some(flash()),
            "pro" => Some(pro.clone()),
            _ => None,
        };
        let peak = DAY + 2 * HOUR;
        let events = vec![
            model(0, REQUEST_OPTIONS_KIND, "flash"),
            used(1, peak, 1, 1, usage(1000, Some(9000), 100)),
            ev(
                2,
                peak,
                EventPayload::ToolCall(dsh_protocol::ToolCallEvent {
                    turn: 1,
                    step: 1,
                    call: dsh_protocol::ToolCall::new("c1", "bash", "{}"),
                }),
            ),
            model(3, MODEL_CHANGE_KIND, "pro"),
            used(4, peak, 2, 1, usage(1000, None, 100)),
            model(5, REQUEST_OPTIONS_KIND, "mystery"),
            used(6, peak, 2, 2, usage(1000, None, 100)),
        ];
        let s = session_cost(&events, price_of);
        let flash_cost = (1000.0 * 0.30 + 9000.0 * 0.006 + 100.0 * 1.20) / 1e6;
        let pro_cost = (1000.0 * 1.32 + 100.0 * 3.96) / 1e6;
        assert!(close(s.cost.amount, flash_cost + pro_cost), "{:?}", s.cost);
        assert_eq!((s.cost.priced, s.cost.unpriced), (2, 1));
        assert!(s.cost.is_partial());
        assert!(
            s.cost.display().starts_with("≥ $0.00"),
            "{}",
            s.cost.display()
        );
        assert_eq!(s.tokens.cache_hit, 9000);
        assert_eq!(s.tokens.input, 3000);
        assert_eq!(s.turns.len(), 2);
        assert!(close(s.turns[0].cost.amount, flash_cost));
        assert!(s.turns[1].cost.is_partial());
        assert_eq!(s.steps.len(), 3);
        assert_eq!(s.steps[0].tool_calls, 1);
        assert_eq!(s.steps[2].model.as_deref(), Some("mystery"));
        assert!(s.steps[2].cost.is_unknown());
        assert_eq!(s.steps[2].cost.display(), "?");
        assert_eq!(s.costliest_tool_steps(5).len(), 1);
        assert_eq!(s.models.len(), 3);
        assert!(s.models["mystery"].cost.is_unknown());
    }

    #[test]
    fn unknown_is_never_zero_and_no_usage_is() {
        let events = vec![used(0, DAY, 1, 1, usage(10, None, 10))];
        let s = session_cost(&events, |_: &str| None::<Price>);
        assert!(s.cost.is_unknown());
        assert_eq!(s.cost.display(), "?");
        let empty: Vec<SessionEvent> = Vec::new();
        assert_eq!(
            session_cost(&empty, |_: &str| None::<Price>).cost.display(),
            "$0.0000"
        );
        assert_eq!(format_money(0.01234, "USD"), "$0.0123");
        assert_eq!(format_money(123.456, "EUR"), "123.46 EUR");
    }

    #[test]
    fn a_forks_inherited_usage_is_not_counted_again() {
        let fork_time = DAY + 2 * HOUR; // peak
        let events = vec![
            ev(
                0,
                fork_time,
                EventPayload::Other {
                    kind: FORK_KIND.into(),
                    data: serde_json::json!({"from": "s-1"}),
                },
            ),
            model(1, REQUEST_OPTIONS_KIND, "flash"),
            used(2, fork_time - 1000, 1, 1, usage(1_000_000, None, 0)),
            used(3, fork_time + 1000, 2, 1, usage(1_000_000, None, 0)),
        ];
        let s = session_cost(&events, |m: &str| (m == "flash").then(flash));
        assert_eq!(s.tokens.requests, 1);
        assert!(close(s.cost.amount, 0.30));
        assert_eq!(s.turns.len(), 1);
    }

    #[test]
    fn currencies_do_not_add() {
        let mut c = Cost::default();
        c.add_priced(1.0, "USD");
        c.add_priced(2.0, "EUR");
        assert!(close(c.amount, 1.0));
        assert!(c.is_partial());
    }

    #[test]
    fn the_scan_reads_only_what_it_needs_and_agrees_with_the_full_parse() {
        let peak = DAY + 2 * HOUR;
        let system = ev(
            0,
            DAY,
            EventPayload::Other {
                kind: REQUEST_SYSTEM_KIND.into(),
                data: serde_json::json!({"text": "You are dsh.\n\nEnvironment: working directory /src/my \"app\"; OS linux (x86_64); date 2026-10-27."}),
            },
        );
        let chunk = ev(
            2,
            peak,
            EventPayload::Other {
                kind: "assistant/chunk-like".into(),
                // A usage-looking payload inside another event is not a usage line.
                data: serde_json::json!({"type":"usage","usage":{"inputTokens":999999,"outputTokens":0}}),
            },
        );
        let events = vec![
            system,
            model(1, REQUEST_OPTIONS_KIND, "flash"),
            chunk,
            used(3, peak, 1, 1, usage(1000, Some(500), 10)),
            model(4, MODEL_CHANGE_KIND, "other"),
            used(5, peak, 2, 1, usage(7, None, 3)),
        ];
        let mut bytes = Vec::new();
        for e in &events {
            crate::write_jsonl_line(e, &mut bytes);
        }
        // A torn last line is ignored.
        bytes.extend_from_slice(b"{\"type\":\"usage\",\"seq\":6,\"ti");
        let scan = scan_usage(&bytes);
        assert_eq!(scan.created_ms, Some(DAY));
        assert_eq!(scan.cwd.as_deref(), Some("/src/my \"app\""));
        assert_eq!(scan.records.len(), 2);
        assert_eq!(scan.records[0].model.as_deref(), Some("flash"));
        assert_eq!(scan.records[1].model.as_deref(), Some("other"));
        let price_of = |m: &str| (m == "flash").then(flash);
        let (tokens, cost) = scan.cost(price_of);
        let full = session_cost(&events, price_of);
        assert_eq!(tokens, full.tokens);
        assert_eq!(cost, full.cost);
    }
}
