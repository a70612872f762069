//! The one way commands write their results to stdout.
//!
//! Rust ignores SIGPIPE, so a plain `println!` panics when stdout is a
//! closed pipe (`dsh tools list | head -1`). Here a closed stdout
//! (`BrokenPipe`) means the reader has what it wanted: stop quietly, exit 0
//! (ripgrep's convention). Any other failure (a full disk, `> /dev/full`)
//! means output was lost: say so on stderr and exit 1.

use std::io::Write;

/// Writes `text` to stdout and flushes it. Returns the command's exit code
/// for the write: 0 written (or stdout closed by its reader), 1 lost (the
/// error is reported on stderr).
pub(crate) fn emit(text: &str) -> u8 {
    let mut out = std::io::stdout().lock();
    code_for(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

/// The exit code for the outcome of a stdout write: see [`emit`].
pub(crate) fn code_for(result: std::io::Result<()>) -> u8 {
    match result {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("dsh: cannot write output: {e}");
            1
        }
    }
}

/// Remembers the first failed stdout write of a stream of writes (the chat
/// printer, `run --json`), so the command can end with the right code.
#[derive(Debug, Default)]
pub(crate) struct WriteFailure(std::sync::Mutex<Option<std::io::ErrorKind>>);

impl WriteFailure {
    /// Records `result`'s error, if any and if none was recorded before.
    pub(crate) fn note(&self, result: std::io::Result<()>) {
        if let Err(e) = result {
            let mut first = dsh_kernel::sync::lock(&self.0);
            if first.is_none() {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    eprintln!("dsh: cannot write output: {e}");
                }
                *first = Some(e.kind());
            }
        }
    }

    /// Whether a write failed (stdout closed or broken).
    pub(crate) fn failed(&self) -> bool {
        dsh_kernel::sync::lock(&self.0).is_some()
    }

    /// The exit code the failures call for: 0 none or a closed pipe, 1 lost
    /// output.
    pub(crate) fn code(&self) -> u8 {
        match *dsh_kernel::sync::lock(&self.0) {
            None | Some(std::io::ErrorKind::BrokenPipe) => 0,
            Some(_) => 1,
        }
    }
}
