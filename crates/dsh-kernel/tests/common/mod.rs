//! Support shared by the kernel's behaviour tests: an ordered log, one-shot
//! signals usable from `Fn` listeners, and a hang guard.
#![allow(dead_code)]
// each test binary uses a different subset
// Test helpers: pub for the test binaries, unwrap/expect allowed.
#![allow(unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::oneshot;

/// An ordered record of what ran, shared between listeners and the test.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// The sending half of a one-shot signal; `fire` may be called from an `Fn`.
pub struct Fire(Mutex<Option<oneshot::Sender<()>>>);

impl Fire {
    /// Sends the signal (only the first call has an effect).
    pub fn fire(&self) {
        if let Some(tx) = self.0.lock().unwrap().take() {
            let _ = tx.send(());
        }
    }
}

/// The receiving half of a one-shot signal.
pub struct Wait(Mutex<Option<oneshot::Receiver<()>>>);

impl Wait {
    /// Waits for the signal. Panics when waited on twice or when the sender
    /// was dropped without firing.
    pub async fn wait(&self) {
        let rx = self
            .0
            .lock()
            .unwrap()
            .take()
            .expect("signal waited on twice");
        rx.await.expect("signal sender dropped without firing");
    }
}

/// A one-shot signal whose halves can be shared with `Fn` listeners.
pub fn signal() -> (Arc<Fire>, Arc<Wait>) {
    let (tx, rx) = oneshot::channel();
    (
        Arc::new(Fire(Mutex::new(Some(tx)))),
        Arc::new(Wait(Mutex::new(Some(rx)))),
    )
}

/// Awaits `fut`, failing the test if it does not finish within 5 s. Only a
/// guard against hangs; never used to synchronise.
pub async fn within<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(5), fut)
        .await
        .expect("timed out: the future under test hung")
}

/// Polls `fut` exactly once and tells whether it is still pending.
pub async fn still_pending<F: Future + ?Sized>(fut: &mut Pin<Box<F>>) -> bool {
    std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx).is_pending())).await
}
