//! The composer: the text the person is writing, with its cursor,
//! history (Up/Down, Ctrl-R search; persisted) and completion (`/`
//! commands with their descriptions, `@` files).
//!
//! Keys ([`Composer::key`]): printable text inserts; Enter sends (a line
//! ending in `\` gets a new line instead), Alt-Enter or Shift-Enter
//! (where the terminal tells it) insert a new line; Backspace/Delete,
//! Left/Right, Home/End (Ctrl-A/Ctrl-E), Ctrl-Left/Right or Alt-B/Alt-F by
//! word, Ctrl-U/Ctrl-K cut to the line's start/end, Ctrl-W the word
//! before; Up/Down move between lines, and at the first/last line walk the
//! history; Tab (or Enter) takes the selected completion; Ctrl-R searches
//! the history backwards (again: an older match; Enter takes it, Esc
//! drops it). Keys it does not use (Ctrl-C, Ctrl-D, Esc, Ctrl-L, Ctrl-O)
//! are returned as [`Action::Unhandled`] for the chat to decide.

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Entries the history keeps.
pub const HISTORY_MAX: usize = 1_000;
/// The most text the composer holds, in bytes (what `dsh run` takes on
/// stdin too): a longer paste is cut, further keys are ignored.
pub const TEXT_MAX: usize = 16 * 1024 * 1024;
/// Completions listed at most.
pub const POPUP_MAX: usize = 8;

/// Where completions come from.
pub trait Completer {
    /// The chat commands: name (no slash) and one-line description.
    fn commands(&self) -> Vec<(String, String)>;
    /// Workspace files matching `query` (fuzzy), best first.
    fn files(&self, query: &str) -> Vec<String>;
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing visible changed.
    None,
    /// The text, cursor, popup or search changed: redraw.
    Changed,
    /// Enter on a non-empty text: send it (the composer is empty now).
    Submit(String),
    /// A key the composer does not use.
    Unhandled(KeyEvent),
}

/// One entry of the completion popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What is inserted (`/model `, `@src/main.rs `).
    pub insert: String,
    /// What the list shows.
    pub label: String,
    /// Its description (commands).
    pub detail: String,
}

/// The completion popup: the choices for the word at the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popup {
    /// Byte range of the word being completed.
    pub range: (usize, usize),
    /// The choices, best first.
    pub choices: Vec<Choice>,
    /// The highlighted one.
    pub selected: usize,
}

/// A Ctrl-R search in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    /// What is searched for.
    pub query: String,
    /// The history index of the match shown.
    pub found: Option<usize>,
}

/// The composer's state (see the module doc).
#[derive(Debug, Default)]
pub struct Composer {
    text: String,
    /// Byte offset of the cursor in `text` (at a char boundary).
    cursor: usize,
    history: Vec<String>,
    /// Where Up/Down are in the history (`None`: the draft).
    browsing: Option<usize>,
    /// The text before history browsing began.
    draft: String,
    popup: Option<Popup>,
    /// The popup was closed with Esc for the word at this position.
    dismissed: Option<usize>,
    search: Option<Search>,
    history_file: Option<PathBuf>,
}

impl Composer {
    /// An empty composer with the history in `history_file` (read now;
    /// a missing or unreadable file is an empty history).
    pub fn new(history_file: Option<PathBuf>) -> Self {
        let history = history_file
            .as_deref()
            .map(load_history)
            .unwrap_or_default();
        Composer {
            history,
            history_file,
            ..Composer::default()
        }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor's byte offset in the text.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The completion popup, when open.
    pub fn popup(&self) -> Option<&Popup> {
        self.popup.as_ref()
    }

    /// The history search, when on.
    pub fn search(&self) -> Option<&Search> {
        self.search.as_ref()
    }

    /// The history match shown by the search.
    pub fn search_match(&self) -> Option<&str> {
        let i = self.search.as_ref()?.found?;
        self.history.get(i).map(String::as_str)
    }

    /// The history entries, oldest first.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Empties the text (Ctrl-C), closing the popup and the search.
    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.popup = None;
        self.search = None;
        self.browsing = None;
    }

    /// Replaces the text (cursor at its end).
    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.popup = None;
    }

    /// Closes the popup or the search, if one is open; whether one was.
    pub fn escape(&mut self) -> bool {
        if self.search.take().is_some() {
            return true;
        }
        if let Some(p) = self.popup.take() {
            self.dismissed = Some(p.range.0);
            return true;
        }
        false
    }

    /// Inserts pasted text as it is (new lines included; `\r\n` and `\r`
    /// become `\n`).
    ///
    /// The composer holds at most [`TEXT_MAX`] bytes: a paste that would
    /// pass it is cut there (at a character boundary); returns whether it
    /// was.
    pub fn paste(&mut self, text: &str, completer: &dyn Completer) -> bool {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let room = TEXT_MAX.saturating_sub(self.text.len());
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.insert(&text[..end]);
        self.refresh_popup(completer);
        end < text.len()
    }

    /// Adds `entry` to the history (not twice in a row) and saves it.
    pub fn remember(&mut self, entry: &str) {
        if entry.trim().is_empty() || self.history.last().is_some_and(|l| l == entry) {
            return;
        }
        self.history.push(entry.to_string());
        if self.history.len() > HISTORY_MAX {
            let cut = self.history.len() - HISTORY_MAX;
            self.history.drain(..cut);
        }
        if let Some(file) = &self.history_file {
            // History is a convenience: failing to save it is not an error.
            let _ = save_history(file, &self.history);
        }
    }

    /// Handles one key (see the module doc).
    pub fn key(&mut self, key: KeyEvent, completer: &dyn Completer) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        if self.search.is_some() {
            return self.search_key(key);
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let action = match key.code {
            KeyCode::Enter if alt || shift => {
                self.insert("\n");
                Action::Changed
            }
            KeyCode::Enter | KeyCode::Tab if self.popup.is_some() => {
                self.accept_choice();
                Action::Changed
            }
            KeyCode::Tab => Action::None,
            KeyCode::Enter => {
                if self.text[..self.cursor].ends_with('\\') {
                    self.text.remove(self.cursor - 1);
                    self.cursor -= 1;
                    self.insert("\n");
                    return Action::Changed;
                }
                if self.text.trim().is_empty() {
                    self.clear();
                    return Action::Changed;
                }
                let text = std::mem::take(&mut self.text);
                self.clear();
                self.dismissed = None;
                return Action::Submit(text);
            }
            KeyCode::Char('r') if ctrl => {
                self.search = Some(Search {
                    query: String::new(),
                    found: None,
                });
                self.popup = None;
                return Action::Changed;
            }
            KeyCode::Char('a') if ctrl => self.move_to(self.line_start()),
            KeyCode::Char('e') if ctrl => self.move_to(self.line_end()),
            KeyCode::Char('u') if ctrl => {
                let start = self.line_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
                Action::Changed
            }
            KeyCode::Char('k') if ctrl => {
                let end = self.line_end();
                self.text.replace_range(self.cursor..end, "");
                Action::Changed
            }
            KeyCode::Char('w') if ctrl => {
                let start = self.word_before();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
                Action::Changed
            }
            KeyCode::Char('d') if ctrl && !self.text.is_empty() => self.delete_forward(),
            KeyCode::Char('b') if alt => self.move_to(self.word_before()),
            KeyCode::Char('f') if alt => self.move_to(self.word_after()),
            KeyCode::Char(_) if ctrl => return Action::Unhandled(key),
            KeyCode::Char(_) if self.text.len() >= TEXT_MAX => Action::None,
            KeyCode::Char(c) => {
                let mut buf = [0u8; 4];
                self.insert(c.encode_utf8(&mut buf));
                Action::Changed
            }
            KeyCode::Backspace => {
                if self.cursor == 0 {
                    Action::None
                } else {
                    let prev = self.prev_boundary(self.cursor);
                    self.text.replace_range(prev..self.cursor, "");
                    self.cursor = prev;
                    Action::Changed
                }
            }
            KeyCode::Delete => self.delete_forward(),
            KeyCode::Left if ctrl => self.move_to(self.word_before()),
            KeyCode::Right if ctrl => self.move_to(self.word_after()),
            KeyCode::Left => self.move_to(self.prev_boundary(self.cursor)),
            KeyCode::Right => self.move_to(self.next_boundary(self.cursor)),
            KeyCode::Home => self.move_to(self.line_start()),
            KeyCode::End => self.move_to(self.line_end()),
            KeyCode::Up => {
                if let Some(p) = &mut self.popup {
                    p.selected = p.selected.checked_sub(1).unwrap_or(p.choices.len() - 1);
                    return Action::Changed;
                }
                self.up()
            }
            KeyCode::Down => {
                if let Some(p) = &mut self.popup {
                    p.selected = (p.selected + 1) % p.choices.len();
                    return Action::Changed;
                }
                self.down()
            }
            _ => return Action::Unhandled(key),
        };
        if action == Action::Changed {
            self.refresh_popup(completer);
        }
        action
    }

    // ---- editing ----

    fn insert(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
        self.browsing = None;
    }

    fn delete_forward(&mut self) -> Action {
        if self.cursor >= self.text.len() {
            return Action::None;
        }
        let next = self.next_boundary(self.cursor);
        self.text.replace_range(self.cursor..next, "");
        Action::Changed
    }

    fn move_to(&mut self, at: usize) -> Action {
        if at == self.cursor {
            return Action::None;
        }
        self.cursor = at;
        Action::Changed
    }

    fn prev_boundary(&self, at: usize) -> usize {
        self.text[..at].char_indices().last().map_or(0, |(i, _)| i)
    }

    fn next_boundary(&self, at: usize) -> usize {
        self.text[at..]
            .chars()
            .next()
            .map_or(at, |c| at + c.len_utf8())
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    fn word_before(&self) -> usize {
        let head = &self.text[..self.cursor];
        let trimmed = head.trim_end();
        trimmed.rfind(|c: char| c.is_whitespace()).map_or(0, |i| {
            i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
        })
    }

    fn word_after(&self) -> usize {
        let tail = &self.text[self.cursor..];
        let skip = tail.len() - tail.trim_start().len();
        let rest = &tail[skip..];
        let word = rest.find(char::is_whitespace).unwrap_or(rest.len());
        self.cursor + skip + word
    }

    /// Up: the line above, or (on the first line) the previous history
    /// entry.
    fn up(&mut self) -> Action {
        let start = self.line_start();
        if start > 0 {
            let col = self.text[start..self.cursor].chars().count();
            let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
            self.cursor = column_in(&self.text, prev_start, start - 1, col);
            return Action::Changed;
        }
        let next = match self.browsing {
            None if self.history.is_empty() => return Action::None,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return Action::None,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
        Action::Changed
    }

    /// Down: the line below, or (on the last line) the next history
    /// entry, then the draft.
    fn down(&mut self) -> Action {
        let end = self.line_end();
        if end < self.text.len() {
            let col = self.text[self.line_start()..self.cursor].chars().count();
            let next_end = self.text[end + 1..]
                .find('\n')
                .map_or(self.text.len(), |i| end + 1 + i);
            self.cursor = column_in(&self.text, end + 1, next_end, col);
            return Action::Changed;
        }
        match self.browsing {
            None => Action::None,
            Some(i) if i + 1 < self.history.len() => {
                self.browsing = Some(i + 1);
                self.text = self.history[i + 1].clone();
                self.cursor = self.text.len();
                Action::Changed
            }
            Some(_) => {
                self.browsing = None;
                self.text = std::mem::take(&mut self.draft);
                self.cursor = self.text.len();
                Action::Changed
            }
        }
    }

    // ---- search ----

    fn search_key(&mut self, key: KeyEvent) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let Some(search) = self.search.as_mut() else {
            return Action::None;
        };
        match key.code {
            KeyCode::Char('r') if ctrl => {
                let before = search.found.unwrap_or(self.history.len());
                search.found = find_back(&self.history, &search.query, before).or(search.found);
            }
            KeyCode::Char('g' | 'c') if ctrl => self.search = None,
            KeyCode::Esc => self.search = None,
            KeyCode::Enter | KeyCode::Tab | KeyCode::Right | KeyCode::Left => {
                if let Some(found) = search.found {
                    self.text = self.history[found].clone();
                    self.cursor = self.text.len();
                }
                self.search = None;
            }
            KeyCode::Backspace => {
                search.query.pop();
                search.found = find_back(&self.history, &search.query, self.history.len());
            }
            KeyCode::Char(c) if !ctrl => {
                search.query.push(c);
                search.found = find_back(&self.history, &search.query, self.history.len());
            }
            _ => return Action::None,
        }
        Action::Changed
    }

    // ---- completion ----

    /// Opens, updates or closes the popup for the word at the cursor.
    fn refresh_popup(&mut self, completer: &dyn Completer) {
        self.popup = self.completions(completer);
        if let (Some(p), Some(d)) = (&self.popup, self.dismissed) {
            if p.range.0 == d {
                self.popup = None;
            }
        }
    }

    fn completions(&self, completer: &dyn Completer) -> Option<Popup> {
        let head = &self.text[..self.cursor];
        let start = head.rfind(|c: char| c.is_whitespace()).map_or(0, |i| i + 1);
        let word = &head[start..];
        let end = self.cursor
            + self.text[self.cursor..]
                .find(char::is_whitespace)
                .unwrap_or(self.text.len() - self.cursor);
        let choices: Vec<Choice> = if let Some(name) = word.strip_prefix('/') {
            // A command: only as the first word of the text.
            if start != 0 {
                return None;
            }
            completer
                .commands()
                .into_iter()
                .filter(|(n, _)| n.starts_with(name))
                .map(|(n, d)| Choice {
                    insert: format!("/{n} "),
                    label: format!("/{n}"),
                    detail: d,
                })
                .take(POPUP_MAX)
                .collect()
        } else if let Some(query) = word.strip_prefix('@') {
            completer
                .files(query)
                .into_iter()
                .take(POPUP_MAX)
                .map(|f| Choice {
                    insert: format!("@{f} "),
                    label: f,
                    detail: String::new(),
                })
                .collect()
        } else {
            return None;
        };
        if choices.is_empty() {
            return None;
        }
        // A command typed whole needs no list.
        if choices.len() == 1 && choices[0].label == word {
            return None;
        }
        Some(Popup {
            range: (start, end),
            choices,
            selected: 0,
        })
    }

    fn accept_choice(&mut self) {
        let Some(p) = self.popup.take() else { return };
        let Some(choice) = p.choices.get(p.selected) else {
            return;
        };
        let (start, end) = p.range;
        let end = end.min(self.text.len());
        // The space after is the text's own when one follows already.
        let insert = if self.text[end..].starts_with(' ') {
            choice.insert.trim_end()
        } else {
            choice.insert.as_str()
        };
        self.text.replace_range(start..end, insert);
        self.cursor = start + insert.len();
    }
}

/// The byte offset of column `col` (in chars) within `text[start..end]`.
fn column_in(text: &str, start: usize, end: usize, col: usize) -> usize {
    text[start..end]
        .char_indices()
        .nth(col)
        .map_or(end, |(i, _)| start + i)
}

/// The newest history entry before `before` containing `query`.
fn find_back(history: &[String], query: &str, before: usize) -> Option<usize> {
    if query.is_empty() {
        return None;
    }
    history[..before.min(history.len())]
        .iter()
        .rposition(|h| h.contains(query))
}

/// Where the chat keeps its history: `$XDG_STATE_HOME/dsh/history`
/// (`~/.local/state/dsh/history`).
pub fn history_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("dsh").join("history"))
}

/// The history file's entries (rustyline's `#V2` format: one entry a
/// line, `\n` and `\\` escaped), oldest first.
pub fn load_history(file: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let mut lines = text.lines();
    let v2 = text.starts_with("#V2");
    if v2 {
        lines.next();
    }
    let mut out: Vec<String> = lines
        .filter(|l| !l.is_empty())
        .map(|l| if v2 { unescape(l) } else { l.to_string() })
        .collect();
    if out.len() > HISTORY_MAX {
        out.drain(..out.len() - HISTORY_MAX);
    }
    out
}

/// Writes `entries` to `file` in the same format, atomically (a private
/// temporary file renamed over it), the file private (0600) and a
/// directory it has to make private too (0700).
///
/// # Errors
/// When the directory cannot be made or the file written.
pub fn save_history(file: &Path, entries: &[String]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = file.parent().unwrap_or(Path::new("."));
    // A directory made here is private; an existing one is left as it is.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut body = String::from("#V2\n");
    for e in entries {
        body.push_str(&escape(e));
        body.push('\n');
    }
    let tmp = dir.join(format!(
        ".history.{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    let written = f.write_all(body.as_bytes()).and_then(|()| f.sync_all());
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, file)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

fn escape(entry: &str) -> String {
    entry.replace('\\', "\\\\").replace('\n', "\\n")
}

fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl Completer for Fixed {
        fn commands(&self) -> Vec<(String, String)> {
            vec![
                ("model".into(), "Switch the model".into()),
                ("permission".into(), "Change the mode".into()),
                ("plan".into(), "Plan mode".into()),
            ]
        }
        fn files(&self, query: &str) -> Vec<String> {
            ["src/main.rs", "src/lib.rs", "README.md"]
                .iter()
                .filter(|f| f.contains(query))
                .map(|f| f.to_string())
                .collect()
        }
    }

    fn press(c: &mut Composer, code: KeyCode, m: KeyModifiers) -> Action {
        c.key(KeyEvent::new(code, m), &Fixed)
    }

    fn typed(c: &mut Composer, s: &str) {
        for ch in s.chars() {
            press(c, KeyCode::Char(ch), KeyModifiers::NONE);
        }
    }

    #[test]
    fn enter_sends_and_backslash_or_alt_enter_make_new_lines() {
        let mut c = Composer::new(None);
        typed(&mut c, "one\\");
        press(&mut c, KeyCode::Enter, KeyModifiers::NONE);
        typed(&mut c, "two");
        press(&mut c, KeyCode::Enter, KeyModifiers::ALT);
        typed(&mut c, "three");
        assert_eq!(c.text(), "one\ntwo\nthree");
        let sent = press(&mut c, KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(sent, Action::Submit("one\ntwo\nthree".into()));
        assert!(c.is_empty());
    }

    #[test]
    fn editing_keys_move_and_cut() {
        let mut c = Composer::new(None);
        typed(&mut c, "héllo wörld");
        press(&mut c, KeyCode::Left, KeyModifiers::CONTROL);
        assert_eq!(&c.text()[c.cursor()..], "wörld");
        press(&mut c, KeyCode::Char('w'), KeyModifiers::CONTROL);
        assert_eq!(c.text(), "wörld");
        press(&mut c, KeyCode::End, KeyModifiers::NONE);
        press(&mut c, KeyCode::Backspace, KeyModifiers::NONE);
        assert_eq!(c.text(), "wörl");
        press(&mut c, KeyCode::Char('a'), KeyModifiers::CONTROL);
        press(&mut c, KeyCode::Char('k'), KeyModifiers::CONTROL);
        assert_eq!(c.text(), "");
        let ctrl_c = press(&mut c, KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert!(matches!(ctrl_c, Action::Unhandled(_)));
    }

    #[test]
    fn history_walks_and_persists() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/dsh/history");
        let mut c = Composer::new(Some(file.clone()));
        c.remember("first");
        c.remember("second\nline");
        c.remember("second\nline");
        typed(&mut c, "draft");
        press(&mut c, KeyCode::Up, KeyModifiers::NONE);
        assert_eq!(c.text(), "second\nline");
        // On a multi-line entry Up moves up a line first.
        press(&mut c, KeyCode::Up, KeyModifiers::NONE);
        press(&mut c, KeyCode::Up, KeyModifiers::NONE);
        assert_eq!(c.text(), "first");
        press(&mut c, KeyCode::Down, KeyModifiers::NONE);
        press(&mut c, KeyCode::Down, KeyModifiers::NONE);
        press(&mut c, KeyCode::Down, KeyModifiers::NONE);
        assert_eq!(c.text(), "draft");
        let again = Composer::new(Some(file.clone()));
        assert_eq!(again.history(), ["first", "second\nline"]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn ctrl_r_finds_older_entries() {
        let mut c = Composer::new(None);
        for h in ["cargo test", "ls", "cargo build"] {
            c.remember(h);
        }
        press(&mut c, KeyCode::Char('r'), KeyModifiers::CONTROL);
        typed(&mut c, "cargo");
        assert_eq!(c.search_match(), Some("cargo build"));
        press(&mut c, KeyCode::Char('r'), KeyModifiers::CONTROL);
        assert_eq!(c.search_match(), Some("cargo test"));
        press(&mut c, KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(c.text(), "cargo test");
        assert!(c.search().is_none());
    }

    #[test]
    fn slash_and_at_complete() {
        let mut c = Composer::new(None);
        typed(&mut c, "/p");
        let p = c.popup().unwrap();
        assert_eq!(
            p.choices
                .iter()
                .map(|c| c.label.as_str())
                .collect::<Vec<_>>(),
            ["/permission", "/plan"]
        );
        press(&mut c, KeyCode::Down, KeyModifiers::NONE);
        press(&mut c, KeyCode::Tab, KeyModifiers::NONE);
        assert_eq!(c.text(), "/plan ");
        assert!(c.popup().is_none());
        c.clear();
        typed(&mut c, "look at @lib");
        assert_eq!(c.popup().unwrap().choices[0].label, "src/lib.rs");
        press(&mut c, KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(c.text(), "look at @src/lib.rs ");
        // A slash later in the text is not a command.
        c.clear();
        typed(&mut c, "see /p");
        assert!(c.popup().is_none());
    }

    #[test]
    fn paste_keeps_new_lines_and_does_not_send() {
        let mut c = Composer::new(None);
        assert!(!c.paste("a\r\nb\rc", &Fixed));
        assert_eq!(c.text(), "a\nb\nc");
    }

    #[test]
    fn the_text_is_bounded() {
        let mut c = Composer::new(None);
        let big = "é".repeat(TEXT_MAX / 2 + 10);
        assert!(c.paste(&big, &Fixed), "cut");
        assert!(c.text().len() <= TEXT_MAX);
        assert!(c.text().len() > TEXT_MAX - 4);
        assert_eq!(
            press(&mut c, KeyCode::Char('x'), KeyModifiers::NONE),
            Action::None
        );
        assert!(!c.text().ends_with('x'));
    }
}
