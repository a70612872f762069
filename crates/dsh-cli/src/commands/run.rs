//! `dsh run [--model M] [--session-dir DIR] [--resume ID] [--json] PROMPT`
//!
//! One turn. With `--plan` the turn runs in plan mode ([`dsh::plan`]):
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

use dsh_kernel::ErrorCode;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use dsh::hooks::PromptDecision;
use dsh_agent::Agent;
use dsh_llm::MessageSource;
use dsh_session::{AssistantMessageEvent, ErrorEvent, EventPayload, TurnEndReason};

use crate::cli::RunArgs;
use crate::commands::{block_on, exit_code_for, start_agent, wait_turn_end, TurnEnds};
use crate::output::WriteFailure;

/// Runs `dsh run`; returns the exit code.
pub(crate) fn run(args: RunArgs) -> u8 {
    block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> u8 {
    let settings = crate::app::settings(&args.stack, dsh::ProjectTrust::Refuse);
    let (app, handle) = match start_agent(&settings, args.resume.as_deref()).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    let agent = handle.agent();
    let session = agent.session();
    let written = std::sync::Arc::new(WriteFailure::default());
    let json_listener = args.json.then(|| {
        let sid = session.id().to_string();
        let written = written.clone();
        app.store.on_event().on(move |(s, event)| {
            if *s.id() == sid && !written.failed() {
                let line = serde_json::to_string(&**event).unwrap_or_default();
                let line = crate::sanitize::json_visible(&line);
                let mut out = std::io::stdout().lock();
                // A closed stdout (e.g. `| head`) must not kill the turn:
                // the failure is noted and decides the exit code.
                written.note(writeln!(out, "{line}").and_then(|()| out.flush()));
            }
        })
    });
    app.announce_permission(agent.as_ref());
    // Said once per session: commands run with fewer sandbox layers than
    // asked (the namespace layer is unavailable here).
    for warning in app.take_warnings() {
        crate::output::say!("dsh: {warning}");
    }
    // The flag decides the mode of this run, a resumed session's included.
    if args.plan {
        app.plan.set_review(dsh::plan::PlanReview::Present);
    }
    let source = if args.plan { "--plan" } else { "dsh run" };
    app.set_plan_mode(args.plan, source, Some(agent.as_ref()));
    // A turn can complete while its log failed to reach disk (the flush
    // runs after turn/end); that must not look like success.
    let persistence_errors = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let errors = persistence_errors.clone();
    let error_listener = app.agents.hooks().event.on(move |e| {
        if let EventPayload::Error(ErrorEvent {
            code: Some(code),
            message,
            ..
        }) = &e.event.data
        {
            if code.starts_with("SESSION_") {
                if let Ok(mut v) = errors.lock() {
                    v.push(format!("[{code}]: {message}"));
                }
            }
        }
    });
    let start = session.len();
    let turn_end = wait_turn_end(&app);
    let prompt = args.prompt.join(" ");
    let mut signals = crate::signals::get();
    let mut stopped = None;
    let blocks = match app.submit_prompt(&agent, &prompt).await {
        PromptDecision::Send(blocks) => Ok(blocks),
        PromptDecision::Blocked(reason) => Err(reason),
    };
    let reason = match blocks.map(|b| agent.send(b, MessageSource::User)) {
        Err(blocked) => Some(TurnEndReason::Error {
            message: dsh::hooks::blocked_prompt_message(&blocked),
            code: Some(dsh_protocol::codes::PROMPT_BLOCKED.into()),
        }),
        Ok(Ok(())) => {
            tokio::select! {
                reason = turn_end.recv() => reason,
                stop = signals.next() => {
                    stopped = Some(stop);
                    agent.abort(Some(stop.reason().into()));
                    turn_end.recv().await
                }
            }
        }
        Ok(Err(e)) => Some(TurnEndReason::Error {
            message: e.to_string(),
            code: Some(e.code().into()),
        }),
    };
    let presented = app.plan.take_presented();
    // The turn's jobs: waited for (with the wake-up turns they start)
    // unless the run was stopped, the plan is presented or --no-wait.
    let waiting = if stopped.is_some() || presented.is_some() || args.no_wait {
        Waiting::NoWait
    } else {
        Waiting::For(args.wait_jobs)
    };
    let left = if stopped.is_none() {
        match settle(&app, &agent, &turn_end, waiting, &mut signals).await {
            Settled::Done(left) => left,
            Settled::Stopped(stop, left) => {
                stopped = Some(stop);
                left
            }
        }
    } else {
        running_jobs(&app)
    };
    // Why the jobs still running are stopped, for their lines.
    let why = match (stopped, waiting) {
        (Some(stop), _) => format!(": {}", stop.reason()),
        (None, Waiting::NoWait) => " at the end of the turn".to_string(),
        (None, Waiting::For(limit)) => format!(" after waiting {}", format_duration(limit)),
    };
    if !args.json && stopped.is_none() {
        let mut answer = match presented {
            Some(plan) => plan,
            None => final_answer(&session.events_since(start)),
        };
        if !answer.ends_with('\n') && !answer.is_empty() {
            answer.push('\n');
        }
        let mut out = std::io::stdout().lock();
        let text = crate::sanitize::visible(&answer);
        written.note(out.write_all(text.as_bytes()).and_then(|()| out.flush()));
    }
    drop(json_listener);
    crate::commands::shutdown_bounded(async {
        // Disposed first, so a job stopped below wakes no further turn.
        handle.dispose().await;
        stop_jobs(&app, &left, &why).await;
        error_listener.undo();
        app.shutdown().await;
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
    let failures = persistence_errors
        .lock()
        .map(|v| v.clone())
        .unwrap_or_default();
    for f in &failures {
        crate::output::say!("dsh: session log not saved: error {f}");
    }
    if code == 0 && !failures.is_empty() {
        1
    } else {
        code
    }
}

/// The text of the last assistant message among `events` (the last
/// turn's answer when wake-up turns ran).
fn final_answer(events: &[Arc<dsh_session::SessionEvent>]) -> String {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.data {
            EventPayload::AssistantMessage(AssistantMessageEvent { content, .. }) => Some(
                content
                    .iter()
                    .filter_map(|b| b.as_text())
                    .collect::<Vec<_>>()
                    .join(""),
            ),
            _ => None,
        })
        .unwrap_or_default()
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

/// A job of the main agent: its id and what it does.
struct Job {
    id: String,
    title: String,
}

/// The main agent's jobs still running.
fn running_jobs(app: &crate::app::App) -> Vec<Job> {
    app.jobs
        .jobs_of(dsh::MAIN_AGENT_ID)
        .into_iter()
        .filter(|j| j.running)
        .map(|j| Job {
            id: j.id,
            title: j.title,
        })
        .collect()
}

/// Waits until the main agent has no job running and no turn running or
/// queued (the wake-up turns a job's notice starts run meanwhile), for at
/// most what `waiting` allows. A job's wait resolves only once its
/// completion notice reached the agent, so "no job running, no work"
/// cannot miss a wake-up about to start. At the deadline a running
/// wake-up turn is aborted and waited for; the jobs still running are
/// returned, for [`stop_jobs`].
async fn settle(
    app: &crate::app::App,
    agent: &Arc<dyn Agent>,
    turn_end: &TurnEnds,
    waiting: Waiting,
    signals: &mut crate::signals::Signals,
) -> Settled {
    let Waiting::For(limit) = waiting else {
        return Settled::Done(running_jobs(app));
    };
    let deadline = tokio::time::Instant::now() + limit;
    // Status changes wake the loop (a stored permit: none is lost).
    let changed = Arc::new(tokio::sync::Notify::new());
    let notify = changed.clone();
    let _status = crate::commands::ListenerGuard::new(app.agents.hooks().status.on(move |s| {
        if s.agent.id().as_str() == dsh::MAIN_AGENT_ID {
            notify.notify_one();
        }
    }));
    loop {
        let running = running_jobs(app);
        if running.is_empty() && !agent.has_work() {
            return Settled::Done(running);
        }
        // Aborted when dropped: a wait outlives no iteration.
        let mut waits = tokio::task::JoinSet::new();
        for job in &running {
            if let Ok(source) = app.jobs.source(dsh::MAIN_AGENT_ID, &job.id) {
                waits.spawn(source.wait(&job.id));
            }
        }
        let any_job = async {
            if waits.join_next().await.is_none() {
                std::future::pending::<()>().await;
            }
        };
        let stop = tokio::select! {
            _ = turn_end.recv() => None,
            () = any_job => None,
            () = changed.notified() => None,
            () = tokio::time::sleep_until(deadline) => Some(None),
            stop = signals.next() => Some(Some(stop)),
        };
        let Some(signal) = stop else { continue };
        // Out of time or stopped: a wake-up turn still running is aborted.
        if agent.has_work() {
            let reason = match signal {
                Some(stop) => stop.reason().to_string(),
                None => format!("dsh run stopped waiting after {}", format_duration(limit)),
            };
            agent.abort(Some(reason));
            // Bounded: the shutdown disposes the agent anyway.
            let _ = tokio::time::timeout(Duration::from_secs(5), turn_end.recv()).await;
        }
        let left = running_jobs(app);
        return match signal {
            Some(stop) => Settled::Stopped(stop, left),
            None => Settled::Done(left),
        };
    }
}

/// Stops each job of `left` still running and says so on stderr, one line
/// per job ending with `why` (` after waiting 10m`, ` at the end of the
/// turn`, `: terminated (SIGTERM)`).
async fn stop_jobs(app: &crate::app::App, left: &[Job], why: &str) {
    for job in left {
        let Ok(source) = app.jobs.source(dsh::MAIN_AGENT_ID, &job.id) else {
            continue;
        };
        if !source.info(&job.id).is_some_and(|j| j.running) {
            continue;
        }
        // A job that cannot be stopped here is stopped by the shutdown.
        let _ = source.kill(&job.id, Some("dsh run ended")).await;
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
