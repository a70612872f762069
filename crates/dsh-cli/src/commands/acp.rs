//! `dsh acp`: dsh as an Agent Client Protocol agent on stdin/stdout (for
//! editors: Zed's `agent_servers`, JetBrains, Neovim and Emacs plugins).
//! Only protocol messages go to stdout; logs go to stderr (`DSH_LOG`).
//! A line that is not UTF-8 or longer than `--max-line-bytes` is answered
//! with a JSON-RPC error and serving goes on.

use crate::cli::AcpArgs;
use crate::commands::block_on;

/// Runs `dsh acp` until the client closes stdin; returns the exit code
/// (0, or 1 when the connection failed).
pub(crate) fn run(args: AcpArgs) -> u8 {
    let settings = crate::app::settings(&args.stack, dsh::ProjectTrust::Refuse);
    // Fail on a bad configuration before the client connects.
    if let Err(e) = dsh::resolve(&settings) {
        return crate::commands::report(&e);
    }
    // A limit past the address space cannot be reached anyway.
    let max_line_bytes = usize::try_from(args.max_line_bytes).unwrap_or(usize::MAX);
    block_on(async move {
        let served = dsh_acp::serve_streams(
            settings,
            tokio::io::stdin(),
            tokio::io::stdout(),
            max_line_bytes,
        )
        .await;
        match served {
            Ok(()) => 0,
            Err(e) => {
                // The error can quote the client's bytes: `say` sanitises.
                crate::output::say!("dsh acp: {e}");
                1
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_line_limit_default_is_the_servers() {
        // cli.rs cannot name dsh_acp (build.rs includes it): kept equal here.
        assert_eq!(
            crate::cli::DEFAULT_MAX_LINE_BYTES,
            dsh_acp::DEFAULT_MAX_LINE_BYTES as u64
        );
    }
}
