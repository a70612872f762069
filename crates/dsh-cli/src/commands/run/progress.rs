//! How `dsh run` shows its progress on stderr: nothing (`--quiet`), the
//! live status line on a terminal ([`Live`]), or one line per tool call
//! and answering step otherwise ([`Steps`]). The formats are in the
//! README's "Progress and output of `dsh run`".

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use dsh_controller::{Event, EventBody, Session};
use dsh_session::TurnEndReason;
use dsh_tui::status::{call_subject, count, now_ms, seconds, Status};
use dsh_tui::text::Paint;

/// How the run shows its progress on stderr.
#[derive(Default)]
pub(super) enum Progress {
    /// `--quiet`: nothing.
    #[default]
    Quiet,
    /// Not a terminal: a line per tool call and answer.
    Lines(Steps),
    /// A terminal: the live status line.
    Live(Box<Live>),
}

impl Progress {
    /// The progress for a run of `session`: quiet, the live line when
    /// stderr is a terminal (`TERM` not `dumb`), else lines.
    pub(super) fn new(quiet: bool, session: &Session) -> Self {
        use std::io::IsTerminal;
        if quiet {
            return Progress::Quiet;
        }
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        if !std::io::stderr().is_terminal() || dumb {
            return Progress::Lines(Steps::default());
        }
        let model = session.model().unwrap_or_default();
        let permission = session
            .permission()
            .map(|m| m.as_str().to_string())
            .unwrap_or_default();
        let mut status = Status::new(&model, &permission);
        status.set_plan_mode(session.plan_mode());
        if let Ok(catalogue) = session.catalogue() {
            status.set_catalogue(catalogue);
        }
        // Hidden while the line is drawn: no cursor blinking over it.
        write_stderr("\x1b[?25l");
        Progress::Live(Box::new(Live {
            status,
            paint: Paint::detect(true),
            width: stderr_columns(),
            shown: None,
            turn_running: false,
            waiting_jobs: false,
            finished: false,
        }))
    }

    pub(super) fn on_event(&mut self, event: &Event) {
        match self {
            Progress::Quiet => {}
            Progress::Lines(steps) => steps.on_event(event),
            Progress::Live(live) => live.on_event(event),
        }
    }

    /// Writes `line` on stderr (sanitised), clearing the status line first.
    pub(super) fn say(&mut self, line: &str) {
        if let Progress::Live(live) = self {
            live.clear();
        }
        crate::output::say_line(line);
    }

    pub(super) fn waiting_for_jobs(&mut self, jobs: usize, limit: Duration) {
        match self {
            Progress::Quiet => {}
            Progress::Lines(steps) => {
                if !steps.said_waiting {
                    steps.said_waiting = true;
                    let s = if jobs == 1 { "" } else { "s" };
                    crate::output::say!(
                        "dsh: waiting for {jobs} background job{s} (at most {})",
                        super::format_duration(limit)
                    );
                }
            }
            Progress::Live(live) => {
                live.waiting_jobs = true;
                live.override_jobs();
            }
        }
    }

    /// The terminal was resized: the live line takes its new width.
    pub(super) fn resized(&mut self) {
        if let Progress::Live(live) = self {
            live.width = stderr_columns();
        }
    }

    /// Draws the status line if it changed; `false` once finished.
    pub(super) fn draw(&mut self) -> bool {
        match self {
            Progress::Live(live) if !live.finished => {
                live.draw(now_ms());
                true
            }
            _ => false,
        }
    }

    /// The run is over: the live line is cleared (the cursor shown again).
    pub(super) fn finish(&mut self) {
        if let Progress::Live(live) = self {
            if !live.finished {
                live.clear();
                live.finished = true;
                write_stderr("\x1b[?25h");
            }
        }
    }
}

/// The status line on a terminal's stderr.
pub(super) struct Live {
    status: Status,
    paint: Paint,
    /// stderr's columns.
    width: usize,
    /// The line on the screen now, as written.
    shown: Option<String>,
    turn_running: bool,
    /// The run waits for background jobs (shown while no turn runs).
    waiting_jobs: bool,
    finished: bool,
}

impl Live {
    fn on_event(&mut self, event: &Event) {
        self.status.on_event(event);
        match &event.body {
            EventBody::TurnStarted { .. } => self.turn_running = true,
            EventBody::TurnEnded { .. } | EventBody::Closed { .. } => self.turn_running = false,
            _ => return,
        }
        self.override_jobs();
    }

    /// Says "waiting for background jobs" while the run waits and no
    /// (wake-up) turn runs.
    fn override_jobs(&mut self) {
        let what = (self.waiting_jobs && !self.turn_running)
            .then(|| "waiting for background jobs".to_string());
        self.status.set_override(what);
    }

    fn draw(&mut self, now_ms: u64) {
        if self.finished {
            return;
        }
        // One column spare: a line filling the last column would wrap on
        // some terminals.
        let line = self.status.line(now_ms, self.width.saturating_sub(1));
        let text = self.paint.line(&line);
        if self.shown.as_deref() == Some(text.as_str()) {
            return;
        }
        write_stderr(&format!("\r{text}\x1b[K"));
        self.shown = Some(text);
    }

    fn clear(&mut self) {
        if self.shown.take().is_some() {
            write_stderr("\r\x1b[K");
        }
    }
}

/// The columns of the terminal stderr is on (80 when unknown).
fn stderr_columns() -> usize {
    dsh_tui::status::terminal_columns()
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok())
        .unwrap_or(80)
}

/// Writes `text` (dsh's own escapes: it is not sanitised) to stderr.
fn write_stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// The progress lines without a terminal: what the current turn and step
/// did, to say when a call finishes or the step answers.
#[derive(Default)]
pub(super) struct Steps {
    /// Turns the run saw start.
    turns: u64,
    /// The current turn's number in the session.
    turn: u64,
    /// The current step (model request) of the turn, from 1.
    step: u64,
    /// When it began.
    step_started: u64,
    /// Tool calls it made.
    step_calls: usize,
    /// Its answer's text and when it was complete.
    answer: Option<(String, u64)>,
    /// Output tokens its usage report gave.
    step_tokens: u64,
    /// Calls without a result: tool, arguments, since when they run.
    calls: HashMap<String, (String, String, u64)>,
    /// When the next step begins, once the turn started or the step's
    /// calls all finished (until the next request shows).
    next: Option<u64>,
    /// The wait for background jobs was told.
    said_waiting: bool,
}

impl Steps {
    fn on_event(&mut self, event: &Event) {
        let time = event.time;
        match &event.body {
            EventBody::TurnStarted { turn } => {
                self.turns += 1;
                self.turn = *turn;
                self.step = 0;
                self.next = Some(time);
            }
            EventBody::Activity { state, .. } if state == "thinking" => {
                self.step += 1;
                let started = self.next.take().unwrap_or(time);
                self.new_step(started);
            }
            EventBody::MessageDelta { .. }
            | EventBody::ReasoningDelta { .. }
            | EventBody::MessageCompleted { .. } => {
                // A request whose `thinking` was not told again (the last
                // step's calls never ran: it was `thinking` still). Every
                // step completes a message before its calls start.
                if let Some(since) = self.next.take() {
                    self.step += 1;
                    self.new_step(since);
                }
            }
            _ => {}
        }
        match &event.body {
            EventBody::MessageCompleted { text } => self.answer = Some((text.clone(), time)),
            EventBody::Usage { output_tokens, .. } => self.step_tokens += output_tokens,
            EventBody::ToolStarted {
                call_id,
                name,
                arguments,
                ..
            } => {
                self.step_calls += 1;
                self.calls
                    .insert(call_id.clone(), (name.clone(), arguments.clone(), time));
            }
            EventBody::ToolRunning { call_id } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.2 = time;
                }
            }
            EventBody::ToolFinished {
                call_id,
                is_error,
                output,
                ..
            } => {
                if self.calls.len() == 1 && self.calls.contains_key(call_id) {
                    // The step's last call: the next request follows.
                    self.next = Some(time);
                }
                if let Some((name, arguments, since)) = self.calls.remove(call_id) {
                    let subject = call_subject(&name, &arguments);
                    let what = if subject.is_empty() {
                        name.clone()
                    } else {
                        format!("{name} {subject}")
                    };
                    let how = dsh_tui::transcript::call_outcome(&name, *is_error, output);
                    let took = seconds(time.saturating_sub(since));
                    crate::output::say!("{}{what} ({how}, {took})", self.prefix());
                }
            }
            EventBody::TurnEnded { reason, .. } => {
                let answered = self.step > 0
                    && self.step_calls == 0
                    && matches!(reason, TurnEndReason::Completed);
                if let (true, Some((text, at))) = (answered, &self.answer) {
                    let tokens = if self.step_tokens > 0 {
                        count(self.step_tokens)
                    } else {
                        format!("~{}", count(text.chars().count().div_ceil(4) as u64))
                    };
                    let took = seconds(at.saturating_sub(self.step_started));
                    crate::output::say!("{}answered ({tokens} tokens, {took})", self.prefix());
                }
                self.calls.clear();
            }
            _ => {}
        }
    }

    fn new_step(&mut self, time: u64) {
        self.step_started = time;
        self.step_calls = 0;
        self.answer = None;
        self.step_tokens = 0;
    }

    /// `dsh: step 2 · `, or `dsh: turn 5 · step 2 · ` after the run's
    /// first turn.
    fn prefix(&self) -> String {
        if self.turns > 1 {
            format!("dsh: turn {} · step {} · ", self.turn, self.step)
        } else {
            format!("dsh: step {} · ", self.step)
        }
    }
}
