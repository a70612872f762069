//! `dsh acp`: dsh as an Agent Client Protocol agent on stdin/stdout (for
//! editors: Zed's `agent_servers`, JetBrains, Neovim and Emacs plugins).
//! Only protocol messages go to stdout; logs go to stderr (`DSH_LOG`).

use clap::Args;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::app::StackArgs;
use crate::commands::block_on;

/// Arguments of `dsh acp`.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    #[command(flatten)]
    stack: StackArgs,
}

/// Runs `dsh acp` until the client closes stdin; returns the exit code
/// (0, or 1 when the connection failed).
pub(crate) fn run(args: AcpArgs) -> u8 {
    let settings = args.stack.settings();
    // Fail on a bad configuration before the client connects.
    if let Err(e) = dsh::resolve(&settings) {
        return crate::commands::report(&e);
    }
    block_on(async move {
        let transport = agent_client_protocol::ByteStreams::new(
            tokio::io::stdout().compat_write(),
            tokio::io::stdin().compat(),
        );
        match dsh_acp::serve(settings, transport).await {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("dsh acp: {e}");
                1
            }
        }
    })
}
