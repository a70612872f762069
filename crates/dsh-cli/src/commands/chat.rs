//! `dsh chat` (the default command): an interactive session.
//!
//! On a terminal: line input with history; answers stream as they arrive; a
//! line typed while a turn runs steers it; Ctrl-C aborts the running step,
//! Ctrl-C at an idle prompt or Ctrl-D exits. With piped stdin every line is
//! sent in turn (each waits for the previous turn) and the process exits when
//! the work is done; a line that is not UTF-8 is reported and skipped.
//!
//! `--resume`, `--continue` and the picker choose the session first
//! ([`crate::commands::resolve::target`]). A chat where nothing was sent
//! leaves no session behind: its log and files are removed when it ends
//! ([`crate::commands::manage::forget_unsent`]).
//!
//! Chat commands (`/help`, `/model`, `/permission`, `/plan`, `/compact`,
//! `/init`, `/todo`, `/session`, `/clear`, `/exit`; the table is
//! [`dsh::commands::SLASH_COMMANDS`]) and the workspace's custom commands
//! ([`dsh::custom_commands`]: their turn runs like a message's) run in
//! both modes; an unknown `/word` is answered and never sent, a path like
//! `/etc/hosts` is a message. Tab completes them on a terminal
//! ([`crate::complete`]).
//!
//! A call that needs approval (an escalation out of the permission mode) is
//! asked about on the terminal ([`crate::approve`]); the next line answers
//! it and Ctrl-C denies it. `/plan` turns plan mode on (`/plan off` off;
//! the prompt reads `plan › ` meanwhile); the plan the model presents with
//! `exit_plan_mode` is asked about the same way. Without a terminal nobody is asked: the call is
//! denied with a reason the model reads.
//!
//! SIGTERM, SIGHUP and SIGQUIT end chat like `run`: the running turn is
//! aborted, processes are killed, the log is flushed, the terminal mode is
//! restored, and dsh exits 143, 129 or 131. Exit 0 otherwise (1 when output
//! could not be written).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use dsh_controller::{Controller, EventBody, Reply, Session, SessionOptions, Subscription};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{mpsc, watch};

use crate::approve::TerminalPerson;
use crate::cli::ChatArgs;
use crate::commands::{block_on, open_session};
use crate::complete::LineCompletion;
use crate::render::{self, Printer, Style};
use crate::signals::Stop;

/// Runs `dsh chat`; returns the exit code.
pub(crate) fn run(args: ChatArgs) -> u8 {
    use crate::commands::resolve::{target, Target};
    let trust = crate::app::ask_about_project(&args.stack);
    let settings = crate::app::settings(&args.stack, trust);
    let asked = args.resume.as_ref().map(Option::as_deref);
    let resume = match target(&settings, asked, args.continue_session) {
        Ok(Target::New) => None,
        Ok(Target::Resume(id)) => Some(id),
        Ok(Target::Cancelled) => {
            crate::output::say!("dsh: no session chosen");
            return 0;
        }
        Err(code) => return code,
    };
    block_on(chat(settings, resume))
}

async fn chat(settings: dsh::Settings, resume: Option<String>) -> u8 {
    let terminal = TerminalMode::save();
    let code = chat_session(settings, resume).await;
    terminal.restore();
    code
}

async fn chat_session(settings: dsh::Settings, resume: Option<String>) -> u8 {
    let interactive = std::io::stdin().is_terminal();
    let controller = Controller::new(settings);
    let options = SessionOptions {
        resume,
        // With a real model, a title is asked for after the first turn.
        title: interactive,
        ..SessionOptions::default()
    };
    let session = match open_session(&controller, options).await {
        Ok(session) => session,
        Err(code) => return code,
    };
    let opened = Opened::of(&session);
    let on_terminal = interactive && std::io::stdout().is_terminal();
    if on_terminal && full_terminal() {
        return tui_session(controller, session, opened).await;
    }
    // Said once per session, before anything else: an ignored config key,
    // fewer sandbox layers than asked, an MCP server that did not start.
    let from = crate::commands::say_open_warnings(&session);
    let printer = render::printer(session.clone(), Style::detect(), on_terminal);
    let person = interactive.then(|| TerminalPerson::new(printer.clone(), session.clone()));
    // Without a terminal nobody is asked: a call that needs approval is
    // denied with a reason the model reads.
    let approver = interactive.then(|| session.attach_approver());
    let feed = Feed::start(
        session.subscribe(Some(from)),
        printer.clone(),
        person.clone(),
    );
    let stopped;
    let mut cleared_failed = false;
    if let Some(person) = &person {
        crate::output::say!(
            "dsh — model {} — session {}\nType a message or /help for the commands; Ctrl-C aborts a running turn, Ctrl-D exits.",
            session.model().unwrap_or_default(),
            session.id()
        );
        stopped = interactive_loop(&session, &printer, person, &feed, &mut cleared_failed).await;
    } else {
        stopped = piped_loop(&session, &printer, &feed, &mut cleared_failed).await;
    }
    drop(approver);
    let session_id = session.id();
    crate::commands::shutdown_bounded(controller.shutdown("dsh chat ended")).await;
    drop(feed);
    let kept = opened.keep_sent(&session_id);
    say_ending(
        stopped,
        (interactive && !cleared_failed && kept).then_some(&session_id),
    );
    match stopped {
        Some(stop) if stop != Stop::Interrupt => stop.exit_code(),
        _ if cleared_failed => 1,
        _ => printer.output_code(),
    }
}

/// Whether the terminal takes the inline UI: `TERM` is set and not
/// `dumb` (a dumb terminal gets the plain line mode), and `DSH_TUI` is not
/// `0` (the person asked for the line mode).
fn full_terminal() -> bool {
    let asked_plain = std::env::var("DSH_TUI").is_ok_and(|v| v == "0");
    !asked_plain && std::env::var("TERM").is_ok_and(|t| !t.is_empty() && t != "dumb")
}

/// The chat on a full terminal: the inline UI ([`dsh_tui::app`]) until
/// the person leaves or a signal (TERM, HUP, QUIT) ends it.
async fn tui_session(controller: Controller, session: Arc<Session>, opened: Opened) -> u8 {
    let approver = session.attach_approver();
    let config = dsh_tui::app::ChatConfig {
        history: dsh_tui::composer::history_path(),
        banner: vec![format!(
            "dsh — model {} — session {} — /help for commands, Ctrl-D exits",
            session.model().unwrap_or_default(),
            session.id()
        )],
        resume_turns: dsh_tui::app::RESUME_TURNS,
    };
    let mut signals = crate::signals::get();
    // Ctrl-C is a key in the UI; a SIGINT from elsewhere is not an exit.
    let stop = async move {
        loop {
            let stop = signals.next().await;
            if stop != Stop::Interrupt {
                return stop;
            }
        }
    };
    let ending = dsh_tui::app::run(session.clone(), config, stop).await;
    drop(approver);
    let session_id = session.id();
    crate::commands::shutdown_bounded(controller.shutdown("dsh chat ended")).await;
    let (stopped, code) = match ending {
        Ok(dsh_tui::app::Ending::Exit) => (None, 0),
        Ok(dsh_tui::app::Ending::Ended) => return 1,
        Ok(dsh_tui::app::Ending::Stopped(stop)) => (Some(stop), stop.exit_code()),
        Err(e) => {
            crate::output::say!("dsh: the terminal failed: {e}");
            (None, 1)
        }
    };
    let kept = opened.keep_sent(&session_id);
    say_ending(stopped, kept.then_some(&session_id));
    code
}

/// The log a chat opened, to remove it again when nothing was sent.
struct Opened {
    /// The session directory (`None`: sessions are not saved).
    dir: Option<PathBuf>,
    /// The id of the log the chat opened with.
    id: String,
}

impl Opened {
    fn of(session: &Session) -> Self {
        let dir = session
            .info()
            .ok()
            .and_then(|i| i.log)
            .and_then(|log| log.parent().map(PathBuf::from));
        Self {
            dir,
            id: session.id(),
        }
    }

    /// After the chat (its logs closed): removes the log it opened with
    /// and the one it ended in (another after `/clear`) when nothing was
    /// sent in them ([`crate::commands::manage::forget_unsent`]); whether
    /// `last` is kept.
    fn keep_sent(&self, last: &str) -> bool {
        let Some(dir) = &self.dir else {
            return true;
        };
        if self.id != last {
            crate::commands::manage::forget_unsent(dir, &self.id);
        }
        !crate::commands::manage::forget_unsent(dir, last)
    }
}

/// The chat's last lines on stderr: the signal that ended it, if one did,
/// and where the session is kept (`saved`: its id, when it was saved).
fn say_ending(stopped: Option<Stop>, saved: Option<&String>) {
    if let Some(stop) = stopped {
        crate::output::say!("dsh: {}", stop.reason());
    }
    if let Some(id) = saved {
        crate::output::say!("session saved: {id} (resume with `dsh chat --resume {id}`)");
    }
}

/// The session's events on their way to the terminal, on a task of its
/// own: printed ([`Printer::on_event`]), warnings on stderr, questions to
/// the terminal's answerer; turn ends and the agent's status passed on
/// to the input loops.
struct Feed {
    turn_ends: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
    running: watch::Receiver<bool>,
    /// How far the feed has handled the events.
    position: watch::Receiver<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Feed {
    fn start(
        mut events: Subscription,
        printer: Arc<Printer>,
        person: Option<Arc<TerminalPerson>>,
    ) -> Self {
        let (turn_tx, turn_ends) = mpsc::unbounded_channel();
        let (running_tx, running) = watch::channel(false);
        let position = events.handled();
        let task = tokio::spawn(async move {
            while let Some(item) = events.next().await {
                let Ok(event) = item else { continue };
                match &event.body {
                    EventBody::Warning { message } => crate::output::say!("dsh: {message}"),
                    EventBody::ApprovalAsked {
                        approval_id,
                        kind,
                        tool,
                        summary,
                        detail,
                        justification,
                        suggested_rule,
                        ..
                    } => {
                        if let Some(p) = &person {
                            p.asked(
                                approval_id,
                                *kind,
                                tool,
                                summary,
                                detail.as_deref(),
                                justification.as_deref(),
                                suggested_rule.as_deref(),
                            );
                        }
                    }
                    EventBody::ApprovalDecided { approval_id, .. } => {
                        if let Some(p) = &person {
                            p.decided(approval_id);
                        }
                    }
                    EventBody::QuestionAsked {
                        question_id,
                        questions,
                        ..
                    } => {
                        if let Some(p) = &person {
                            p.questions_asked(question_id, questions);
                        }
                    }
                    EventBody::QuestionAnswered { question_id, .. } => {
                        if let Some(p) = &person {
                            p.questions_settled(question_id);
                        }
                    }
                    EventBody::Status { status } => {
                        running_tx.send_replace(status == "running");
                    }
                    body => {
                        printer.on_event(body);
                        if matches!(body, EventBody::TurnEnded { .. }) {
                            // Nobody waits only when the chat is ending.
                            let _ = turn_tx.send(());
                        }
                    }
                }
            }
        });
        Self {
            turn_ends: tokio::sync::Mutex::new(turn_ends),
            running,
            position,
            task,
        }
    }

    /// The next turn end (printed by then).
    async fn turn_end(&self) {
        self.turn_ends.lock().await.recv().await;
    }

    /// Waits until no turn runs and every event published until then is
    /// printed (so a prompt drawn next lands below the turn's output).
    async fn idle(&self, session: &Session) {
        let mut running = self.running.clone();
        while session.is_running() {
            // A status event wakes it; the timeout covers one not seen yet.
            let _ =
                tokio::time::timeout(std::time::Duration::from_millis(50), running.changed()).await;
        }
        let target = session.next_seq();
        let mut position = self.position.clone();
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            position.wait_for(|p| *p >= target),
        )
        .await;
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The terminal's mode at start-up, restored on the way out: the line
/// editor's thread may still hold raw mode when a signal ends chat.
struct TerminalMode(Option<nix::sys::termios::Termios>);

impl TerminalMode {
    fn save() -> Self {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Self(None);
        }
        Self(nix::sys::termios::tcgetattr(&stdin).ok())
    }

    fn restore(&self) {
        if let Some(mode) = &self.0 {
            // The terminal may be gone (SIGHUP); nothing to restore then.
            let _ = nix::sys::termios::tcsetattr(
                std::io::stdin(),
                nix::sys::termios::SetArg::TCSANOW,
                mode,
            );
        }
    }
}

/// Sends each non-empty stdin line as a message and waits for its turn;
/// chat commands run in line order too. Returns the signal that ended it,
/// if one did.
async fn piped_loop(
    session: &Session,
    printer: &Arc<Printer>,
    feed: &Feed,
    cleared_failed: &mut bool,
) -> Option<Stop> {
    let mut input = tokio::io::BufReader::new(tokio::io::stdin());
    let mut signals = crate::signals::get();
    let mut line_no = 0usize;
    loop {
        let mut bytes = Vec::new();
        let read = tokio::select! {
            r = input.read_until(b'\n', &mut bytes) => r,
            stop = signals.next() => return Some(stop),
        };
        match read {
            Ok(0) => return None,
            Ok(_) => line_no += 1,
            Err(e) => {
                crate::output::say!("dsh: cannot read stdin: {e}");
                return None;
            }
        }
        let line = match String::from_utf8(bytes) {
            Ok(l) => l,
            Err(_) => {
                crate::output::say!("dsh: stdin line {line_no} is not valid UTF-8; skipped");
                continue;
            }
        };
        let line = line.trim_end_matches(['\n', '\r']).to_string();
        if line.trim().is_empty() {
            continue;
        }
        if let Some(action) = chat_command(session, printer, &line, false).await {
            match action {
                Action::Reply(reply) => reply_line(&reply),
                Action::Turn(note) => {
                    reply_line(&note);
                    tokio::select! {
                        () = async { feed.turn_end().await; feed.idle(session).await } => {}
                        stop = signals.next() => {
                            session.abort(stop.reason());
                            feed.turn_end().await;
                            return Some(stop);
                        }
                    }
                }
                Action::Exit => return None,
                Action::Ended(reply) => {
                    reply_line(&reply);
                    *cleared_failed = true;
                    return None;
                }
            }
            continue;
        }
        if let Err(e) = session.prompt(&line).await {
            crate::output::say!("dsh: {}", e.message);
            if e.code == dsh_protocol::codes::PROMPT_BLOCKED {
                continue;
            }
            return None;
        }
        tokio::select! {
            // The next line waits for the agent to be idle (its status
            // follows the turn's end): a command then runs between turns.
            () = async { feed.turn_end().await; feed.idle(session).await } => {}
            stop = signals.next() => {
                session.abort(stop.reason());
                feed.turn_end().await;
                return Some(stop);
            }
        }
    }
}

/// Prints a chat command's reply on stderr as it is: the reply is safe
/// already (see [`Action::Reply`]) and may hold dsh's own styling.
fn reply_line(reply: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{reply}");
    let _ = err.flush();
}

/// What the loop does after a chat command.
enum Action {
    /// Show the reply (worded, may span lines): every foreign part of it
    /// (a model name, an error, a todo item) is sanitised and dsh's own
    /// styling added after, so it is printed as it is.
    Reply(String),
    /// The command became the user's message (a custom command, `/init`):
    /// show the note, then its turn runs as a message's does.
    Turn(String),
    /// Leave chat (`/exit`), as Ctrl-D does.
    Exit,
    /// Show the reply, then end the chat: the session has no agent left
    /// (`/clear` could not start a new one); exit 1.
    Ended(String),
}

/// Runs the chat command `line` is ([`dsh::commands::parse`]) through the
/// controller, or `None` when it is a message for the model. An unknown
/// `/word` is answered (never sent); a path like `/etc/hosts` is a
/// message. `running`: a turn runs (`/compact` and `/clear` wait for it
/// to end).
async fn chat_command(
    session: &Session,
    printer: &Printer,
    line: &str,
    running: bool,
) -> Option<Action> {
    let (name, rest) = dsh::commands::parse(line)?;
    // The replies but the checklist are plain text quoting foreign parts:
    // sanitised whole. The checklist sanitises its items and styles them.
    let plain = |text: String| crate::sanitize::visible(&text).into_owned();
    if running && name == "clear" {
        return Some(Action::Reply(
            "dsh: /clear runs between turns; try again when this one has ended (Ctrl-C aborts it)"
                .to_string(),
        ));
    }
    let reply = session.command(name, rest).await;
    Some(match reply {
        Reply::Exit => Action::Exit,
        Reply::Todos(todos) if !todos.is_empty() => Action::Reply(printer.checklist(&todos)),
        Reply::Sent(sent) => Action::Turn(plain(sent.describe())),
        Reply::Failed(e) if name == "clear" && e.code == dsh_protocol::codes::SESSION_CLOSED => {
            Action::Ended(plain(format!("dsh: {}", e.message)))
        }
        other => Action::Reply(plain(other.text())),
    })
}

enum Input {
    /// A terminating signal (never sent by the reader thread).
    Stop(Stop),
    Line(String),
    Interrupt,
    Eof,
}

fn history_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("dsh").join("history"))
}

/// Reads lines on a blocking thread (rustyline) and feeds them to the
/// session. Decisions use the agent's live status, never a local guess: a
/// turn can end and the next start without the prompt seeing it.
async fn interactive_loop(
    session: &Arc<Session>,
    printer: &Arc<Printer>,
    person: &Arc<TerminalPerson>,
    feed: &Feed,
    cleared_failed: &mut bool,
) -> Option<Stop> {
    let mut signals = crate::signals::get();
    let (tx, mut rx) = mpsc::unbounded_channel::<Input>();
    // After Ctrl-C the reader waits for the aborted turn to end before it
    // prompts again, so the turn's last output lands above the new prompt.
    let (resume_tx, resume_rx) = std::sync::mpsc::channel::<()>();
    let reader_person = person.clone();
    let reader_session = session.clone();
    let completion = LineCompletion {
        models: session.models().unwrap_or_default(),
        session: Some(session.clone()),
    };
    std::thread::spawn(move || {
        read_lines(tx, resume_rx, reader_person, reader_session, completion)
    });
    // Set while the reader waits out an aborted turn (the terminal is then
    // in cooked mode, so a further Ctrl-C arrives as SIGINT, handled below).
    let mut resume_pending = false;
    loop {
        let input = tokio::select! {
            input = rx.recv() => input,
            stop = signals.next() => {
                if stop == Stop::Interrupt {
                    // Ctrl-C answers a pending question (a denial) first.
                    if !person.interrupt() {
                        session.abort(stop.reason());
                    }
                    continue;
                }
                Some(Input::Stop(stop))
            }
            () = feed.idle(session), if resume_pending => {
                resume_pending = false;
                // The reader is gone only when dsh is exiting.
                let _ = resume_tx.send(());
                continue;
            }
        };
        let input = input?;
        let running = session.is_running();
        match input {
            Input::Stop(stop) => {
                // TERM, HUP, QUIT end chat, running turn or not.
                if running {
                    printer.skip_next_prompt();
                    session.abort(stop.reason());
                    feed.idle(session).await;
                }
                return Some(stop);
            }
            Input::Eof => {
                if running {
                    session.abort("user exit");
                    feed.idle(session).await;
                }
                return None;
            }
            Input::Interrupt => {
                if person.is_asking() {
                    // A denial, not an abort: the turn goes on. The reader
                    // prompts again first, so the denial's output replaces
                    // that prompt instead of following it.
                    let _ = resume_tx.send(());
                    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                    person.interrupt();
                    continue;
                }
                if !running {
                    return None;
                }
                printer.skip_next_prompt();
                session.abort("user interrupt");
                resume_pending = true;
            }
            Input::Line(line) => {
                if dsh::commands::parse(&line).is_some() {
                    // A pending question takes the line as its answer first.
                    let action = if person.answer_line(&line) {
                        None
                    } else {
                        chat_command(session, printer, &line, running).await
                    };
                    match action {
                        Some(Action::Reply(reply)) => printer.say(&reply),
                        Some(Action::Turn(note)) => {
                            printer.say(&note);
                            if !running {
                                printer.start_spinner();
                            }
                        }
                        Some(Action::Exit) => {
                            if running {
                                session.abort("user exit");
                                feed.idle(session).await;
                            }
                            return None;
                        }
                        Some(Action::Ended(reply)) => {
                            printer.say(&reply);
                            *cleared_failed = true;
                            return None;
                        }
                        None => {}
                    }
                    // The reader waits for this to prompt (with the mode) again.
                    let _ = resume_tx.send(());
                    continue;
                }
                if person.answer_line(&line) {
                    continue;
                }
                if line.trim().is_empty() {
                    continue;
                }
                if !running {
                    printer.start_spinner();
                }
                // `steer` is `send` when no turn runs.
                if let Err(e) = session.steer(&line).await {
                    if e.code == dsh_protocol::codes::PROMPT_BLOCKED {
                        printer.notice(&crate::sanitize::visible(&e.message));
                        continue;
                    }
                    crate::output::say!("dsh: {}", e.message);
                    return None;
                }
            }
        }
    }
}

fn read_lines(
    tx: mpsc::UnboundedSender<Input>,
    resume: std::sync::mpsc::Receiver<()>,
    person: Arc<TerminalPerson>,
    session: Arc<Session>,
    completion: LineCompletion,
) {
    use rustyline::error::ReadlineError;
    let mut editor =
        match rustyline::Editor::<LineCompletion, rustyline::history::DefaultHistory>::new() {
            Ok(e) => e,
            Err(e) => {
                crate::output::say!("dsh: cannot start the line editor: {e}");
                let _ = tx.send(Input::Eof);
                return;
            }
        };
    editor.set_helper(Some(completion));
    let history = history_path();
    if let Some(h) = &history {
        // A missing history file is normal on first use.
        let _ = editor.load_history(h);
    }
    loop {
        let input = match editor.readline(render::prompt(session.plan_mode())) {
            Ok(line) => {
                // Answers to questions are not worth recalling.
                if !line.trim().is_empty() && !person.is_asking() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                Input::Line(line)
            }
            Err(ReadlineError::Interrupted) => Input::Interrupt,
            Err(ReadlineError::Eof) => Input::Eof,
            Err(e) => {
                crate::output::say!("dsh: input error: {e}");
                Input::Eof
            }
        };
        let stop = matches!(input, Input::Eof);
        let interrupted = matches!(input, Input::Interrupt);
        // A command's reply lands before the next prompt.
        let command = matches!(&input, Input::Line(l) if dsh::commands::parse(l).is_some());
        if tx.send(input).is_err() || stop {
            break;
        }
        if (interrupted || command) && resume.recv().is_err() {
            break;
        }
    }
    if let Some(h) = &history {
        if let Some(dir) = h.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // History is a convenience; failing to save it is not an error.
        let _ = editor.save_history(h);
    }
}
