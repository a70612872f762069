//! `dsh run [--model M] [--session-dir DIR] [--resume ID | --continue]
//! [--output-format text|json|stream-json] [--json] [--quiet] PROMPT`
//!
//! One turn. `dsh run -` (or no prompt words) reads the prompt from stdin.
//! Prompt words and a stdin that is a pipe or a regular file send both: the
//! words, a blank line, and stdin's text in a fenced block (a fence longer
//! than any backtick run in it); an empty stdin adds nothing. Any other
//! stdin (a terminal, `/dev/null`, a socket) is not read. A pipe that
//! brings nothing at all, not even its end, within 3 s is given up on with
//! a warning (`dsh: nothing came on stdin in 3s; going on without it …`):
//! a stdin inherited from a shell that never closes it must not hang the
//! run. With `--plan` the turn runs in plan mode ([`dsh::plan`]):
//! changing tools are denied, and when the model presents its plan with
//! `exit_plan_mode` the plan is printed (instead of the answer) and the run
//! ends there, exit 0.
//!
//! Background jobs the turn started (bash tasks, sub-agents) are waited
//! for, and the wake-up turns their completion notices start run as in
//! chat (at most three in a row), for at most `--wait-jobs` (default
//! 10m); `--no-wait` does not wait. Whatever still runs then is stopped,
//! one stderr line per job (`dsh: stopped job bash-1 (sleep 100) after
//! waiting 10m`).
//!
//! stdout, by `--output-format`: `text` (the default) the final answer of
//! the last turn (or the plan); `stream-json` (or `--json`) every session
//! event as one JSON line as it happens, the JSONL log format; `json` one
//! JSON object at the end, Claude Code's shape:
//! `{"type":"result","subtype":"success"|"error"|"aborted","is_error":…,
//! "result":"<the answer or plan>","session_id":…,"num_turns":…,
//! "duration_ms":…,"usage":{"input_tokens":…,"output_tokens":…,
//! "cache_read_input_tokens":…}}`, with `"error":{"code":…,"message":…}`
//! when the subtype is `error` (`code` left out when the error has none).
//!
//! Progress goes to stderr (not with `--quiet`; warnings and errors
//! always do):
//! - when stderr is a terminal (and `TERM` is not `dumb`), the live status
//!   line ([`dsh_tui::status`]) redrawn in place 12 times a second, cleared
//!   before anything else is written to stderr and at the end;
//! - otherwise one line per tool call as it finishes and one for a step
//!   that answers: `dsh: step 2 · bash cargo test (exit 0, 3.1s)`, `dsh:
//!   step 1 · read src/main.rs (ok, 0.0s)`, `dsh: step 3 · edit src/lib.rs
//!   (error, 0.1s)`, `dsh: step 4 · answered (1.2k tokens, 2.3s)`. The step
//!   counts the turn's model requests; after the run's first turn (the
//!   wake-up turns of background jobs) the line starts `dsh: turn 2 · step
//!   1 · …`. A bash call says `exit N`, `killed by SIGNAL`, `timed out`
//!   or `started bash-1` (a background task); other tools `ok` or `error`;
//!   the time is the call's run (or the step's, for an answer), and the
//!   tokens are the step's reported output tokens (`~N`: estimated from
//!   the text, 4 characters a token, when the provider reported none). A
//!   wait for background jobs says so once: `dsh: waiting for 1 background
//!   job (at most 10m)`.
//!
//! A prompt that is `/init` or a custom command (`dsh run "/review src"`,
//! see [`dsh::custom_commands`]) runs that command: its message is sent
//! and its turn is the run's; an unknown `/word` is sent as it is.
//!
//! Exit codes: 0 the turn completed, 1 it ended in error (message with code
//! on stderr) or its output could not be written, 2 usage or configuration
//! error; a signal aborts the turn (open tool calls answered, processes
//! killed, log flushed) and exits 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP)
//! or 131 (SIGQUIT).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dsh_controller::{Controller, Event, EventBody, Session, SessionOptions, Subscription};
use dsh_kernel::sync::lock;
use dsh_session::TurnEndReason;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch, Notify};

mod progress;

use progress::Progress;

use crate::cli::{OutputFormat, RunArgs};
use crate::commands::{block_on, exit_code_for, open_session};
use crate::output::WriteFailure;

/// Runs `dsh run`; returns the exit code.
pub(crate) fn run(args: RunArgs) -> u8 {
    block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> u8 {
    let started = Instant::now();
    let format = match format_of(&args) {
        Ok(format) => format,
        Err(message) => {
            crate::output::say!("dsh: {message}");
            return 2;
        }
    };
    let prompt = match prompt_of(&args.prompt) {
        Ok(p) => p,
        Err(message) => {
            crate::output::say!("dsh: {message}");
            return 2;
        }
    };
    let settings = crate::app::settings(&args.stack, dsh::ProjectTrust::Refuse);
    let asked = args.resume.as_deref().map(Some);
    let resume = match crate::commands::resolve::target(&settings, asked, args.continue_session) {
        Ok(crate::commands::resolve::Target::Resume(id)) => Some(id),
        Ok(_) => None,
        Err(code) => return code,
    };
    let controller = Controller::new(settings);
    // The flag decides the mode of this run, a resumed session's included.
    let source = if args.plan { "--plan" } else { "dsh run" };
    let options = SessionOptions {
        resume,
        plan_mode: Some((args.plan, source.to_string())),
        present_plan: args.plan,
        ..SessionOptions::default()
    };
    let session = match open_session(&controller, options).await {
        Ok(session) => session,
        Err(code) => return code,
    };
    let written = Arc::new(WriteFailure::default());
    let streaming = format == OutputFormat::StreamJson;
    // Everything from the open on (a resumed session's history is not
    // printed again): warnings, the JSONL events with stream-json, turn
    // ends, the progress.
    let reader = Reader::start(
        session.subscribe(Some(session.live_from())),
        streaming,
        &written,
        Progress::new(args.quiet, &session),
    );
    let mut signals = crate::signals::get();
    let mut stopped = None;
    let reason = match send(&session, &prompt).await {
        Err(e) => Some(TurnEndReason::Error {
            message: e.message,
            code: Some(e.code),
        }),
        Ok(()) => {
            tokio::select! {
                reason = reader.turn_end() => reason,
                stop = signals.next() => {
                    stopped = Some(stop);
                    session.abort(stop.reason());
                    reader.turn_end().await
                }
            }
        }
    };
    let presented = session.take_presented_plan();
    // The turn's jobs: waited for (with the wake-up turns they start)
    // unless the run was stopped, the plan is presented or --no-wait.
    let waiting = if stopped.is_some() || presented.is_some() || args.no_wait {
        Waiting::NoWait
    } else {
        Waiting::For(args.wait_jobs)
    };
    let left = if stopped.is_none() {
        match settle(&session, &reader, waiting, &mut signals).await {
            Settled::Done(left) => left,
            Settled::Stopped(stop, left) => {
                stopped = Some(stop);
                left
            }
        }
    } else {
        session.running_jobs()
    };
    // Why the jobs still running are stopped, for their lines.
    let why = match (stopped, waiting) {
        (Some(stop), _) => format!(": {}", stop.reason()),
        (None, Waiting::NoWait) => " at the end of the turn".to_string(),
        (None, Waiting::For(limit)) => format!(" after waiting {}", format_duration(limit)),
    };
    reader.caught_up(&session).await;
    // The status line goes before anything else is written.
    reader.finish_progress();
    let answer = presented.unwrap_or_else(|| reader.last_answer());
    if format == OutputFormat::Text && stopped.is_none() {
        let mut answer = answer.clone();
        if !answer.ends_with('\n') && !answer.is_empty() {
            answer.push('\n');
        }
        let mut out = std::io::stdout().lock();
        let text = crate::sanitize::visible(&answer);
        written.note(out.write_all(text.as_bytes()).and_then(|()| out.flush()));
    }
    reader.stop_printing();
    crate::commands::shutdown_bounded(async {
        // Disposed first, so a job stopped below wakes no further turn.
        session.dispose_agent().await;
        stop_jobs(&session, &left, &why).await;
        reader.caught_up(&session).await;
        controller.shutdown("dsh run ended").await;
    })
    .await;
    let mut outcome = Outcome::of(stopped, reason.as_ref());
    let code = match stopped {
        Some(stop) => {
            crate::output::say!("dsh: aborted: {}", stop.reason());
            stop.exit_code()
        }
        None => {
            let code = exit_code_for(reason.as_ref());
            if code == 0 && written.code() != 0 {
                written.code()
            } else {
                let failures = reader.persistence_errors();
                for (code, message) in &failures {
                    crate::output::say!("dsh: session log not saved: error [{code}]: {message}");
                }
                match failures.into_iter().next() {
                    Some((code, message)) if outcome.subtype == "success" => {
                        outcome = Outcome::error(Some(code), message);
                        1
                    }
                    _ => code,
                }
            }
        }
    };
    if format == OutputFormat::Json {
        let result = reader.result(&outcome, &answer, &session.id(), started.elapsed());
        let written = crate::output::emit(&format!("{result}\n"));
        if code == 0 && written != 0 {
            return written;
        }
    }
    code
}

/// The output format: `--output-format`, `--json` (`stream-json`), or
/// `text`.
///
/// # Errors
/// `--json` with an `--output-format` other than `stream-json`.
fn format_of(args: &RunArgs) -> Result<OutputFormat, String> {
    match (args.json, args.output_format) {
        (false, format) => Ok(format.unwrap_or(OutputFormat::Text)),
        (true, None | Some(OutputFormat::StreamJson)) => Ok(OutputFormat::StreamJson),
        (true, Some(other)) => {
            use clap::ValueEnum;
            let name = other
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            Err(format!(
                "--json is --output-format stream-json; it conflicts with --output-format {name}"
            ))
        }
    }
}

/// How a run ended, for `--output-format json`.
struct Outcome {
    /// `success`, `error` or `aborted`.
    subtype: &'static str,
    /// For `error`: the code (when it has one) and the message.
    error: Option<(Option<String>, String)>,
}

impl Outcome {
    fn error(code: Option<String>, message: String) -> Self {
        Outcome {
            subtype: "error",
            error: Some((code, message)),
        }
    }

    /// The outcome of a run stopped by `stopped`, or whose turn ended for
    /// `reason` (`None`: the agent stopped before the turn ended).
    fn of(stopped: Option<crate::signals::Stop>, reason: Option<&TurnEndReason>) -> Self {
        let aborted = Outcome {
            subtype: "aborted",
            error: None,
        };
        if stopped.is_some() {
            return aborted;
        }
        match reason {
            Some(TurnEndReason::Completed) => Outcome {
                subtype: "success",
                error: None,
            },
            Some(TurnEndReason::Aborted { .. } | TurnEndReason::Disposed) => aborted,
            Some(TurnEndReason::Error { message, code }) => {
                Self::error(code.clone(), message.clone())
            }
            Some(TurnEndReason::MaxSteps) => Self::error(
                Some(dsh_protocol::codes::MAX_STEPS.to_string()),
                "the turn hit the step limit".to_string(),
            ),
            Some(other) => Self::error(None, format!("turn ended: {}", other.kind())),
            None => Self::error(None, "the agent stopped before the turn ended".to_string()),
        }
    }
}

/// The longest prompt (or piped input) read from stdin.
const STDIN_PROMPT_MAX: u64 = 16 * 1024 * 1024;

/// How long a pipe on stdin may stay silent (no byte, no end) before the
/// run goes on without it.
const STDIN_QUIET_MAX: Duration = Duration::from_secs(3);

/// The prompt: the words given, or (`-`, or no words) stdin's text; words
/// with a piped stdin: both ([`with_input`]).
///
/// # Errors
/// What to tell the user (exit 2): stdin is a terminal, unreadable, not
/// UTF-8, too long, or holds nothing but whitespace (when it is the
/// prompt).
fn prompt_of(words: &[String]) -> Result<String, String> {
    use std::io::{IsTerminal, Read};
    if !(words.is_empty() || (words.len() == 1 && words[0] == "-")) {
        let prompt = words.join(" ");
        return Ok(match piped_input()? {
            Some(input) => with_input(&prompt, &input),
            None => prompt,
        });
    }
    if std::io::stdin().is_terminal() {
        return Err(
            "no prompt: give it as arguments, or pipe it in (`echo 'fix the test' | dsh run -`)"
                .into(),
        );
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(STDIN_PROMPT_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
    let text = stdin_text(bytes, "the prompt")?;
    if text.trim().is_empty() {
        return Err("no prompt: stdin was empty".into());
    }
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

/// `bytes` read from stdin as text; `what` names it in the errors (too
/// long, not UTF-8).
fn stdin_text(bytes: Vec<u8>, what: &str) -> Result<String, String> {
    if bytes.len() as u64 > STDIN_PROMPT_MAX {
        return Err(format!(
            "{what} on stdin is longer than {} MiB",
            STDIN_PROMPT_MAX / (1024 * 1024)
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{what} on stdin is not UTF-8 (invalid byte at {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// stdin's text when it is a pipe or a regular file and holds more than
/// whitespace; `None` for any other stdin (a terminal, `/dev/null`, a
/// socket: never read), an empty one, or a pipe silent for
/// [`STDIN_QUIET_MAX`] (with a warning).
///
/// # Errors
/// stdin unreadable, not UTF-8, or too long.
fn piped_input() -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let kind = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| std::fs::File::from(fd).metadata())
        .map(|m| m.file_type());
    let bytes = match kind {
        Ok(t) if t.is_file() => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .take(STDIN_PROMPT_MAX + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| format!("cannot read stdin: {e}"))?;
            bytes
        }
        Ok(t) if t.is_fifo() => match read_pipe() {
            Some(read) => read.map_err(|e| format!("cannot read stdin: {e}"))?,
            None => {
                crate::output::say!(
                    "dsh: nothing came on stdin in {}s; going on without it (`< /dev/null` skips the wait)",
                    STDIN_QUIET_MAX.as_secs()
                );
                return Ok(None);
            }
        },
        _ => return Ok(None),
    };
    let text = stdin_text(bytes, "the input")?;
    Ok((!text.trim().is_empty()).then_some(text))
}

/// Reads the pipe on stdin to its end (at most one byte past
/// [`STDIN_PROMPT_MAX`]) on a thread of its own; `None` when neither a
/// byte nor the end came within [`STDIN_QUIET_MAX`] (the thread is left
/// blocked in its read; it ends with the process).
fn read_pipe() -> Option<std::io::Result<Vec<u8>>> {
    use std::io::Read;
    enum PipeRead {
        Started,
        Done(std::io::Result<Vec<u8>>),
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut bytes = Vec::new();
        let mut first = [0u8; 8192];
        let n = loop {
            match stdin.read(&mut first) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let _ = tx.send(PipeRead::Started);
        let done = n.and_then(|n| {
            bytes.extend_from_slice(&first[..n]);
            if n > 0 {
                stdin
                    .take(STDIN_PROMPT_MAX + 1 - n as u64)
                    .read_to_end(&mut bytes)?;
            }
            Ok(bytes)
        });
        let _ = tx.send(PipeRead::Done(done));
    });
    match rx.recv_timeout(STDIN_QUIET_MAX) {
        Ok(PipeRead::Started) => match rx.recv() {
            Ok(PipeRead::Done(done)) => Some(done),
            _ => Some(Err(std::io::Error::other("the reading thread ended"))),
        },
        Ok(PipeRead::Done(done)) => Some(done),
        Err(_) => None,
    }
}

/// `prompt`, a blank line, and `input` in a fenced block whose fence is
/// longer than any run of backticks in it.
fn with_input(prompt: &str, input: &str) -> String {
    let input = input.trim_end_matches(['\n', '\r']);
    let mut longest = 0;
    let mut run = 0;
    for c in input.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{prompt}\n\n{fence}\n{input}\n{fence}")
}

/// What `dsh run` reads from the session's events, on a task of its own:
/// it prints warnings on stderr and (with stream-json) each log event as a
/// JSON line on stdout as it happens, shows the progress, passes turn
/// ends and status changes on, and keeps the last answer, the usage and
/// the log's write failures.
struct Reader {
    turn_ends: tokio::sync::Mutex<mpsc::UnboundedReceiver<Option<TurnEndReason>>>,
    /// Status changes of the agent (a stored permit: none is lost).
    changed: Arc<Notify>,
    /// How far the reader has handled the events.
    position: watch::Receiver<u64>,
    state: Arc<ReaderState>,
    task: tokio::task::JoinHandle<()>,
    /// Redraws the status line (on a terminal).
    ticker: Option<tokio::task::JoinHandle<()>>,
}

#[derive(Default)]
struct ReaderState {
    /// JSON lines are printed while set.
    json: std::sync::atomic::AtomicBool,
    last_answer: Mutex<String>,
    /// The code and message of each `SESSION_*` error logged.
    persistence_errors: Mutex<Vec<(String, String)>>,
    /// Turns and usage seen, for `--output-format json`.
    totals: Mutex<Totals>,
    progress: Mutex<Progress>,
}

/// What the run's turns used.
#[derive(Default)]
struct Totals {
    turns: u64,
    input_tokens: u64,
    output_tokens: u64,
    cache_read_tokens: u64,
}

impl Reader {
    fn start(
        events: Subscription,
        json: bool,
        written: &Arc<WriteFailure>,
        progress: Progress,
    ) -> Self {
        let (turn_tx, turn_rx) = mpsc::unbounded_channel();
        let changed = Arc::new(Notify::new());
        let live = matches!(progress, Progress::Live(_));
        let state = Arc::new(ReaderState {
            progress: Mutex::new(progress),
            ..ReaderState::default()
        });
        state.json.store(json, std::sync::atomic::Ordering::SeqCst);
        let mut events = events.with_log(json);
        let position = events.handled();
        let (st, notify, written) = (state.clone(), changed.clone(), written.clone());
        let task = tokio::spawn(async move {
            let mut events = events;
            while let Some(item) = events.next().await {
                if let Ok(event) = item {
                    st.take(&event, &written, &turn_tx, &notify);
                }
            }
            // Closed: nobody waits for a turn end any more.
            let _ = turn_tx.send(None);
        });
        let ticker = live.then(|| tokio::spawn(tick(state.clone())));
        Self {
            turn_ends: tokio::sync::Mutex::new(turn_rx),
            changed,
            position,
            state,
            task,
            ticker,
        }
    }

    /// The next turn end (`None`: the session closed first).
    async fn turn_end(&self) -> Option<TurnEndReason> {
        self.turn_ends.lock().await.recv().await.flatten()
    }

    /// Waits until the reader has handled every event published so far.
    async fn caught_up(&self, session: &Session) {
        let target = session.next_seq();
        let mut position = self.position.clone();
        // Bounded: the shutdown goes on regardless.
        let _ =
            tokio::time::timeout(Duration::from_secs(5), position.wait_for(|p| *p >= target)).await;
    }

    fn stop_printing(&self) {
        self.state
            .json
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// The run waits for `jobs` background jobs, for at most `limit`.
    fn waiting_for_jobs(&self, jobs: usize, limit: Duration) {
        lock(&self.state.progress).waiting_for_jobs(jobs, limit);
    }

    /// Clears the status line for good (nothing more is drawn).
    fn finish_progress(&self) {
        if let Some(ticker) = &self.ticker {
            ticker.abort();
        }
        lock(&self.state.progress).finish();
    }

    fn last_answer(&self) -> String {
        lock(&self.state.last_answer).clone()
    }

    fn persistence_errors(&self) -> Vec<(String, String)> {
        lock(&self.state.persistence_errors).clone()
    }

    /// The `--output-format json` object of a run that ended as `outcome`
    /// with `answer`, in session `session_id`, after `took`.
    fn result(&self, outcome: &Outcome, answer: &str, session_id: &str, took: Duration) -> String {
        let totals = lock(&self.state.totals);
        let mut result = json!({
            "type": "result",
            "subtype": outcome.subtype,
            "is_error": outcome.subtype != "success",
            "result": answer,
            "session_id": session_id,
            "num_turns": totals.turns,
            "duration_ms": u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            "usage": {
                "input_tokens": totals.input_tokens,
                "output_tokens": totals.output_tokens,
                "cache_read_input_tokens": totals.cache_read_tokens,
            },
        });
        if let Some((code, message)) = &outcome.error {
            let mut error = json!({ "message": message });
            if let Some(code) = code {
                error["code"] = Value::String(code.clone());
            }
            result["error"] = error;
        }
        crate::sanitize::json_visible(&result.to_string()).into_owned()
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.task.abort();
        // A status line is never left behind (nor a hidden cursor).
        self.finish_progress();
    }
}

impl ReaderState {
    fn take(
        &self,
        event: &Event,
        written: &WriteFailure,
        turn_ends: &mpsc::UnboundedSender<Option<TurnEndReason>>,
        changed: &Notify,
    ) {
        lock(&self.progress).on_event(event);
        match &event.body {
            EventBody::Log { event }
                if self.json.load(std::sync::atomic::Ordering::SeqCst) && !written.failed() =>
            {
                let line = serde_json::to_string(&**event).unwrap_or_default();
                let line = crate::sanitize::json_visible(&line);
                let mut out = std::io::stdout().lock();
                // A closed stdout (e.g. `| head`) must not kill the turn:
                // the failure is noted and decides the exit code.
                written.note(writeln!(out, "{line}").and_then(|()| out.flush()));
            }
            // Said once per session: an ignored config key, an MCP server
            // that did not start, fewer sandbox layers than asked.
            EventBody::Warning { message } => lock(&self.progress).say(&format!("dsh: {message}")),
            EventBody::MessageCompleted { text } => *lock(&self.last_answer) = text.clone(),
            EventBody::Error {
                code: Some(code),
                message,
            } if code.starts_with("SESSION_") => {
                lock(&self.persistence_errors).push((code.clone(), message.clone()));
            }
            EventBody::TurnStarted { .. } => lock(&self.totals).turns += 1,
            EventBody::Usage {
                input_tokens,
                output_tokens,
                cache_read_tokens,
            } => {
                let mut totals = lock(&self.totals);
                totals.input_tokens += input_tokens;
                totals.output_tokens += output_tokens;
                totals.cache_read_tokens += cache_read_tokens.unwrap_or(0);
            }
            EventBody::TurnEnded { reason, .. } => {
                let _ = turn_ends.send(Some(reason.clone()));
            }
            EventBody::Status { .. } => changed.notify_one(),
            _ => {}
        }
    }
}

/// How often the status line is redrawn (a spinner frame).
const TICK: Duration = Duration::from_millis(80);

/// Redraws the status line every [`TICK`] (and at once on a resize) until
/// the progress is finished.
async fn tick(state: Arc<ReaderState>) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut resized = signal(SignalKind::window_change()).ok();
    loop {
        let resize = async {
            match &mut resized {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = interval.tick() => {}
            Some(()) = resize => {
                lock(&state.progress).resized();
            }
        }
        if !lock(&state.progress).draw() {
            return;
        }
    }
}

/// How long `dsh run` waits for the turn's background jobs.
#[derive(Debug, Clone, Copy)]
enum Waiting {
    /// `--no-wait` (or the run ends without waiting: a signal, a plan).
    NoWait,
    /// `--wait-jobs` (default 10m).
    For(Duration),
}

/// How waiting for the jobs ended: with the jobs still running then.
enum Settled {
    /// Nothing runs any more, or the wait is over (`--wait-jobs` passed,
    /// or `--no-wait`).
    Done(Vec<Job>),
    /// A signal stopped the wait (the running wake-up turn was aborted).
    Stopped(crate::signals::Stop, Vec<Job>),
}

/// A job of the main agent.
type Job = dsh_controller::Job;

/// Waits until the main agent has no job running and no turn running or
/// queued (the wake-up turns a job's notice starts run meanwhile), for at
/// most what `waiting` allows. A job's wait resolves only once its
/// completion notice reached the agent, so "no job running, no work"
/// cannot miss a wake-up about to start. At the deadline a running
/// wake-up turn is aborted and waited for; the jobs still running are
/// returned, for [`stop_jobs`].
async fn settle(
    session: &Arc<Session>,
    reader: &Reader,
    waiting: Waiting,
    signals: &mut crate::signals::Signals,
) -> Settled {
    let Waiting::For(limit) = waiting else {
        return Settled::Done(session.running_jobs());
    };
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let running = session.running_jobs();
        if running.is_empty() && !session.has_work() {
            return Settled::Done(running);
        }
        if !running.is_empty() {
            reader.waiting_for_jobs(running.len(), limit);
        }
        // Aborted when dropped: a wait outlives no iteration.
        let mut waits = tokio::task::JoinSet::new();
        for job in &running {
            let (session, id) = (session.clone(), job.id.clone());
            waits.spawn(async move { session.wait_job(&id).await });
        }
        let any_job = async {
            if waits.join_next().await.is_none() {
                std::future::pending::<()>().await;
            }
        };
        let stop = tokio::select! {
            _ = reader.turn_end() => None,
            () = any_job => None,
            () = reader.changed.notified() => None,
            () = tokio::time::sleep_until(deadline) => Some(None),
            stop = signals.next() => Some(Some(stop)),
        };
        let Some(signal) = stop else { continue };
        // Out of time or stopped: a wake-up turn still running is aborted.
        if session.has_work() {
            let reason = match signal {
                Some(stop) => stop.reason().to_string(),
                None => format!("dsh run stopped waiting after {}", format_duration(limit)),
            };
            session.abort(&reason);
            // Bounded: the shutdown disposes the agent anyway.
            let _ = tokio::time::timeout(Duration::from_secs(5), reader.turn_end()).await;
        }
        let left = session.running_jobs();
        return match signal {
            Some(stop) => Settled::Stopped(stop, left),
            None => Settled::Done(left),
        };
    }
}

/// Stops each job of `left` still running and says so on stderr, one line
/// per job ending with `why` (` after waiting 10m`, ` at the end of the
/// turn`, `: terminated (SIGTERM)`).
async fn stop_jobs(session: &Session, left: &[Job], why: &str) {
    for job in left {
        if !session.kill_job(&job.id, "dsh run ended").await {
            continue;
        }
        // The command or description comes from the model: `say`
        // sanitises the line.
        crate::output::say!(
            "dsh: stopped job {} ({}){why}",
            job.id,
            first_line(&job.title)
        );
    }
}

/// The first line of `text`, with an ellipsis when more followed.
fn first_line(text: &str) -> String {
    match text.trim().split_once('\n') {
        Some((first, _)) => format!("{first}…"),
        None => text.trim().to_string(),
    }
}

/// A duration as `--wait-jobs` writes it: `10m`, `30s`, `1h`, `500ms`.
fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0 => "0s".to_string(),
        _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
        _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
        _ if ms.is_multiple_of(1_000) => format!("{}s", ms / 1_000),
        _ => format!("{ms}ms"),
    }
}

/// Sends the run's prompt: a command that becomes a message (`/init`, a
/// custom command) runs through the session's command; anything else is
/// the message.
async fn send(session: &Session, prompt: &str) -> Result<(), dsh_controller::CommandError> {
    match dsh::commands::parse(prompt).filter(|(name, _)| session.is_turn_command(name)) {
        Some((name, args)) => match session.command(name, args).await {
            dsh_controller::Reply::Sent(_) => Ok(()),
            dsh_controller::Reply::Failed(e) => Err(e),
            other => Err(dsh_controller::CommandError::new(
                dsh_protocol::codes::INVALID_COMMAND,
                other.text(),
            )),
        },
        None => session.prompt(prompt).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse_duration;

    #[test]
    fn durations_parse_and_print_in_the_same_notation() {
        for (text, ms) in [
            ("500ms", 500),
            ("30s", 30_000),
            ("10m", 600_000),
            ("1h", 3_600_000),
        ] {
            let d = parse_duration(text).unwrap();
            assert_eq!(d, Duration::from_millis(ms));
            assert_eq!(format_duration(d), text);
        }
        for bad in [
            "",
            "10",
            "m",
            "1.5s",
            "-1s",
            "10 m",
            "5d",
            "99999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
