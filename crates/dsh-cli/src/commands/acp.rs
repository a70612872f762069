//! `dsh acp`: dsh as an Agent Client Protocol agent on stdin/stdout (for
//! editors: Zed's `agent_servers`, JetBrains, Neovim and Emacs plugins).
//! Only protocol messages go to stdout; logs go to stderr (`DSH_LOG`).
//! A line that is not UTF-8 or longer than `--max-line-bytes` is answered
//! with a JSON-RPC error and serving goes on.

use clap::Args;

use crate::app::StackArgs;
use crate::commands::block_on;

/// Arguments of `dsh acp`.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    #[command(flatten)]
    stack: StackArgs,
    /// The longest JSON-RPC line taken from the client, in bytes (without
    /// the newline); a longer one is discarded as it streams in and
    /// answered with an error (-32600 "Line too long").
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = dsh_acp::DEFAULT_MAX_LINE_BYTES as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    max_line_bytes: u64,
}

/// Runs `dsh acp` until the client closes stdin; returns the exit code
/// (0, or 1 when the connection failed).
pub(crate) fn run(args: AcpArgs) -> u8 {
    let settings = args.stack.settings();
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
                eprintln!("dsh acp: {e}");
                1
            }
        }
    })
}
