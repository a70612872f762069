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

use crate::app::{App, UsageError};

/// A multi-threaded tokio runtime for the commands that run agents.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
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
