//! One module per subcommand. Each exposes `run(args) -> u8` taking its
//! `Args` from [`crate::cli`] and returning the process exit code; shared
//! helpers below.

pub(crate) mod acp;
pub(crate) mod chat;
pub(crate) mod doctor;
pub(crate) mod export;
pub(crate) mod manage;
pub(crate) mod mcp;
pub(crate) mod models;
pub(crate) mod permissions;
pub(crate) mod picker;
pub(crate) mod resolve;
pub(crate) mod rewind;
pub(crate) mod run;
pub(crate) mod schema;
pub(crate) mod serve;
pub(crate) mod session;
pub(crate) mod skills;
pub(crate) mod tools;
pub(crate) mod trust;
pub(crate) mod usage;

use std::sync::Arc;

use dsh_session::TurnEndReason;

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

/// Opens a session through the controller. A failed open is reported
/// (the notices collected before it first) and its exit code returned: 2
/// for usage and configuration errors (a resumed log missing, corrupt or
/// in use fails before MCP servers start), 1 otherwise. A stop signal
/// while the MCP servers start stops them and returns the signal's code.
pub(crate) async fn open_session(
    controller: &dsh_controller::Controller,
    options: dsh_controller::SessionOptions,
) -> Result<Arc<dsh_controller::Session>, u8> {
    let mut signals = crate::signals::get();
    match controller.open_until(options, signals.next()).await {
        Ok(session) => Ok(session),
        Err(dsh_controller::OpenError::Failed { error, warnings }) => {
            for warning in warnings {
                crate::output::say!("dsh: {warning}");
            }
            Err(report(&error))
        }
        Err(dsh_controller::OpenError::Stopped(stop)) => {
            crate::output::say!("dsh: {}: stopping", stop.reason());
            Err(stop.exit_code())
        }
    }
}

/// Prints the warnings the session's opening published (`dsh: <warning>`
/// on stderr) and returns the sequence number after them: where a
/// front end that prints what follows starts reading.
pub(crate) fn say_open_warnings(session: &dsh_controller::Session) -> u64 {
    let mut events = session.subscribe(Some(session.live_from()));
    while let Some(item) = events.try_next() {
        if let Ok(event) = item {
            if let dsh_controller::EventBody::Warning { message } = &event.body {
                crate::output::say!("dsh: {message}");
            }
        }
    }
    events.position()
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
