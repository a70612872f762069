//! What the controller's tests share: a controller on the offline echo
//! model in a temporary directory, opening a session, and reading its
//! events until one of a kind.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dsh::Settings;
use dsh_controller::{Controller, Event, EventBody, OpenError, Session, SessionOptions};

/// Settings for the echo model in `dir`: the workspace is `dir`, sessions
/// go under `dir/sessions`, and `config` is written to `dir/config.toml`
/// as the only configuration file.
pub(crate) fn echo_settings(dir: &Path, config: &str) -> Settings {
    let file = dir.join("config.toml");
    std::fs::write(&file, config).unwrap();
    Settings {
        model: Some("echo".into()),
        cwd: Some(dir.to_path_buf()),
        session_dir: Some(dir.join("sessions")),
        config: Some(file),
        ..Default::default()
    }
}

/// Opens a session; a failure fails the test with its message.
pub(crate) async fn open(c: &Controller, options: SessionOptions) -> Arc<Session> {
    match c.open(options).await {
        Ok(s) => s,
        Err(OpenError::Failed { error, .. }) => panic!("open failed: {error}"),
        Err(OpenError::Stopped(never)) => match never {},
    }
}

/// Reads the session's events from `from` until `stop` holds for one
/// (included); fails the test after 30 s.
pub(crate) async fn read_until(
    session: &Session,
    from: u64,
    stop: impl Fn(&EventBody) -> bool,
) -> Vec<Arc<Event>> {
    let mut sub = session.subscribe(Some(from));
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let item = tokio::time::timeout_at(deadline, sub.next())
            .await
            .expect("the event came in time")
            .expect("the stream is open")
            .expect("nothing lost");
        let done = stop(&item.body);
        seen.push(item);
        if done {
            return seen;
        }
    }
}
