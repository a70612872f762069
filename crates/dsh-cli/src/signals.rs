//! The signals that stop a command: SIGINT (Ctrl-C), SIGTERM, SIGHUP and
//! SIGQUIT, delivered to whoever waits as a [`Stop`].
//!
//! [`install`] registers handlers for all four at start-up (so none of them
//! kills dsh outright, and SIGQUIT dumps no core) and forwards each one to a
//! watch channel; [`Signals::next`] waits for the next. What a signal means
//! is the command's business: `run` aborts the turn; `chat` aborts a running
//! turn on Ctrl-C and keeps going, while TERM, HUP and QUIT end it. Every
//! command then shuts down the same way (open tool calls answered, process
//! groups killed and reaped, logs flushed) and exits with
//! [`Stop::exit_code`]: 130, 143, 129, 131. Shutting down is bounded by
//! [`SHUTDOWN_BOUND`], so a second signal never has to be a SIGKILL.

use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// The longest a command waits for its shutdown after a terminating signal.
pub(crate) const SHUTDOWN_BOUND: Duration = Duration::from_secs(15);

/// A signal that asks dsh to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP (the terminal went away).
    Hangup,
    /// SIGQUIT (Ctrl-\).
    Quit,
}

impl Stop {
    /// `128 + signal number`: 130, 143, 129, 131.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
            Stop::Hangup => 129,
            Stop::Quit => 131,
        }
    }

    /// The abort reason recorded in the session log.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Stop::Interrupt => "user interrupt",
            Stop::Terminate => "terminated (SIGTERM)",
            Stop::Hangup => "hangup (SIGHUP)",
            Stop::Quit => "quit (SIGQUIT)",
        }
    }
}

/// A receiver of stop signals; clones wait independently.
#[derive(Debug, Clone)]
pub(crate) struct Signals {
    rx: watch::Receiver<Option<Stop>>,
}

impl Signals {
    /// The next signal after the ones this receiver has seen. Pending forever
    /// when no handler could be installed.
    pub(crate) async fn next(&mut self) -> Stop {
        loop {
            if self.rx.changed().await.is_err() {
                return std::future::pending().await;
            }
            if let Some(stop) = *self.rx.borrow_and_update() {
                return stop;
            }
        }
    }
}

static INSTALLED: std::sync::OnceLock<Signals> = std::sync::OnceLock::new();

/// A receiver of the signals [`install`] handles; one that never fires
/// before `install` ran.
pub(crate) fn get() -> Signals {
    INSTALLED.get().cloned().unwrap_or_else(|| {
        // The sender is dropped at once: `next` then waits forever.
        let (_tx, rx) = watch::channel(None);
        Signals { rx }
    })
}

/// Registers the handlers (once per process) so [`get`] receives them.
/// Must run inside the tokio runtime. A handler that cannot be registered
/// is reported and left out (that signal keeps its default action).
pub(crate) fn install() {
    INSTALLED.get_or_init(register);
}

fn register() -> Signals {
    let (tx, rx) = watch::channel(None);
    for (kind, stop) in [
        (SignalKind::interrupt(), Stop::Interrupt),
        (SignalKind::terminate(), Stop::Terminate),
        (SignalKind::hangup(), Stop::Hangup),
        (SignalKind::quit(), Stop::Quit),
    ] {
        match signal(kind) {
            Ok(mut stream) => {
                let tx = tx.clone();
                tokio::spawn(async move {
                    while stream.recv().await.is_some() {
                        // send_replace: every signal is a change, even a
                        // repeat of the same one.
                        tx.send_replace(Some(stop));
                    }
                });
            }
            Err(e) => crate::output::say!("dsh: cannot handle {stop:?} signals: {e}"),
        }
    }
    Signals { rx }
}
