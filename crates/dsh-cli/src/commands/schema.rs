//! `dsh schema …`

use clap::Args;

/// Arguments of `dsh schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {}

/// Runs `dsh schema`; returns the exit code.
pub fn run(_args: SchemaArgs) -> u8 {
    eprintln!("dsh schema: not implemented yet");
    2
}
