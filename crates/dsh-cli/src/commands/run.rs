//! `dsh run [--model M] [--session-dir DIR] [--resume ID] [--json] PROMPT`
//!
//! One turn. `dsh run -` (or no prompt words) reads the prompt from stdin. With `--plan` the turn runs in plan mode ([`dsh::plan`]):
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
//! Prints the final answer of the last turn (or, with `--json`, every
//! session event as one JSON line as it happens, the JSONL log format).
//! Exit codes: 0 the turn completed, 1 it ended in error (message with code
//! on stderr) or its output could not be written, 2 usage or configuration
//! error; a signal aborts the turn (open tool calls answered, processes
//! killed, log flushed) and exits 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP)
//! or 131 (SIGQUIT).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_controller::{Controller, EventBody, Session, SessionOptions, Subscription};
use dsh_kernel::sync::lock;
use dsh_session::TurnEndReason;
use tokio::sync::{mpsc, watch, Notify};

use crate::cli::RunArgs;
use crate::commands::{block_on, exit_code_for, open_session};
use crate::output::WriteFailure;

/// Runs `dsh run`; returns the exit code.
pub(crate) fn run(args: RunArgs) -> u8 {
    block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> u8 {
    let prompt = match prompt_of(&args.prompt) {
        Ok(p) => p,
        Err(message) => {
            crate::output::say!("dsh: {message}");
            return 2;
        }
    };
    let settings = crate::app::settings(&args.stack, dsh::ProjectTrust::Refuse);
    let controller = Controller::new(settings);
    // The flag decides the mode of this run, a resumed session's included.
    let source = if args.plan { "--plan" } else { "dsh run" };
    let options = SessionOptions {
        resume: args.resume.clone(),
        plan_mode: Some((args.plan, source.to_string())),
        present_plan: args.plan,
        ..SessionOptions::default()
    };
    let session = match open_session(&controller, options).await {
        Ok(session) => session,
        Err(code) => return code,
    };
    let written = Arc::new(WriteFailure::default());
    // Everything from the open on (a resumed session's history is not
    // printed again): warnings, the JSONL events with --json, turn ends.
    let reader = Reader::start(
        session.subscribe(Some(session.live_from())),
        args.json,
        &written,
    );
    let mut signals = crate::signals::get();
    let mut stopped = None;
    let reason = match session.prompt(&prompt).await {
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
    if !args.json && stopped.is_none() {
        let mut answer = presented.unwrap_or_else(|| reader.last_answer());
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
    let code = match stopped {
        Some(stop) => {
            crate::output::say!("dsh: aborted: {}", stop.reason());
            return stop.exit_code();
        }
        None => exit_code_for(reason.as_ref()),
    };
    if code == 0 && written.code() != 0 {
        return written.code();
    }
    let failures = reader.persistence_errors();
    for f in &failures {
        crate::output::say!("dsh: session log not saved: error {f}");
    }
    if code == 0 && !failures.is_empty() {
        1
    } else {
        code
    }
}

/// The longest prompt read from stdin.
const STDIN_PROMPT_MAX: u64 = 16 * 1024 * 1024;

/// The prompt: the words given, or (`-`, or no words) stdin's text.
///
/// # Errors
/// What to tell the user (exit 2): stdin is a terminal, unreadable, not
/// UTF-8, too long, or holds nothing but whitespace.
fn prompt_of(words: &[String]) -> Result<String, String> {
    use std::io::{IsTerminal, Read};
    if !(words.is_empty() || (words.len() == 1 && words[0] == "-")) {
        return Ok(words.join(" "));
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
    if bytes.len() as u64 > STDIN_PROMPT_MAX {
        return Err(format!(
            "the prompt on stdin is longer than {} MiB",
            STDIN_PROMPT_MAX / (1024 * 1024)
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "the prompt on stdin is not UTF-8 (invalid byte at {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    if text.trim().is_empty() {
        return Err("no prompt: stdin was empty".into());
    }
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

/// What `dsh run` reads from the session's events, on a task of its own:
/// it prints warnings on stderr and (with `--json`) each log event as a
/// JSON line on stdout as it happens, passes turn ends and status
/// changes on, and keeps the last answer and the log's write failures.
struct Reader {
    turn_ends: tokio::sync::Mutex<mpsc::UnboundedReceiver<Option<TurnEndReason>>>,
    /// Status changes of the agent (a stored permit: none is lost).
    changed: Arc<Notify>,
    /// How far the reader has handled the events.
    position: watch::Receiver<u64>,
    state: Arc<ReaderState>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct ReaderState {
    /// JSON lines are printed while set.
    json: std::sync::atomic::AtomicBool,
    last_answer: Mutex<String>,
    /// `[CODE]: message` of each `SESSION_*` error logged.
    persistence_errors: Mutex<Vec<String>>,
}

impl Reader {
    fn start(events: Subscription, json: bool, written: &Arc<WriteFailure>) -> Self {
        let (turn_tx, turn_rx) = mpsc::unbounded_channel();
        let changed = Arc::new(Notify::new());
        let state = Arc::new(ReaderState::default());
        state.json.store(json, std::sync::atomic::Ordering::SeqCst);
        let mut events = events.with_log(json);
        let position = events.handled();
        let (st, notify, written) = (state.clone(), changed.clone(), written.clone());
        let task = tokio::spawn(async move {
            let mut events = events;
            while let Some(item) = events.next().await {
                if let Ok(event) = item {
                    st.take(&event.body, &written, &turn_tx, &notify);
                }
            }
            // Closed: nobody waits for a turn end any more.
            let _ = turn_tx.send(None);
        });
        Self {
            turn_ends: tokio::sync::Mutex::new(turn_rx),
            changed,
            position,
            state,
            task,
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

    fn last_answer(&self) -> String {
        lock(&self.state.last_answer).clone()
    }

    fn persistence_errors(&self) -> Vec<String> {
        lock(&self.state.persistence_errors).clone()
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ReaderState {
    fn take(
        &self,
        body: &EventBody,
        written: &WriteFailure,
        turn_ends: &mpsc::UnboundedSender<Option<TurnEndReason>>,
        changed: &Notify,
    ) {
        match body {
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
            EventBody::Warning { message } => crate::output::say!("dsh: {message}"),
            EventBody::MessageCompleted { text } => *lock(&self.last_answer) = text.clone(),
            EventBody::Error {
                code: Some(code),
                message,
            } if code.starts_with("SESSION_") => {
                lock(&self.persistence_errors).push(format!("[{code}]: {message}"));
            }
            EventBody::TurnEnded { reason, .. } => {
                let _ = turn_ends.send(Some(reason.clone()));
            }
            EventBody::Status { .. } => changed.notify_one(),
            _ => {}
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
