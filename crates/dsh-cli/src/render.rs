//! Live rendering of an agent's work on the terminal: answer text as it
//! streams, reasoning dimmed, tool calls as `name(args)` with their results
//! (truncated for display; the log keeps them whole), error results marked.
//!
//! Colour only when stdout is a terminal and `NO_COLOR` is unset; piped
//! output carries no escape codes.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dsh_kernel::Registration;
use dsh_llm::{ContentBlock, StreamChunk};
use dsh_session::{EventData, TurnEndReason};

use crate::app::App;

/// Longest tool-result excerpt shown, in lines and in characters.
const RESULT_LINES: usize = 8;
const RESULT_CHARS: usize = 800;
/// Longest argument text shown for a tool call.
const ARGS_CHARS: usize = 200;

/// Terminal styling.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    pub fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: !no_color && std::io::stdout().is_terminal(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Dim text (reasoning).
    pub fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }

    /// Tool calls.
    pub fn cyan(&self, t: &str) -> String {
        self.paint("36", t)
    }

    /// Errors.
    pub fn red(&self, t: &str) -> String {
        self.paint("31", t)
    }
}

struct PrinterState {
    at_line_start: bool,
    in_reasoning: bool,
}

/// Prints one session's activity; registered as hook listeners.
pub struct Printer {
    style: Style,
    state: Mutex<PrinterState>,
    /// Set once the first chunk of a turn arrived (stops the spinner).
    pub first_token: AtomicBool,
}

impl Printer {
    fn write(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut st = self.state.lock().expect("printer lock poisoned");
        let mut out = std::io::stdout().lock();
        // A closed stdout must not kill the agent.
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        st.at_line_start = text.ends_with('\n');
    }

    fn line(&self, text: &str) {
        let need_nl = {
            let mut st = self.state.lock().expect("printer lock poisoned");
            st.in_reasoning = false;
            !st.at_line_start
        };
        if need_nl {
            self.write("\n");
        }
        self.write(&format!("{text}\n"));
    }

    fn on_chunk(&self, chunk: &StreamChunk) {
        self.first_token.store(true, Ordering::SeqCst);
        match chunk {
            StreamChunk::TextDelta { text, .. } => {
                let was_reasoning = {
                    let mut st = self.state.lock().expect("printer lock poisoned");
                    std::mem::replace(&mut st.in_reasoning, false)
                };
                if was_reasoning {
                    self.write("\n");
                }
                self.write(text);
            }
            StreamChunk::ReasoningDelta { text, .. } => {
                self.state
                    .lock()
                    .expect("printer lock poisoned")
                    .in_reasoning = true;
                self.write(&self.style.dim(text));
            }
            _ => {}
        }
    }

    fn on_event(&self, data: &EventData) {
        match data {
            EventData::ToolCall {
                name, arguments, ..
            } => {
                let args = truncate_chars(arguments, ARGS_CHARS);
                self.line(&self.style.cyan(&format!("⏺ {name}({args})")));
            }
            EventData::ToolResult {
                content, is_error, ..
            } => {
                let text: String = content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect::<Vec<_>>()
                    .join("\n");
                let shown = excerpt(&text);
                let mark = if *is_error { "✗" } else { "⎿" };
                let body = shown.replace('\n', "\n    ");
                let line = format!("  {mark} {body}");
                if *is_error {
                    self.line(&self.style.red(&line));
                } else {
                    self.line(&self.style.dim(&line));
                }
            }
            EventData::TurnEnd { reason, .. } => match reason {
                TurnEndReason::Completed => self.line(""),
                TurnEndReason::Aborted { reason } => self.line(&self.style.red(&format!(
                    "[aborted: {}]",
                    reason.as_deref().unwrap_or("aborted")
                ))),
                TurnEndReason::Error { message, code } => self.line(&self.style.red(&format!(
                    "[error{}: {message}]",
                    code.as_deref().map(|c| format!(" {c}")).unwrap_or_default()
                ))),
                TurnEndReason::MaxSteps => {
                    self.line(&self.style.red("[stopped: the turn hit the step limit]"))
                }
                other => self.line(&format!("[turn ended: {}]", other.kind())),
            },
            _ => {}
        }
    }
}

fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The first lines of a tool result, for display.
fn excerpt(text: &str) -> String {
    let text = text.trim_end();
    let lines: Vec<&str> = text.lines().collect();
    let mut shown = lines
        .iter()
        .take(RESULT_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    shown = truncate_chars(&shown, RESULT_CHARS);
    if lines.len() > RESULT_LINES {
        shown.push_str(&format!(
            "\n… ({} more lines in the session log)",
            lines.len() - RESULT_LINES
        ));
    }
    if shown.is_empty() {
        "(empty)".into()
    } else {
        shown
    }
}

/// Registers the printer on the app's hooks for session `session_id`.
pub fn install(app: &App, session_id: &str, style: Style) -> (Arc<Printer>, Registration) {
    let printer = Arc::new(Printer {
        style,
        state: Mutex::new(PrinterState {
            at_line_start: true,
            in_reasoning: false,
        }),
        first_token: AtomicBool::new(false),
    });
    let p1 = printer.clone();
    let chunks = app
        .agents
        .hooks()
        .stream_chunk
        .on(move |e| p1.on_chunk(&e.chunk));
    let p2 = printer.clone();
    let sid = session_id.to_string();
    let events = app.store.on_event().on(move |(s, e)| {
        if s.id() == sid {
            p2.on_event(&e.data);
        }
    });
    (printer, Registration::merge(vec![chunks, events]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_bounded() {
        let long: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let e = excerpt(&long);
        assert!(e.starts_with("line 0\nline 1"));
        assert!(e.ends_with("(12 more lines in the session log)"));
        assert_eq!(excerpt(""), "(empty)");
        assert_eq!(truncate_chars("héllo", 2), "hé…");
    }

    #[test]
    fn no_escape_codes_without_color() {
        let s = Style { color: false };
        assert_eq!(s.dim("x"), "x");
        let c = Style { color: true };
        assert_eq!(c.red("x"), "\x1b[31mx\x1b[0m");
    }
}
