//! The inline chat UI: the conversation goes into the terminal's own
//! scrollback (no alternate screen: the person scrolls, selects and
//! copies as in a shell), and a live area at the bottom holds what is
//! still moving: the open markdown block, running tool calls, queued
//! steering messages, an approval question, the composer with its
//! completion popup, and the status line.
//!
//! Everything comes from the session's event stream
//! ([`dsh_controller::Session::subscribe`]) through the one
//! [`Transcript`] renderer; input goes back through the controller
//! (`prompt`/`steer`, `abort`, `answer`, `command`).
//!
//! Keys besides the composer's ([`crate::composer`]):
//! - Ctrl-C: with a question open, withdraws it (the call is denied, the
//!   turn goes on); while a turn runs, aborts it (typed text stays); with
//!   text in the idle composer, clears it; on an empty idle composer, says
//!   "press Ctrl-C again to exit" and exits on a second press within 2 s.
//! - Esc: closes the popup or the search; else aborts a running turn.
//! - Ctrl-D on an empty composer exits (aborting a running turn).
//! - Ctrl-O shows the last tool output whole; Ctrl-L redraws.
//! - A message sent while a turn runs steers it: it waits in the live
//!   area (`↳ queued`) until the agent takes it.
//! - Questions: `y` allows once (approves a plan), `a` allows for the
//!   session, `n` asks for a note for the model (Enter sends the denial),
//!   Esc or Ctrl-C denies.
//! - The model's own questions (`ask_user`): a choice dialog per question
//!   ([`crate::ask`]): number keys pick (toggle, on a multi-select one;
//!   Enter confirms), the last entry takes typed text, Esc declines.
//!
//! The live area is redrawn on every change and, while something runs, ten
//! times a second; an idle chat draws nothing and wakes only for input.

use std::collections::VecDeque;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use dsh_controller::{ApprovalKind, Decision, Event, EventBody, Reply, Session};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, BorderType, Padding, Paragraph, Widget};
use tokio::sync::mpsc;

use crate::ask::AskDialog;
use crate::composer::{Action, Completer, Composer};
use crate::status::{now_ms, Status};
use crate::text::{dim, wrap, Color, Line, Modifier, Paint, Span, Style};
use crate::transcript::{checklist, Options, Transcript};

/// How a chat is set up.
#[derive(Debug, Clone, Default)]
pub struct ChatConfig {
    /// Where the composer's history is kept.
    pub history: Option<PathBuf>,
    /// Lines printed first (who, which model, how to get help).
    pub banner: Vec<String>,
    /// Turns of a resumed session's conversation shown before the
    /// prompt (the earlier ones are counted in one line).
    pub resume_turns: usize,
}

/// How a chat ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending<T> {
    /// The person left (`/exit`, Ctrl-D, Ctrl-C twice).
    Exit,
    /// `/clear` could not start a new session: the session has no agent
    /// any more (the reply was shown).
    Ended,
    /// `stop` resolved (a signal); its value. A running turn was aborted
    /// and waited for.
    Stopped(T),
}

/// Turns of a resumed conversation shown by default.
pub const RESUME_TURNS: usize = 10;

/// How long the second Ctrl-C has to exit.
const EXIT_WINDOW: Duration = Duration::from_secs(2);

/// The redraw interval while something moves.
const TICK: Duration = Duration::from_millis(80);

/// The tallest the moving part of the live area gets (the rest of the
/// open block shows when it settles).
const LIVE_ROWS_MAX: usize = 12;

/// Runs the chat on the terminal (stdin and stdout must be one) until the
/// person leaves or `stop` resolves.
///
/// # Errors
/// When the terminal cannot be set up or written.
pub async fn run<T>(
    session: Arc<Session>,
    config: ChatConfig,
    stop: impl Future<Output = T>,
) -> std::io::Result<Ending<T>> {
    // The first code block would otherwise wait for the syntaxes to load.
    std::thread::spawn(crate::highlight::preload);
    let guard = TerminalGuard::enter()?;
    let (input_tx, mut input) = mpsc::unbounded_channel();
    let reader = std::thread::spawn(move || read_input(input_tx));
    let mut ui = Ui::new(session.clone(), &config);
    let ending = ui.run(&mut input, stop, &config).await;
    ui.erase_live();
    drop(input);
    drop(guard);
    // The reader notices the closed channel within its poll interval.
    let _ = tokio::task::spawn_blocking(move || reader.join()).await;
    ending
}

/// Raw mode and bracketed paste while the chat runs; restored when
/// dropped, whatever ended the chat.
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> std::io::Result<Self> {
        crossterm::terminal::enable_raw_mode()?;
        let mut out = std::io::stdout().lock();
        // Bracketed paste; the kitty protocol's unambiguous keys where the
        // terminal knows it (Shift-Enter); others ignore the request.
        out.write_all(b"\x1b[?2004h\x1b[>1u")?;
        out.flush()?;
        Ok(TerminalGuard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(b"\x1b[<1u\x1b[?2004l\x1b[?25h");
        let _ = out.flush();
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// Reads terminal events on a thread of its own until the chat ends.
fn read_input(tx: mpsc::UnboundedSender<TermEvent>) {
    loop {
        match crossterm::event::poll(Duration::from_millis(100)) {
            Ok(true) => match crossterm::event::read() {
                Ok(event) => {
                    if tx.send(event).is_err() {
                        return;
                    }
                }
                Err(_) => return,
            },
            Ok(false) => {
                if tx.is_closed() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// A question on screen or waiting for its turn.
#[derive(Debug, Clone)]
struct Question {
    id: String,
    kind: ApprovalKind,
    tool: String,
    summary: String,
    detail: Option<String>,
    justification: Option<String>,
    /// The rule "always allow" would save (see [`Question::offer`]).
    suggested_rule: Option<String>,
    /// Not a question of the agent: the offer to save `suggested_rule`
    /// after an allow-for-the-session answer.
    offer: bool,
}

/// A chat command's reply, back from its task.
struct CommandDone {
    name: String,
    reply: Reply,
}

/// The completer over the session: the chat commands, and the
/// workspace's files (listed once, matched fuzzily).
struct SessionCompleter {
    session: Arc<Session>,
    files: std::sync::OnceLock<Vec<String>>,
}

/// Files listed for `@` completion at most.
const FILES_MAX: usize = 20_000;

impl Completer for SessionCompleter {
    fn commands(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = dsh::commands::SLASH_COMMANDS
            .iter()
            .map(|c| (c.name.to_string(), c.description.to_string()))
            .collect();
        out.push((
            "reasoning".to_string(),
            "Show the model's reasoning whole (on) or its first lines (off)".to_string(),
        ));
        out.extend(self.session.custom_commands().commands.iter().map(|c| {
            let hint = c
                .argument_hint
                .as_ref()
                .map(|h| format!(" {h}"))
                .unwrap_or_default();
            (
                c.name.clone(),
                format!("({}){hint} {}", c.scope.label(), c.description),
            )
        }));
        out
    }

    fn files(&self, query: &str) -> Vec<String> {
        let all = self
            .files
            .get_or_init(|| self.session.files("", FILES_MAX).unwrap_or_default());
        fuzzy(all, query)
    }
}

/// The paths matching `query` as a subsequence (case blind), best first:
/// matches in the file name, then consecutive runs, then shorter paths.
pub fn fuzzy(paths: &[String], query: &str) -> Vec<String> {
    let q: Vec<char> = query.to_lowercase().chars().collect();
    let mut scored: Vec<(i64, &String)> = paths
        .iter()
        .filter_map(|p| score(p, &q).map(|s| (s, p)))
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    scored.into_iter().map(|(_, p)| p.clone()).collect()
}

fn score(path: &str, query: &[char]) -> Option<i64> {
    if query.is_empty() {
        return Some(-(path.len() as i64));
    }
    let lower: Vec<char> = path.to_lowercase().chars().collect();
    let name_start = path.rfind('/').map_or(0, |i| path[..=i].chars().count());
    let mut score = 0i64;
    let mut qi = 0;
    let mut prev: Option<usize> = None;
    for (i, c) in lower.iter().enumerate() {
        if qi < query.len() && *c == query[qi] {
            score += 1;
            if i >= name_start {
                score += 2;
            }
            if prev.is_some_and(|p| p + 1 == i) {
                score += 3;
            }
            prev = Some(i);
            qi += 1;
        }
    }
    (qi == query.len()).then_some(score * 100 - path.len() as i64)
}

/// The chat's state.
struct Ui {
    session: Arc<Session>,
    transcript: Transcript,
    status: Status,
    composer: Composer,
    completer: SessionCompleter,
    questions: VecDeque<Question>,
    /// The model's `ask_user` questions, shown after any approval.
    asks: VecDeque<AskDialog>,
    /// The note being typed for a denial (the first question's).
    note: Option<String>,
    /// Steering messages sent and not yet taken by the agent.
    queued: Vec<String>,
    /// Until when a second Ctrl-C exits.
    exit_armed: Option<Instant>,
    /// Lines for the scrollback, written at the next draw.
    out: Vec<Line>,
    paint: Paint,
    width: usize,
    height: usize,
    /// The cursor's row in the live area drawn last.
    cursor_row: usize,
    /// A chat command running (its name).
    command: Option<String>,
    commands_tx: mpsc::UnboundedSender<CommandDone>,
    commands_rx: mpsc::UnboundedReceiver<CommandDone>,
    /// Whether the live area must be redrawn.
    dirty: bool,
}

impl Ui {
    fn new(session: Arc<Session>, config: &ChatConfig) -> Self {
        let (width, height) = terminal_size();
        let (commands_tx, commands_rx) = mpsc::unbounded_channel();
        let mut status = Status::new(
            &session.model().unwrap_or_default(),
            &session
                .permission()
                .map(|p| p.to_string())
                .unwrap_or_default(),
        );
        if let Ok(catalogue) = session.catalogue() {
            status.set_catalogue(catalogue);
        }
        Ui {
            transcript: Transcript::new(Options::new(width)),
            status,
            composer: Composer::new(config.history.clone()),
            completer: SessionCompleter {
                session: session.clone(),
                files: std::sync::OnceLock::new(),
            },
            session,
            questions: VecDeque::new(),
            asks: VecDeque::new(),
            note: None,
            queued: Vec::new(),
            exit_armed: None,
            out: Vec::new(),
            paint: Paint::detect(true),
            width,
            height,
            cursor_row: 0,
            command: None,
            commands_tx,
            commands_rx,
            dirty: true,
        }
    }

    async fn run<T>(
        &mut self,
        input: &mut mpsc::UnboundedReceiver<TermEvent>,
        stop: impl Future<Output = T>,
        config: &ChatConfig,
    ) -> std::io::Result<Ending<T>> {
        for line in &config.banner {
            let rows = wrap(&[Span::styled(line.clone(), dim())], self.width, &[], &[]);
            self.out.extend(rows);
        }
        let mut events = self.session.subscribe(Some(0));
        self.replay(&mut events, config.resume_turns);
        self.draw()?;
        tokio::pin!(stop);
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let moving =
                self.status.is_busy() || self.transcript.is_open() || self.exit_armed.is_some();
            tokio::select! {
                biased;
                value = &mut stop => {
                    if self.session.is_running() {
                        self.session.abort("dsh chat stopped");
                        self.wait_turn_end(&mut events).await;
                    }
                    self.draw()?;
                    return Ok(Ending::Stopped(value));
                }
                event = input.recv() => {
                    let Some(event) = event else { return Ok(Ending::Exit) };
                    // Keys typed quickly (a paste without brackets) in one draw.
                    let mut next = Some(event);
                    while let Some(event) = next.take() {
                        if let Some(ending) = self.on_input(event).await {
                            return self.leave(&mut events, ending).await;
                        }
                        next = input.try_recv().ok();
                    }
                }
                item = events.next() => {
                    let Some(item) = item else { return Ok(Ending::Exit) };
                    if let Ok(event) = item {
                        self.on_event(&event);
                    }
                    // Everything already published, then one draw.
                    while let Some(item) = events.try_next() {
                        if let Ok(event) = item {
                            self.on_event(&event);
                        }
                    }
                }
                done = self.commands_rx.recv() => {
                    if let Some(done) = done {
                        if let Some(ending) = self.command_done(done) {
                            return self.leave(&mut events, ending).await;
                        }
                    }
                }
                _ = tick.tick(), if moving => {
                    if self.exit_armed.is_some_and(|t| t.elapsed() >= EXIT_WINDOW) {
                        self.exit_armed = None;
                    }
                    self.dirty = true;
                }
            }
            if self.dirty || !self.out.is_empty() {
                self.draw()?;
            }
        }
    }

    /// The events of a resumed session's history (before its live
    /// events): the last `turns` turns rendered, the earlier ones
    /// counted in one line.
    fn replay(&mut self, events: &mut dsh_controller::Subscription, turns: usize) {
        let live_from = self.session.live_from();
        let mut history: Vec<Arc<Event>> = Vec::new();
        while events.position() < live_from {
            match events.try_next() {
                Some(Ok(e)) => history.push(e),
                Some(Err(_)) => continue,
                None => break,
            }
        }
        let starts: Vec<usize> = history
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                matches!(
                    &e.body,
                    EventBody::UserMessage {
                        steering: false,
                        ..
                    }
                )
            })
            .map(|(i, _)| i)
            .collect();
        let turns = turns.max(1);
        let from = if starts.len() > turns {
            starts[starts.len() - turns]
        } else {
            0
        };
        if from > 0 {
            let left_out = starts.len() - turns;
            self.out.push(Line::styled(
                format!(
                    "… {left_out} earlier turn{} not shown (dsh session show {} shows them all)",
                    if left_out == 1 { "" } else { "s" },
                    self.session.id()
                ),
                dim(),
            ));
        }
        for (i, e) in history.iter().enumerate() {
            self.status.on_event(e);
            if i >= from || matches!(e.body, EventBody::SessionStarted { .. }) {
                let lines = self.transcript.on_event(e);
                self.out.extend(lines);
            }
        }
        let rest = self.transcript.flush();
        self.out.extend(rest);
    }

    /// The person leaves: a running turn is aborted and waited for, the
    /// last frame drawn.
    async fn leave<T>(
        &mut self,
        events: &mut dsh_controller::Subscription,
        ending: Ending<T>,
    ) -> std::io::Result<Ending<T>> {
        if self.session.is_running() {
            self.session.abort("user exit");
            self.wait_turn_end(events).await;
        }
        self.draw()?;
        Ok(ending)
    }

    async fn wait_turn_end(&mut self, events: &mut dsh_controller::Subscription) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.session.is_running() {
            match tokio::time::timeout_at(deadline, events.next()).await {
                Ok(Some(Ok(e))) => self.on_event(&e),
                Ok(Some(Err(_))) => {}
                _ => break,
            }
        }
        while let Some(item) = events.try_next() {
            if let Ok(e) = item {
                self.on_event(&e);
            }
        }
    }

    // ---- session events ----

    fn on_event(&mut self, event: &Event) {
        self.status.on_event(event);
        self.dirty = true;
        match &event.body {
            EventBody::ApprovalAsked {
                approval_id,
                kind,
                tool,
                summary,
                detail,
                justification,
                suggested_rule,
                ..
            } => self.questions.push_back(Question {
                id: approval_id.clone(),
                kind: *kind,
                tool: tool.clone(),
                summary: summary.clone(),
                detail: detail.clone(),
                justification: justification.clone(),
                suggested_rule: suggested_rule.clone(),
                offer: false,
            }),
            EventBody::ApprovalDecided { approval_id, .. } => {
                if self.questions.front().is_some_and(|q| &q.id == approval_id) {
                    self.note = None;
                }
                self.questions.retain(|q| &q.id != approval_id);
            }
            EventBody::QuestionAsked {
                question_id,
                questions,
                ..
            } => self
                .asks
                .push_back(AskDialog::new(question_id.clone(), questions.clone())),
            EventBody::QuestionAnswered { question_id, .. } => {
                self.asks.retain(|a| &a.id != question_id);
            }
            EventBody::UserMessage { text, .. } => {
                if let Some(i) = self.queued.iter().position(|q| q == text) {
                    self.queued.remove(i);
                    self.status.set_queued(self.queued.len());
                }
            }
            EventBody::TurnEnded { .. } => {
                // Whatever was not taken starts the next turn; it shows
                // then.
                self.status.set_queued(self.queued.len());
            }
            _ => {}
        }
        let lines = self.transcript.on_event(event);
        self.out.extend(lines);
    }

    // ---- input ----

    async fn on_input<T>(&mut self, event: TermEvent) -> Option<Ending<T>> {
        self.dirty = true;
        match event {
            TermEvent::Resize(cols, rows) => {
                self.width = usize::from(cols).max(10);
                self.height = usize::from(rows).max(3);
                let mut opts = self.transcript.options();
                opts.width = self.width;
                self.transcript.set_options(opts);
                None
            }
            TermEvent::Paste(text) => {
                if let (true, Some(ask)) = (self.questions.is_empty(), self.asks.front_mut()) {
                    ask.paste(&text);
                } else if self.questions.is_empty() {
                    if self.composer.paste(&text, &self.completer) {
                        self.say(
                            "dsh: the paste was cut at 16 MiB, the most the composer holds",
                            Style::new().fg(Color::Yellow),
                        );
                    }
                } else if let Some(note) = &mut self.note {
                    let room = crate::composer::TEXT_MAX.saturating_sub(note.len());
                    note.extend(text.replace(['\r', '\n'], " ").chars().scan(0, |used, c| {
                        *used += c.len_utf8();
                        (*used <= room).then_some(c)
                    }));
                }
                None
            }
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key).await,
            _ => None,
        }
    }

    async fn on_key<T>(&mut self, key: KeyEvent) -> Option<Ending<T>> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if !self.questions.is_empty() {
            self.question_key(key);
            return None;
        }
        if let Some(ask) = self.asks.front_mut() {
            if let Some(reply) = ask.key(key) {
                let id = ask.id.clone();
                self.asks.pop_front();
                // Answered elsewhere first: the answered event closed it.
                let _ = self.session.answer_question(&id, reply);
            }
            return None;
        }
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.exit_armed = None;
        }
        let key = match self.composer.key(key, &self.completer) {
            Action::Submit(text) => {
                return self.submit(text).await;
            }
            Action::Unhandled(key) => key,
            Action::Changed | Action::None => return None,
        };
        match key.code {
            KeyCode::Char('c') if ctrl => {
                if self.session.is_running() {
                    // The typed text stays for after the turn.
                    self.session.abort("user interrupt");
                } else if !self.composer.is_empty() || self.composer.search().is_some() {
                    self.composer.clear();
                } else if self.exit_armed.is_some_and(|t| t.elapsed() < EXIT_WINDOW) {
                    return Some(Ending::Exit);
                } else {
                    self.exit_armed = Some(Instant::now());
                }
            }
            KeyCode::Char('d') if ctrl && self.composer.is_empty() => return Some(Ending::Exit),
            KeyCode::Esc if !self.composer.escape() && self.session.is_running() => {
                self.session.abort("user interrupt");
            }
            KeyCode::Char('l') if ctrl => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(b"\x1b[H\x1b[2J");
                let _ = out.flush();
                self.cursor_row = 0;
            }
            KeyCode::Char('o') if ctrl => {
                let lines = self.transcript.expand_last_output();
                self.out.extend(lines);
            }
            _ => {}
        }
        None
    }

    /// Keys while a question is shown.
    fn question_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let Some(q) = self.questions.front().cloned() else {
            return;
        };
        if let Some(note) = &mut self.note {
            match key.code {
                KeyCode::Enter => {
                    let note = std::mem::take(note);
                    let note = (!note.trim().is_empty()).then(|| note.trim().to_string());
                    self.answer(&q, Decision::Reject { note });
                }
                KeyCode::Esc => self.note = None,
                KeyCode::Char('c') if ctrl => self.answer(&q, Decision::Cancelled),
                KeyCode::Backspace => {
                    note.pop();
                }
                KeyCode::Char(c) if !ctrl && note.len() < crate::composer::TEXT_MAX => {
                    note.push(c);
                }
                _ => {}
            }
            return;
        }
        if q.offer {
            let save = match key.code {
                KeyCode::Char('y' | 'Y') => true,
                KeyCode::Char('n' | 'N') | KeyCode::Esc => false,
                KeyCode::Char('c') if ctrl => false,
                _ => return,
            };
            self.questions.retain(|x| x.id != q.id);
            let rule = q.suggested_rule.clone().unwrap_or_default();
            if save {
                let (text, style) = match self.session.save_rule(&rule) {
                    Ok(Some(file)) => (
                        format!("saved: always allow {rule} in this project ({file}; `dsh permissions list` shows it)"),
                        dim(),
                    ),
                    Ok(None) => (format!("{rule} was saved already"), dim()),
                    Err(e) => (format!("dsh: {}", e.message), Style::new().fg(Color::Red)),
                };
                self.say(&text, style);
            }
            return;
        }
        match key.code {
            KeyCode::Char('y' | 'Y') => self.answer(&q, Decision::AllowOnce),
            KeyCode::Char('a' | 'A') if q.kind == ApprovalKind::Tool => {
                self.answer(&q, Decision::AllowAlways);
                if q.suggested_rule.is_some() {
                    // Offered next, before any other question.
                    self.questions.push_front(Question {
                        id: format!("offer:{}", q.id),
                        summary: format!(
                            "Always allow {} in this project?",
                            q.suggested_rule.as_deref().unwrap_or_default()
                        ),
                        detail: None,
                        justification: None,
                        offer: true,
                        ..q.clone()
                    });
                }
            }
            KeyCode::Char('n' | 'N') => self.note = Some(String::new()),
            KeyCode::Esc => self.answer(&q, Decision::Cancelled),
            KeyCode::Char('c') if ctrl => self.answer(&q, Decision::Cancelled),
            _ => {}
        }
    }

    fn answer(&mut self, q: &Question, decision: Decision) {
        self.note = None;
        // Answered elsewhere first: the decided event closes it anyway.
        let _ = self.session.answer(&q.id, decision);
        self.questions.retain(|x| x.id != q.id);
    }

    /// Enter on the composer's text: a chat command, or a message (a
    /// steering one while a turn runs).
    async fn submit<T>(&mut self, text: String) -> Option<Ending<T>> {
        self.composer.remember(&text);
        if let Some((name, rest)) = dsh::commands::parse(&text) {
            return self.run_command(name.to_string(), rest.to_string());
        }
        let running = self.session.is_running();
        if running {
            self.queued.push(text.clone());
            self.status.set_queued(self.queued.len());
        }
        if let Err(e) = self.session.steer(&text).await {
            if running {
                self.queued.retain(|q| q != &text);
                self.status.set_queued(self.queued.len());
            }
            self.out.push(Line::styled(
                format!("dsh: {}", e.message),
                Style::new().fg(Color::Red),
            ));
        }
        None
    }

    fn run_command<T>(&mut self, name: String, rest: String) -> Option<Ending<T>> {
        let say = |ui: &mut Ui, text: String| ui.say(&text, Style::new());
        match name.as_str() {
            "exit" | "quit" => return Some(Ending::Exit),
            "reasoning" => {
                let mut opts = self.transcript.options();
                opts.reasoning = match rest.trim() {
                    "on" => true,
                    "off" => false,
                    "" => !opts.reasoning,
                    other => {
                        say(
                            self,
                            format!("dsh: /reasoning takes on or off, not {other}"),
                        );
                        return None;
                    }
                };
                self.transcript.set_options(opts);
                let state = if opts.reasoning { "on" } else { "off" };
                say(self, format!("reasoning: {state}"));
                return None;
            }
            "clear" if self.session.is_running() => {
                say(
                    self,
                    "dsh: /clear runs between turns; try again when this one has ended (Ctrl-C aborts it)"
                        .to_string(),
                );
                return None;
            }
            _ => {}
        }
        if let Some(running) = &self.command {
            say(
                self,
                format!("dsh: /{running} is still running; try again when it is done"),
            );
            return None;
        }
        if name == "compact" {
            self.status.set_override(Some("compacting".to_string()));
        }
        self.command = Some(name.clone());
        let (session, tx) = (self.session.clone(), self.commands_tx.clone());
        tokio::spawn(async move {
            let reply = session.command(&name, &rest).await;
            let _ = tx.send(CommandDone { name, reply });
        });
        None
    }

    /// Lines of dsh's own for the scrollback (a command's reply), wrapped
    /// at the width.
    fn say(&mut self, text: &str, style: Style) {
        for l in text.lines() {
            let rows = wrap(
                &[Span::styled(l.to_string(), style)],
                self.width,
                &[],
                &[Span::plain("  ")],
            );
            self.out.extend(rows);
        }
    }

    fn command_done<T>(&mut self, done: CommandDone) -> Option<Ending<T>> {
        self.command = None;
        self.status.set_override(None);
        self.dirty = true;
        match done.reply {
            Reply::Exit => return Some(Ending::Exit),
            Reply::Todos(todos) if !todos.is_empty() => {
                let entries: Vec<dsh_controller::TodoEntry> = todos
                    .iter()
                    .map(|t| dsh_controller::TodoEntry {
                        content: t.content.clone(),
                        status: serde_json::to_value(t.status)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default(),
                    })
                    .collect();
                self.out.extend(checklist(&entries));
            }
            Reply::Failed(e)
                if done.name == "clear" && e.code == dsh_protocol::codes::SESSION_CLOSED =>
            {
                self.out.push(Line::styled(
                    format!("dsh: {}", e.message),
                    Style::new().fg(Color::Red),
                ));
                return Some(Ending::Ended);
            }
            other => {
                self.say(&other.text(), Style::new());
                if matches!(other, Reply::Help { .. }) {
                    for l in [
                        "  /reasoning [on|off]  Show the model's reasoning whole, or its first lines",
                        "keys: Enter sends · Alt-Enter or \\ new line · Up/Down history · Ctrl-R search · Tab completes",
                        "      Ctrl-C clears, aborts, or (twice) exits · Esc aborts · Ctrl-O last output · Ctrl-D exits",
                    ] {
                        self.out.push(Line::styled(l, dim()));
                    }
                }
            }
        }
        None
    }

    // ---- drawing ----

    /// The live area's lines and the cursor's (row, column) in it.
    fn live(&mut self) -> (Vec<Line>, Option<(usize, usize)>) {
        let now = now_ms();
        let width = self.width;
        let mut rows: Vec<Line> = Vec::new();
        let mut moving = self.transcript.live(now);
        if moving.len() > LIVE_ROWS_MAX {
            moving.drain(..moving.len() - LIVE_ROWS_MAX);
        }
        rows.extend(moving);
        for q in &self.queued {
            rows.push(
                Line::new(vec![
                    Span::styled("↳ queued: ", dim()),
                    Span::plain(q.replace('\n', " ")),
                ])
                .truncated(width),
            );
        }
        let mut cursor = if let Some(q) = self.questions.front().cloned() {
            let (dialog, at) = self.dialog(&q);
            let top = rows.len();
            rows.extend(dialog);
            at.map(|(r, c)| (top + r, c))
        } else if let Some(ask) = self.asks.front() {
            let width = self.width.max(20);
            let (body, at) = ask.body(width.saturating_sub(4).max(10));
            let (dialog, at) = framed(body, ask.title(), width, at);
            let top = rows.len();
            rows.extend(dialog);
            at.map(|(r, c)| (top + r, c))
        } else {
            let (composer, (r, c)) = self.composer_lines();
            let top = rows.len();
            rows.extend(composer);
            rows.extend(self.popup_lines());
            Some((top + r, c))
        };
        self.status.set_plan_mode(self.session.plan_mode());
        let status = if self.exit_armed.is_some() {
            Line::styled("press Ctrl-C again to exit", Style::new().fg(Color::Yellow))
        } else {
            self.status.line(now, width.saturating_sub(1))
        };
        rows.push(status);
        // Never taller than the screen: the top gives way.
        let max = self.height.saturating_sub(1).max(1);
        if rows.len() > max {
            let cut = rows.len() - max;
            rows.drain(..cut);
            cursor = cursor.and_then(|(r, c)| r.checked_sub(cut).map(|r| (r, c)));
        }
        (rows, cursor)
    }

    /// The composer: the prompt, the text wrapped by characters, and the
    /// cursor's position; the search line during Ctrl-R.
    fn composer_lines(&self) -> (Vec<Line>, (usize, usize)) {
        let prompt_style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        let prompt = if self.session.plan_mode() {
            "plan › "
        } else {
            "› "
        };
        if let Some(search) = self.composer.search() {
            let found = self.composer.search_match().unwrap_or("");
            let head = format!("(reverse-i-search)'{}': ", search.query);
            let col = crate::text::display_width(&head);
            let line = Line::new(vec![
                Span::styled(head, prompt_style),
                Span::plain(found.replace('\n', " ⏎ ")),
            ])
            .truncated(self.width);
            return (vec![line], (0, col.min(self.width.saturating_sub(1))));
        }
        if self.composer.is_empty() {
            let hint = if self.session.is_running() {
                "type to steer the turn · Esc or Ctrl-C aborts"
            } else {
                "type a message · / commands · @ files · Ctrl-D exits"
            };
            let line = Line::new(vec![
                Span::styled(prompt, prompt_style),
                Span::styled(hint, dim()),
            ])
            .truncated(self.width);
            return (vec![line], (0, crate::text::display_width(prompt)));
        }
        let indent = crate::text::display_width(prompt);
        let avail = self.width.saturating_sub(indent + 1).max(1);
        let text = self.composer.text();
        let cursor = self.composer.cursor();
        let mut lines = Vec::new();
        let mut at = (0, indent);
        let mut row = String::new();
        let mut row_w = 0;
        let mut offset = 0;
        let push_row = |lines: &mut Vec<Line>, row: &mut String| {
            let first = lines.is_empty();
            let head = if first {
                Span::styled(prompt, prompt_style)
            } else {
                Span::plain(" ".repeat(indent))
            };
            lines.push(Line::new(vec![head, Span::plain(std::mem::take(row))]));
        };
        for c in text.chars() {
            if offset == cursor {
                at = (lines.len(), indent + row_w);
            }
            offset += c.len_utf8();
            if c == '\n' {
                push_row(&mut lines, &mut row);
                row_w = 0;
                continue;
            }
            let w = crate::text::display_width(c.encode_utf8(&mut [0u8; 4]));
            if row_w + w > avail {
                push_row(&mut lines, &mut row);
                row_w = 0;
            }
            row.push(c);
            row_w += w;
        }
        if offset == cursor {
            if row_w >= avail {
                push_row(&mut lines, &mut row);
                row_w = 0;
            }
            at = (lines.len(), indent + row_w);
        }
        push_row(&mut lines, &mut row);
        (lines, at)
    }

    fn popup_lines(&self) -> Vec<Line> {
        let Some(popup) = self.composer.popup() else {
            return Vec::new();
        };
        let label_w = popup
            .choices
            .iter()
            .map(|c| crate::text::display_width(&c.label))
            .max()
            .unwrap_or(0)
            .min(40);
        popup
            .choices
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let selected = i == popup.selected;
                let style = if selected {
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
                } else {
                    Style::new()
                };
                let mark = if selected { "  ▸ " } else { "    " };
                let pad = label_w.saturating_sub(crate::text::display_width(&c.label));
                Line::new(vec![
                    Span::styled(mark, style),
                    Span::styled(format!("{}{}", c.label, " ".repeat(pad)), style),
                    Span::styled(format!("  {}", c.detail), dim()),
                ])
                .truncated(self.width)
            })
            .collect()
    }

    /// The question as a framed dialog (ratatui's block and paragraph),
    /// and where the cursor goes (the note being typed).
    fn dialog(&self, q: &Question) -> (Vec<Line>, Option<(usize, usize)>) {
        let width = self.width.max(20);
        let inner = width.saturating_sub(4).max(10);
        let mut body: Vec<Line> = Vec::new();
        let title = match q.kind {
            _ if q.offer => " Save a permission rule? ".to_string(),
            ApprovalKind::Plan => " Approve the plan? ".to_string(),
            ApprovalKind::Tool => format!(" Allow {}? ", q.tool),
        };
        for l in q.summary.lines() {
            body.extend(wrap(
                &[Span::styled(
                    l.to_string(),
                    Style::new().add_modifier(Modifier::BOLD),
                )],
                inner,
                &[],
                &[],
            ));
        }
        if let (Some(plan), ApprovalKind::Plan) = (&q.detail, q.kind) {
            let limit = self.height.saturating_sub(10).clamp(3, 30);
            let rendered = crate::markdown::render(plan, inner);
            let more = rendered.len().saturating_sub(limit);
            body.extend(rendered.into_iter().take(limit));
            if more > 0 {
                body.push(Line::styled(format!("… +{more} lines"), dim()));
            }
        } else if let Some(detail) = &q.detail {
            let limit = self.height.saturating_sub(10).clamp(3, 30);
            let all: Vec<&str> = detail.lines().collect();
            for l in all.iter().take(limit) {
                let style = if l.starts_with('+') && !l.starts_with("+++") {
                    Style::new().fg(Color::Green)
                } else if l.starts_with('-') && !l.starts_with("---") {
                    Style::new().fg(Color::Red)
                } else {
                    Style::new()
                };
                body.extend(wrap(&[Span::styled(l.to_string(), style)], inner, &[], &[]));
            }
            if all.len() > limit {
                body.push(Line::styled(
                    format!("… +{} lines", all.len() - limit),
                    dim(),
                ));
            }
        }
        if let Some(why) = &q.justification {
            body.extend(wrap(
                &[Span::styled(
                    why.lines().collect::<Vec<_>>().join(" "),
                    Style::new().add_modifier(Modifier::ITALIC),
                )],
                inner,
                &[Span::styled("why: ", dim())],
                &[Span::plain("     ")],
            ));
        }
        body.push(Line::blank());
        let mut cursor = None;
        if let Some(note) = &self.note {
            let head = "note for the model (Enter denies, Esc goes back): ";
            let rows = wrap(
                &[Span::plain(note.clone())],
                inner,
                &[Span::styled(head, Style::new().fg(Color::Yellow))],
                &[],
            );
            let last = rows.len() - 1;
            let col = rows[last].width();
            body.extend(rows);
            cursor = Some((body.len() - 1, col));
        } else {
            let keys = match q.kind {
                _ if q.offer => {
                    "y save it (allowed from now on, still inside the sandbox) · n or Esc not now"
                }
                ApprovalKind::Tool => {
                    "y allow once · a allow for this session · n deny (with a note) · Esc deny"
                }
                ApprovalKind::Plan => {
                    "y approve and leave plan mode · n keep planning (with feedback) · Esc keep planning"
                }
            };
            body.extend(wrap(
                &[Span::styled(keys, Style::new().fg(Color::Cyan))],
                inner,
                &[],
                &[],
            ));
        }
        framed(body, title, width, cursor)
    }

    /// Writes the pending scrollback lines above the live area and redraws
    /// the live area, in one synchronized update.
    fn draw(&mut self) -> std::io::Result<()> {
        self.dirty = false;
        let (live, cursor) = self.live();
        let mut buf = String::with_capacity(4096);
        buf.push_str("\x1b[?2026h\x1b[?25l");
        self.to_top(&mut buf);
        buf.push_str("\r\x1b[J");
        for line in std::mem::take(&mut self.out) {
            buf.push_str(&self.paint.line(&line.truncated(self.width)));
            buf.push_str("\r\n");
        }
        let rows = live.len();
        for (i, line) in live.iter().enumerate() {
            buf.push_str(&self.paint.line(&line.truncated(self.width)));
            if i + 1 < rows {
                buf.push_str("\r\n");
            }
        }
        let (row, col) = cursor.unwrap_or((rows.saturating_sub(1), 0));
        let up = rows.saturating_sub(1).saturating_sub(row);
        if up > 0 {
            buf.push_str(&format!("\x1b[{up}A"));
        }
        buf.push('\r');
        if col > 0 {
            buf.push_str(&format!("\x1b[{col}C"));
        }
        if cursor.is_some() {
            buf.push_str("\x1b[?25h");
        }
        buf.push_str("\x1b[?2026l");
        self.cursor_row = row;
        let mut out = std::io::stdout().lock();
        out.write_all(buf.as_bytes())?;
        out.flush()
    }

    /// Moves the cursor to the live area's first row.
    fn to_top(&self, buf: &mut String) {
        if self.cursor_row > 0 {
            buf.push_str(&format!("\x1b[{}A", self.cursor_row));
        }
    }

    /// Erases the live area (the chat is ending); pending scrollback
    /// lines are written first.
    fn erase_live(&mut self) {
        let mut buf = String::new();
        self.to_top(&mut buf);
        buf.push_str("\r\x1b[J");
        for line in std::mem::take(&mut self.out) {
            buf.push_str(&self.paint.line(&line.truncated(self.width)));
            buf.push_str("\r\n");
        }
        buf.push_str("\x1b[?25h");
        self.cursor_row = 0;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(buf.as_bytes());
        let _ = out.flush();
    }
}

/// The rows of a ratatui buffer as styled lines (wide characters once).
/// `body` in a rounded yellow frame titled `title`, `width` wide (at least
/// 20), and the cursor's place in the frame for `cursor` (a place in the
/// body).
fn framed(
    body: Vec<Line>,
    title: String,
    width: usize,
    cursor: Option<(usize, usize)>,
) -> (Vec<Line>, Option<(usize, usize)>) {
    let height = body.len() + 2;
    let area = Rect::new(0, 0, width as u16, height.min(u16::MAX as usize) as u16);
    let mut buffer = Buffer::empty(area);
    let ratatui_lines: Vec<ratatui::text::Line<'static>> =
        body.iter().map(crate::text::to_ratatui).collect();
    Paragraph::new(ratatui_lines)
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(Style::new().fg(Color::Yellow))
                .padding(Padding::horizontal(1))
                .title(title),
        )
        .render(area, &mut buffer);
    let lines = buffer_lines(&buffer);
    // Inside the frame and its padding: one row and two columns in.
    let cursor = cursor.map(|(r, c)| (r + 1, (c + 2).min(width - 1)));
    (lines, cursor)
}

fn buffer_lines(buffer: &Buffer) -> Vec<Line> {
    let area = buffer.area;
    let mut out = Vec::new();
    for y in area.top()..area.bottom() {
        let mut line = Line::default();
        let mut skip = 0usize;
        for x in area.left()..area.right() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let Some(cell) = buffer.cell((x, y)) else {
                continue;
            };
            let symbol = cell.symbol();
            skip = crate::text::display_width(symbol).saturating_sub(1);
            let style = Style {
                fg: (cell.fg != Color::Reset).then_some(cell.fg),
                bg: (cell.bg != Color::Reset).then_some(cell.bg),
                add_modifier: cell.modifier,
                ..Style::new()
            };
            match line.spans.last_mut() {
                Some(last) if last.style == style => last.text.push_str(symbol),
                _ => line.spans.push(Span::styled(symbol.to_string(), style)),
            }
        }
        out.push(line);
    }
    out
}

/// The terminal's columns and rows (80×24 when it cannot be told).
fn terminal_size() -> (usize, usize) {
    crossterm::terminal::size()
        .map(|(c, r)| (usize::from(c).max(10), usize::from(r).max(3)))
        .unwrap_or((80, 24))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_prefers_file_names_and_runs() {
        let paths: Vec<String> = [
            "src/main.rs",
            "docs/maintenance.md",
            "crates/a/src/lib.rs",
            "README.md",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let got = fuzzy(&paths, "main");
        assert_eq!(got[0], "src/main.rs");
        assert!(got.contains(&"docs/maintenance.md".to_string()));
        assert!(!got.contains(&"README.md".to_string()));
        assert_eq!(fuzzy(&paths, "lbrs"), ["crates/a/src/lib.rs"]);
        assert_eq!(fuzzy(&paths, "").len(), 4);
    }

    #[test]
    fn a_framed_buffer_becomes_lines() {
        let area = Rect::new(0, 0, 12, 3);
        let mut buffer = Buffer::empty(area);
        Paragraph::new("日本 ok")
            .block(Block::bordered())
            .render(area, &mut buffer);
        let lines = buffer_lines(&buffer);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1].text(), "│日本 ok   │");
        assert_eq!(lines[1].width(), 12);
    }
}
