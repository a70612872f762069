//! `dsh chat` (the default command): an interactive session.
//!
//! On a terminal: line input with history; answers stream as they arrive; a
//! line typed while a turn runs steers it; Ctrl-C aborts the running step,
//! Ctrl-C at an idle prompt or Ctrl-D exits. With piped stdin every line is
//! sent in turn (each waits for the previous turn) and the process exits when
//! the work is done; a line that is not UTF-8 is reported and skipped.
//!
//! Chat commands (`/help`, `/model`, `/permission`, `/plan`, `/compact`,
//! `/todo`, `/session`, `/clear`, `/exit`; the table is
//! [`dsh::commands::SLASH_COMMANDS`]) run in both modes; an unknown
//! `/word` is answered and never sent, a path like `/etc/hosts` is a
//! message. Tab completes them on a terminal ([`crate::complete`]).
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

use dsh::hooks::PromptDecision;
use dsh_agent::{Agent, AgentStatus};
use dsh_agent_loop::AgentHandle;
use dsh_llm::MessageSource;
use tokio::io::AsyncBufReadExt;
use tokio::sync::{mpsc, watch};

use crate::app::App;
use crate::approve::TerminalPerson;
use crate::cli::ChatArgs;
use crate::commands::{block_on, start_agent, wait_turn_end, TurnEnds};
use crate::complete::LineCompletion;
use crate::render::{self, Printer, Style};
use crate::signals::Stop;

/// Runs `dsh chat`; returns the exit code.
pub(crate) fn run(args: ChatArgs) -> u8 {
    let trust = crate::app::ask_about_project(&args.stack);
    let settings = crate::app::settings(&args.stack, trust);
    block_on(chat(settings, args.resume))
}

async fn chat(settings: dsh::Settings, resume: Option<String>) -> u8 {
    let terminal = TerminalMode::save();
    let code = chat_session(&settings, resume.as_deref()).await;
    terminal.restore();
    code
}

async fn chat_session(settings: &dsh::Settings, resume: Option<&str>) -> u8 {
    let (app, handle) = match start_agent(settings, resume).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    let agent = handle.agent();
    let session_id = agent.session().id().to_string();
    let mut slot = Some(handle);
    let interactive = std::io::stdin().is_terminal();
    let on_terminal = interactive && std::io::stdout().is_terminal();
    let (printer, printer_reg) = render::install(&app, &session_id, Style::detect(), on_terminal);
    let turn_ends = wait_turn_end(&app);
    app.announce_permission(agent.as_ref());
    // Said once per session: commands run with fewer sandbox layers than
    // asked (the namespace layer is unavailable here).
    for warning in app.take_warnings() {
        crate::output::say!("dsh: {warning}");
    }
    let stopped;
    if interactive {
        crate::output::say!(
            "dsh — model {} — session {session_id}\nType a message or /help for the commands; Ctrl-C aborts a running turn, Ctrl-D exits.",
            app.resolved.model
        );
        let (status_tx, status_rx) = watch::channel(agent.status());
        let status_reg = app.agents.hooks().status.on(move |c| {
            // No receiver only after the loop returned; nothing to tell then.
            let _ = status_tx.send(c.status);
        });
        let person = TerminalPerson::new(printer.clone());
        app.approver.set_person(Some(person.clone()));
        let (title, title_reg) = title_after_first_turn(&app);
        stopped = interactive_loop(&app, &mut slot, &printer, &person, status_rx).await;
        app.approver.set_person(None);
        status_reg.undo();
        title_reg.undo();
        // The title request gets a moment to land in the log.
        let pending = title.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = pending {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(3), task).await;
        }
    } else {
        stopped = piped_loop(&app, &mut slot, &printer, &turn_ends).await;
    }
    printer_reg.undo();
    // After a failed /clear there is no agent left (and no session to name).
    let session_id = slot.as_ref().map(|h| h.agent().session().id().to_string());
    let cleared_failed = session_id.is_none();
    crate::commands::shutdown_bounded(async {
        if let Some(handle) = slot {
            handle.dispose().await;
        }
        app.shutdown().await;
    })
    .await;
    if let Some(stop) = stopped {
        crate::output::say!("dsh: {}", stop.reason());
    }
    if let (true, Some(id)) = (interactive, &session_id) {
        crate::output::say!("session saved: {id} (resume with `dsh chat --resume {id}`)");
    }
    match stopped {
        Some(stop) if stop != Stop::Interrupt => stop.exit_code(),
        _ if cleared_failed => 1,
        _ => printer.output_code(),
    }
}

/// With a real model, asks for a session title once the first turn has
/// ended ([`dsh::title::generate`], in the background). Returns the task
/// (to await briefly at exit) and the listener's registration.
fn title_after_first_turn(
    app: &App,
) -> (
    Arc<std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>>,
    dsh_kernel::Registration,
) {
    let slot: Arc<std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>> = Arc::default();
    if app.resolved.model == dsh::echo_model::ECHO_MODEL {
        return (slot, dsh_kernel::Registration::noop());
    }
    let (llm, model, s) = (app.llm.clone(), app.resolved.model.clone(), slot.clone());
    let reg = app.agents.hooks().event.on(move |e| {
        if e.agent.id().as_str() != dsh::MAIN_AGENT_ID {
            return;
        }
        if !matches!(
            &e.event.data,
            dsh_session::EventPayload::TurnEnd(dsh_session::TurnEndEvent { turn: 1, .. })
        ) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let task = rt.spawn(dsh::title::generate(
            llm.clone(),
            model.clone(),
            e.agent.session(),
        ));
        if let Ok(mut t) = s.lock() {
            *t = Some(task);
        }
    });
    (slot, reg)
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
    app: &App,
    slot: &mut Option<AgentHandle>,
    printer: &Arc<Printer>,
    turn_ends: &TurnEnds,
) -> Option<Stop> {
    let mut input = tokio::io::BufReader::new(tokio::io::stdin());
    let mut signals = crate::signals::get();
    let mut line_no = 0usize;
    loop {
        let agent = slot.as_ref()?.agent();
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
        if let Some(action) = chat_command(app, &agent, printer, &line, false).await {
            match action {
                Action::Reply(reply) => reply_line(&reply),
                Action::Exit => return None,
                Action::Clear => reply_line(&clear(app, slot, printer).await),
            }
            continue;
        }
        let blocks = match app.submit_prompt(&agent, &line).await {
            PromptDecision::Send(blocks) => blocks,
            PromptDecision::Blocked(reason) => {
                crate::output::say!("dsh: {}", dsh::hooks::blocked_prompt_message(&reason));
                continue;
            }
        };
        if let Err(e) = agent.send(blocks, MessageSource::User) {
            crate::output::say!("dsh: {e}");
            return None;
        }
        tokio::select! {
            _ = turn_ends.recv() => {}
            stop = signals.next() => {
                agent.abort(Some(stop.reason().into()));
                let _ = turn_ends.recv().await;
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
    /// Leave chat (`/exit`), as Ctrl-D does.
    Exit,
    /// Start a new session (`/clear`, see [`clear`]).
    Clear,
}

/// Runs the chat command `line` is ([`dsh::commands::parse`]), or `None`
/// when it is a message for the model. An unknown `/word` is answered
/// (never sent); a path like `/etc/hosts` is a message. `running`: a turn
/// runs (`/compact` and `/clear` wait for it to end).
async fn chat_command(
    app: &App,
    agent: &Arc<dyn Agent>,
    printer: &Printer,
    line: &str,
    running: bool,
) -> Option<Action> {
    let (name, rest) = dsh::commands::parse(line)?;
    // The replies but the checklist are plain text quoting foreign parts:
    // sanitised whole. The checklist sanitises its items and styles them.
    let plain = |text: String| crate::sanitize::visible(&text).into_owned();
    let reply = match name {
        "help" => help(),
        "model" => plain(model_command(app, agent.as_ref(), rest)),
        "permission" => plain(permission_command(app, agent.as_ref(), rest)),
        "plan" => plan_command(app, agent.as_ref(), rest),
        "compact" => plain(compact(app, agent, (!rest.is_empty()).then_some(rest), running).await),
        "todo" => {
            let todos = app.todos(agent.as_ref());
            if todos.is_empty() {
                "no todo list".to_string()
            } else {
                printer.checklist(&todos)
            }
        }
        "session" => plain(session_command(app, agent.as_ref())),
        "clear" if running => {
            "dsh: /clear runs between turns; try again when this one has ended (Ctrl-C aborts it)"
                .to_string()
        }
        "clear" => return Some(Action::Clear),
        "exit" => return Some(Action::Exit),
        other => plain(format!(
            "dsh: unknown command /{other}; commands: {}",
            dsh::commands::names()
        )),
    };
    Some(Action::Reply(reply))
}

/// `/help`: one line per command, `/name [hint]` then what it does.
fn help() -> String {
    let usage = |c: &dsh::commands::SlashCommand| match c.hint {
        Some(h) => format!("/{} [{h}]", c.name),
        None => format!("/{}", c.name),
    };
    let width = dsh::commands::SLASH_COMMANDS
        .iter()
        .map(|c| usage(c).len())
        .max()
        .unwrap_or(0);
    let mut out = String::from("commands:");
    for c in dsh::commands::SLASH_COMMANDS {
        out.push_str(&format!("\n  {:width$}  {}", usage(c), c.description));
    }
    out
}

/// `/model [name]`: the model in use and the ones served, or a switch.
fn model_command(app: &App, agent: &dyn Agent, rest: &str) -> String {
    let current = app.model();
    if rest.is_empty() {
        return format!(
            "model: {current} (models: {}; switch with /model NAME)",
            app.models().join(", ")
        );
    }
    if rest.contains(char::is_whitespace) {
        return "dsh: usage: /model [NAME]".to_string();
    }
    if rest == current {
        return format!("model is already {current}");
    }
    match app.set_model(rest, "/model", Some(agent)) {
        Ok(()) => format!("model: {rest} (was {current}) for the next requests"),
        Err(e) => format!("dsh: {e}"),
    }
}

/// `/permission [mode]`: the mode in force, or a change.
fn permission_command(app: &App, agent: &dyn Agent, rest: &str) -> String {
    let current = app.permission();
    let modes = dsh::commands::PERMISSION_MODES.join("|");
    if rest.is_empty() {
        return format!("permission mode: {current} (change with /permission {modes})");
    }
    if rest.contains(char::is_whitespace) {
        return format!("dsh: usage: /permission [{modes}]");
    }
    match rest.parse::<dsh::SandboxMode>() {
        Ok(mode) if mode == current => format!("permission mode is already {mode}"),
        Ok(mode) => {
            app.set_permission(mode, "/permission", Some(agent));
            format!("permission mode: {mode} (was {current})")
        }
        Err(e) => format!("dsh: {e}"),
    }
}

/// The reply to `/plan` (plan mode on), `/plan on` or `/plan off`. The
/// change is logged and announced to the model
/// ([`dsh::Stack::set_plan_mode`]).
fn plan_command(app: &App, agent: &dyn Agent, rest: &str) -> String {
    let on = match rest {
        "" | "on" => true,
        "off" => false,
        _ => return "dsh: usage: /plan [on|off]".to_string(),
    };
    let changed = app.set_plan_mode(on, "/plan", Some(agent));
    match (on, changed) {
        (true, true) => "plan mode: on — the model explores with read-only tools and presents a plan for you to approve; write, edit and bash are denied until then (/plan off leaves plan mode)".to_string(),
        (true, false) => "plan mode is already on (/plan off leaves it)".to_string(),
        (false, true) => "plan mode: off".to_string(),
        (false, false) => "plan mode is not on (/plan turns it on)".to_string(),
    }
}

/// `/session`: the id, the log file and the token figures (the meter's
/// last `context/usage`, the usage the provider reported).
fn session_command(app: &App, agent: &dyn Agent) -> String {
    let session = agent.session();
    let id = session.id().to_string();
    let log = match app.session_path(&id) {
        Some(path) => path.display().to_string(),
        None => "not saved (sessions kept in memory)".to_string(),
    };
    let events: Vec<dsh_session::SessionEvent> =
        session.events().iter().map(|e| (**e).clone()).collect();
    let context = events.iter().rev().find_map(|e| match &e.data {
        dsh_session::EventPayload::Other { kind, data }
            if kind == dsh_agent_loop::CONTEXT_USAGE_KIND =>
        {
            let field = |k: &str| data.get(k).and_then(serde_json::Value::as_u64);
            Some((field("tokens")?, field("window")?))
        }
        _ => None,
    });
    let context = match context {
        Some((tokens, window)) => dsh_session::format_usage(tokens, window),
        None => "no request yet".to_string(),
    };
    let totals = dsh_session::session_stats(&events).tokens;
    let mut reported = format!("input {}, output {}", totals.input, totals.output);
    if let Some(c) = totals.cache_read {
        reported.push_str(&format!(", cache read {c}"));
    }
    format!("session: {id}\nlog: {log}\ntokens: {context}; reported {reported}")
}

/// Runs `/compact` and says what it did.
async fn compact(app: &App, agent: &Arc<dyn Agent>, focus: Option<&str>, running: bool) -> String {
    if running {
        return "dsh: /compact runs between turns; try again when this one has ended".into();
    }
    match app.compact_now(agent, focus).await {
        Ok(outcome) => crate::commands::describe_compaction(&outcome, app.resolved.context_window),
        Err(e) => format!("dsh: {e}"),
    }
}

/// `/clear`: the old agent is disposed (its log complete on disk) and a
/// fresh one starts in a new session; the printer follows it. Returns
/// what to tell the user (safe to print). On failure `slot` is left empty and chat ends.
async fn clear(app: &App, slot: &mut Option<AgentHandle>, printer: &Printer) -> String {
    let Some(old) = slot.take() else {
        return "dsh: no session to clear".to_string();
    };
    let old_id = old.agent().session().id().to_string();
    match app.clear_session(old).await {
        Ok(handle) => {
            let id = handle.agent().session().id().to_string();
            printer.follow(&id);
            *slot = Some(handle);
            format!("new session: {id} (history cleared; {old_id} is saved, resume it with `dsh chat --resume {old_id}`)")
        }
        Err(e) => {
            crate::sanitize::visible(&format!("dsh: cannot start a new session: {e}")).into_owned()
        }
    }
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

/// Reads lines on a blocking thread (rustyline) and feeds them to the agent.
/// Decisions use the agent's live status (from `agent/status`), never a
/// local guess: a turn can end and the next start without the prompt seeing it.
async fn interactive_loop(
    app: &App,
    slot: &mut Option<AgentHandle>,
    printer: &Arc<Printer>,
    person: &Arc<TerminalPerson>,
    mut status: watch::Receiver<AgentStatus>,
) -> Option<Stop> {
    let mut signals = crate::signals::get();
    let (tx, mut rx) = mpsc::unbounded_channel::<Input>();
    // After Ctrl-C the reader waits for the aborted turn to end before it
    // prompts again, so the turn's last output lands above the new prompt.
    let (resume_tx, resume_rx) = std::sync::mpsc::channel::<()>();
    let reader_person = person.clone();
    let plan = app.plan.clone();
    let completion = LineCompletion {
        models: app.models(),
    };
    std::thread::spawn(move || read_lines(tx, resume_rx, reader_person, plan, completion));
    // Set while the reader waits out an aborted turn (the terminal is then
    // in cooked mode, so a further Ctrl-C arrives as SIGINT, handled below).
    let mut resume_pending = false;
    loop {
        let agent = &slot.as_ref()?.agent();
        let input = tokio::select! {
            input = rx.recv() => input,
            stop = signals.next() => {
                if stop == Stop::Interrupt {
                    // Ctrl-C answers a pending question (a denial) first.
                    if !person.interrupt() {
                        agent.abort(Some(stop.reason().into()));
                    }
                    continue;
                }
                Some(Input::Stop(stop))
            }
            _ = status.wait_for(|s| *s != AgentStatus::Running), if resume_pending => {
                resume_pending = false;
                // The reader is gone only when dsh is exiting.
                let _ = resume_tx.send(());
                continue;
            }
        };
        let input = input?;
        let running = agent.status() == AgentStatus::Running;
        match input {
            Input::Stop(stop) => {
                // TERM, HUP, QUIT end chat, running turn or not.
                if running {
                    printer.skip_next_prompt();
                    agent.abort(Some(stop.reason().into()));
                    let _ = status.wait_for(|s| *s != AgentStatus::Running).await;
                }
                return Some(stop);
            }
            Input::Eof => {
                if running {
                    agent.abort(Some("user exit".into()));
                    // The sender lives in the status listener until shutdown.
                    let _ = status.wait_for(|s| *s != AgentStatus::Running).await;
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
                agent.abort(Some("user interrupt".into()));
                resume_pending = true;
            }
            Input::Line(line) => {
                if dsh::commands::parse(&line).is_some() {
                    // A pending question takes the line as its answer first.
                    let action = if person.answer_line(&line) {
                        None
                    } else {
                        chat_command(app, agent, printer, &line, running).await
                    };
                    match action {
                        Some(Action::Reply(reply)) => printer.say(&reply),
                        Some(Action::Exit) => {
                            if running {
                                agent.abort(Some("user exit".into()));
                                let _ = status.wait_for(|s| *s != AgentStatus::Running).await;
                            }
                            return None;
                        }
                        Some(Action::Clear) => {
                            let reply = clear(app, slot, printer).await;
                            printer.say(&reply);
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
                let blocks = match app.submit_prompt(agent, &line).await {
                    PromptDecision::Send(blocks) => blocks,
                    PromptDecision::Blocked(reason) => {
                        printer.notice(&crate::sanitize::visible(
                            &dsh::hooks::blocked_prompt_message(&reason),
                        ));
                        continue;
                    }
                };
                if !running {
                    printer.start_spinner();
                }
                // `steer` is `send` when no turn runs.
                if let Err(e) = agent.steer(blocks, MessageSource::User) {
                    crate::output::say!("dsh: {e}");
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
    plan: Arc<dsh::plan::PlanMode>,
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
        let input = match editor.readline(render::prompt(plan.is_active())) {
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
