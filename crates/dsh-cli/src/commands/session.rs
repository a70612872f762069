//! `dsh session …`

use clap::Args;

/// Arguments of `dsh session`.
#[derive(Debug, Args)]
pub struct SessionArgs {}

/// Runs `dsh session`; returns the exit code.
pub fn run(_args: SessionArgs) -> u8 {
    eprintln!("dsh session: not implemented yet");
    2
}
