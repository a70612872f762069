//! Styled text, the unit every renderer here produces: a [`Line`] is a row
//! of [`Span`]s (text, a ratatui [`Style`], maybe a link). Lines are
//! word-wrapped by display width ([`wrap`]) and written out as ANSI text
//! ([`Paint`]) for the scrollback and for `dsh session show`, or turned
//! into ratatui lines ([`to_ratatui`]) for the live area.
//!
//! Span text is whatever a renderer put there, model text included; it is
//! made safe only when written ([`Paint::line`] shows control characters
//! instead of sending them), so a renderer never has to think about it.

use std::borrow::Cow;
use std::fmt::Write as _;

pub use ratatui::style::{Color, Modifier, Style};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::sanitize::visible;

/// A run of text with one style and, for a markdown link, its target.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Span {
    /// The text: no newlines (a renderer splits lines itself).
    pub text: String,
    /// How it looks.
    pub style: Style,
    /// Where it links to (written as an OSC 8 hyperlink when the terminal
    /// takes them).
    pub link: Option<String>,
}

impl Span {
    /// Unstyled text.
    pub fn plain(text: impl Into<String>) -> Self {
        Self::styled(text, Style::new())
    }

    /// Text in `style`.
    pub fn styled(text: impl Into<String>, style: Style) -> Self {
        Span {
            text: text.into(),
            style,
            link: None,
        }
    }

    /// Columns the text takes on a terminal.
    pub fn width(&self) -> usize {
        display_width(&self.text)
    }
}

/// One terminal row of styled text (once wrapped: no wider than the width
/// it was wrapped to).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Line {
    /// The spans, left to right.
    pub spans: Vec<Span>,
}

impl Line {
    /// A line of these spans.
    pub fn new(spans: Vec<Span>) -> Self {
        Line { spans }
    }

    /// An empty line.
    pub fn blank() -> Self {
        Line::default()
    }

    /// One unstyled span.
    pub fn plain(text: impl Into<String>) -> Self {
        Line::new(vec![Span::plain(text)])
    }

    /// One span in `style`.
    pub fn styled(text: impl Into<String>, style: Style) -> Self {
        Line::new(vec![Span::styled(text, style)])
    }

    /// Appends a span (builder style).
    pub fn with(mut self, span: Span) -> Self {
        self.spans.push(span);
        self
    }

    /// Columns the line takes.
    pub fn width(&self) -> usize {
        self.spans.iter().map(Span::width).sum()
    }

    /// The text without styling.
    pub fn text(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }

    /// The line cut to `width` columns, ending in `…` when cut.
    pub fn truncated(&self, width: usize) -> Line {
        if self.width() <= width {
            return self.clone();
        }
        let mut out = Line::default();
        let mut left = width.saturating_sub(1);
        for span in &self.spans {
            if left == 0 {
                break;
            }
            let (head, used) = take_columns(&span.text, left);
            left -= used;
            out.spans.push(Span {
                text: head.to_string(),
                ..span.clone()
            });
        }
        let style = self.spans.last().map(|s| s.style).unwrap_or_default();
        if width > 0 {
            out.spans.push(Span::styled("…", style));
        }
        out
    }
}

/// Dimmed text: dsh's own secondary lines (hints, folds, meters).
pub fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

/// Columns `text` takes on a terminal (control characters count as the
/// escapes [`Paint`] shows for them would, roughly: 4).
pub fn display_width(text: &str) -> usize {
    if text.chars().all(|c| !c.is_control()) {
        return UnicodeWidthStr::width(text);
    }
    text.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    if c.is_control() {
        // A tab is written as four spaces; other controls as escapes.
        4
    } else {
        UnicodeWidthChar::width(c).unwrap_or(0)
    }
}

/// The longest prefix of `text` at most `columns` wide, and its width.
fn take_columns(text: &str, columns: usize) -> (&str, usize) {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let w = char_width(c);
        if used + w > columns {
            return (&text[..i], used);
        }
        used += w;
    }
    (text, used)
}

/// Word-wraps `spans` to `width` columns: the first row starts with
/// `first`, every further row with `rest` (a list item's bullet, then its
/// indent; a quote's bar). Breaks at spaces; a word wider than a row is cut
/// where it must. Spaces at a break are dropped. Always returns at least
/// one line (the prefix alone for empty text).
pub fn wrap(spans: &[Span], width: usize, first: &[Span], rest: &[Span]) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut current = Line::new(first.to_vec());
    let mut used = current.width();
    let rest_width = rest.iter().map(Span::width).sum::<usize>();
    // At least one column of text per row, whatever the prefix.
    let width = width.max(rest_width + 1).max(used + 1);
    // Whether the current row holds text besides its prefix.
    let mut has_text = false;
    // Whether a row was broken: spaces at a break are dropped, the text's
    // own leading spaces (an indent) are kept.
    let mut broke = false;
    // A space did not fit on the row: the next word starts a new one.
    let mut full = false;
    for span in spans {
        for piece in split_words(&span.text) {
            let is_space = piece.starts_with(' ');
            let w = display_width(piece);
            if is_space {
                if has_text || !broke {
                    if used + w < width {
                        push_text(&mut current, piece, span);
                        used += w;
                    } else if has_text {
                        full = true;
                    }
                }
                continue;
            }
            if has_text && (full || used + w > width) {
                trim_trailing_spaces(&mut current);
                lines.push(std::mem::replace(&mut current, Line::new(rest.to_vec())));
                used = rest_width;
                broke = true;
            }
            full = false;
            let mut word = piece;
            loop {
                let room = width - used;
                if display_width(word) <= room {
                    push_text(&mut current, word, span);
                    used += display_width(word);
                    break;
                }
                let (head, head_w) = take_columns(word, room);
                let (head, head_w) = if head.is_empty() {
                    // Not even one character fits (a wide one at the edge).
                    let c = word.chars().next().map_or(1, char::len_utf8);
                    (&word[..c], display_width(&word[..c]))
                } else {
                    (head, head_w)
                };
                push_text(&mut current, head, span);
                used += head_w;
                word = &word[head.len()..];
                if word.is_empty() {
                    break;
                }
                lines.push(std::mem::replace(&mut current, Line::new(rest.to_vec())));
                used = rest_width;
                broke = true;
            }
            has_text = true;
        }
    }
    trim_trailing_spaces(&mut current);
    lines.push(current);
    lines
}

/// Words and runs of spaces, in order.
fn split_words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let space = rest.starts_with(' ');
        let end = rest
            .find(|c: char| (c == ' ') != space)
            .unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

fn push_text(line: &mut Line, text: &str, like: &Span) {
    if let Some(last) = line.spans.last_mut() {
        if last.style == like.style && last.link == like.link {
            last.text.push_str(text);
            return;
        }
    }
    line.spans.push(Span {
        text: text.to_string(),
        style: like.style,
        link: like.link.clone(),
    });
}

fn trim_trailing_spaces(line: &mut Line) {
    while let Some(last) = line.spans.last_mut() {
        let trimmed = last.text.trim_end_matches(' ').len();
        last.text.truncate(trimmed);
        if !last.text.is_empty() {
            break;
        }
        if line.spans.len() == 1 {
            break;
        }
        line.spans.pop();
    }
}

/// How lines are written out as text: with colour and styles or plain,
/// with OSC 8 hyperlinks or with the target in brackets after the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint {
    /// Write colours and styles (SGR codes).
    pub color: bool,
    /// Write links as OSC 8 hyperlinks.
    pub links: bool,
}

impl Paint {
    /// Plain text: no escape codes at all.
    pub const PLAIN: Paint = Paint {
        color: false,
        links: false,
    };

    /// What a stream that is (`terminal`) or is not a terminal takes:
    /// colour on a terminal unless `NO_COLOR` is set (non-empty) or
    /// `TERM=dumb`; hyperlinks where colour is on and the terminal is not
    /// known to lack them (`TERM=linux`, the console).
    pub fn detect(terminal: bool) -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let term = std::env::var("TERM").unwrap_or_default();
        let color = terminal && !no_color && term != "dumb";
        Paint {
            color,
            links: color && term != "linux",
        }
    }

    /// `line` as text (no trailing newline): control characters in span
    /// text shown as escapes ([`crate::sanitize::visible`]), styles as SGR
    /// codes when `color`, links as OSC 8 when `links` (else ` (target)`
    /// after the link's last span on the line, when the target differs
    /// from its text).
    pub fn line(&self, line: &Line) -> String {
        let mut out = String::new();
        for (i, span) in line.spans.iter().enumerate() {
            let text = visible(&span.text);
            let text = untab(&text);
            let link = span.link.as_deref().map(visible);
            if self.color && span.style != Style::new() {
                let _ = write!(out, "\x1b[{}m", sgr(span.style));
            }
            match &link {
                Some(target) if self.links => {
                    let _ = write!(out, "\x1b]8;;{target}\x1b\\{text}\x1b]8;;\x1b\\");
                }
                _ => out.push_str(&text),
            }
            if self.color && span.style != Style::new() {
                out.push_str("\x1b[0m");
            }
            // Without hyperlinks the target follows the link's last span.
            let run_ends = line
                .spans
                .get(i + 1)
                .is_none_or(|next| next.link != span.link);
            if let Some(target) = link {
                if !self.links && run_ends && *target != *text {
                    let _ = write!(out, " ({target})");
                }
            }
        }
        out
    }

    /// Every line of `lines` followed by a newline.
    pub fn lines(&self, lines: &[Line]) -> String {
        let mut out = String::new();
        for line in lines {
            out.push_str(&self.line(line));
            out.push('\n');
        }
        out
    }
}

/// Text for one row: tabs as four spaces (a terminal's tab stops would
/// break the widths), a stray new line as a space (a line is one row; a
/// renderer that let one through must not break the layout).
fn untab(text: &str) -> Cow<'_, str> {
    if text.contains(['\t', '\n']) {
        Cow::Owned(text.replace('\t', "    ").replace('\n', " "))
    } else {
        Cow::Borrowed(text)
    }
}

/// The SGR parameters of `style` (`1;38;5;2`).
fn sgr(style: Style) -> String {
    let mut codes: Vec<String> = Vec::new();
    let m = style.add_modifier;
    for (flag, code) in [
        (Modifier::BOLD, "1"),
        (Modifier::DIM, "2"),
        (Modifier::ITALIC, "3"),
        (Modifier::UNDERLINED, "4"),
        (Modifier::REVERSED, "7"),
        (Modifier::CROSSED_OUT, "9"),
    ] {
        if m.contains(flag) {
            codes.push(code.to_string());
        }
    }
    if let Some(fg) = style.fg {
        codes.push(color_code(fg, false));
    }
    if let Some(bg) = style.bg {
        codes.push(color_code(bg, true));
    }
    if codes.is_empty() {
        codes.push("0".to_string());
    }
    codes.join(";")
}

fn color_code(color: Color, background: bool) -> String {
    let base = if background { 40 } else { 30 };
    match color {
        Color::Reset => (base + 9).to_string(),
        Color::Black => base.to_string(),
        Color::Red => (base + 1).to_string(),
        Color::Green => (base + 2).to_string(),
        Color::Yellow => (base + 3).to_string(),
        Color::Blue => (base + 4).to_string(),
        Color::Magenta => (base + 5).to_string(),
        Color::Cyan => (base + 6).to_string(),
        Color::Gray => (base + 7).to_string(),
        Color::DarkGray => (base + 60).to_string(),
        Color::LightRed => (base + 61).to_string(),
        Color::LightGreen => (base + 62).to_string(),
        Color::LightYellow => (base + 63).to_string(),
        Color::LightBlue => (base + 64).to_string(),
        Color::LightMagenta => (base + 65).to_string(),
        Color::LightCyan => (base + 66).to_string(),
        Color::White => (base + 67).to_string(),
        Color::Indexed(i) => format!("{};5;{i}", base + 8),
        Color::Rgb(r, g, b) => format!("{};2;{r};{g};{b}", base + 8),
    }
}

/// `line` as a ratatui line (links dropped; control characters shown as
/// escapes, tabs as spaces).
pub fn to_ratatui(line: &Line) -> ratatui::text::Line<'static> {
    ratatui::text::Line::from(
        line.spans
            .iter()
            .map(|s| {
                let text = untab(&visible(&s.text)).into_owned();
                ratatui::text::Span::styled(text, s.style)
            })
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    #[test]
    fn wraps_at_spaces_with_prefixes() {
        let spans = [Span::plain("the quick brown fox jumps over")];
        let lines = wrap(&spans, 12, &[Span::plain("- ")], &[Span::plain("  ")]);
        assert_eq!(
            texts(&lines),
            ["- the quick", "  brown fox", "  jumps over"]
        );
    }

    #[test]
    fn a_space_at_the_row_end_breaks_before_the_next_word() {
        let lines = wrap(&[Span::plain("aaaa b")], 5, &[], &[]);
        assert_eq!(texts(&lines), ["aaaa", "b"]);
        let lines = wrap(&[Span::plain("aaa bb")], 5, &[], &[]);
        assert_eq!(texts(&lines), ["aaa", "bb"]);
    }

    #[test]
    fn keeps_an_indent_but_not_the_spaces_at_a_break() {
        let lines = wrap(&[Span::plain("    let x = one two")], 12, &[], &[]);
        assert_eq!(texts(&lines), ["    let x =", "one two"]);
    }

    #[test]
    fn cuts_a_word_longer_than_a_row() {
        let lines = wrap(&[Span::plain("abcdefghij")], 4, &[], &[]);
        assert_eq!(texts(&lines), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn keeps_styles_across_a_break() {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let lines = wrap(
            &[Span::plain("aa "), Span::styled("bb cc", bold)],
            5,
            &[],
            &[],
        );
        assert_eq!(texts(&lines), ["aa bb", "cc"]);
        assert_eq!(lines[1].spans[0].style, bold);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let lines = wrap(&[Span::plain("日本語です")], 4, &[], &[]);
        assert_eq!(texts(&lines), ["日本", "語で", "す"]);
    }

    #[test]
    fn paint_shows_escapes_instead_of_sending_them() {
        let line = Line::plain("a\x1b]52;c;AAAA\x07b");
        let out = Paint::PLAIN.line(&line);
        assert!(!out.contains('\x1b'), "{out:?}");
        let coloured = Paint {
            color: true,
            links: true,
        }
        .line(&Line::styled("x\x1b[2J", Style::new().fg(Color::Red)));
        assert_eq!(coloured, "\x1b[31mx\\x1b[2J\x1b[0m");
    }

    #[test]
    fn a_line_is_one_row_whatever_its_spans_hold() {
        let out = Paint::PLAIN.line(&Line::plain("a\nb\tc"));
        assert_eq!(out, "a b    c");
        let r = to_ratatui(&Line::plain("x\ny"));
        assert_eq!(r.spans[0].content, "x y");
    }

    #[test]
    fn links_are_osc8_or_written_out() {
        let mut span = Span::plain("docs");
        span.link = Some("https://example.com".into());
        let line = Line::new(vec![span]);
        assert_eq!(Paint::PLAIN.line(&line), "docs (https://example.com)");
        let on = Paint {
            color: true,
            links: true,
        };
        assert_eq!(
            on.line(&line),
            "\x1b]8;;https://example.com\x1b\\docs\x1b]8;;\x1b\\"
        );
    }

    #[test]
    fn truncation_ends_in_an_ellipsis() {
        let line = Line::plain("abcdefgh");
        assert_eq!(line.truncated(5).text(), "abcd…");
        assert_eq!(line.truncated(8).text(), "abcdefgh");
    }

    proptest! {
        #[test]
        fn wrapped_rows_fit_and_keep_every_word(
            words in proptest::collection::vec("[a-zé日]{1,14}", 0..30),
            width in 1usize..40,
        ) {
            let text = words.join(" ");
            let lines = wrap(&[Span::plain(text.clone())], width, &[], &[]);
            let width = width.max(1);
            for l in &lines {
                prop_assert!(l.width() <= width.max(2), "{:?} wider than {}", l.text(), width);
            }
            let joined: String = lines.iter().map(Line::text).collect::<Vec<_>>().join("");
            prop_assert_eq!(joined.replace(' ', ""), text.replace(' ', ""));
        }
    }
}
