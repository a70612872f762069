//! The one way commands write to the terminal.
//!
//! Results go to stdout through [`emit`] (or a [`WriteFailure`] for a
//! stream of writes); messages go to stderr through [`say!`], which
//! sanitises the whole line ([`crate::sanitize::visible`]): a message can
//! quote a config file, a flag, a model or a server, and none of them may
//! drive the terminal.
//!
//! Rust ignores SIGPIPE, so a plain `println!` panics when stdout is a
//! closed pipe (`dsh tools list | head -1`). Here a closed stdout
//! (`BrokenPipe`) means the reader has what it wanted: stop quietly, exit 0
//! (ripgrep's convention, and what `set -o pipefail` scripts need). Any
//! other failure (a full disk, `> /dev/full`) means output was lost: a
//! `dsh: error: cannot write output: …` line on stderr and exit 1.
//! [`install_print_failure_hook`] applies the same rule to any `println!`
//! left in the code, so no command panics on its output.

use std::io::Write;

/// Prints one message line on stderr, sanitised; never panics (a closed
/// or failing stderr loses the message).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::say_line(&format!($($arg)*))
    };
}
pub(crate) use say;

/// Writes `line` (made safe by [`crate::sanitize::visible`]) and a newline
/// to stderr. Errors are ignored: there is nowhere left to report them.
pub(crate) fn say_line(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", crate::sanitize::visible(line));
    let _ = err.flush();
}

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
            report_lost(&e);
            1
        }
    }
}

/// The line that says output was lost.
fn report_lost(e: &dyn std::fmt::Display) {
    say!("dsh: error: cannot write output: {e}");
}

/// Makes a failed `println!`/`print!` end the process as [`emit`] would
/// instead of panicking: exit 0 quietly when stdout (or stderr) is a closed
/// pipe, else an error line and exit 1. Every other panic goes to the
/// previous hook unchanged.
pub(crate) fn install_print_failure_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        // std's wording: "failed printing to stdout: <io::Error>".
        let failure = ["stdout", "stderr"]
            .iter()
            .find_map(|s| message.strip_prefix(&format!("failed printing to {s}: ")));
        match failure {
            None => previous(info),
            Some(error) => {
                let epipe = std::io::Error::from_raw_os_error(nix::libc::EPIPE).to_string();
                if error == epipe {
                    std::process::exit(0);
                }
                report_lost(&error);
                std::process::exit(1);
            }
        }
    }));
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
                    report_lost(&e);
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
