//! The session picker of a bare `dsh chat --resume`: a small list drawn
//! in place below the cursor (no alternate screen), one row per session —
//! title, last activity (`2h ago`), turns, cost, first prompt — the
//! sessions of the working directory first, newest first.
//!
//! Typing filters (case blind, over the title, the first prompt and the
//! id), Backspace un-types, Up/Down (or Ctrl-P/Ctrl-N) move, Enter
//! resumes the selected session, Esc (or Ctrl-C) leaves without one. The
//! area is cleared when the picker ends, so the chat starts where it was.

use std::io::Write;

use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::{cursor, queue, terminal};
use dsh_session::SessionSummary;
use dsh_tui::text::{dim, Line, Modifier, Paint, Span, Style};

/// The most rows shown at once (fewer on a short terminal).
const VISIBLE: usize = 10;

/// One session as the picker shows it.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    title: String,
    when: String,
    turns: u64,
    cost: String,
    prompt: String,
    /// The workspace's last part, for a session of another directory.
    elsewhere: Option<String>,
    /// What the filter searches, lower case.
    haystack: String,
}

impl Row {
    /// The row of `s`; `here`: it last ran in the working directory;
    /// `now`: Unix ms, for the age; `cost` as `dsh session list` shows it.
    pub(crate) fn of(s: &SessionSummary, here: bool, now: u64, cost: String) -> Row {
        let title = crate::commands::resolve::shown_title(s);
        let prompt = s
            .first_prompt
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let elsewhere = (!here).then(|| {
            s.cwd
                .as_deref()
                .and_then(|c| c.file_name())
                .map_or_else(|| "?".to_string(), |n| n.to_string_lossy().into_owned())
        });
        let haystack = format!("{title}\n{prompt}\n{}", s.id).to_lowercase();
        Row {
            title: crate::sanitize::visible(&title).into_owned(),
            when: crate::commands::resolve::ago(now, s.last_ms),
            turns: s.turns,
            cost: crate::sanitize::visible(&cost).into_owned(),
            prompt: crate::sanitize::visible(&prompt).into_owned(),
            elsewhere: elsewhere.map(|e| crate::sanitize::visible(&e).into_owned()),
            haystack,
        }
    }
}

/// What the person has typed and chosen so far.
#[derive(Debug, Default)]
struct State {
    filter: String,
    /// Index into the filtered rows.
    selected: usize,
    /// The first filtered row shown.
    top: usize,
}

/// The indices of the rows `filter` keeps, in order.
fn filtered(rows: &[Row], filter: &str) -> Vec<usize> {
    let needle = filter.to_lowercase();
    rows.iter()
        .enumerate()
        .filter(|(_, r)| r.haystack.contains(&needle))
        .map(|(i, _)| i)
        .collect()
}

/// The picker's lines for a terminal `width` columns wide showing at most
/// `visible` rows; moves `state.top` so the selection is shown.
fn render(rows: &[Row], state: &mut State, width: usize, visible: usize) -> Vec<Line> {
    let kept = filtered(rows, &state.filter);
    state.selected = state.selected.min(kept.len().saturating_sub(1));
    if state.selected < state.top {
        state.top = state.selected;
    }
    if state.selected >= state.top + visible {
        state.top = state.selected + 1 - visible;
    }
    let mut out = vec![
        Line::styled(
            "Resume a session — type to filter, ↑/↓ move, Enter resumes, Esc cancels",
            dim(),
        ),
        Line::new(vec![
            Span::styled("filter: ", dim()),
            Span::plain(crate::sanitize::visible(&state.filter).into_owned()),
            Span::styled("▏", dim()),
        ]),
    ];
    let title_w = kept
        .iter()
        .map(|i| dsh_tui::text::display_width(&rows[*i].title).min(40))
        .max()
        .unwrap_or(5)
        .max(5);
    for (pos, i) in kept.iter().enumerate().skip(state.top).take(visible) {
        let r = &rows[*i];
        let chosen = pos == state.selected;
        let mark = if chosen { "› " } else { "  " };
        let title = Line::plain(r.title.clone()).truncated(title_w).text();
        let pad = title_w.saturating_sub(dsh_tui::text::display_width(&title));
        let turns = if r.turns == 1 {
            "1 turn".to_string()
        } else {
            format!("{} turns", r.turns)
        };
        let prompt = match &r.elsewhere {
            Some(dir) => format!("[{dir}] {}", r.prompt),
            None => r.prompt.clone(),
        };
        let style = if chosen {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
        };
        let line = Line::new(vec![
            Span::styled(format!("{mark}{title}{}  ", " ".repeat(pad)), style),
            Span::styled(
                format!("{:>8}  {:>9}  {:>6}  ", r.when, turns, r.cost),
                if chosen { style } else { dim() },
            ),
            Span::styled(prompt, if chosen { style } else { dim() }),
        ]);
        out.push(line.truncated(width.saturating_sub(1)));
    }
    let shown = if kept.is_empty() {
        "no session matches".to_string()
    } else {
        format!("{} of {} sessions", kept.len(), rows.len())
    };
    out.push(Line::styled(shown, dim()));
    out
}

/// What a key does.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Go on (the state may have changed).
    More,
    /// The filtered row at this index was chosen.
    Chosen(usize),
    /// The person left.
    Cancelled,
}

/// Applies one key to `state`.
fn key(rows: &[Row], state: &mut State, code: KeyCode, mods: KeyModifiers) -> Step {
    let ctrl = mods.contains(KeyModifiers::CONTROL);
    let kept = filtered(rows, &state.filter);
    match code {
        KeyCode::Esc => return Step::Cancelled,
        KeyCode::Char('c') if ctrl => return Step::Cancelled,
        KeyCode::Enter => {
            if let Some(i) = kept.get(state.selected) {
                return Step::Chosen(*i);
            }
        }
        KeyCode::Up => state.selected = state.selected.saturating_sub(1),
        KeyCode::Char('p') if ctrl => state.selected = state.selected.saturating_sub(1),
        KeyCode::Down => state.selected = (state.selected + 1).min(kept.len().saturating_sub(1)),
        KeyCode::Char('n') if ctrl => {
            state.selected = (state.selected + 1).min(kept.len().saturating_sub(1))
        }
        KeyCode::Backspace => {
            state.filter.pop();
            state.selected = 0;
        }
        KeyCode::Char(c) if !ctrl && !c.is_control() => {
            state.filter.push(c);
            state.selected = 0;
        }
        _ => {}
    }
    Step::More
}

/// Shows the picker on the terminal (stdin and stdout must be one) and
/// returns the index into `rows` of the session chosen, `None` when the
/// person cancelled.
///
/// # Errors
/// The terminal cannot be put in raw mode, read or written.
pub(crate) fn pick(rows: &[Row]) -> std::io::Result<Option<usize>> {
    let paint = Paint::detect(true);
    let mut out = std::io::stdout();
    terminal::enable_raw_mode()?;
    let _raw = RawMode;
    queue!(out, cursor::Hide)?;
    let mut state = State::default();
    let mut drawn = 0usize;
    let chosen = loop {
        let (cols, term_rows) = terminal::size().unwrap_or((80, 24));
        let visible = VISIBLE.min(usize::from(term_rows).saturating_sub(4).max(1));
        let lines = render(rows, &mut state, usize::from(cols), visible);
        redraw(&mut out, &paint, &lines, &mut drawn)?;
        if let Event::Key(k) = crossterm::event::read()? {
            if k.kind == KeyEventKind::Release {
                continue;
            }
            match key(rows, &mut state, k.code, k.modifiers) {
                Step::More => {}
                Step::Chosen(i) => break Some(i),
                Step::Cancelled => break None,
            }
        }
    };
    redraw(&mut out, &paint, &[], &mut drawn)?;
    queue!(out, cursor::Show)?;
    out.flush()?;
    Ok(chosen)
}

/// Replaces the `drawn` lines last written (the cursor is on the last of
/// them) with `lines`, leaving the cursor on the last new one (at the
/// first of the old area when `lines` is empty).
fn redraw(
    out: &mut impl Write,
    paint: &Paint,
    lines: &[Line],
    drawn: &mut usize,
) -> std::io::Result<()> {
    queue!(out, cursor::MoveToColumn(0))?;
    if *drawn > 1 {
        let up = u16::try_from(*drawn - 1).unwrap_or(u16::MAX);
        queue!(out, cursor::MoveUp(up))?;
    }
    queue!(out, terminal::Clear(terminal::ClearType::FromCursorDown))?;
    let text: Vec<String> = lines.iter().map(|l| paint.line(l)).collect();
    out.write_all(text.join("\r\n").as_bytes())?;
    out.flush()?;
    *drawn = lines.len();
    Ok(())
}

/// Leaves raw mode when dropped (an error or a panic included).
struct RawMode;

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row of a two-turn session titled `title`, last active an hour
    /// before "now" (read back from a real log).
    fn row(title: &str, prompt: &str, id: &str) -> Row {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{id}.jsonl"));
        let lines = [
            serde_json::json!({"type":"user/message","seq":0,"time":500,"data":{"content":[{"type":"text","text":prompt}],"source":{"kind":"user"}}}),
            serde_json::json!({"type":"turn/start","seq":1,"time":600,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}),
            serde_json::json!({"type":"turn/start","seq":2,"time":700,"data":{"turn":2,"trigger":{"kind":"message","source":{"kind":"user"}}}}),
            serde_json::json!({"type":"session/title","seq":3,"time":1000,"data":{"title":title}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let s = dsh_session::summarize_jsonl(&path).unwrap();
        Row::of(&s, true, 3_601_000, "$0.01".to_string())
    }

    #[test]
    fn typing_filters_and_keys_move_and_choose() {
        let rows = vec![
            row("Fix the parser", "the parser breaks on tabs", "s-a"),
            row("Add tests", "write tests for the lexer", "s-b"),
            row("Parser docs", "document it", "s-c"),
        ];
        let mut state = State::default();
        let none = KeyModifiers::NONE;
        for c in "PARSER".chars() {
            assert_eq!(key(&rows, &mut state, KeyCode::Char(c), none), Step::More);
        }
        let lines: Vec<String> = render(&rows, &mut state, 100, 10)
            .iter()
            .map(Line::text)
            .collect();
        assert!(lines[1].contains("filter: PARSER"), "{lines:?}");
        assert!(lines[2].starts_with("› Fix the parser"), "{lines:?}");
        assert!(lines[2].contains("1h ago") && lines[2].contains("2 turns"));
        assert!(lines[2].contains("$0.01") && lines[2].contains("the parser breaks"));
        assert!(lines[3].starts_with("  Parser docs"), "{lines:?}");
        assert_eq!(lines[4], "2 of 3 sessions");
        key(&rows, &mut state, KeyCode::Down, none);
        key(&rows, &mut state, KeyCode::Down, none);
        assert_eq!(
            key(&rows, &mut state, KeyCode::Enter, none),
            Step::Chosen(2)
        );
        key(&rows, &mut state, KeyCode::Up, none);
        assert_eq!(
            key(&rows, &mut state, KeyCode::Enter, none),
            Step::Chosen(0)
        );
        for _ in 0..6 {
            key(&rows, &mut state, KeyCode::Backspace, none);
        }
        key(&rows, &mut state, KeyCode::Char('z'), none);
        assert_eq!(key(&rows, &mut state, KeyCode::Enter, none), Step::More);
        let lines: Vec<String> = render(&rows, &mut state, 100, 10)
            .iter()
            .map(Line::text)
            .collect();
        assert_eq!(lines.last().unwrap(), "no session matches");
        assert_eq!(key(&rows, &mut state, KeyCode::Esc, none), Step::Cancelled);
    }

    #[test]
    fn the_selection_stays_in_view() {
        let rows: Vec<Row> = (0..30)
            .map(|i| row(&format!("t{i}"), "p", &format!("s-{i}")))
            .collect();
        let mut state = State::default();
        for _ in 0..15 {
            key(&rows, &mut state, KeyCode::Down, KeyModifiers::NONE);
        }
        let lines = render(&rows, &mut state, 80, 10);
        assert_eq!(lines.len(), 2 + 10 + 1);
        assert!(
            lines.iter().any(|l| l.text().starts_with("› t15")),
            "{:?}",
            lines.iter().map(Line::text).collect::<Vec<_>>()
        );
    }
}
