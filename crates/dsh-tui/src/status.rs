//! The live status line: what the agent is doing right now, in one row.
//!
//! A [`Status`] is fed every event of a session ([`Status::on_event`], live
//! or replayed, in order) and asked for its [`Line`] at a time and a width
//! ([`Status::line`]); it does no I/O and reads no clock, so the chat
//! (`dsh chat`'s live area) and `dsh run` on a terminal (stderr) draw the
//! same line, and tests drive it with scripted events and times.
//!
//! While a turn runs (or the front end set an override, e.g. `compacting`):
//!
//! ```text
//! ⠋ running bash: cargo test · 12s · turn 40s · 1.2k tokens · 45 tok/s · ctx 23% · deepseek-chat · workspace-write · plan · 1 queued
//! ```
//!
//! - the spinner (a braille frame every 80 ms of `now`) and what is going
//!   on: `thinking`, `streaming`, `running <tool>: <subject>` (the call's
//!   tool and [`call_subject`]), `waiting for approval`, `waiting for your
//!   answer` (an `ask_user` question is open), or the override;
//! - the step's time: since the model request began (`thinking`, and the
//!   `streaming` that follows it), since the tool began to run, since the
//!   approval question was put, since the override was set;
//! - the turn's time, since `turn_started`;
//! - the turn's output tokens: the `usage` reports of its requests plus,
//!   for the request streaming now, an estimate of its streamed text (4
//!   characters a token) until its own report replaces it; `N tok/s` of
//!   the current request while it streams;
//! - `ctx N%` from the last `context` event; the model and permission mode
//!   (following `model_changed` and `permission_changed`), `plan` while
//!   plan mode is on, and `N queued` steering messages the front end holds;
//! - once the front end gave it the prices ([`Status::set_catalogue`]) and
//!   money was spent: the session's cost so far (`$0.0123`; `?` when the
//!   model has no price, `≥ $0.0123` when a part is unknown), each `usage`
//!   priced by the model in force at the event's time. A free session (the
//!   offline echo model) shows none.
//!
//! Idle: no spinner, `deepseek-chat · workspace-write · ctx 23% · $0.0123 ·
//! last turn 9.1s $0.0040` (the parts that are known).
//!
//! The spinner and the doing part are cyan, the rest dim. A line wider than
//! the width drops parts, least important first (tok/s, the model, the
//! permission mode, the turn's time, the tokens, ctx, plan, the queue, the
//! step's time; a shorter part of less importance still goes in where a
//! longer one did not fit), then cuts the doing part with an ellipsis: the
//! spinner and the start of the doing part always show.

use std::time::{SystemTime, UNIX_EPOCH};

use dsh_controller::{Event, EventBody};
use dsh_session::cost::Cost;
use serde_json::Value;

use crate::text::{display_width, Color, Line, Modifier, Span, Style};

/// The spinner's frames, one every [`FRAME_MS`].
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Milliseconds a spinner frame shows.
const FRAME_MS: u64 = 80;

/// Characters of streamed text per estimated token.
const CHARS_PER_TOKEN: u64 = 4;

/// Separator between the parts of the line.
const SEP: &str = " · ";

/// The longest [`call_subject`], in characters.
const SUBJECT_MAX: usize = 80;

/// The live status line's state, built from a session's events.
#[derive(Debug, Clone)]
pub struct Status {
    model: String,
    permission: String,
    plan: bool,
    queued: usize,
    /// What the front end says goes on, and since when (ms since epoch).
    override_: Option<(String, u64)>,
    /// The running turn, if any.
    turn: Option<Turn>,
    /// The last `context` event: tokens and window.
    context: Option<(u64, u64)>,
    /// How long the last turn took, once one ended.
    last_turn_ms: Option<u64>,
    /// The prices, once the front end gave them: cost is shown then.
    catalogue: Option<dsh::catalogue::Catalogue>,
    /// The session's cost so far.
    cost: Cost,
    /// What the last turn that ended cost.
    last_turn_cost: Option<Cost>,
}

/// What the running turn has shown so far.
#[derive(Debug, Clone)]
struct Turn {
    /// When it started.
    started: u64,
    /// What the agent does now.
    doing: Doing,
    /// When the current step (request, tool run, question) began.
    step_started: u64,
    /// Output tokens the turn's `usage` events reported (plus the
    /// estimates of requests that never reported).
    reported: u64,
    /// Characters the current request streamed (not yet covered by a
    /// report).
    streamed_chars: u64,
    /// When the current request's first text or reasoning arrived.
    stream_started: Option<u64>,
    /// What the turn's requests cost.
    cost: Cost,
    /// The calls started and not finished: id, tool, arguments, title.
    calls: Vec<Call>,
    /// The `ask_user` questions put and not answered (their ids).
    questions: Vec<String>,
}

#[derive(Debug, Clone)]
struct Call {
    id: String,
    name: String,
    arguments: String,
    title: String,
}

/// What the agent does, as the last `activity` event said.
#[derive(Debug, Clone, PartialEq)]
enum Doing {
    /// The turn started; no activity told yet.
    Starting,
    Thinking,
    Streaming,
    /// A tool runs: the activity's detail (the call's title).
    Running(Option<String>),
    Waiting,
}

impl Status {
    /// An idle status for a session on `model` in permission mode
    /// `permission` (plan mode off until told otherwise).
    pub fn new(model: &str, permission: &str) -> Self {
        Status {
            model: model.to_string(),
            permission: permission.to_string(),
            plan: false,
            queued: 0,
            override_: None,
            turn: None,
            context: None,
            last_turn_ms: None,
            catalogue: None,
            cost: Cost::default(),
            last_turn_cost: None,
        }
    }

    /// Prices the `usage` events fed from now on with `catalogue`, and
    /// shows the cost (see the module documentation).
    pub fn set_catalogue(&mut self, catalogue: dsh::catalogue::Catalogue) {
        self.catalogue = Some(catalogue);
    }

    /// What the session cost so far (the `usage` events fed since the
    /// session started, priced; empty without a catalogue).
    pub fn cost(&self) -> &Cost {
        &self.cost
    }

    /// Feed every event of the session, in order (live or replayed).
    pub fn on_event(&mut self, event: &Event) {
        let time = event.time;
        match &event.body {
            EventBody::SessionStarted {
                model,
                permission,
                plan_mode,
                ..
            } => {
                self.model.clone_from(model);
                self.permission.clone_from(permission);
                self.plan = *plan_mode;
                self.turn = None;
                // A new log (the first event, or after /clear): its own cost.
                self.cost = Cost::default();
                self.last_turn_cost = None;
            }
            EventBody::TurnStarted { .. } => self.turn = Some(Turn::new(time)),
            EventBody::Activity { state, detail } => self.on_activity(state, detail, time),
            EventBody::MessageDelta { text } | EventBody::ReasoningDelta { text } => {
                let turn = self.turn_at(time);
                turn.stream_started.get_or_insert(time);
                turn.streamed_chars += text.chars().count() as u64;
            }
            EventBody::Usage {
                input_tokens,
                output_tokens,
                cache_read_tokens,
            } => {
                let priced = self.catalogue.as_ref().map(|c| {
                    let usage = dsh_protocol::TokenUsage {
                        input_tokens: i64::try_from(*input_tokens).unwrap_or(i64::MAX),
                        output_tokens: i64::try_from(*output_tokens).unwrap_or(i64::MAX),
                        cache_read_tokens: cache_read_tokens
                            .map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
                        cache_write_tokens: None,
                        reasoning_tokens: None,
                    };
                    c.price(&self.model)
                        .map(|p| (p.cost_of(&usage, time), p.currency.clone()))
                });
                let mut cost = Cost::default();
                match priced {
                    Some(Some((amount, currency))) => cost.add_priced(amount, &currency),
                    Some(None) => cost.add_unpriced(),
                    None => {}
                }
                self.cost.merge(&cost);
                if let Some(turn) = &mut self.turn {
                    turn.reported += output_tokens;
                    turn.streamed_chars = 0;
                    turn.cost.merge(&cost);
                }
            }
            EventBody::ToolStarted {
                call_id,
                name,
                arguments,
                title,
            } => self.turn_at(time).calls.push(Call {
                id: call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
                title: title.clone(),
            }),
            EventBody::ToolFinished { call_id, .. } => {
                if let Some(turn) = &mut self.turn {
                    turn.calls.retain(|c| c.id != *call_id);
                    // The step's calls are done: the next request starts
                    // (its `thinking` is not told again when the calls
                    // never ran, e.g. denied ones).
                    if turn.calls.is_empty() {
                        turn.next_request(time);
                    }
                }
            }
            EventBody::QuestionAsked { question_id, .. } => {
                self.turn_at(time).questions.push(question_id.clone());
            }
            EventBody::QuestionAnswered { question_id, .. } => {
                if let Some(turn) = &mut self.turn {
                    turn.questions.retain(|q| q != question_id);
                }
            }
            EventBody::Context { tokens, window } => self.context = Some((*tokens, *window)),
            EventBody::Compacted { tokens_after } => {
                if let Some((_, window)) = self.context {
                    self.context = Some((*tokens_after, window));
                }
            }
            EventBody::TurnEnded { duration_ms, .. } => {
                self.last_turn_ms = Some(*duration_ms);
                self.last_turn_cost = self
                    .turn
                    .take()
                    .map(|t| t.cost)
                    .filter(|c| c.priced + c.unpriced > 0);
            }
            EventBody::ModelChanged { model } => self.model.clone_from(model),
            EventBody::PermissionChanged { mode } => self.permission.clone_from(mode),
            EventBody::PlanModeChanged { on } => self.plan = *on,
            EventBody::Closed { .. } => self.turn = None,
            _ => {}
        }
    }

    /// Steering messages typed during the turn and not yet sent/consumed
    /// (shown `1 queued`; 0 shows nothing).
    pub fn set_queued(&mut self, n: usize) {
        self.queued = n;
    }

    /// Turns the `plan` part on or off, for a front end that knows the
    /// mode from elsewhere than the events it feeds (a session opened
    /// before its reader subscribed).
    pub fn set_plan_mode(&mut self, on: bool) {
        self.plan = on;
    }

    /// An activity the front end knows of and the stream does not tell
    /// (e.g. "compacting" while /compact runs); None clears it. While set
    /// it is the doing part (over the turn's own) and the step's time
    /// counts from now (the system clock).
    pub fn set_override(&mut self, what: Option<String>) {
        self.override_ = what.map(|w| {
            let since = match &self.override_ {
                Some((old, since)) if *old == w => *since,
                _ => now_ms(),
            };
            (w, since)
        });
    }

    /// Whether something is going on (a turn runs or an override is set):
    /// the spinner animates only then.
    pub fn is_busy(&self) -> bool {
        self.turn.is_some() || self.override_.is_some()
    }

    /// The line for time `now_ms` (milliseconds since the Unix epoch, the
    /// clock of the events' `time`) at `width` columns: truncated to fit,
    /// the least important parts dropped first.
    pub fn line(&self, now_ms: u64, width: usize) -> Line {
        let dim = Style::new().add_modifier(Modifier::DIM);
        let mut parts: Vec<Part> = Vec::with_capacity(10);
        let head = self.head(now_ms);
        if let Some((_, step_ms)) = &head {
            parts.push(Part::new(elapsed(*step_ms), 9));
        }
        if let Some(turn) = &self.turn {
            parts.push(Part::new(
                format!("turn {}", elapsed(now_ms.saturating_sub(turn.started))),
                4,
            ));
            let tokens = turn.tokens();
            if tokens > 0 {
                parts.push(Part::new(format!("{} tokens", count(tokens)), 5));
            }
            if let Some(cost) = self.cost_part() {
                parts.push(Part::new(cost, 4));
            }
            if let Some(rate) = turn.rate(now_ms) {
                parts.push(Part::new(format!("{rate} tok/s"), 1));
            }
        }
        let mut ctx = self
            .context_percent()
            .map(|p| Part::new(format!("ctx {p}%"), 6));
        if head.is_some() {
            parts.extend(ctx.take());
        }
        if !self.model.is_empty() {
            parts.push(Part::new(self.model.clone(), 2));
        }
        if !self.permission.is_empty() {
            parts.push(Part::new(self.permission.clone(), 3));
        }
        if self.plan {
            parts.push(Part::new("plan".to_string(), 7));
        }
        if head.is_none() {
            parts.extend(ctx);
            if let Some(cost) = self.cost_part() {
                parts.push(Part::new(cost, 4));
            }
            if let Some(ms) = self.last_turn_ms {
                let spent = match &self.last_turn_cost {
                    Some(c) if self.cost_part().is_some() => format!(" {}", c.display()),
                    _ => String::new(),
                };
                parts.push(Part::new(format!("last turn {}{spent}", seconds(ms)), 1));
            }
        }
        if self.queued > 0 {
            parts.push(Part::new(format!("{} queued", self.queued), 8));
        }
        let mut line = Line::default();
        let mut used = 0;
        if let Some((doing, _)) = head {
            let cyan = Style::new().fg(Color::Cyan);
            let frame = FRAMES[((now_ms / FRAME_MS) % FRAMES.len() as u64) as usize];
            line.spans
                .push(Span::styled(format!("{frame} {doing}"), cyan));
            used = line.width();
        }
        let sep = display_width(SEP);
        let keep = fit(&parts, used, if used > 0 { sep } else { 0 }, sep, width);
        for (part, kept) in parts.iter().zip(keep) {
            if !kept {
                continue;
            }
            if !line.spans.is_empty() {
                line.spans.push(Span::styled(SEP, dim));
            }
            line.spans.push(Span::styled(part.text.clone(), dim));
        }
        line.truncated(width)
    }

    /// While busy: the doing part and the step's time.
    fn head(&self, now_ms: u64) -> Option<(String, u64)> {
        if let Some((what, since)) = &self.override_ {
            return Some((one_line(what), now_ms.saturating_sub(*since)));
        }
        let turn = self.turn.as_ref()?;
        let doing = match &turn.doing {
            Doing::Starting | Doing::Thinking => "thinking".to_string(),
            Doing::Streaming => "streaming".to_string(),
            Doing::Waiting if !turn.questions.is_empty() => "waiting for your answer".to_string(),
            Doing::Waiting => "waiting for approval".to_string(),
            Doing::Running(detail) => format!("running {}", turn.running_what(detail.as_deref())),
        };
        Some((doing, now_ms.saturating_sub(turn.step_started)))
    }

    /// The session's cost, once there is a catalogue and something was
    /// spent (or a request could not be priced): a free session (the
    /// offline echo model) shows none.
    fn cost_part(&self) -> Option<String> {
        self.catalogue.as_ref()?;
        (self.cost.amount > 0.0 || self.cost.unpriced > 0).then(|| self.cost.display())
    }

    fn context_percent(&self) -> Option<u64> {
        let (tokens, window) = self.context?;
        (window > 0).then(|| (tokens.saturating_mul(100) + window / 2) / window)
    }

    /// The running turn, made up when an event of one came without its
    /// start (a reader that subscribed mid-turn).
    fn turn_at(&mut self, time: u64) -> &mut Turn {
        self.turn.get_or_insert_with(|| Turn::new(time))
    }

    fn on_activity(&mut self, state: &str, detail: &Option<String>, time: u64) {
        if state == "idle" {
            self.turn = None;
            return;
        }
        let turn = self.turn_at(time);
        let doing = match state {
            "thinking" => {
                if turn.doing != Doing::Thinking {
                    turn.next_request(time);
                }
                return;
            }
            "streaming" => Doing::Streaming,
            "running" => Doing::Running(detail.clone()),
            "waiting" => Doing::Waiting,
            _ => return,
        };
        // Streaming goes on with the request's step; anything else is a
        // step of its own.
        let same_step =
            doing == Doing::Streaming && matches!(turn.doing, Doing::Thinking | Doing::Streaming);
        if !same_step {
            turn.step_started = time;
        }
        turn.doing = doing;
    }
}

impl Turn {
    fn new(time: u64) -> Self {
        Turn {
            started: time,
            doing: Doing::Starting,
            step_started: time,
            reported: 0,
            streamed_chars: 0,
            stream_started: None,
            calls: Vec::new(),
            cost: Cost::default(),
            questions: Vec::new(),
        }
    }

    /// A model request begins at `time`: a step of its own. What the last
    /// one streamed without a report stays counted, as an estimate.
    fn next_request(&mut self, time: u64) {
        self.reported += self.streamed_tokens();
        self.streamed_chars = 0;
        self.stream_started = None;
        self.doing = Doing::Thinking;
        self.step_started = time;
    }

    fn streamed_tokens(&self) -> u64 {
        self.streamed_chars.div_ceil(CHARS_PER_TOKEN)
    }

    fn tokens(&self) -> u64 {
        self.reported + self.streamed_tokens()
    }

    /// Tokens a second of the streaming request, once it has streamed for
    /// a quarter of a second.
    fn rate(&self, now_ms: u64) -> Option<u64> {
        if self.doing != Doing::Streaming {
            return None;
        }
        let ms = now_ms.saturating_sub(self.stream_started?);
        (ms >= 250).then(|| self.streamed_tokens() * 1000 / ms)
    }

    /// `bash: cargo test` for the open call titled `detail` (the latest
    /// such), else the title itself.
    fn running_what(&self, detail: Option<&str>) -> String {
        let call = match detail {
            Some(title) => self.calls.iter().rev().find(|c| c.title == title),
            None => self.calls.last(),
        };
        match (call, detail) {
            (Some(call), _) => {
                let subject = call_subject(&call.name, &call.arguments);
                if subject.is_empty() {
                    one_line(&call.name)
                } else {
                    format!("{}: {subject}", one_line(&call.name))
                }
            }
            (None, Some(title)) => one_line(title),
            (None, None) => "a tool".to_string(),
        }
    }
}

/// One optional part of the line and how much it matters (higher stays
/// longer).
struct Part {
    text: String,
    rank: u8,
}

impl Part {
    fn new(text: String, rank: u8) -> Self {
        Part { text, rank }
    }
}

/// Which parts fit in `width` after `used` columns: the most important
/// first, each taken when it still fits (with its separator: `first_sep`
/// before the first part, `sep` before the others).
fn fit(parts: &[Part], used: usize, first_sep: usize, sep: usize, width: usize) -> Vec<bool> {
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(parts[i].rank));
    let mut keep = vec![false; parts.len()];
    let mut total = used;
    let mut any = false;
    for i in order {
        let cost = display_width(&parts[i].text) + if any { sep } else { first_sep };
        if total + cost <= width {
            total += cost;
            keep[i] = true;
            any = true;
        }
    }
    keep
}

/// What a tool call works on, in a few words: a bash call's command (its
/// first line), the file of `read`/`write`/`edit`, `str_replace_editor`'s
/// command and path, the pattern of `glob`/`grep` (`in` the path when
/// given), a sub-agent's description, a job's id; for other tools (MCP
/// ones included) the first text argument. One line of at most 80
/// characters (longer ends in `…`); empty when the arguments say nothing
/// (or are not a JSON object).
pub fn call_subject(name: &str, arguments: &str) -> String {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return String::new();
    };
    let s = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or("");
    let text = match name {
        "bash" => s("command").to_string(),
        "read" | "write" | "edit" => s("file_path").to_string(),
        "str_replace_editor" => format!("{} {}", s("command"), s("path")),
        "glob" | "grep" => match s("path") {
            "" => s("pattern").to_string(),
            path => format!("{} in {path}", s("pattern")),
        },
        "subagent" | "subagent_fork" => s("description").to_string(),
        _ => ["task_id", "job_id", "id"]
            .iter()
            .map(|k| s(k))
            .find(|v| !v.is_empty())
            .or_else(|| args.values().find_map(Value::as_str))
            .unwrap_or("")
            .to_string(),
    };
    let line = one_line(text.trim());
    if line.chars().count() > SUBJECT_MAX {
        let mut cut: String = line.chars().take(SUBJECT_MAX - 1).collect();
        cut.push('…');
        cut
    } else {
        line
    }
}

/// The first line of `text` (with `…` when more followed), control
/// characters as spaces.
fn one_line(text: &str) -> String {
    let text = text.trim();
    let (first, more) = match text.split_once('\n') {
        Some((first, _)) => (first.trim_end(), true),
        None => (text, false),
    };
    let mut out: String = first
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if more {
        out.push('…');
    }
    out
}

/// An elapsed time as the line shows it: `12s`, `3m05s`, `1h02m`.
pub fn elapsed(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// A duration with a tenth of a second under a minute: `0.4s`, `9.1s`,
/// else as [`elapsed`].
pub fn seconds(ms: u64) -> String {
    if ms < 60_000 {
        format!("{}.{}s", ms / 1000, ms % 1000 / 100)
    } else {
        elapsed(ms)
    }
}

/// A token count: `850`, `1.2k`, `3.4M`.
pub fn count(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 999_950 {
        format!("{}.{}k", n / 1000, n % 1000 / 100)
    } else {
        format!("{}.{}M", n / 1_000_000, n % 1_000_000 / 100_000)
    }
}

/// The width of the terminal the process runs in (its controlling
/// terminal, else stdout's), in columns; `None` when there is none.
pub fn terminal_columns() -> Option<usize> {
    crossterm::terminal::window_size()
        .ok()
        .map(|w| usize::from(w.columns))
        .filter(|c| *c > 0)
}

/// Milliseconds since the Unix epoch, now (the clock of the events'
/// `time`; 0 before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status fed `bodies`, the i-th at `times[i]` ms.
    fn fed(events: &[(u64, EventBody)]) -> Status {
        let mut status = Status::new("deepseek-chat", "workspace-write");
        for (seq, (time, body)) in events.iter().enumerate() {
            status.on_event(&Event {
                seq: seq as u64,
                time: *time,
                body: body.clone(),
            });
        }
        status
    }

    fn activity(state: &str, detail: Option<&str>) -> EventBody {
        EventBody::Activity {
            state: state.into(),
            detail: detail.map(Into::into),
        }
    }

    fn bash_turn() -> Vec<(u64, EventBody)> {
        let args = r#"{"command":"cargo test","description":"Run the tests"}"#;
        vec![
            (1_000, EventBody::TurnStarted { turn: 1 }),
            (1_000, activity("thinking", None)),
            (
                1_500,
                EventBody::MessageDelta {
                    text: "x".repeat(40),
                },
            ),
            (1_500, activity("streaming", None)),
            (
                2_000,
                EventBody::Usage {
                    input_tokens: 100,
                    output_tokens: 30,
                    cache_read_tokens: None,
                },
            ),
            (
                2_000,
                EventBody::ToolStarted {
                    call_id: "c1".into(),
                    name: "bash".into(),
                    arguments: args.into(),
                    title: "Run the tests".into(),
                },
            ),
            (
                2_000,
                EventBody::ToolRunning {
                    call_id: "c1".into(),
                },
            ),
            (2_000, activity("running", Some("Run the tests"))),
            (
                2_000,
                EventBody::Context {
                    tokens: 23_000,
                    window: 100_000,
                },
            ),
        ]
    }

    #[test]
    fn a_running_tool_shows_its_command_and_times() {
        let status = fed(&bash_turn());
        assert!(status.is_busy());
        let text = status.line(14_000, 200).text();
        let body = text.split_once(' ').unwrap().1;
        assert_eq!(
            body,
            "running bash: cargo test · 12s · turn 13s · 30 tokens · ctx 23% · deepseek-chat · workspace-write"
        );
        assert!(FRAMES.iter().any(|f| text.starts_with(f)), "{text}");
    }

    #[test]
    fn the_spinner_follows_the_clock() {
        let status = fed(&bash_turn());
        let a = status.line(14_000, 200).text();
        let b = status.line(14_080, 200).text();
        assert_ne!(a.chars().next(), b.chars().next());
        assert_eq!(
            status.line(14_000 + 800, 200).text().chars().next(),
            a.chars().next()
        );
    }

    #[test]
    fn streaming_estimates_tokens_and_rate_until_usage_replaces_them() {
        let status = fed(&[
            (0, EventBody::TurnStarted { turn: 1 }),
            (0, activity("thinking", None)),
            (
                1_000,
                EventBody::ReasoningDelta {
                    text: "a".repeat(400),
                },
            ),
            (1_000, activity("streaming", None)),
            (
                2_000,
                EventBody::MessageDelta {
                    text: "b".repeat(400),
                },
            ),
        ]);
        // 800 characters: 200 tokens over 2 s of streaming; the step is
        // the request's (since thinking began).
        let text = status.line(3_000, 200).text();
        assert!(
            text.contains("streaming · 3s · turn 3s · 200 tokens · 100 tok/s · "),
            "{text}"
        );
        let mut status = status;
        status.on_event(&Event {
            seq: 9,
            time: 3_000,
            body: EventBody::Usage {
                input_tokens: 0,
                output_tokens: 1234,
                cache_read_tokens: None,
            },
        });
        let text = status.line(3_000, 200).text();
        assert!(text.contains(" · 1.2k tokens · "), "{text}");
    }

    #[test]
    fn a_request_without_usage_keeps_its_estimate() {
        let status = fed(&[
            (0, EventBody::TurnStarted { turn: 1 }),
            (0, activity("thinking", None)),
            (
                10,
                EventBody::MessageDelta {
                    text: "c".repeat(40),
                },
            ),
            (10, activity("streaming", None)),
            (20, activity("thinking", None)),
        ]);
        let text = status.line(1_000, 200).text();
        assert!(
            text.contains("thinking · 0s · turn 1s · 10 tokens"),
            "{text}"
        );
        assert!(!text.contains("tok/s"), "{text}");
    }

    #[test]
    fn a_step_whose_calls_never_ran_ends_when_they_finish() {
        // A denied call: started and finished without running; the next
        // request's `thinking` is not told again (it did not change).
        let status = fed(&[
            (0, EventBody::TurnStarted { turn: 1 }),
            (0, activity("thinking", None)),
            (
                1_000,
                EventBody::ToolStarted {
                    call_id: "c".into(),
                    name: "edit".into(),
                    arguments: r#"{"file_path":"a.rs"}"#.into(),
                    title: "Edit a.rs".into(),
                },
            ),
            (
                5_000,
                EventBody::ToolFinished {
                    call_id: "c".into(),
                    name: "edit".into(),
                    is_error: true,
                    output: "denied".into(),
                    diff: None,
                },
            ),
        ]);
        let text = status.line(7_000, 200).text();
        assert!(text.contains(" thinking · 2s · turn 7s"), "{text}");
    }

    #[test]
    fn an_open_question_waits_for_the_answer_not_an_approval() {
        let mut events = bash_turn();
        events.push((
            3_000,
            EventBody::QuestionAsked {
                question_id: "q-1".into(),
                call_id: "c-ask".into(),
                questions: Vec::new(),
            },
        ));
        events.push((3_000, activity("waiting", Some("Ask the user"))));
        let text = fed(&events).line(5_000, 200).text();
        assert!(text.contains(" waiting for your answer · 2s"), "{text}");
        // Answered: an approval wait afterwards is an approval again.
        events.push((
            5_000,
            EventBody::QuestionAnswered {
                question_id: "q-1".into(),
                reply: dsh_controller::QuestionReply::Declined,
            },
        ));
        events.push((5_500, activity("waiting", Some("Run the tests"))));
        let text = fed(&events).line(6_000, 200).text();
        assert!(text.contains(" waiting for approval · 0s"), "{text}");
    }

    #[test]
    fn waiting_queued_plan_and_model_changes_show() {
        let mut events = bash_turn();
        events.push((3_000, activity("waiting", Some("Run the tests"))));
        events.push((
            3_000,
            EventBody::ModelChanged {
                model: "deepseek-reasoner".into(),
            },
        ));
        events.push((
            3_000,
            EventBody::PermissionChanged {
                mode: "read-only".into(),
            },
        ));
        events.push((3_000, EventBody::PlanModeChanged { on: true }));
        let mut status = fed(&events);
        status.set_queued(1);
        let text = status.line(5_000, 200).text();
        assert!(
            text.ends_with(
                "waiting for approval · 2s · turn 4s · 30 tokens · ctx 23% · deepseek-reasoner · read-only · plan · 1 queued"
            ),
            "{text}"
        );
    }

    #[test]
    fn idle_shows_model_mode_context_and_the_last_turn() {
        let mut events = bash_turn();
        events.push((
            10_100,
            EventBody::TurnEnded {
                turn: 1,
                reason: dsh_protocol::TurnEndReason::Completed,
                finish: None,
                duration_ms: 9_100,
                first_token_ms: None,
                output_tokens: 30,
                tokens_per_second: None,
                cache_hit_rate: None,
            },
        ));
        events.push((10_100, activity("idle", None)));
        let status = fed(&events);
        assert!(!status.is_busy());
        assert_eq!(
            status.line(20_000, 200).text(),
            "deepseek-chat · workspace-write · ctx 23% · last turn 9.1s"
        );
        let fresh = Status::new("deepseek-chat", "workspace-write");
        assert_eq!(fresh.line(0, 200).text(), "deepseek-chat · workspace-write");
    }

    #[test]
    fn the_cost_follows_the_model_and_the_hour_and_unknown_is_not_zero() {
        let usage = |input, output| EventBody::Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: Some(0),
        };
        let ended = |turn| EventBody::TurnEnded {
            turn,
            reason: dsh_protocol::TurnEndReason::Completed,
            finish: None,
            duration_ms: 1_000,
            first_token_ms: None,
            output_tokens: 0,
            tokens_per_second: None,
            cache_hit_rate: None,
        };
        const HOUR: u64 = 3_600_000;
        let mut status = Status::new("deepseek-v4-flash", "workspace-write");
        status.set_catalogue(dsh::catalogue::Catalogue::builtin());
        let events = [
            // 00:00 UTC, off-peak: 0.15 + 0.06.
            (0, EventBody::TurnStarted { turn: 1 }),
            (0, usage(1_000_000, 100_000)),
            (1, ended(1)),
            // 02:00 UTC, peak: 0.30 + 0.12.
            (2 * HOUR, EventBody::TurnStarted { turn: 2 }),
            (2 * HOUR, usage(1_000_000, 100_000)),
            (2 * HOUR + 1, ended(2)),
            (2 * HOUR + 1, activity("idle", None)),
        ];
        for (seq, (time, body)) in events.into_iter().enumerate() {
            status.on_event(&Event {
                seq: seq as u64,
                time,
                body,
            });
        }
        assert_eq!(
            status.line(3 * HOUR, 200).text(),
            "deepseek-v4-flash · workspace-write · $0.6300 · last turn 1.0s $0.4200"
        );
        // A model without a price: the rest is unknown, never 0.
        status.on_event(&Event {
            seq: 9,
            time: 3 * HOUR,
            body: EventBody::ModelChanged {
                model: "gpt-x".into(),
            },
        });
        status.on_event(&Event {
            seq: 10,
            time: 3 * HOUR,
            body: usage(10, 10),
        });
        assert!(status.line(3 * HOUR, 200).text().contains("≥ $0.6300"));
        // A free session (echo) shows no cost.
        let mut free = Status::new("echo", "workspace-write");
        free.set_catalogue(dsh::catalogue::Catalogue::builtin());
        free.on_event(&Event {
            seq: 0,
            time: HOUR,
            body: usage(1_000, 10),
        });
        assert_eq!(free.line(HOUR, 200).text(), "echo · workspace-write");
        // Without a catalogue nothing about money shows.
        let plain = fed(&bash_turn());
        assert!(!plain.line(14_000, 200).text().contains('$'));
    }

    #[test]
    fn narrow_lines_keep_the_spinner_and_the_doing_part() {
        let mut status = fed(&bash_turn());
        let line = status.line(14_000, 40);
        assert_eq!(line.width(), 32, "{}", line.text());
        assert!(line.text().ends_with(" running bash: cargo test · 12s"));
        // The queue outranks the rest, not the step's time.
        status.set_queued(1);
        let text = status.line(14_000, 44).text();
        assert!(
            text.ends_with(" running bash: cargo test · 12s · 1 queued"),
            "{text}"
        );
        let text = status.line(14_000, 40).text();
        assert!(text.ends_with(" running bash: cargo test · 12s"), "{text}");
        // Too narrow even for the doing part: cut, spinner first.
        let tiny = status.line(14_000, 12);
        assert_eq!(tiny.width(), 12, "{}", tiny.text());
        assert!(tiny.text().ends_with(" running b…"), "{}", tiny.text());
        assert!(FRAMES.iter().any(|f| tiny.text().starts_with(f)));
    }

    #[test]
    fn the_doing_part_is_cyan_and_the_rest_dim() {
        let line = fed(&bash_turn()).line(14_000, 200);
        assert_eq!(line.spans[0].style.fg, Some(Color::Cyan));
        assert!(line.spans[0].text.ends_with("running bash: cargo test"));
        for span in &line.spans[1..] {
            assert!(span.style.add_modifier.contains(Modifier::DIM), "{span:?}");
        }
    }

    #[test]
    fn an_override_is_busy_and_wins_over_the_turn() {
        let mut status = Status::new("m", "p");
        assert!(!status.is_busy());
        status.set_override(Some("compacting".into()));
        assert!(status.is_busy());
        let text = status.line(now_ms() + 2_500, 100).text();
        assert!(text.contains(" compacting · 2s · m · p"), "{text}");
        status.set_override(None);
        assert!(!status.is_busy());
        assert_eq!(status.line(now_ms(), 100).text(), "m · p");
    }

    #[test]
    fn a_replayed_stream_ends_idle_and_untrusted_text_stays_on_one_line() {
        let mut events = vec![(
            0,
            EventBody::SessionStarted {
                session_id: "s".into(),
                model: "deepseek-chat".into(),
                permission: "read-only".into(),
                plan_mode: true,
                cwd: "/w".into(),
                resumed: false,
                cleared: None,
            },
        )];
        events.push((1, EventBody::TurnStarted { turn: 1 }));
        events.push((
            2,
            EventBody::ToolStarted {
                call_id: "c".into(),
                name: "bash".into(),
                arguments: r#"{"command":"echo a\necho b"}"#.into(),
                title: "Run".into(),
            },
        ));
        events.push((3, activity("running", Some("Run"))));
        let status = fed(&events);
        let text = status.line(1_003, 200).text();
        assert!(text.contains("running bash: echo a… · 1s"), "{text}");
        assert!(text.contains("read-only · plan"), "{text}");
        let mut status = status;
        status.on_event(&Event {
            seq: 5,
            time: 4,
            body: EventBody::Closed {
                reason: "done".into(),
            },
        });
        assert!(!status.is_busy());
    }

    #[test]
    fn subjects_name_what_a_call_works_on() {
        assert_eq!(
            call_subject("bash", r#"{"command":"cargo test"}"#),
            "cargo test"
        );
        assert_eq!(
            call_subject("read", r#"{"file_path":"src/main.rs"}"#),
            "src/main.rs"
        );
        assert_eq!(
            call_subject("grep", r#"{"pattern":"fn main","path":"src/"}"#),
            "fn main in src/"
        );
        assert_eq!(
            call_subject("job_output", r#"{"task_id":"bash-1"}"#),
            "bash-1"
        );
        assert_eq!(call_subject("mcp__x", r#"{"n":1,"q":"rust"}"#), "rust");
        assert_eq!(call_subject("bash", "not json"), "");
        let long = call_subject("bash", &format!(r#"{{"command":"{}"}}"#, "y".repeat(200)));
        assert_eq!(long.chars().count(), SUBJECT_MAX);
        assert!(long.ends_with('…'));
        assert_eq!(
            call_subject("bash", r#"{"command":"a\u001b[2Jb"}"#),
            "a [2Jb"
        );
    }

    #[test]
    fn figures_are_short() {
        assert_eq!(elapsed(12_999), "12s");
        assert_eq!(elapsed(185_000), "3m05s");
        assert_eq!(elapsed(3_720_000), "1h02m");
        assert_eq!(seconds(9_149), "9.1s");
        assert_eq!(seconds(0), "0.0s");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_234), "1.2k");
        assert_eq!(count(2_500_000), "2.5M");
    }
}
