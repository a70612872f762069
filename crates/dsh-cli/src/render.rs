//! Live rendering of an agent's work on the terminal: answer text as it
//! streams, reasoning dimmed, tool calls as `name(args)` with their results
//! (truncated for display; the log keeps them whole), error results marked.
//! The todo list is shown whole as a checklist under its `todo_write` call
//! each time it changes (`[x]` done, `[~]` in progress, `[ ]` pending).
//!
//! Colour only when stdout is a terminal and `NO_COLOR` is unset; piped
//! output carries no escape codes.

use crate::output::WriteFailure;
use crate::sanitize::visible;
use dsh_kernel::sync::lock;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use dsh_controller::{EventBody, Session};
use dsh_session::TurnEndReason;

/// Longest tool-result excerpt shown, in lines and in characters.
const RESULT_LINES: usize = 8;
const RESULT_CHARS: usize = 800;
/// Longest argument text shown for a tool call.
const ARGS_CHARS: usize = 200;

/// Terminal styling.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    color: bool,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    pub(crate) fn detect() -> Self {
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
    pub(crate) fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }

    /// Tool calls.
    pub(crate) fn cyan(&self, t: &str) -> String {
        self.paint("36", t)
    }

    /// Errors.
    pub(crate) fn red(&self, t: &str) -> String {
        self.paint("31", t)
    }

    /// The todo item in progress.
    pub(crate) fn bold(&self, t: &str) -> String {
        self.paint("1", t)
    }
}

/// The prompt the line editor shows; redrawn after each turn on a terminal.
pub(crate) const PROMPT: &str = "› ";

/// The prompt in plan mode.
pub(crate) const PLAN_PROMPT: &str = "plan › ";

/// The prompt for the current mode: [`PLAN_PROMPT`] while planning, else
/// [`PROMPT`].
pub(crate) fn prompt(planning: bool) -> &'static str {
    if planning {
        PLAN_PROMPT
    } else {
        PROMPT
    }
}

/// Tools whose call line shows no arguments: what matters is shown
/// otherwise (the checklist, the plan in its question).
const QUIET_CALLS: [&str; 2] = ["todo_write", dsh::plan::EXIT_PLAN_MODE_TOOL];

/// Spinner frames, drawn on stderr while waiting for the first output.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

struct PrinterState {
    at_line_start: bool,
    in_reasoning: bool,
    /// No output yet in the current turn (the line still holds the prompt).
    fresh_turn: bool,
    /// The spinner is drawn on the current line.
    spinner_on: bool,
    /// The line editor draws the next prompt itself (after Ctrl-C).
    skip_prompt: bool,
    /// The last context meter reading of the turn: (tokens, window).
    context: Option<(u64, u64)>,
    /// The header lines of the step's calls still without a result, by
    /// call id, and the call whose header was printed last: calls that run
    /// together print their headers first, so a result that is not the
    /// last header's repeats its own header above it.
    open_calls: Vec<(String, String)>,
    last_header: Option<String>,
    /// `todo_write` calls whose successful result is not shown (the
    /// checklist stands for it).
    todo_calls: std::collections::HashSet<String>,
}

/// Prints one session's activity; registered as hook listeners.
///
/// All terminal writes (text, spinner frames, line clears) happen under one
/// lock, so a spinner frame can never land inside, or erase, answer text.
pub(crate) struct Printer {
    style: Style,
    /// On a terminal: clear the pending prompt before a turn's first output
    /// and redraw it after the turn.
    interactive: bool,
    state: Mutex<PrinterState>,
    /// The first failed stdout write (a closed pipe, a full disk).
    failure: WriteFailure,
    /// The session printed (its plan mode decides the prompt drawn).
    session: Arc<Session>,
}

impl Printer {
    fn write(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut st = lock(&self.state);
        self.begin_output(&mut st);
        if self.failure.failed() {
            return;
        }
        let mut out = std::io::stdout().lock();
        // A closed stdout must not kill the agent: the failure is noted and
        // the command ends with the code it calls for.
        self.failure
            .note(out.write_all(text.as_bytes()).and_then(|()| out.flush()));
        st.at_line_start = text.ends_with('\n');
    }

    /// The exit code the printer's writes call for: 0 all written (or stdout
    /// closed by its reader), 1 output lost.
    pub(crate) fn output_code(&self) -> u8 {
        self.failure.code()
    }

    /// Before the first output of a turn: stop the spinner and, on a
    /// terminal, erase the line that holds the prompt and the spinner.
    fn begin_output(&self, st: &mut PrinterState) {
        if st.spinner_on || (self.interactive && st.fresh_turn) {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(b"\r\x1b[2K");
            let _ = err.flush();
        }
        st.spinner_on = false;
        st.fresh_turn = false;
    }

    /// Shows the prompt again after a turn (the line editor still waits for
    /// input; its next redraw lands on the same line).
    fn redraw_prompt(&self) {
        let mut st = lock(&self.state);
        if std::mem::take(&mut st.skip_prompt) {
            return;
        }
        // The next turn's first output erases this line before writing.
        write_prompt(&mut st, self.session.plan_mode());
    }

    /// The line editor has just drawn its prompt (a line was typed while
    /// a turn runs): the next output erases that line first.
    pub(crate) fn prompt_shown(&self) {
        let mut st = lock(&self.state);
        st.fresh_turn = true;
        st.at_line_start = true;
    }

    /// The line editor will prompt after the current turn (it waited out an
    /// abort): do not draw the prompt at that turn's end.
    pub(crate) fn skip_next_prompt(&self) {
        lock(&self.state).skip_prompt = true;
    }

    /// Shows a spinner on stderr (terminals only) until the turn's first
    /// output. Must run inside a tokio runtime.
    pub(crate) fn start_spinner(self: &Arc<Self>) {
        if !self.interactive || !std::io::stderr().is_terminal() {
            return;
        }
        lock(&self.state).spinner_on = true;
        let printer = self.clone();
        tokio::spawn(async move {
            for frame in SPINNER.iter().cycle().take(3000) {
                {
                    let st = lock(&printer.state);
                    if !st.spinner_on {
                        return;
                    }
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r{frame} thinking…");
                    let _ = err.flush();
                }
                tokio::time::sleep(std::time::Duration::from_millis(80)).await;
            }
        });
    }

    /// Prints a chat command's reply (already sanitised) on its own
    /// lines; the line editor draws the next prompt itself.
    pub(crate) fn say(&self, text: &str) {
        self.prompt_shown();
        self.line(text);
    }

    /// Prints dsh's own lines (a question, its answer) between the
    /// turn's output, then, on a terminal, the prompt again: the next line
    /// typed answers it. `text` must already be sanitised.
    pub(crate) fn notice(&self, text: &str) {
        // The line may hold the line editor's prompt: replace it.
        self.prompt_shown();
        self.line(&self.style.cyan(text));
        if self.interactive {
            // The line editor ends the answer's line itself.
            write_prompt(&mut lock(&self.state), self.session.plan_mode());
        }
    }

    fn line(&self, text: &str) {
        let need_nl = {
            let mut st = lock(&self.state);
            st.in_reasoning = false;
            !st.at_line_start
        };
        if need_nl {
            self.write("\n");
        }
        self.write(&format!("{text}\n"));
    }

    /// Prints one event of the session.
    pub(crate) fn on_event(&self, body: &EventBody) {
        match body {
            EventBody::MessageDelta { text } => {
                let was_reasoning = {
                    let mut st = lock(&self.state);
                    std::mem::replace(&mut st.in_reasoning, false)
                };
                if was_reasoning {
                    self.write("\n");
                }
                self.write(&visible(text));
            }
            EventBody::ReasoningDelta { text } => {
                lock(&self.state).in_reasoning = true;
                self.write(&self.style.dim(&visible(text)));
            }
            EventBody::TurnStarted { .. } => {
                let mut st = lock(&self.state);
                st.fresh_turn = true;
                st.open_calls.clear();
                st.last_header = None;
            }
            // A turn the user did not start (a background job woke the
            // agent): say what woke it.
            EventBody::UserMessage {
                text,
                source,
                steering: false,
            } if *source != dsh_llm::MessageSource::User => {
                let first = text.lines().next().unwrap_or_default();
                let line = truncate_chars(&visible(first), ARGS_CHARS);
                // The line holds the idle prompt: write over it.
                lock(&self.state).fresh_turn = true;
                self.line(&self.style.dim(&format!("↻ {line}")));
            }
            EventBody::ToolStarted { call_id, name, .. }
                if QUIET_CALLS.contains(&name.as_str()) =>
            {
                if name == "todo_write" {
                    lock(&self.state).todo_calls.insert(call_id.clone());
                }
                self.line(&self.style.cyan(&format!("⏺ {name}")));
            }
            EventBody::ToolStarted {
                call_id,
                name,
                arguments,
                ..
            } => {
                let args = truncate_chars(&visible(arguments), ARGS_CHARS);
                let name = visible(name);
                let header = self.style.cyan(&format!("⏺ {name}({args})"));
                self.line(&header);
                let mut st = lock(&self.state);
                st.open_calls.push((call_id.clone(), header));
                st.last_header = Some(call_id.clone());
            }
            EventBody::ToolFinished {
                call_id, is_error, ..
            } if !is_error && lock(&self.state).todo_calls.remove(call_id) => {}
            EventBody::ToolFinished {
                call_id,
                is_error,
                output,
                ..
            } => {
                let repeat = {
                    let mut st = lock(&self.state);
                    let at = st.open_calls.iter().position(|(c, _)| c == call_id);
                    let header = at.map(|i| st.open_calls.remove(i).1);
                    let last = st.last_header.take();
                    header.filter(|_| last.as_deref() != Some(call_id.as_str()))
                };
                if let Some(header) = repeat {
                    self.line(&header);
                }
                let shown = excerpt(&visible(output));
                let mark = if *is_error { "✗" } else { "⎿" };
                let body = shown.replace('\n', "\n    ");
                let line = format!("  {mark} {body}");
                if *is_error {
                    self.line(&self.style.red(&line));
                } else {
                    self.line(&self.style.dim(&line));
                }
            }
            EventBody::Todos { items } => {
                let todos: Vec<dsh::tools::TodoItem> =
                    items.iter().filter_map(|t| t.item()).collect();
                self.line(&self.checklist(&todos));
            }
            EventBody::Context { tokens, window } => {
                lock(&self.state).context = Some((*tokens, *window));
            }
            EventBody::TurnEnded { reason, .. } => self.turn_ended(reason),
            _ => {}
        }
    }

    /// The end of a turn: its outcome, the context meter, the prompt again.
    fn turn_ended(&self, reason: &TurnEndReason) {
        let meter = lock(&self.state)
            .context
            .take()
            .map(|(t, w)| self.style.dim(&dsh_session::format_usage(t, w)));
        match reason {
            TurnEndReason::Completed => match &meter {
                Some(m) => self.line(&format!("\n{m}")),
                None => self.line(""),
            },
            TurnEndReason::Aborted { reason } => self.line(&self.style.red(&format!(
                "[aborted: {}]",
                visible(reason.as_deref().unwrap_or("aborted"))
            ))),
            TurnEndReason::Error { message, code } => self.line(&self.style.red(&format!(
                "[error{}: {}]",
                code.as_deref()
                    .map(|c| format!(" {}", visible(c)))
                    .unwrap_or_default(),
                visible(message)
            ))),
            TurnEndReason::MaxSteps => {
                self.line(&self.style.red("[stopped: the turn hit the step limit]"))
            }
            other => self.line(&format!("[turn ended: {}]", other.kind())),
        }
        if let (Some(m), false) = (&meter, matches!(reason, TurnEndReason::Completed)) {
            self.line(m);
        }
        if self.interactive {
            self.redraw_prompt();
        }
    }
}

impl Printer {
    /// The todo list as shown under its call: `  ⎿ Todo list (1/3
    /// completed)`, then one line per item with its box, the one in
    /// progress bold and the done ones dim.
    pub(crate) fn checklist(&self, todos: &[dsh::tools::TodoItem]) -> String {
        use dsh::tools::TodoStatus;
        if todos.is_empty() {
            return self.style.dim("  ⎿ Todo list cleared");
        }
        let mut out = self.style.dim(&format!(
            "  ⎿ Todo list ({})",
            dsh::tools::todo::counts(todos)
        ));
        for t in todos {
            let line = format!("    {} {}", t.status.glyph(), visible(&t.content));
            out.push('\n');
            out.push_str(&match t.status {
                TodoStatus::Completed => self.style.dim(&line),
                TodoStatus::InProgress => self.style.bold(&line),
                TodoStatus::Pending => line,
            });
        }
        out
    }
}

/// Draws the prompt ([`prompt`]) where the line editor's own prompt would
/// be; the cursor then stands at a line start as far as the printer is
/// concerned.
fn write_prompt(st: &mut PrinterState, planning: bool) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(prompt(planning).as_bytes());
    let _ = out.flush();
    st.at_line_start = true;
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

/// A printer for `session`'s activity; the chat feeds it the session's
/// events ([`Printer::on_event`]).
/// `interactive`: stdin and stdout are a terminal (prompt handling on).
pub(crate) fn printer(session: Arc<Session>, style: Style, interactive: bool) -> Arc<Printer> {
    Arc::new(Printer {
        style,
        interactive,
        state: Mutex::new(PrinterState {
            at_line_start: true,
            in_reasoning: false,
            fresh_turn: false,
            spinner_on: false,
            skip_prompt: false,
            context: None,
            open_calls: Vec::new(),
            last_header: None,
            todo_calls: std::collections::HashSet::new(),
        }),
        failure: WriteFailure::default(),
        session,
    })
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
