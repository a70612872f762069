//! `dsh chat` (the default command): an interactive session.
//!
//! On a terminal: line input with history; answers stream as they arrive; a
//! line typed while a turn runs steers it; Ctrl-C aborts the running step,
//! Ctrl-C at an idle prompt or Ctrl-D exits. With piped stdin every line is
//! sent in turn (each waits for the previous turn) and the process exits when
//! the work is done.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use dsh_agent::{Agent, AgentStatus};
use dsh_llm::{ContentBlock, MessageSource};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{mpsc, watch};

use crate::app::StackArgs;
use crate::commands::{block_on, start_agent, wait_turn_end, TurnEnds};
use crate::render::{self, Printer, Style};

/// Arguments of `dsh chat`.
#[derive(Debug, Default, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    stack: StackArgs,
    /// Continue the saved session ID.
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
}

/// Runs `dsh chat`; returns the exit code.
pub fn run(args: ChatArgs) -> u8 {
    block_on(chat(args))
}

async fn chat(args: ChatArgs) -> u8 {
    let (app, handle) = match start_agent(&args.stack, args.resume.as_deref()).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    let agent = handle.agent();
    let session_id = agent.session().id().to_string();
    let (printer, printer_reg) = render::install(&app, &session_id, Style::detect());
    let turn_ends = wait_turn_end(&app);
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!(
            "dsh — model {} — session {session_id}\nType a message; Ctrl-C aborts a running turn, Ctrl-D exits.",
            app.resolved.model
        );
        let (status_tx, status_rx) = watch::channel(agent.status());
        let status_reg = app.agents.hooks().status.on(move |c| {
            // No receiver only after the loop returned; nothing to tell then.
            let _ = status_tx.send(c.status);
        });
        interactive_loop(&agent, &printer, status_rx).await;
        status_reg.undo();
    } else {
        piped_loop(&agent, &printer, &turn_ends).await;
    }
    printer_reg.undo();
    handle.dispose().await;
    app.shutdown().await;
    if interactive {
        eprintln!("session saved: {session_id} (resume with `dsh chat --resume {session_id}`)");
    }
    0
}

/// Sends each non-empty stdin line as a message and waits for its turn.
async fn piped_loop(agent: &Arc<dyn Agent>, printer: &Arc<Printer>, turn_ends: &TurnEnds) {
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = tokio::select! {
            l = lines.next_line() => l,
            _ = tokio::signal::ctrl_c() => return,
        };
        let line = match line {
            Ok(Some(l)) => l,
            Ok(None) => return,
            Err(e) => {
                eprintln!("dsh: cannot read stdin: {e}");
                return;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        printer.first_token.store(false, Ordering::SeqCst);
        if let Err(e) = agent.send(vec![ContentBlock::text(line)], MessageSource::User) {
            eprintln!("dsh: {e}");
            return;
        }
        tokio::select! {
            _ = turn_ends.recv() => {}
            _ = tokio::signal::ctrl_c() => {
                agent.abort(Some("user interrupt".into()));
                let _ = turn_ends.recv().await;
                return;
            }
        }
    }
}

enum Input {
    Line(String),
    Interrupt,
    Eof,
}

fn history_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("dsh").join("history"))
}

/// Reads lines on a blocking thread (rustyline) and feeds them to the agent.
/// Decisions use the agent's live status (from `agent/status`), never a
/// local guess: a turn can end and the next start without the prompt seeing it.
async fn interactive_loop(
    agent: &Arc<dyn Agent>,
    printer: &Arc<Printer>,
    mut status: watch::Receiver<AgentStatus>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Input>();
    std::thread::spawn(move || read_lines(tx));
    while let Some(input) = rx.recv().await {
        let running = agent.status() == AgentStatus::Running;
        match input {
            Input::Eof => {
                if running {
                    agent.abort(Some("user exit".into()));
                    // The sender lives in the status listener until shutdown.
                    let _ = status.wait_for(|s| *s != AgentStatus::Running).await;
                }
                return;
            }
            Input::Interrupt => {
                if running {
                    agent.abort(Some("user interrupt".into()));
                } else {
                    return;
                }
            }
            Input::Line(line) => {
                if line.trim().is_empty() {
                    continue;
                }
                if !running {
                    printer.first_token.store(false, Ordering::SeqCst);
                    spawn_spinner(printer.clone());
                }
                // `steer` is `send` when no turn runs.
                if let Err(e) = agent.steer(vec![ContentBlock::text(line)], MessageSource::User) {
                    eprintln!("dsh: {e}");
                    return;
                }
            }
        }
    }
}

fn read_lines(tx: mpsc::UnboundedSender<Input>) {
    use rustyline::error::ReadlineError;
    let mut editor = match rustyline::DefaultEditor::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("dsh: cannot start the line editor: {e}");
            let _ = tx.send(Input::Eof);
            return;
        }
    };
    let history = history_path();
    if let Some(h) = &history {
        // A missing history file is normal on first use.
        let _ = editor.load_history(h);
    }
    loop {
        let input = match editor.readline("› ") {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                Input::Line(line)
            }
            Err(ReadlineError::Interrupted) => Input::Interrupt,
            Err(ReadlineError::Eof) => Input::Eof,
            Err(e) => {
                eprintln!("dsh: input error: {e}");
                Input::Eof
            }
        };
        let stop = matches!(input, Input::Eof);
        if tx.send(input).is_err() || stop {
            break;
        }
    }
    if let Some(h) = &history {
        if let Some(dir) = h.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // History is a convenience; failing to save it is not an error.
        let _ = editor.save_history(h);
    }
}

/// Shows a spinner on stderr (terminals only) until the first token arrives.
fn spawn_spinner(printer: Arc<Printer>) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    tokio::spawn(async move {
        const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
        let mut i = 0;
        let mut shown = false;
        while !printer.first_token.load(Ordering::SeqCst) && i < 3000 {
            {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r{} thinking…", FRAMES[i % FRAMES.len()]);
                let _ = err.flush();
            }
            shown = true;
            i += 1;
            tokio::time::sleep(Duration::from_millis(80)).await;
        }
        if shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    });
}
