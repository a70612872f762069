//! The model's markdown as terminal lines ([`Line`]s, word-wrapped to a
//! width), rendered whole ([`render`]) or as it streams
//! ([`MarkdownStream`]).
//!
//! # How a message is cut into blocks
//!
//! A message is read line by line and cut into blocks, each rendered once
//! (pulldown-cmark with tables, strikethrough and task lists) when it is
//! complete and never again:
//!
//! - a blank line outside a fenced code block ends a block;
//! - a fenced code block is rendered a line at a time as its lines arrive
//!   (highlighted by [`CodeHighlighter`], which keeps its state from line
//!   to line), and ends at its closing fence;
//! - an ATX heading (`## …`) is a block of its own, complete at its
//!   newline; a fence or heading line also ends the block before it;
//! - in a list, a line starting a sibling item ends the item before it
//!   (tight lists settle item by item).
//!
//! A block indented under a list item that came before it (a paragraph or
//! code block after a blank line inside a loose list item) is rendered in
//! that item's indentation; an ordered list continued after a blank line
//! keeps counting. [`render`] cuts a whole message the same way, so a
//! replayed session looks exactly as it did live: concatenating what
//! [`MarkdownStream::push`] and [`MarkdownStream::finish`] return equals
//! [`render`] of the whole text, however it was split into chunks.
//!
//! Where this differs from rendering a whole document with CommonMark's
//! rules (on purpose: those would let a late line change early ones):
//! reference-style link definitions apply only inside their own block (a
//! `[text][ref]` defined elsewhere shows as typed); a loose list is shown
//! as its items separated by blank lines (as CommonMark's would), an
//! indented code block or HTML block with blank lines inside is shown as
//! several; a `` ``` `` or `#` line indented 4+ columns inside a paragraph
//! starts a new block (CommonMark would continue the paragraph).
//!
//! # What it looks like
//!
//! Headings without their `#`s, bold (H1 underlined, H1 and H2 coloured);
//! emphasis italic, strong bold, strikethrough crossed out, inline code
//! coloured; links underlined and coloured with [`Span::link`] set (images
//! as `[image: alt]` linking to their target); bullet lists with `•`
//! (nested: `◦`, `▪`), ordered lists keeping their numbering, task items
//! as `☐`/`☑`, continuation lines indented under the text; block quotes
//! behind a dim `│ `, in italics; tables with box-drawing rules, columns
//! sized to their content and shrunk (cells wrapped) to fit; horizontal
//! rules across the width; code (fenced or indented) highlighted by its
//! language tag behind a two-column gutter, never word-wrapped but cut at
//! the width; HTML shown as typed. One blank line between blocks, none at
//! the start or end. Every line is at most `width` columns wide for widths
//! of 20 and more (deep nesting stops indenting to leave text room).

use pulldown_cmark::{
    Alignment, CodeBlockKind, Event, HeadingLevel, LinkType, Options, Tag, TagEnd,
};

use crate::highlight::CodeHighlighter;
use crate::text::{display_width, wrap, Color, Line, Modifier, Span, Style};

/// Columns of text a block keeps however deep its list nesting: an
/// indentation that would leave less is cut to leave this much.
const MIN_TEXT: usize = 10;

/// The columns before every code line.
const CODE_GUTTER: &str = "  ";

/// `markdown` (a whole message) rendered at `width` columns: the same lines
/// a [`MarkdownStream`] gives for it, in whatever chunks it came.
pub fn render(markdown: &str, width: usize) -> Vec<Line> {
    let mut stream = MarkdownStream::new(width);
    let mut lines = stream.push(markdown);
    lines.extend(stream.finish());
    lines
}

/// A message's markdown rendered as it streams in: [`push`] each chunk and
/// write the lines it returns to the scrollback (they are final); show
/// [`pending`] (the block still open) in a live area below them; at the
/// end, [`finish`] returns the rest.
///
/// Each chunk costs the lines it completes (each rendered once) plus, at
/// [`pending`], the open block alone: a long answer is never rendered
/// again as a whole, and a long code block costs only its newest line.
///
/// [`push`]: MarkdownStream::push
/// [`pending`]: MarkdownStream::pending
/// [`finish`]: MarkdownStream::finish
#[derive(Debug, Clone)]
pub struct MarkdownStream {
    engine: Engine,
    /// The last line, not yet ended by a newline.
    partial: String,
    /// [`MarkdownStream::pending`]'s lines, until the next push or width
    /// change.
    pending: Option<Vec<Line>>,
}

impl MarkdownStream {
    /// A stream for one message, rendered at `width` columns.
    pub fn new(width: usize) -> Self {
        MarkdownStream {
            engine: Engine::new(width),
            partial: String::new(),
            pending: None,
        }
    }

    /// Adds `chunk` (any piece of the text: part of a line, several
    /// lines); returns the lines that became final with it, in order. Only
    /// complete lines (ended by `\n`) are acted on; the rest waits for the
    /// next chunk.
    pub fn push(&mut self, chunk: &str) -> Vec<Line> {
        let mut out = Vec::new();
        if chunk.is_empty() {
            return out;
        }
        self.pending = None;
        let Some(last_newline) = chunk.rfind('\n') else {
            self.partial.push_str(chunk);
            return out;
        };
        let (complete, rest) = chunk.split_at(last_newline + 1);
        let mut lines = complete.split_terminator('\n');
        if let Some(first) = lines.next() {
            if self.partial.is_empty() {
                self.engine.line(first, &mut out);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.push_str(first);
                self.engine.line(&line, &mut out);
            }
        }
        for line in lines {
            self.engine.line(line, &mut out);
        }
        self.partial.push_str(rest);
        out
    }

    /// The open part rendered as it would be if the message ended now: the
    /// open block (with the blank line that will separate it from what is
    /// settled), or the partial code line (plain: it is highlighted once
    /// complete). Rendered at the first call after a
    /// [`MarkdownStream::push`] and kept until the next.
    pub fn pending(&mut self) -> &[Line] {
        let engine = &self.engine;
        let partial = &self.partial;
        self.pending.get_or_insert_with(|| engine.preview(partial))
    }

    /// Ends the message: the lines not yet returned (the open block, a last
    /// line without its newline). The stream is then empty, as new.
    pub fn finish(&mut self) -> Vec<Line> {
        let mut out = Vec::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.engine.line(&line, &mut out);
        }
        self.engine.finish(&mut out);
        self.engine = Engine::new(self.engine.width);
        self.pending = None;
        out
    }

    /// Renders from now on at `width` columns (lines already returned stay
    /// as they are; the open block is rendered at the new width).
    pub fn set_width(&mut self, width: usize) {
        if self.engine.width != width {
            self.engine.width = width;
            self.pending = None;
        }
    }

    /// The width lines are rendered at.
    pub fn width(&self) -> usize {
        self.engine.width
    }
}

// ---------------------------------------------------------------------
// Cutting the text into blocks.

/// The block-cutting state machine, fed complete lines.
#[derive(Debug, Clone)]
struct Engine {
    width: usize,
    /// The list items (outermost first) a block indented enough continues:
    /// set by a block that ended in a list, cut back by a block less
    /// indented.
    levels: Vec<Level>,
    /// The list a top-level block ended with (its numbering continues in
    /// the next block that starts a list of the same kind).
    top_tail: Option<ListTail>,
    state: State,
    /// Whether any line was given out (the next block is then preceded by
    /// a blank line).
    emitted: bool,
}

/// A list item a later block may be inside of.
#[derive(Debug, Clone, Copy)]
struct Level {
    /// The source column where the item's content starts.
    src_col: usize,
    /// The rendered column where it starts.
    indent: usize,
    /// The list the last block inside this item ended with.
    tail: Option<ListTail>,
}

/// How a list ended, for a later block that continues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ListTail {
    kind: MarkerKind,
    /// The number its next item takes.
    next: u64,
}

/// A list item marker's kind: a bullet (`-`, `*`, `+`), or a number with
/// its delimiter (`.` or `)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MarkerKind {
    Bullet(char),
    Ordered(char),
}

#[derive(Debug, Clone)]
enum State {
    /// Between blocks.
    Idle,
    /// A block gathering its lines.
    Block(OpenBlock),
    /// Inside a fenced code block.
    Fence(OpenFence),
}

/// Where a block sits: under how many list items, the source columns that
/// nesting takes (stripped from its lines), the rendered indentation.
#[derive(Debug, Clone, Copy)]
struct Place {
    depth: usize,
    strip: usize,
    indent: usize,
}

#[derive(Debug, Clone)]
struct OpenBlock {
    place: Place,
    /// The lines so far, nesting indentation stripped, joined by `\n`.
    text: String,
    /// The indentation and kind of the list item its first line starts.
    first_marker: Option<(usize, MarkerKind)>,
    /// The deepest content column of a list item started in it (a fence or
    /// heading indented up to 3 more starts a new block).
    reach: usize,
    /// It started with a sibling item of the block before (no blank line
    /// between them when both are lists).
    tight: bool,
}

#[derive(Debug, Clone)]
struct OpenFence {
    place: Place,
    fence: char,
    fence_len: usize,
    /// The fence's own indentation, stripped from its lines.
    fence_indent: usize,
    highlighter: CodeHighlighter,
    /// Whether a code line was given out.
    started: bool,
}

impl Engine {
    fn new(width: usize) -> Self {
        Engine {
            width,
            levels: Vec::new(),
            top_tail: None,
            state: State::Idle,
            emitted: false,
        }
    }

    /// The indentation a block at `indent` is actually given at this width.
    fn effective_indent(&self, indent: usize) -> usize {
        indent.min(self.width.saturating_sub(MIN_TEXT))
    }

    /// Takes one complete line (without its newline).
    fn line(&mut self, raw: &str, out: &mut Vec<Line>) {
        let line = normalize(raw);
        let line = line.as_str();
        let blank = line.trim().is_empty();
        match &mut self.state {
            State::Idle => {
                if !blank {
                    self.begin(line, false, out);
                }
            }
            State::Fence(fence) => match fence_step(fence, line) {
                FenceStep::Over => {
                    self.close_fence();
                    self.begin(line, false, out);
                }
                FenceStep::Closes => self.close_fence(),
                FenceStep::Code(code) => {
                    let spans = fence.highlighter.line(code);
                    let separate = !fence.started && self.emitted;
                    fence.started = true;
                    let indent = fence.place.indent;
                    self.code_line(indent, separate, spans, out);
                }
            },
            State::Block(block) => {
                if blank {
                    self.settle(out);
                    return;
                }
                let indent = leading_spaces(line);
                if indent < block.place.strip {
                    // Less indented than the item the block is in: a lazy
                    // continuation of its paragraph, or a new block.
                    if starts_block(line) {
                        self.settle(out);
                        self.begin(line, false, out);
                    } else {
                        block.text.push('\n');
                        block.text.push_str(line.trim_start());
                    }
                    return;
                }
                let rel = strip_spaces(line, block.place.strip);
                let rel_indent = leading_spaces(rel);
                if rel_indent <= block.reach + 3
                    && (fence_open(rel.trim_start()).is_some() || is_atx_heading(rel.trim_start()))
                {
                    self.settle(out);
                    self.begin(line, false, out);
                    return;
                }
                let marker = list_marker(rel);
                if let (Some((i0, k0)), Some(m)) = (block.first_marker, marker) {
                    if m.indent == i0 && m.kind == k0 {
                        self.settle(out);
                        self.begin(line, true, out);
                        return;
                    }
                }
                if let Some(m) = marker {
                    block.reach = block.reach.max(m.content_col);
                }
                block.text.push('\n');
                block.text.push_str(rel);
            }
        }
    }

    /// Gives out a fenced code line (after a blank line if `separate`).
    fn code_line(&mut self, indent: usize, separate: bool, spans: Vec<Span>, out: &mut Vec<Line>) {
        if separate {
            out.push(Line::blank());
        }
        let indent = self.effective_indent(indent);
        let prefix = [Span::plain(" ".repeat(indent) + CODE_GUTTER)];
        out.extend(code_rows(spans, &prefix, &prefix, self.width));
        self.emitted = true;
    }

    /// What [`MarkdownStream::pending`] shows for `partial`, the line not
    /// yet ended: the lines that settling everything now would give. A
    /// partial code line is shown plain (highlighting costs hundreds of
    /// µs a line: it is paid once, when the line is complete).
    fn preview(&self, partial: &str) -> Vec<Line> {
        let mut out = Vec::new();
        if let State::Fence(fence) = &self.state {
            let line = normalize(partial);
            if let FenceStep::Code(code) = fence_step(fence, &line) {
                if !partial.is_empty() {
                    let separate = !fence.started && self.emitted;
                    let spans = vec![Span::plain(code)];
                    self.clone_without_state().code_line(
                        fence.place.indent,
                        separate,
                        spans,
                        &mut out,
                    );
                }
                return out;
            }
        }
        let mut engine = self.clone();
        if !partial.is_empty() {
            engine.line(partial, &mut out);
        }
        engine.finish(&mut out);
        out
    }

    /// A copy of the width and what was given out, for rendering a line
    /// the way this engine would (no block state copied).
    fn clone_without_state(&self) -> Engine {
        Engine {
            width: self.width,
            levels: Vec::new(),
            top_tail: None,
            state: State::Idle,
            emitted: self.emitted,
        }
    }

    /// Starts a block with `line` (not blank): finds the list item it is
    /// in, then opens a fence, settles a heading, or gathers a block.
    fn begin(&mut self, line: &str, tight: bool, out: &mut Vec<Line>) {
        let indent = leading_spaces(line);
        let depth = self
            .levels
            .iter()
            .take_while(|l| l.src_col <= indent)
            .count();
        self.levels.truncate(depth);
        let (strip, rendered) = self.levels.last().map_or((0, 0), |l| (l.src_col, l.indent));
        let place = Place {
            depth,
            strip,
            indent: rendered,
        };
        let rel = strip_spaces(line, strip);
        if let Some(fence) = fence_open(rel) {
            self.state = State::Fence(OpenFence {
                place,
                fence: fence.fence,
                fence_len: fence.len,
                fence_indent: fence.indent,
                highlighter: CodeHighlighter::new(fence.info),
                started: false,
            });
            return;
        }
        let marker = list_marker(rel).filter(|m| m.indent <= 3);
        self.state = State::Block(OpenBlock {
            place,
            text: rel.to_string(),
            first_marker: marker.map(|m| (m.indent, m.kind)),
            reach: marker.map_or(0, |m| m.content_col),
            tight,
        });
        if is_atx_heading(rel) {
            self.settle(out);
        }
    }

    /// The list the last block at `depth` ended with.
    fn tail(&self, depth: usize) -> Option<ListTail> {
        match depth.checked_sub(1) {
            None => self.top_tail,
            Some(i) => self.levels.get(i).and_then(|l| l.tail),
        }
    }

    fn set_tail(&mut self, depth: usize, tail: Option<ListTail>) {
        match depth.checked_sub(1) {
            None => self.top_tail = tail,
            Some(i) => {
                if let Some(level) = self.levels.get_mut(i) {
                    level.tail = tail;
                }
            }
        }
    }

    /// Renders the open block and gives its lines out.
    fn settle(&mut self, out: &mut Vec<Line>) {
        let State::Block(block) = std::mem::replace(&mut self.state, State::Idle) else {
            return;
        };
        let place = block.place;
        let tail = self.tail(place.depth);
        let start = match (block.first_marker, tail) {
            (
                Some((_, MarkerKind::Ordered(d))),
                Some(ListTail {
                    kind: MarkerKind::Ordered(e),
                    next,
                }),
            ) if d == e => Some(next),
            _ => None,
        };
        let indent = self.effective_indent(place.indent);
        let rendered = render_block(&block.text, self.width.saturating_sub(indent), start);
        if !rendered.lines.is_empty() {
            let tight = block.tight && tail.is_some() && rendered.starts_with_list;
            if self.emitted && !tight {
                out.push(Line::blank());
            }
            out.extend(rendered.lines.into_iter().map(|l| indented(l, indent)));
            self.emitted = true;
        }
        self.set_tail(place.depth, rendered.tail);
        self.levels.truncate(place.depth);
        let path = &rendered.path;
        for (k, item) in path.iter().enumerate() {
            self.levels.push(Level {
                src_col: place.strip + item.src_col,
                indent: place.indent + item.indent,
                tail: path.get(k + 1).map(|next| next.list_tail),
            });
        }
    }

    fn close_fence(&mut self) {
        if let State::Fence(fence) = std::mem::replace(&mut self.state, State::Idle) {
            self.levels.truncate(fence.place.depth);
            self.set_tail(fence.place.depth, None);
        }
    }

    /// Ends the message: settles the open block, closes an open fence.
    fn finish(&mut self, out: &mut Vec<Line>) {
        match self.state {
            State::Block(_) => self.settle(out),
            State::Fence(_) => self.close_fence(),
            State::Idle => {}
        }
    }
}

/// `line` shifted right by `indent` columns (a blank line stays empty).
fn indented(mut line: Line, indent: usize) -> Line {
    if indent > 0 && line.width() > 0 {
        line.spans.insert(0, Span::plain(" ".repeat(indent)));
    }
    line
}

/// A line as the block cutter reads it: without a trailing `\r`, the tabs
/// of its indentation turned into spaces (tab stops every 4 columns).
fn normalize(raw: &str) -> String {
    let raw = raw.strip_suffix('\r').unwrap_or(raw);
    let body = raw.trim_start_matches([' ', '\t']);
    let lead = &raw[..raw.len() - body.len()];
    if !lead.contains('\t') {
        return raw.to_string();
    }
    let mut out = String::with_capacity(raw.len() + 8);
    let mut col = 0;
    for c in lead.chars() {
        if c == '\t' {
            let to = (col / 4 + 1) * 4;
            out.extend(std::iter::repeat_n(' ', to - col));
            col = to;
        } else {
            out.push(' ');
            col += 1;
        }
    }
    out.push_str(body);
    out
}

fn leading_spaces(s: &str) -> usize {
    s.len() - s.trim_start_matches(' ').len()
}

/// `s` without up to `n` leading spaces.
fn strip_spaces(s: &str, n: usize) -> &str {
    &s[leading_spaces(s).min(n)..]
}

/// What a line inside a fenced code block is.
enum FenceStep<'a> {
    /// Less indented than the list item holding the fence: the item, and
    /// the fence with it, are over; the line starts something else.
    Over,
    /// The closing fence.
    Closes,
    /// A line of code (the fence's indentation stripped).
    Code(&'a str),
}

fn fence_step<'a>(fence: &OpenFence, line: &'a str) -> FenceStep<'a> {
    if !line.trim().is_empty() && leading_spaces(line) < fence.place.strip {
        return FenceStep::Over;
    }
    let rel = strip_spaces(line, fence.place.strip);
    if closes_fence(rel, fence.fence, fence.fence_len) {
        return FenceStep::Closes;
    }
    FenceStep::Code(strip_spaces(rel, fence.fence_indent))
}

/// An opening code fence: its character, length, indentation and info
/// string.
struct Fence<'a> {
    fence: char,
    len: usize,
    indent: usize,
    info: &'a str,
}

/// `line` as an opening code fence (up to 3 spaces, then 3+ backticks or
/// tildes; a backtick fence's info string has no backtick).
fn fence_open(line: &str) -> Option<Fence<'_>> {
    let indent = leading_spaces(line);
    if indent > 3 {
        return None;
    }
    let body = &line[indent..];
    let fence = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = body.len() - body.trim_start_matches(fence).len();
    if len < 3 {
        return None;
    }
    let info = body[len..].trim();
    if fence == '`' && info.contains('`') {
        return None;
    }
    Some(Fence {
        fence,
        len,
        indent,
        info,
    })
}

/// Whether `line` closes a fence of `len` `fence` characters.
fn closes_fence(line: &str, fence: char, len: usize) -> bool {
    let indent = leading_spaces(line);
    if indent > 3 {
        return false;
    }
    let body = &line[indent..];
    let rest = body.trim_start_matches(fence);
    body.len() - rest.len() >= len && rest.trim().is_empty()
}

/// Whether `line` is an ATX heading (up to 3 spaces, 1–6 `#`, then a
/// space or the end).
fn is_atx_heading(line: &str) -> bool {
    let indent = leading_spaces(line);
    if indent > 3 {
        return false;
    }
    let body = &line[indent..];
    let rest = body.trim_start_matches('#');
    let hashes = body.len() - rest.len();
    (1..=6).contains(&hashes) && (rest.is_empty() || rest.starts_with([' ', '\t']))
}

/// Whether `line` is a thematic break (`---`, `* * *`, `___`).
fn is_thematic_break(line: &str) -> bool {
    let indent = leading_spaces(line);
    if indent > 3 {
        return false;
    }
    let mut chars = line[indent..].chars().filter(|c| *c != ' ' && *c != '\t');
    let Some(first) = chars.next() else {
        return false;
    };
    let mut count = 1;
    for c in chars {
        if c != first {
            return false;
        }
        count += 1;
    }
    matches!(first, '-' | '*' | '_') && count >= 3
}

/// A list item's start on a line.
#[derive(Debug, Clone, Copy)]
struct Marker {
    /// Spaces before the marker.
    indent: usize,
    kind: MarkerKind,
    /// The column its content starts at.
    content_col: usize,
}

/// `line` as the start of a list item (`- x`, `* x`, `+ x`, `1. x`,
/// `1) x`, or a marker alone), not a thematic break.
fn list_marker(line: &str) -> Option<Marker> {
    let indent = leading_spaces(line);
    let body = &line[indent..];
    let first = body.chars().next()?;
    let (kind, len) = if matches!(first, '-' | '*' | '+') {
        (MarkerKind::Bullet(first), 1)
    } else {
        let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits > 9 {
            return None;
        }
        let delim = body[digits..]
            .chars()
            .next()
            .filter(|c| *c == '.' || *c == ')')?;
        (MarkerKind::Ordered(delim), digits + 1)
    };
    let after = &body[len..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) || is_thematic_break(line) {
        return None;
    }
    let spaces = leading_spaces(after);
    let gap = if after.trim().is_empty() || !(1..=4).contains(&spaces) {
        1
    } else {
        spaces
    };
    Some(Marker {
        indent,
        kind,
        content_col: indent + len + gap,
    })
}

/// Whether `line` (less indented than the item its block is in) starts a
/// block of its own rather than continuing a paragraph lazily.
fn starts_block(line: &str) -> bool {
    let t = line.trim_start();
    list_marker(t).is_some()
        || fence_open(t).is_some()
        || is_atx_heading(t)
        || t.starts_with('>')
        || is_thematic_break(t)
        || t.starts_with('|')
}

// ---------------------------------------------------------------------
// Rendering one block.

/// A block rendered, with what the cutter needs to place the next one.
struct Rendered {
    lines: Vec<Line>,
    /// Its first element is a list.
    starts_with_list: bool,
    /// Its last element is a list, which ended so.
    tail: Option<ListTail>,
    /// When it ends in a list: that list's last item, and the last item of
    /// each list nested in it (outermost first).
    path: Vec<PathItem>,
}

/// A list item on the path a later block may continue.
#[derive(Debug, Clone, Copy)]
struct PathItem {
    /// Its content's source column in the block.
    src_col: usize,
    /// Its content's rendered column in the block.
    indent: usize,
    /// Its list, as it stands after this item.
    list_tail: ListTail,
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// `text` (one block, no blank lines) rendered at `width`; its first list
/// starts at `start` when given and the block begins with it.
fn render_block(text: &str, width: usize, start: Option<u64>) -> Rendered {
    let mut writer = Writer::new(text, width, start);
    for (event, range) in pulldown_cmark::Parser::new_ext(text, options()).into_offset_iter() {
        writer.event(event, range.start);
    }
    writer.finish()
}

/// An element holding others, for the prefixes of the lines inside it.
#[derive(Debug)]
enum Container {
    Quote {
        /// A block was written in it (the next is preceded by a blank).
        started: bool,
    },
    List {
        /// The number of the next item (for an ordered list).
        next: u64,
        ordered: bool,
        /// The marker kind of its first item.
        kind: Option<MarkerKind>,
        /// How deep among lists (for the bullet).
        level: usize,
        /// Whether its items are on the path a later block may continue.
        on_path: bool,
    },
    Item {
        marker: String,
        /// The marker was written (later lines get spaces instead).
        shown: bool,
    },
}

struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span>>>,
    header_rows: usize,
    row: Vec<Vec<Span>>,
    in_head: bool,
}

/// Turns one block's pulldown-cmark events into lines.
struct Writer<'a> {
    src: &'a str,
    width: usize,
    start: Option<u64>,
    out: Vec<Line>,
    stack: Vec<Container>,
    /// A top-level element was written.
    root_started: bool,
    starts_with_list: bool,
    ends_with_list: bool,
    last_tail: Option<ListTail>,
    /// The text of the paragraph (heading, cell, tight item) being
    /// gathered: the pieces before each hard break, and the current one.
    segments: Vec<Vec<Span>>,
    inline: Vec<Span>,
    styles: Vec<Style>,
    links: Vec<String>,
    code: Option<(CodeHighlighter, String)>,
    html: Option<String>,
    table: Option<Table>,
    /// The open items on the path (no quote around them).
    items: Vec<PathItem>,
    path: Vec<PathItem>,
}

fn heading_style(level: HeadingLevel) -> Style {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    match level {
        HeadingLevel::H1 => bold.fg(Color::Magenta).add_modifier(Modifier::UNDERLINED),
        HeadingLevel::H2 => bold.fg(Color::Magenta),
        HeadingLevel::H3 => bold,
        _ => bold.add_modifier(Modifier::ITALIC),
    }
}

fn inline_code_style() -> Style {
    Style::new().fg(Color::Cyan)
}

fn link_style() -> Style {
    Style::new()
        .fg(Color::Blue)
        .add_modifier(Modifier::UNDERLINED)
}

fn rule_style() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

const BULLETS: [&str; 3] = ["• ", "◦ ", "▪ "];

impl<'a> Writer<'a> {
    fn new(src: &'a str, width: usize, start: Option<u64>) -> Self {
        Writer {
            src,
            width,
            start,
            out: Vec::new(),
            stack: Vec::new(),
            root_started: false,
            starts_with_list: false,
            ends_with_list: false,
            last_tail: None,
            segments: Vec::new(),
            inline: Vec::new(),
            styles: Vec::new(),
            links: Vec::new(),
            code: None,
            html: None,
            table: None,
            items: Vec::new(),
            path: Vec::new(),
        }
    }

    fn finish(mut self) -> Rendered {
        self.flush_inline();
        let ends = self.ends_with_list;
        Rendered {
            lines: self.out,
            starts_with_list: self.starts_with_list,
            tail: if ends { self.last_tail } else { None },
            path: if ends { self.path } else { Vec::new() },
        }
    }

    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::new(), |acc, s| acc.patch(*s))
    }

    fn event(&mut self, event: Event<'_>, offset: usize) {
        match event {
            Event::Start(tag) => self.start_tag(tag, offset),
            Event::End(tag) => self.end_tag(tag),
            Event::Text(text) => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(&text);
                } else if let Some(html) = &mut self.html {
                    html.push_str(&text);
                } else {
                    self.text(&text, self.style());
                }
            }
            Event::Code(text) => self.text(&text, self.style().patch(inline_code_style())),
            Event::Html(text) => match &mut self.html {
                Some(html) => html.push_str(&text),
                None => self.text(&text, self.style()),
            },
            Event::InlineHtml(text)
            | Event::InlineMath(text)
            | Event::DisplayMath(text)
            | Event::FootnoteReference(text) => self.text(&text, self.style()),
            Event::SoftBreak => self.text(" ", self.style()),
            Event::HardBreak => {
                let piece = std::mem::take(&mut self.inline);
                self.segments.push(piece);
            }
            Event::Rule => {
                self.begin_block(false);
                let first = self.prefix(true);
                let used: usize = first.iter().map(Span::width).sum();
                let mut line = Line::new(first);
                line.spans.push(Span::styled(
                    "─".repeat(self.width.saturating_sub(used).max(1)),
                    rule_style(),
                ));
                self.out.push(line);
            }
            Event::TaskListMarker(checked) => self.task_marker(checked),
        }
    }

    fn start_tag(&mut self, tag: Tag<'_>, offset: usize) {
        match tag {
            Tag::Paragraph => self.begin_block(false),
            Tag::Heading { level, .. } => {
                self.begin_block(false);
                self.styles.push(heading_style(level));
            }
            Tag::BlockQuote(_) => {
                self.begin_block(false);
                self.stack.push(Container::Quote { started: false });
                self.styles
                    .push(Style::new().add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.begin_block(false);
                let highlighter = match kind {
                    CodeBlockKind::Fenced(info) => CodeHighlighter::new(&info),
                    CodeBlockKind::Indented => CodeHighlighter::plain(),
                };
                self.code = Some((highlighter, String::new()));
            }
            Tag::HtmlBlock => {
                self.begin_block(false);
                self.html = Some(String::new());
            }
            Tag::List(first) => {
                let first_element = self.stack.is_empty() && !self.root_started;
                self.begin_block(true);
                let first = match (self.start, first) {
                    (Some(n), Some(_)) if first_element => Some(n),
                    _ => first,
                };
                let level = self
                    .stack
                    .iter()
                    .filter(|c| matches!(c, Container::List { .. }))
                    .count();
                let on_path = self
                    .stack
                    .iter()
                    .all(|c| !matches!(c, Container::Quote { .. }));
                self.stack.push(Container::List {
                    next: first.unwrap_or(1),
                    ordered: first.is_some(),
                    kind: None,
                    level,
                    on_path,
                });
            }
            Tag::Item => self.start_item(offset),
            Tag::Table(aligns) => {
                self.begin_block(false);
                self.table = Some(Table {
                    aligns,
                    rows: Vec::new(),
                    header_rows: 0,
                    row: Vec::new(),
                    in_head: false,
                });
            }
            Tag::TableHead => {
                if let Some(t) = &mut self.table {
                    t.in_head = true;
                    t.row.clear();
                }
            }
            Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.row.clear();
                }
            }
            Tag::TableCell => {
                self.segments.clear();
                self.inline.clear();
            }
            Tag::Emphasis => self
                .styles
                .push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link {
                link_type,
                dest_url,
                ..
            } => {
                let target = if link_type == LinkType::Email && !dest_url.starts_with("mailto:") {
                    format!("mailto:{dest_url}")
                } else {
                    dest_url.to_string()
                };
                self.links.push(target);
                self.styles.push(link_style());
            }
            Tag::Image { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.styles.push(link_style());
                self.text("[image: ", self.style());
            }
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript
            | Tag::MetadataBlock(_) => {}
        }
    }

    fn end_tag(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush_inline(),
            TagEnd::Heading(_) => {
                self.flush_inline();
                self.styles.pop();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.styles.pop();
                self.stack.pop();
            }
            TagEnd::CodeBlock => {
                if let Some((mut highlighter, code)) = self.code.take() {
                    let code = code.strip_suffix('\n').unwrap_or(&code);
                    for line in code.split('\n') {
                        let spans = highlighter.line(line);
                        let first = self.code_prefix(true);
                        let rest = self.code_prefix(false);
                        self.out.extend(code_rows(spans, &first, &rest, self.width));
                    }
                }
            }
            TagEnd::HtmlBlock => {
                if let Some(html) = self.html.take() {
                    let html = html.strip_suffix('\n').unwrap_or(&html);
                    for line in html.split('\n') {
                        self.inline.push(Span::plain(line));
                        self.flush_inline();
                    }
                }
            }
            TagEnd::List(_) => {
                self.flush_inline();
                if let Some(Container::List { next, kind, .. }) = self.stack.pop() {
                    if self.stack.is_empty() {
                        self.last_tail = kind.map(|kind| ListTail { kind, next });
                    }
                }
            }
            TagEnd::Item => self.end_item(),
            TagEnd::Table => {
                self.flush_inline();
                if let Some(table) = self.table.take() {
                    self.write_table(table);
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                    t.header_rows = t.rows.len();
                    t.in_head = false;
                }
            }
            TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            TagEnd::TableCell => {
                let mut cell: Vec<Span> = Vec::new();
                for piece in self.segments.drain(..) {
                    cell.extend(piece);
                    cell.push(Span::plain(" "));
                }
                cell.append(&mut self.inline);
                if let Some(t) = &mut self.table {
                    if t.in_head {
                        for span in &mut cell {
                            span.style = span.style.add_modifier(Modifier::BOLD);
                        }
                    }
                    t.row.push(cell);
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                self.links.pop();
            }
            TagEnd::Image => {
                self.text("]", self.style());
                self.styles.pop();
                self.links.pop();
            }
            TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::MetadataBlock(_) => {}
        }
    }

    /// Inline text in `style` (and the open link, if any).
    fn text(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        let text = if text.contains(['\n', '\r']) {
            text.replace(['\n', '\r'], " ")
        } else {
            text.to_string()
        };
        self.inline.push(Span {
            text,
            style,
            link: self.links.last().cloned(),
        });
    }

    /// Before a block element: writes out the text gathered (a tight
    /// item's, before its nested list) and the blank line that separates
    /// it from the block before it in the same quote or at the top.
    fn begin_block(&mut self, is_list: bool) {
        self.flush_inline();
        match self.stack.last_mut() {
            None => {
                if !self.root_started {
                    self.starts_with_list = is_list;
                }
                self.ends_with_list = is_list;
                if self.root_started {
                    self.out.push(Line::blank());
                }
                self.root_started = true;
            }
            Some(Container::Quote { started }) => {
                let gap = *started;
                *started = true;
                if gap {
                    let mut prefix = Line::new(self.prefix(false));
                    trim_end(&mut prefix);
                    self.out.push(prefix);
                }
            }
            Some(_) => {}
        }
    }

    /// The prefix of the next line: each quote's bar, each item's marker
    /// (on the first line written in the item, `first`) or the marker's
    /// width in spaces; cut from the left to leave room for text.
    fn prefix(&mut self, first: bool) -> Vec<Span> {
        let mut spans: Vec<Span> = Vec::new();
        for c in &mut self.stack {
            match c {
                Container::Quote { .. } => {
                    spans.push(Span::styled("│ ", Style::new().add_modifier(Modifier::DIM)))
                }
                Container::Item { marker, shown } => {
                    if first && !*shown {
                        *shown = true;
                        spans.push(Span::plain(marker.clone()));
                    } else {
                        spans.push(Span::plain(" ".repeat(display_width(marker))));
                    }
                }
                Container::List { .. } => {}
            }
        }
        clamp_prefix(spans, self.width.saturating_sub(4))
    }

    /// [`Writer::prefix`] and the code gutter, cut to leave room for code.
    fn code_prefix(&mut self, first: bool) -> Vec<Span> {
        let mut spans = self.prefix(first);
        spans.push(Span::plain(CODE_GUTTER));
        clamp_prefix(spans, self.width.saturating_sub(4))
    }

    /// Writes the gathered inline text, word-wrapped behind the prefix.
    fn flush_inline(&mut self) {
        if self.inline.is_empty() && self.segments.is_empty() {
            return;
        }
        let mut segments = std::mem::take(&mut self.segments);
        segments.push(std::mem::take(&mut self.inline));
        let first = self.prefix(true);
        let rest = self.prefix(false);
        for (i, segment) in segments.iter().enumerate() {
            let head = if i == 0 { &first } else { &rest };
            for mut line in wrap(segment, self.width, head, &rest) {
                trim_end(&mut line);
                self.out.push(line);
            }
        }
    }

    fn start_item(&mut self, offset: usize) {
        self.flush_inline();
        let marker_at = self.src.get(offset..).map_or(offset, |rest| {
            offset + (rest.len() - rest.trim_start_matches(' ').len())
        });
        let source = self
            .src
            .get(marker_at..)
            .and_then(|rest| rest.split('\n').next())
            .and_then(list_marker);
        let Some(Container::List {
            next,
            ordered,
            kind,
            level,
            on_path,
        }) = self.stack.last_mut()
        else {
            return;
        };
        let number = *next;
        let (marker, this_kind) = if *ordered {
            let delim = match source.map(|m| m.kind) {
                Some(MarkerKind::Ordered(d)) => d,
                _ => '.',
            };
            *next = next.saturating_add(1);
            (format!("{number}{delim} "), MarkerKind::Ordered(delim))
        } else {
            let c = match source.map(|m| m.kind) {
                Some(MarkerKind::Bullet(c)) => c,
                _ => '-',
            };
            (
                BULLETS[*level % BULLETS.len()].to_string(),
                MarkerKind::Bullet(c),
            )
        };
        let list_kind = *kind.get_or_insert(this_kind);
        let list_tail = ListTail {
            kind: list_kind,
            next: *next,
        };
        let on_path = *on_path;
        self.stack.push(Container::Item {
            marker,
            shown: false,
        });
        if on_path {
            let line_start = self
                .src
                .get(..marker_at)
                .and_then(|s| s.rfind('\n'))
                .map_or(0, |i| i + 1);
            let column = self
                .src
                .get(line_start..marker_at)
                .map_or(0, |s| s.chars().count());
            let item = PathItem {
                src_col: column + source.map_or(2, |m| m.content_col),
                indent: self.content_indent(),
                list_tail,
            };
            self.items.push(item);
            self.path = self.items.clone();
        }
    }

    /// The rendered column where the innermost item's content starts.
    fn content_indent(&self) -> usize {
        let width: usize = self
            .stack
            .iter()
            .map(|c| match c {
                Container::Quote { .. } => 2,
                Container::Item { marker, .. } => display_width(marker),
                Container::List { .. } => 0,
            })
            .sum();
        width.min(self.width.saturating_sub(4))
    }

    fn end_item(&mut self) {
        self.flush_inline();
        if let Some(Container::Item { shown: false, .. }) = self.stack.last() {
            // An empty item: its marker alone.
            let mut line = Line::new(self.prefix(true));
            trim_end(&mut line);
            self.out.push(line);
        }
        if let Some(Container::Item { .. }) = self.stack.pop() {
            let on_path = matches!(
                self.stack.last(),
                Some(Container::List { on_path: true, .. })
            );
            if on_path {
                self.items.pop();
            }
        }
    }

    /// `[ ]`/`[x]` at an item's start: a box instead of the bullet (after
    /// the number of an ordered item).
    fn task_marker(&mut self, checked: bool) {
        let mark = if checked { "☑ " } else { "☐ " };
        let on_path = matches!(
            self.stack.iter().rev().nth(1),
            Some(Container::List { on_path: true, .. })
        );
        if let Some(Container::Item {
            marker,
            shown: false,
        }) = self.stack.last_mut()
        {
            if BULLETS.contains(&marker.as_str()) {
                *marker = mark.to_string();
            } else {
                marker.push_str(mark);
            }
        } else {
            self.text(mark, self.style());
            return;
        }
        if !on_path {
            return;
        }
        let indent = self.content_indent();
        if let (Some(item), Some(last)) = (self.items.last_mut(), self.path.last_mut()) {
            item.indent = indent;
            last.indent = indent;
        }
    }

    fn write_table(&mut self, table: Table) {
        let ncols = table
            .rows
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .max(table.aligns.len());
        if ncols == 0 || table.rows.is_empty() {
            return;
        }
        let cell_width = |cell: &Vec<Span>| cell.iter().map(Span::width).sum::<usize>();
        let mut natural = vec![1usize; ncols];
        for row in &table.rows {
            for (c, cell) in row.iter().enumerate() {
                if let Some(n) = natural.get_mut(c) {
                    *n = (*n).max(cell_width(cell));
                }
            }
        }
        let first = self.prefix(true);
        let rest = self.prefix(false);
        let used = first
            .iter()
            .map(Span::width)
            .sum::<usize>()
            .max(rest.iter().map(Span::width).sum());
        let room = self.width.saturating_sub(used);
        let overhead = 3 * ncols + 1;
        let min: Vec<usize> = natural.iter().map(|n| (*n).min(4)).collect();
        let Some(budget) = room
            .checked_sub(overhead)
            .filter(|b| *b >= min.iter().sum::<usize>())
        else {
            self.write_table_as_rows(table, first, rest);
            return;
        };
        let widths = column_widths(&natural, &min, budget);
        let border = rule_style();
        let rule = |left: &str, mid: &str, right: &str| -> Span {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            Span::styled(format!("{left}{}{right}", parts.join(mid)), border)
        };
        let mut lines: Vec<Line> = vec![Line::new(vec![rule("┌", "┬", "┐")])];
        for (r, row) in table.rows.iter().enumerate() {
            if r > 0 && r == table.header_rows {
                lines.push(Line::new(vec![rule("├", "┼", "┤")]));
            }
            let cells: Vec<Vec<Line>> = (0..ncols)
                .map(|c| {
                    let width = widths.get(c).copied().unwrap_or(1);
                    let spans = row.get(c).map(Vec::as_slice).unwrap_or(&[]);
                    wrap(spans, width, &[], &[])
                        .into_iter()
                        .flat_map(|l| fit(l, width))
                        .collect()
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for i in 0..height {
                let mut line = Line::new(vec![Span::styled("│ ", border)]);
                for (c, cell) in cells.iter().enumerate() {
                    let width = widths.get(c).copied().unwrap_or(1);
                    let content = cell.get(i).cloned().unwrap_or_default();
                    let pad = width.saturating_sub(content.width());
                    let align = table.aligns.get(c).copied().unwrap_or(Alignment::None);
                    let (left, right) = match align {
                        Alignment::Right => (pad, 0),
                        Alignment::Center => (pad / 2, pad - pad / 2),
                        Alignment::Left | Alignment::None => (0, pad),
                    };
                    if left > 0 {
                        line.spans.push(Span::plain(" ".repeat(left)));
                    }
                    line.spans.extend(content.spans);
                    if right > 0 {
                        line.spans.push(Span::plain(" ".repeat(right)));
                    }
                    let sep = if c + 1 == ncols { " │" } else { " │ " };
                    line.spans.push(Span::styled(sep, border));
                }
                lines.push(line);
            }
        }
        lines.push(Line::new(vec![rule("└", "┴", "┘")]));
        for (i, line) in lines.into_iter().enumerate() {
            let mut spans = if i == 0 { first.clone() } else { rest.clone() };
            spans.extend(line.spans);
            self.out.push(Line::new(spans));
        }
    }

    /// A table too wide for any column layout: each row as one wrapped
    /// paragraph, its cells separated by `│`.
    fn write_table_as_rows(&mut self, table: Table, first: Vec<Span>, rest: Vec<Span>) {
        for (r, row) in table.rows.into_iter().enumerate() {
            let mut spans: Vec<Span> = Vec::new();
            for (c, cell) in row.into_iter().enumerate() {
                if c > 0 {
                    spans.push(Span::styled(" │ ", rule_style()));
                }
                spans.extend(cell);
            }
            let head = if r == 0 { &first } else { &rest };
            for mut line in wrap(&spans, self.width, head, &rest) {
                trim_end(&mut line);
                self.out.push(line);
            }
        }
    }
}

/// Column widths within `budget` (at least `min`, at most `natural`):
/// columns that fit whole get their natural width, the others share the
/// rest evenly.
fn column_widths(natural: &[usize], min: &[usize], budget: usize) -> Vec<usize> {
    let mut widths = min.to_vec();
    let mut left = budget.saturating_sub(widths.iter().sum());
    loop {
        let wanting: Vec<usize> = (0..widths.len())
            .filter(|&c| widths[c] < natural[c])
            .collect();
        if wanting.is_empty() || left == 0 {
            break;
        }
        let share = (left / wanting.len()).max(1);
        for c in wanting {
            let add = share.min(natural[c] - widths[c]).min(left);
            widths[c] += add;
            left -= add;
            if left == 0 {
                break;
            }
        }
    }
    widths
}

/// A code line's spans cut into rows of at most `width` columns, behind
/// `first` (first row) and `rest` (the others); an empty line is the
/// prefix alone (trailing spaces dropped).
fn code_rows(spans: Vec<Span>, first: &[Span], rest: &[Span], width: usize) -> Vec<Line> {
    let used = first
        .iter()
        .map(Span::width)
        .sum::<usize>()
        .max(rest.iter().map(Span::width).sum());
    let room = width.saturating_sub(used).max(1);
    let rows = hard_wrap(spans, room);
    let mut lines = Vec::with_capacity(rows.len().max(1));
    if rows.is_empty() {
        let mut line = Line::new(first.to_vec());
        trim_end(&mut line);
        lines.push(line);
        return lines;
    }
    for (i, row) in rows.into_iter().enumerate() {
        let mut spans = if i == 0 {
            first.to_vec()
        } else {
            rest.to_vec()
        };
        spans.extend(row);
        lines.push(Line::new(spans));
    }
    lines
}

/// `spans` cut into rows of at most `width` columns (at least one
/// character a row, so a character wider than `width` gets a row alone).
fn hard_wrap(spans: Vec<Span>, width: usize) -> Vec<Vec<Span>> {
    let mut rows: Vec<Vec<Span>> = Vec::new();
    let mut row: Vec<Span> = Vec::new();
    let mut used = 0;
    let mut buf = [0u8; 4];
    for span in spans {
        if span.text.is_empty() {
            continue;
        }
        if used + span.width() <= width {
            used += span.width();
            row.push(span);
            continue;
        }
        let mut piece = String::new();
        for c in span.text.chars() {
            let w = display_width(c.encode_utf8(&mut buf));
            if used + w > width && used > 0 {
                if !piece.is_empty() {
                    row.push(Span {
                        text: std::mem::take(&mut piece),
                        ..span.clone()
                    });
                }
                rows.push(std::mem::take(&mut row));
                used = 0;
            }
            piece.push(c);
            used += w;
        }
        if !piece.is_empty() {
            row.push(Span {
                text: piece,
                ..span
            });
        }
    }
    if !row.is_empty() {
        rows.push(row);
    }
    rows
}

/// `line` cut into lines of at most `width` columns (a safety net for
/// table cells: [`wrap`] lets a character wider than its row through).
fn fit(line: Line, width: usize) -> Vec<Line> {
    if line.width() <= width {
        return vec![line];
    }
    hard_wrap(line.spans, width.max(1))
        .into_iter()
        .map(Line::new)
        .collect()
}

/// `spans` cut from the left to at most `budget` columns.
fn clamp_prefix(mut spans: Vec<Span>, budget: usize) -> Vec<Span> {
    let mut excess = spans
        .iter()
        .map(Span::width)
        .sum::<usize>()
        .saturating_sub(budget);
    if excess == 0 {
        return spans;
    }
    for span in &mut spans {
        while excess > 0 {
            let Some(c) = span.text.chars().next() else {
                break;
            };
            let mut buf = [0u8; 4];
            excess = excess.saturating_sub(display_width(c.encode_utf8(&mut buf)).max(1));
            span.text.drain(..c.len_utf8());
        }
    }
    spans.retain(|s| !s.text.is_empty());
    spans
}

/// `line` without trailing spaces (and without spans left empty).
fn trim_end(line: &mut Line) {
    while let Some(last) = line.spans.last_mut() {
        let len = last.text.trim_end_matches(' ').len();
        last.text.truncate(len);
        if !last.text.is_empty() {
            break;
        }
        line.spans.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    fn show(markdown: &str, width: usize) -> Vec<String> {
        texts(&render(markdown, width))
    }

    /// The span of `line` whose text contains `needle`.
    fn span<'l>(line: &'l Line, needle: &str) -> &'l Span {
        line.spans
            .iter()
            .find(|s| s.text.contains(needle))
            .unwrap_or_else(|| panic!("no span with {needle:?} in {line:?}"))
    }

    fn has(style: Style, m: Modifier) -> bool {
        style.add_modifier.contains(m)
    }

    #[test]
    fn headings_lose_their_hashes_and_are_bold() {
        let lines = render("# Title\n\n## Sub\n\n### Third\n\ntext", 40);
        assert_eq!(texts(&lines), ["Title", "", "Sub", "", "Third", "", "text"]);
        let h1 = span(&lines[0], "Title").style;
        assert!(has(h1, Modifier::BOLD) && has(h1, Modifier::UNDERLINED));
        assert!(h1.fg.is_some());
        let h2 = span(&lines[2], "Sub").style;
        assert!(has(h2, Modifier::BOLD) && h2.fg.is_some());
        assert!(has(span(&lines[4], "Third").style, Modifier::BOLD));
        assert_eq!(span(&lines[6], "text").style, Style::new());
    }

    #[test]
    fn inline_styles_drop_their_markup() {
        let lines = render("a **strong** b *em* c ~~gone~~ d `code`", 80);
        assert_eq!(texts(&lines), ["a strong b em c gone d code"]);
        let l = &lines[0];
        assert!(has(span(l, "strong").style, Modifier::BOLD));
        assert!(has(span(l, "em").style, Modifier::ITALIC));
        assert!(has(span(l, "gone").style, Modifier::CROSSED_OUT));
        assert!(span(l, "code").style.fg.is_some());
        assert_eq!(span(l, "a ").style, Style::new());
        let nested = render("***both***", 80);
        let both = span(&nested[0], "both").style;
        assert!(has(both, Modifier::BOLD) && has(both, Modifier::ITALIC));
    }

    #[test]
    fn links_and_images_carry_their_targets() {
        let lines = render(
            "see [the docs](https://example.com/d) and ![a cat](cat.png) or <https://x.org>",
            80,
        );
        let l = &lines[0];
        assert_eq!(l.text(), "see the docs and [image: a cat] or https://x.org");
        let link = span(l, "the docs");
        assert_eq!(link.link.as_deref(), Some("https://example.com/d"));
        assert!(has(link.style, Modifier::UNDERLINED));
        assert_eq!(span(l, "a cat").link.as_deref(), Some("cat.png"));
        assert_eq!(span(l, "x.org").link.as_deref(), Some("https://x.org"));
        assert_eq!(span(l, "see").link, None);
    }

    #[test]
    fn paragraphs_wrap_at_the_width_with_one_blank_between() {
        let lines = show(
            "\n\nthe quick brown fox jumps over the lazy dog\nand a soft break\n\n\n\nsecond  \nhard\n\n",
            20,
        );
        assert_eq!(
            lines,
            [
                "the quick brown fox",
                "jumps over the lazy",
                "dog and a soft break",
                "",
                "second",
                "hard"
            ]
        );
    }

    #[test]
    fn bullet_lists_nest_and_indent_their_continuations() {
        let lines = show(
            "- one\n- two is long enough to wrap\n  - nested item\n    - deeper\n- three",
            24,
        );
        assert_eq!(
            lines,
            [
                "• one",
                "• two is long enough to",
                "  wrap",
                "  ◦ nested item",
                "    ▪ deeper",
                "• three"
            ]
        );
    }

    #[test]
    fn ordered_lists_keep_their_numbers() {
        assert_eq!(show("3. a\n4. b\n5. c", 40), ["3. a", "4. b", "5. c"]);
        assert_eq!(show("1) x\n1) y", 40), ["1) x", "2) y"]);
        // A loose list (blank lines between items) keeps counting, items
        // apart; a list that wraps indents under its text.
        assert_eq!(
            show("1. a\n\n1. b\n\n1. c is longer than the row", 16),
            ["1. a", "", "2. b", "", "3. c is longer", "   than the row"]
        );
        // A list after a heading starts afresh.
        assert_eq!(
            show("1. a\n\n# H\n\n1. b", 40),
            ["1. a", "", "H", "", "1. b"]
        );
    }

    #[test]
    fn task_items_show_boxes() {
        assert_eq!(
            show("- [ ] to do\n- [x] done\n1. [x] first", 40),
            ["☐ to do", "☑ done", "", "1. ☑ first"]
        );
    }

    #[test]
    fn a_loose_item_holds_its_paragraphs_and_code() {
        let md =
            "1. **Build**\n\n   Run this:\n\n   ```sh\n   cargo build\n   ```\n\n2. Test\n\nafter";
        let lines = render(md, 40);
        assert_eq!(
            texts(&lines),
            [
                "1. Build",
                "",
                "   Run this:",
                "",
                "     cargo build",
                "",
                "2. Test",
                "",
                "after"
            ]
        );
        assert!(lines[4].spans.iter().any(|s| s.style.fg.is_some()));
        // A fence right under a tight item, no blank line.
        assert_eq!(
            show("- run:\n  ```\n  ls\n  ```\n- next", 40),
            ["• run:", "", "    ls", "", "• next"]
        );
    }

    #[test]
    fn block_quotes_have_a_bar_and_italics() {
        let lines = render("> quoted text that wraps here\n>\n> again", 20);
        assert_eq!(
            texts(&lines),
            ["│ quoted text that", "│ wraps here", "│", "│ again"]
        );
        assert!(has(span(&lines[0], "quoted").style, Modifier::ITALIC));
        let nested = show("> a\n> > b", 40);
        assert_eq!(nested, ["│ a", "│", "│ │ b"]);
    }

    #[test]
    fn tables_line_up_and_shrink_to_fit() {
        let md = "| Name | Qty |\n|:-----|----:|\n| apple | 3 |\n| kiwi | 12 |";
        let lines = render(md, 80);
        assert_eq!(
            texts(&lines),
            [
                "┌───────┬─────┐",
                "│ Name  │ Qty │",
                "├───────┼─────┤",
                "│ apple │   3 │",
                "│ kiwi  │  12 │",
                "└───────┴─────┘"
            ]
        );
        assert!(has(span(&lines[1], "Name").style, Modifier::BOLD));
        assert!(!has(span(&lines[3], "apple").style, Modifier::BOLD));

        let wide = "| a | b |\n|---|---|\n| short | a much longer cell that has to wrap inside the table |";
        let lines = render(wide, 30);
        let widths: Vec<usize> = lines.iter().map(Line::width).collect();
        assert!(
            widths.iter().all(|w| *w == widths[0] && *w <= 30),
            "{:#?}",
            texts(&lines)
        );
        assert!(lines.len() > 5, "the long cell wraps: {:#?}", texts(&lines));
        let all = texts(&lines).join(" ");
        for word in ["much", "longer", "wrap", "inside", "table"] {
            assert!(all.contains(word), "{word} lost: {all}");
        }
    }

    #[test]
    fn a_table_too_narrow_for_columns_becomes_rows() {
        let md = "| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| 1 | 2 | 3 | 4 | 5 | 6 |";
        let lines = render(md, 22);
        assert_eq!(
            texts(&lines),
            ["a │ b │ c │ d │ e │ f", "1 │ 2 │ 3 │ 4 │ 5 │ 6"]
        );
    }

    #[test]
    fn rules_span_the_width() {
        assert_eq!(
            show("a\n\n---\n\nb", 12),
            ["a", "", "────────────", "", "b"]
        );
        assert_eq!(show("* * *", 5), ["─────"]);
    }

    #[test]
    fn code_is_highlighted_and_cut_not_wrapped() {
        let md = "```rust\nfn main() { println!(\"a long string that goes past the edge\"); }\n```";
        let lines = render(md, 30);
        assert!(lines.iter().all(|l| l.width() <= 30));
        assert!(lines.iter().all(|l| l.text().starts_with("  ")));
        let joined: String = lines.iter().map(|l| l.text()[2..].to_string()).collect();
        assert_eq!(
            joined,
            "fn main() { println!(\"a long string that goes past the edge\"); }"
        );
        assert_eq!(lines[0].width(), 30, "filled to the edge, not word-wrapped");
        let fn_span = span(&lines[0], "fn");
        assert!(fn_span.style.fg.is_some(), "{:?}", lines[0]);

        let plain = render("```klingon\nqapla' batlh\n```\n\n    indented code", 40);
        assert_eq!(texts(&plain), ["  qapla' batlh", "", "  indented code"]);
        assert!(plain
            .iter()
            .flat_map(|l| &l.spans)
            .all(|s| s.style.fg.is_none()));
    }

    #[test]
    fn a_fence_interrupts_a_paragraph_and_keeps_blank_lines() {
        assert_eq!(
            show("Here:\n```\na\n\nb\n```\nafter", 40),
            ["Here:", "", "  a", "", "  b", "", "after"]
        );
        // An unclosed fence runs to the end; a longer fence closes it,
        // a shorter one is code.
        assert_eq!(show("````\n```\n`````", 40), ["  ```"]);
        assert_eq!(show("~~~\nx", 40), ["  x"]);
    }

    #[test]
    fn html_is_shown_as_typed() {
        assert_eq!(
            show("a <b>bold</b> c\n\n<div>\nblock\n</div>", 40),
            ["a <b>bold</b> c", "", "<div>", "block", "</div>"]
        );
    }

    #[test]
    fn deep_nesting_leaves_room_for_text() {
        let mut md = String::new();
        for depth in 0..30 {
            md.push_str(&"  ".repeat(depth));
            md.push_str("- item text here\n");
        }
        md.push_str(&"> ".repeat(40));
        md.push_str("deep quote\n\n");
        // Code in a deep quote: tabs are 4 columns each.
        md.push_str(&"> ".repeat(30));
        md.push_str("```\n");
        md.push_str(&"> ".repeat(30));
        md.push_str("\t\tx\ty\t\n");
        for width in [20, 30, 80] {
            for line in render(&md, width) {
                assert!(line.width() <= width, "{:?} at {width}", line.text());
            }
        }
    }

    // --- streaming ---

    #[test]
    fn blocks_settle_at_blank_lines_and_pending_shows_the_open_one() {
        let mut s = MarkdownStream::new(40);
        assert!(s.push("Hello ").is_empty());
        assert_eq!(texts(s.pending()), ["Hello"]);
        assert!(s.push("world\nmore").is_empty());
        assert_eq!(texts(s.pending()), ["Hello world more"]);
        assert_eq!(texts(&s.push("\n\nNext")), ["Hello world more"]);
        // The open block comes with the blank line that will separate it.
        assert_eq!(texts(s.pending()), ["", "Next"]);
        assert_eq!(texts(&s.finish()), ["", "Next"]);
        assert!(s.pending().is_empty());
    }

    #[test]
    fn headings_and_list_items_settle_without_waiting_for_a_blank() {
        let mut s = MarkdownStream::new(40);
        assert_eq!(texts(&s.push("## Plan\n")), ["Plan"]);
        assert!(s.push("- one\n").is_empty());
        assert_eq!(texts(&s.push("- two\n")), ["", "• one"]);
        assert_eq!(texts(&s.push("- three\n")), ["• two"]);
        assert_eq!(texts(&s.finish()), ["• three"]);
    }

    #[test]
    fn code_lines_settle_one_by_one() {
        let mut s = MarkdownStream::new(80);
        assert!(s.push("```python\n").is_empty());
        let mut settled = 0;
        for i in 0..500 {
            let line = format!("x_{i} = {i}  # comment {i}\n");
            // In pieces: nothing settles until the newline.
            let (a, b) = line.split_at(5);
            assert!(s.push(a).is_empty());
            assert_eq!(texts(s.pending()), [format!("  {a}")]);
            let done = s.push(b);
            assert_eq!(texts(&done), [format!("  x_{i} = {i}  # comment {i}")]);
            assert!(done[0].spans.iter().any(|s| s.style.fg.is_some()));
            settled += done.len();
        }
        assert_eq!(settled, 500);
        assert!(s.push("```\n").is_empty());
        assert!(s.finish().is_empty());
    }

    #[test]
    fn a_partial_code_line_is_plain_until_complete() {
        let mut s = MarkdownStream::new(80);
        assert_eq!(texts(&s.push("Code:\n```rust\n")), ["Code:"]);
        assert!(s.pending().is_empty());
        s.push("/* open comment\nstill");
        let pending = s.pending().to_vec();
        assert_eq!(texts(&pending), ["  still"]);
        assert_eq!(span(&pending[0], "still").style, Style::new());
        // Once complete, coloured as the comment it is inside.
        let settled = s.push(" comment\n");
        assert_eq!(texts(&settled), ["  still comment"]);
        assert!(span(&settled[0], "still").style.fg.is_some());
        // A closing fence not yet ended by its newline shows nothing.
        s.push("```");
        assert!(s.pending().is_empty());
        let mut t = MarkdownStream::new(80);
        assert_eq!(texts(&t.push("text\n```py\nx")), ["text"]);
        assert_eq!(texts(t.pending()), ["", "  x"]);
    }

    #[test]
    fn width_changes_apply_to_what_comes_next() {
        let mut s = MarkdownStream::new(40);
        let first = s.push("alpha beta gamma delta\n\n");
        assert_eq!(texts(&first), ["alpha beta gamma delta"]);
        s.set_width(12);
        s.push("alpha beta gamma delta");
        assert_eq!(texts(s.pending()), ["", "alpha beta", "gamma delta"]);
        assert_eq!(s.width(), 12);
    }

    /// Every line's text, settled as pushed, plus finish; and checks on
    /// the way that settled + pending equals the render of the text so
    /// far (the live area never shows something else than the end will).
    fn stream(chunks: &[&str], width: usize) -> Vec<Line> {
        let mut s = MarkdownStream::new(width);
        let mut settled = Vec::new();
        let mut seen = String::new();
        for chunk in chunks {
            settled.extend(s.push(chunk));
            seen.push_str(chunk);
            let mut now = settled.clone();
            now.extend(s.pending().iter().cloned());
            assert_eq!(texts(&now), texts(&render(&seen, width)), "after {seen:?}");
        }
        settled.extend(s.finish());
        settled
    }

    fn split_at_chars(text: &str, cuts: &[usize]) -> Vec<String> {
        let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let mut at: Vec<usize> = cuts
            .iter()
            .filter_map(|c| bounds.get(c % bounds.len().max(1)).copied())
            .collect();
        at.sort_unstable();
        at.dedup();
        let mut out = Vec::new();
        let mut from = 0;
        for i in at {
            out.push(text[from..i].to_string());
            from = i;
        }
        out.push(text[from..].to_string());
        out
    }

    const FRAGMENTS: &[&str] = &[
        "",
        "",
        "# Heading",
        "## Sub heading with `code`",
        "Some **bold** and *em* text that goes on for a while, long enough to wrap.",
        "more text [link](https://example.com) here",
        "- item",
        "- item with ~~strike~~",
        "  - nested item",
        "    continuation of nested",
        "* star item",
        "1. first",
        "2. second",
        "7) seventh",
        "   indented under ordered",
        "- [ ] task",
        "- [x] done task",
        "> quote line",
        "> > nested quote",
        ">",
        "```rust",
        "```",
        "~~~",
        "  ```py",
        "> ```",
        ">     \tindented in a quote",
        "fn main() { let x = \"s\"; }",
        "    indented code",
        "| a | b |",
        "|---|:-:|",
        "| 1 | two words |",
        "---",
        "***",
        "Setext",
        "===",
        "<div>",
        "</div>",
        "line with hard break  ",
        "\tTabbed",
        "![img](x.png)",
        "[ref]: https://example.com",
        "\r",
    ];

    fn markdownish() -> impl Strategy<Value = String> {
        (
            proptest::collection::vec(proptest::sample::select(FRAGMENTS), 0..40),
            any::<bool>(),
        )
            .prop_map(|(lines, newline)| {
                let mut text = lines.join("\n");
                if newline {
                    text.push('\n');
                }
                text
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn streaming_equals_rendering_whole(
            text in markdownish(),
            cuts in proptest::collection::vec(any::<usize>(), 0..30),
            width in 20usize..120,
        ) {
            let chunks = split_at_chars(&text, &cuts);
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let streamed = stream(&chunks, width);
            let whole = render(&text, width);
            prop_assert_eq!(&streamed, &whole);
            for line in &whole {
                prop_assert!(line.width() <= width, "{:?} wider than {}", line.text(), width);
            }
        }

        #[test]
        fn any_input_renders_without_panics_within_the_width(
            text in prop_oneof![
                any::<String>(),
                "[-*+#>`~|\\[\\]()!_=:. \n\t0-9a-zé日\u{301}\u{7}]{0,300}",
            ],
            cuts in proptest::collection::vec(any::<usize>(), 0..20),
            width in 0usize..100,
        ) {
            let chunks = split_at_chars(&text, &cuts);
            let mut s = MarkdownStream::new(width);
            let mut lines = Vec::new();
            for chunk in &chunks {
                lines.extend(s.push(chunk));
                let pending = s.pending().to_vec();
                if width >= 20 {
                    for line in &pending {
                        prop_assert!(line.width() <= width, "{:?} wider than {}", line.text(), width);
                    }
                }
            }
            lines.extend(s.finish());
            prop_assert_eq!(&lines, &render(&text, width));
            if width >= 20 {
                for line in &lines {
                    prop_assert!(line.width() <= width, "{:?} wider than {}", line.text(), width);
                }
            }
        }
    }
}
