//! One module per subcommand. Each exposes `run(args) -> u8` taking its
//! `Args` from [`crate::cli`] and returning the process exit code; shared
//! helpers below.

pub(crate) mod acp;
pub(crate) mod chat;
pub(crate) mod doctor;
pub(crate) mod mcp;
pub(crate) mod run;
pub(crate) mod schema;
pub(crate) mod session;
pub(crate) mod skills;
pub(crate) mod tools;
pub(crate) mod trust;

use std::sync::{Arc, Mutex};

use dsh_agent_loop::AgentHandle;
use dsh_session::{EventPayload, TurnEndEvent, TurnEndReason};
use tokio::sync::mpsc;

use crate::app::{resolve, App, StackError};

/// Runs a command's future on a multi-threaded tokio runtime and returns its
/// exit code (1 when the runtime cannot start). Threads still blocked when
/// the future is done (a line editor waiting on stdin) are not waited for.
pub(crate) fn block_on(command: impl std::future::Future<Output = u8>) -> u8 {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => {
            let code = rt.block_on(async {
                crate::signals::install();
                command.await
            });
            rt.shutdown_timeout(std::time::Duration::from_millis(100));
            code
        }
        Err(e) => {
            crate::output::say!("dsh: cannot start the async runtime: {e}");
            1
        }
    }
}

/// Resolves the configuration, builds the plugin stack and starts the MCP
/// servers; on failure the error is reported and its exit code returned. A
/// stop signal during MCP start-up stops the servers already started (and
/// kills those still starting) and returns the signal's exit code.
pub(crate) async fn start_app(settings: &dsh::Settings) -> Result<App, u8> {
    let resolved = resolve(settings).map_err(|e| report(&e))?;
    let app = App::build(resolved).map_err(|e| report(&e))?;
    start_servers(app).await
}

/// The MCP half of [`start_app`].
async fn start_servers(mut app: App) -> Result<App, u8> {
    for warning in app.take_warnings() {
        crate::output::say!("dsh: {warning}");
    }
    let mut signals = crate::signals::get();
    let started = {
        let start = app.start_mcp();
        tokio::pin!(start);
        tokio::select! {
            failures = &mut start => Ok(failures),
            stop = signals.next() => Err(stop),
        }
    };
    match started {
        Ok(failures) => {
            for (_, message) in failures {
                crate::output::say!("dsh: {message}");
            }
            Ok(app)
        }
        Err(stop) => {
            crate::output::say!("dsh: {}: stopping", stop.reason());
            shutdown_bounded(app.shutdown()).await;
            Err(stop.exit_code())
        }
    }
}

/// Awaits a shutdown future for at most [`crate::signals::SHUTDOWN_BOUND`].
pub(crate) async fn shutdown_bounded(shutdown: impl std::future::Future<Output = ()>) {
    if tokio::time::timeout(crate::signals::SHUTDOWN_BOUND, shutdown)
        .await
        .is_err()
    {
        crate::output::say!("dsh: shutdown did not finish in time; exiting anyway");
    }
}

/// [`start_app`], then the agent (resuming session `resume` when given).
/// A resumed session is claimed (log locked, checked, repaired) before the
/// MCP servers start, so a log in use or unwritable fails before anything
/// runs.
pub(crate) async fn start_agent(
    settings: &dsh::Settings,
    resume: Option<&str>,
) -> Result<(App, AgentHandle), u8> {
    let resolved = resolve(settings).map_err(|e| report(&e))?;
    let app = App::build(resolved).map_err(|e| report(&e))?;
    let prepared = match app.prepare_session(resume) {
        Ok(prepared) => prepared,
        Err(e) => {
            for warning in app.take_warnings() {
                crate::output::say!("dsh: {warning}");
            }
            app.shutdown().await;
            return Err(report(&e));
        }
    };
    let app = start_servers(app).await?;
    let created = app.create_agent_in(prepared);
    for warning in app.take_warnings() {
        crate::output::say!("dsh: {warning}");
    }
    match created {
        Ok(handle) => Ok((app, handle)),
        Err(e) => {
            app.shutdown().await;
            Err(report(&e))
        }
    }
}

/// Prints an error on stderr and returns its exit code: 2 for usage and
/// configuration errors, 1 otherwise.
pub(crate) fn report(err: &StackError) -> u8 {
    crate::output::say!("dsh: {err}");
    match err {
        StackError::Usage(_) => 2,
        StackError::Failed(_) => 1,
    }
}

/// Exit code of a finished turn: 0 completed, 130 aborted or disposed, 1
/// otherwise (the reason is printed on stderr).
pub(crate) fn exit_code_for(reason: Option<&TurnEndReason>) -> u8 {
    match reason {
        Some(TurnEndReason::Completed) => 0,
        Some(TurnEndReason::Aborted { reason }) => {
            crate::output::say!(
                "dsh: aborted: {}",
                crate::sanitize::visible(reason.as_deref().unwrap_or("aborted"))
            );
            130
        }
        Some(TurnEndReason::Disposed) => 130,
        Some(TurnEndReason::Error { message, code }) => {
            // The message can quote a provider's answer: untrusted text.
            let message = crate::sanitize::visible(message);
            match code {
                Some(code) => {
                    crate::output::say!(
                        "dsh: error [{}]: {message}",
                        crate::sanitize::visible(code)
                    )
                }
                None => crate::output::say!("dsh: error: {message}"),
            }
            1
        }
        Some(TurnEndReason::MaxSteps) => {
            crate::output::say!(
                "dsh: error [{}]: the turn hit the step limit",
                dsh_protocol::codes::MAX_STEPS
            );
            1
        }
        Some(other) => {
            crate::output::say!("dsh: turn ended: {}", other.kind());
            1
        }
        None => {
            crate::output::say!("dsh: the agent stopped before the turn ended");
            1
        }
    }
}

/// Receives every `turn/end` reason of the app's agents.
pub(crate) struct TurnEnds {
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<TurnEndReason>>,
    _listener: ListenerGuard,
}

impl TurnEnds {
    /// The next turn end, `None` when the listener is gone.
    pub(crate) async fn recv(&self) -> Option<TurnEndReason> {
        self.rx.lock().await.recv().await
    }
}

/// Undoes a hook registration when dropped.
pub(crate) struct ListenerGuard(Mutex<Option<dsh_kernel::Registration>>);

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        if let Some(r) = self.0.lock().ok().and_then(|mut g| g.take()) {
            r.undo();
        }
    }
}

impl ListenerGuard {
    /// Guards `reg`.
    pub(crate) fn new(reg: dsh_kernel::Registration) -> Self {
        Self(Mutex::new(Some(reg)))
    }
}

/// Subscribes to the main agent's `turn/end` events (a sub-agent's turns
/// are its parent's tool calls).
pub(crate) fn wait_turn_end(app: &App) -> Arc<TurnEnds> {
    let (tx, rx) = mpsc::unbounded_channel();
    let reg = app.agents.hooks().event.on(move |e| {
        if e.agent.id().as_str() != dsh::MAIN_AGENT_ID {
            return;
        }
        if let EventPayload::TurnEnd(TurnEndEvent { reason, .. }) = &e.event.data {
            // The receiver is gone only when nobody waits any more.
            let _ = tx.send(reason.clone());
        }
    });
    Arc::new(TurnEnds {
        rx: tokio::sync::Mutex::new(rx),
        _listener: ListenerGuard::new(reg),
    })
}

/// What a compaction did, for the user: `compacted: … (ctx N% · used/window)`.
pub(crate) fn describe_compaction(outcome: &dsh_compaction::Outcome, window: u64) -> String {
    use dsh_compaction::Outcome;
    let (what, tokens) = match outcome {
        Outcome::Nothing => return "nothing to compact".into(),
        Outcome::Pruned { tokens_after } => ("old tool results cut", tokens_after),
        Outcome::Summarised { tokens_after } => {
            ("the older history is now a summary", tokens_after)
        }
        Outcome::FellBack { tokens_after } => (
            "the summary was not shorter, so old tool results were cut instead",
            tokens_after,
        ),
    };
    format!(
        "compacted: {what} ({})",
        dsh_session::format_usage(*tokens, window)
    )
}
