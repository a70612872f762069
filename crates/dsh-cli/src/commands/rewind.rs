//! `dsh session rewind ID --to-turn N [--files-only|--conversation-only]
//! [--force]`: the chat's `/rewind N`, headless.
//!
//! The session is resumed in the workspace its checkpoints were taken of
//! (so it works from any directory), rewound through the controller, and
//! closed. Exit codes: 0 done; 2 a usage error (no such session or turn);
//! 1 the checkpoints could not be used (nothing was changed then).

use std::path::PathBuf;

use dsh::checkpoints::RewindScope;
use dsh_protocol::codes;

use crate::app::StackArgs;

/// Runs the command; returns the exit code.
pub(crate) fn rewind(
    id: &str,
    to_turn: u64,
    files_only: bool,
    conversation_only: bool,
    force: bool,
    stack: StackArgs,
) -> u8 {
    let scope = match (files_only, conversation_only) {
        (true, _) => RewindScope::Files,
        (_, true) => RewindScope::Conversation,
        _ => RewindScope::Both,
    };
    crate::commands::block_on(run(id.to_string(), to_turn, scope, force, stack))
}

async fn run(id: String, turn: u64, scope: RewindScope, force: bool, stack: StackArgs) -> u8 {
    let settings = crate::app::settings(&stack, dsh::ProjectTrust::Refuse);
    let resolved = match crate::app::resolve(&settings) {
        Ok(r) => r,
        Err(e) => return crate::commands::report(&e),
    };
    let found = match crate::commands::resolve::find(&resolved.session_dir, &id) {
        Ok(found) => found,
        Err(e) => return e.report(),
    };
    let controller = dsh_controller::Controller::new(settings);
    let options = dsh_controller::SessionOptions {
        resume: Some(found.id.clone()),
        cwd: checkpointed_workspace(&found.path),
        ..Default::default()
    };
    let session = match crate::commands::open_session(&controller, options).await {
        Ok(session) => session,
        Err(code) => return code,
    };
    crate::commands::say_open_warnings(&session);
    let code = match session.rewind(turn, scope, force).await {
        Ok(rewound) => {
            crate::output::say!(
                "session {}: {}",
                found.id,
                crate::sanitize::visible(&rewound.describe())
            );
            0
        }
        Err(e) => {
            crate::output::say!("dsh: {}", crate::sanitize::visible(&e.message));
            if e.code == codes::INVALID_COMMAND {
                2
            } else {
                1
            }
        }
    };
    crate::commands::shutdown_bounded(controller.shutdown("dsh session rewind ended")).await;
    code
}

/// The workspace the session's checkpoints were taken of (the last one
/// logged), when it still exists; `None` leaves the default (the current
/// directory).
fn checkpointed_workspace(log: &std::path::Path) -> Option<PathBuf> {
    let events = dsh_session::load_jsonl(log).ok()?.events;
    events.iter().rev().find_map(|e| match &e.data {
        dsh_session::EventPayload::Other { kind, data }
            if kind == dsh::checkpoints::CREATED_KIND =>
        {
            data.get("workspace")
                .and_then(serde_json::Value::as_str)
                .map(PathBuf::from)
                .filter(|p| p.is_dir())
        }
        _ => None,
    })
}
