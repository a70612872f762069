//! Tool calls run on a thread of their own, so an abort never waits on a
//! tool stuck in a blocking system call.
//!
//! A tool body that blocks its thread (an `open()` of a FIFO, a read of a
//! hung mount) blocks whatever polls it. Polled by the agent's own task, it
//! would hold the whole turn: the registry's abort (cancel, a grace, then
//! drop the future) can only act when the future returns from `poll`. So
//! every call runs on a thread of tokio's blocking pool, driven there by
//! [`tokio::runtime::Handle::block_on`], while the caller waits on a
//! handle it can abandon. An aborted call whose thread does not come back
//! within [`ABANDON_GRACE`] is answered `ABORTED` and left behind: its
//! thread stays blocked until the process exits (the runtime's shutdown is
//! bounded, and exiting does not join threads). A call that does come back
//! is dropped on that thread as the registry would have dropped it.

use std::time::Duration;

use dsh_kernel::{BoxFuture, Registration};
use dsh_protocol::ToolResult;
use dsh_tools::{error_result, Execution, ToolError, ToolRegistry};
use tokio_util::sync::CancellationToken;

/// How long an aborted call may take to come back from its thread before
/// it is abandoned. Longer than the registry's own grace (250 ms), so a
/// tool that handles cancellation still answers in its own words.
pub const ABANDON_GRACE: Duration = Duration::from_millis(1000);

/// Makes every call of `tools` run on a blocking-pool thread, as the
/// module says. Register it first, so it is the outermost `tools/execute`
/// listener and the later listeners run on the call's thread too. Without
/// a tokio runtime a call runs where it is polled. Undo removes it.
pub fn install(tools: &ToolRegistry) -> Registration {
    tools
        .on_execute()
        .on(|exec: Execution, next| detach(exec, next))
}

fn detach(
    exec: Execution,
    next: dsh_kernel::Next<Execution, ToolResult>,
) -> BoxFuture<'static, ToolResult> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return next.run(exec);
    };
    let cancel = exec.1.cancel.clone();
    let call_id = exec.0.call_id.clone();
    let name = exec.0.name.clone();
    // Cancelled when the caller stops waiting: the thread then drops the
    // call's future (if it ever returns from its poll).
    let abandoned = CancellationToken::new();
    let dropped = abandoned.clone().drop_guard();
    let thread = tokio::task::spawn_blocking(move || {
        runtime.block_on(async move {
            tokio::select! {
                result = next.run(exec) => Some(result),
                () = abandoned.cancelled() => None,
            }
        })
    });
    Box::pin(async move {
        let _dropped = dropped;
        let lost = |why: &str| {
            error_result(
                call_id.clone(),
                &ToolError::aborted(format!("tool \"{name}\" was aborted{why}")),
            )
        };
        let mut thread = thread;
        let joined = tokio::select! {
            joined = &mut thread => joined,
            () = cancel.cancelled() => {
                match tokio::time::timeout(ABANDON_GRACE, &mut thread).await {
                    Ok(joined) => joined,
                    Err(_) => {
                        tracing::warn!(
                            target: "dsh",
                            tool = %name,
                            "an aborted tool call did not return (blocked in a system call); it is left behind"
                        );
                        return lost(" (it was blocked and is left behind)");
                    }
                }
            }
        };
        match joined {
            Ok(Some(result)) => result,
            // The runtime is shutting down, or the thread panicked outside
            // the registry's own containment.
            Ok(None) | Err(_) => lost(""),
        }
    })
}
