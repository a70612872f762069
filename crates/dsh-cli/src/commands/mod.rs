//! One module per subcommand. Each exposes an `Args` type (clap) and
//! `run(args) -> u8` returning the process exit code; shared helpers below.

pub mod chat;
pub mod mcp;
pub mod run;
pub mod schema;
pub mod session;
pub mod tools;

use std::sync::{Arc, Mutex};

use dsh_session::TurnEndReason;
use tokio::sync::mpsc;

use dsh_agent_loop::AgentHandle;

use crate::app::{resolve, App, StackArgs, UsageError};

/// Runs a command's future on a multi-threaded tokio runtime and returns its
/// exit code (1 when the runtime cannot start). Threads still blocked when
/// the future is done (a line editor waiting on stdin) are not waited for.
pub fn block_on(command: impl std::future::Future<Output = u8>) -> u8 {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => {
            let code = rt.block_on(command);
            rt.shutdown_timeout(std::time::Duration::from_millis(100));
            code
        }
        Err(e) => {
            eprintln!("dsh: cannot start the async runtime: {e}");
            1
        }
    }
}

/// Resolves the configuration, builds the plugin stack and starts the MCP
/// servers; on failure the error is reported and its exit code returned.
pub async fn start_app(stack: &StackArgs) -> Result<App, u8> {
    let resolved = resolve(stack).map_err(|e| report(&e))?;
    let mut app = App::build(resolved).map_err(|e| report(&e))?;
    app.start_mcp().await;
    Ok(app)
}

/// [`start_app`], then the agent (resuming session `resume` when given).
pub async fn start_agent(
    stack: &StackArgs,
    resume: Option<&str>,
) -> Result<(App, AgentHandle), u8> {
    let app = start_app(stack).await?;
    match app.create_agent(resume) {
        Ok(handle) => Ok((app, handle)),
        Err(e) => {
            app.shutdown().await;
            Err(report(&e))
        }
    }
}

/// Prints an error on stderr and returns its exit code: 2 for usage and
/// configuration errors, 1 otherwise.
pub fn report(err: &anyhow::Error) -> u8 {
    eprintln!("dsh: {err:#}");
    if err.downcast_ref::<UsageError>().is_some() {
        2
    } else {
        1
    }
}

/// Exit code of a finished turn: 0 completed, 130 aborted or disposed, 1
/// otherwise (the reason is printed on stderr).
pub fn exit_code_for(reason: Option<&TurnEndReason>) -> u8 {
    match reason {
        Some(TurnEndReason::Completed) => 0,
        Some(TurnEndReason::Aborted { reason }) => {
            eprintln!("dsh: aborted: {}", reason.as_deref().unwrap_or("aborted"));
            130
        }
        Some(TurnEndReason::Disposed) => 130,
        Some(TurnEndReason::Error { message, code }) => {
            match code {
                Some(code) => eprintln!("dsh: error [{code}]: {message}"),
                None => eprintln!("dsh: error: {message}"),
            }
            1
        }
        Some(TurnEndReason::MaxSteps) => {
            eprintln!("dsh: error [MAX_STEPS]: the turn hit the step limit");
            1
        }
        Some(other) => {
            eprintln!("dsh: turn ended: {}", other.kind());
            1
        }
        None => {
            eprintln!("dsh: the agent stopped before the turn ended");
            1
        }
    }
}

/// Receives every `agent/turn-end` reason of the app's agents.
pub struct TurnEnds {
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<TurnEndReason>>,
    _listener: ListenerGuard,
}

impl TurnEnds {
    /// The next turn end, `None` when the listener is gone.
    pub async fn recv(&self) -> Option<TurnEndReason> {
        self.rx.lock().await.recv().await
    }
}

/// Undoes a hook registration when dropped.
pub struct ListenerGuard(Mutex<Option<dsh_kernel::Registration>>);

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        if let Some(r) = self.0.lock().ok().and_then(|mut g| g.take()) {
            r.undo();
        }
    }
}

impl ListenerGuard {
    /// Guards `reg`.
    pub fn new(reg: dsh_kernel::Registration) -> Self {
        Self(Mutex::new(Some(reg)))
    }
}

/// Subscribes to `agent/turn-end`.
pub fn wait_turn_end(app: &App) -> Arc<TurnEnds> {
    let (tx, rx) = mpsc::unbounded_channel();
    let reg = app.agents.hooks().turn_end.on(move |e| {
        // The receiver is gone only when nobody waits any more.
        let _ = tx.send(e.reason.clone());
    });
    Arc::new(TurnEnds {
        rx: tokio::sync::Mutex::new(rx),
        _listener: ListenerGuard::new(reg),
    })
}
