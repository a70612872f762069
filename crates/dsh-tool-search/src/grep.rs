//! The `grep` search: a parallel walk, every file searched by
//! grep-searcher, and a bounded set of the newest files with matches.
//!
//! No file can contribute more than [`MAX_GREP_MATCHES`] lines to the
//! answer, so a file's search stops one match after that (the extra one
//! says "there are more"). The kept files are the newest ones holding the
//! first [`MAX_GREP_MATCHES`] matches in output order; older files are
//! dropped as newer ones arrive, so memory stays bounded however many
//! matches there are.
//!
//! Each file is searched streaming (no memory map, never the whole file in
//! memory) with a line buffer of at most [`GREP_LINE_BUFFER_BYTES`]; a file
//! with a longer line keeps the matches found before it and is counted in
//! the note `(N file(s) searched only up to a line longer than 8 MiB)`.
//! Only regular files are opened, and without blocking (see
//! `crate::regular`): a FIFO, socket or device is never opened.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use dsh_kernel::sync::lock;
use dsh_tools::ToolError;
use globset::GlobMatcher;
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, MmapChoice, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use crate::walk::{self, Target};
use crate::{GREP_LINE_BUFFER_BYTES, MAX_GREP_LINE_BYTES, MAX_GREP_MATCHES};

/// Compiles a Rust regex the way ripgrep does for line-oriented search
/// (a match never spans a line terminator).
///
/// # Errors
/// `INVALID_ARGS` naming the regex error.
pub(crate) fn compile(pattern: &str) -> Result<RegexMatcher, ToolError> {
    // Parse first: grep-regex wraps the pattern before parsing, so its
    // errors quote and point into the wrapped text, not the model's.
    if let Err(e) = regex_syntax::Parser::new().parse(pattern) {
        return Err(ToolError::invalid_args(vec![format!(
            "\"pattern\" is not a valid regex: {e}"
        )]));
    }
    grep_regex::RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| {
            ToolError::invalid_args(vec![format!("\"pattern\" is not a valid regex: {e}")])
        })
}

/// The name filter of `include`: a glob without `/` is matched against the
/// file name, one with `/` against the path relative to the search path.
pub(crate) struct Include {
    glob: GlobMatcher,
    whole_path: bool,
}

impl Include {
    /// # Errors
    /// `INVALID_ARGS` naming the glob error.
    pub(crate) fn new(pattern: &str) -> Result<Self, ToolError> {
        Ok(Include {
            glob: crate::glob::compile("include", pattern)?,
            whole_path: pattern.contains('/'),
        })
    }
}

/// One match: line number and the (cut) text.
type Line = (u64, String);

/// The line text as shown: at most [`MAX_GREP_LINE_BYTES`] bytes of UTF-8
/// (invalid bytes replaced), cut on a character boundary and marked `…`.
pub(crate) fn cut_line(raw: &[u8]) -> String {
    let mut head = &raw[..raw.len().min(MAX_GREP_LINE_BYTES)];
    let mut cut = head.len() < raw.len();
    if cut {
        // Do not turn a character split by the cut into a replacement.
        if let Err(e) = std::str::from_utf8(head) {
            if e.error_len().is_none() {
                head = &head[..e.valid_up_to()];
            }
        }
    }
    let mut text = String::from_utf8_lossy(head).into_owned();
    if text.len() > MAX_GREP_LINE_BYTES {
        // Replacement characters made it longer.
        let mut end = MAX_GREP_LINE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        cut = true;
    }
    if cut {
        text.push('…');
    }
    text
}

fn trim_eol(mut line: &[u8]) -> &[u8] {
    if let Some(rest) = line.strip_suffix(b"\n") {
        line = rest;
    }
    if let Some(rest) = line.strip_suffix(b"\r") {
        line = rest;
    }
    line
}

/// Collects one file's matches.
struct Collect<'a> {
    lines: Vec<Line>,
    binary: bool,
    shared: &'a Shared,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = m.line_number().unwrap_or(0);
        for (i, line) in m.lines().enumerate() {
            self.lines
                .push((first + i as u64, cut_line(trim_eol(line))));
            if self.lines.len() > MAX_GREP_MATCHES {
                return Ok(false);
            }
        }
        Ok(!self.shared.out_of_time())
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Files with matches, newest first (ties by path), trimmed to what the
/// answer can show.
#[derive(Default)]
struct Top {
    files: BTreeMap<(Reverse<SystemTime>, PathBuf), Vec<Line>>,
    kept: usize,
}

impl Top {
    fn insert(&mut self, mtime: SystemTime, path: PathBuf, lines: Vec<Line>) {
        self.kept += lines.len();
        self.files.insert((Reverse(mtime), path), lines);
        while let Some(last) = self.files.last_entry() {
            let n = last.get().len();
            if self.kept - n < MAX_GREP_MATCHES {
                break;
            }
            self.kept -= n;
            last.remove();
        }
    }
}

struct Shared {
    top: Mutex<Top>,
    /// Matches found, each file counted up to `MAX_GREP_MATCHES + 1`.
    total: AtomicUsize,
    unreadable: AtomicUsize,
    /// Files whose search stopped at a line longer than the line buffer.
    long_lines: AtomicUsize,
    /// `None`: a budget too large to represent, i.e. none.
    deadline: Option<Instant>,
    timed_out: AtomicBool,
    cancel: CancellationToken,
}

impl Shared {
    fn out_of_time(&self) -> bool {
        if self.timed_out.load(Ordering::Relaxed) {
            return true;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }
}

struct Builder<'a> {
    target: &'a Target,
    matcher: &'a RegexMatcher,
    include: Option<&'a Include>,
    shared: &'a Shared,
}

impl<'s> ParallelVisitorBuilder<'s> for Builder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            target: self.target,
            matcher: self.matcher.clone(),
            include: self.include,
            shared: self.shared,
            searcher: SearcherBuilder::new()
                .binary_detection(BinaryDetection::quit(b'\x00'))
                .line_number(true)
                .memory_map(MmapChoice::never())
                .heap_limit(Some(GREP_LINE_BUFFER_BYTES))
                .build(),
        })
    }
}

struct Visitor<'a> {
    target: &'a Target,
    matcher: RegexMatcher,
    include: Option<&'a Include>,
    shared: &'a Shared,
    searcher: Searcher,
}

impl Visitor<'_> {
    fn included(&self, entry: &DirEntry) -> bool {
        let Some(include) = self.include else {
            return true;
        };
        if include.whole_path {
            let rel = entry
                .path()
                .strip_prefix(&self.target.abs)
                .unwrap_or(entry.path());
            let rel = if rel.as_os_str().is_empty() {
                entry
                    .path()
                    .file_name()
                    .map(std::path::Path::new)
                    .unwrap_or(rel)
            } else {
                rel
            };
            include.glob.is_match(rel)
        } else {
            include.glob.is_match(entry.file_name())
        }
    }

    fn file(&mut self, entry: DirEntry) {
        // The path itself is searched when it is a regular file or a
        // symlink to one (`walk::resolve` refused anything else); below
        // it, only regular files.
        let searchable = if entry.depth() == 0 {
            !entry.file_type().is_some_and(|t| t.is_dir())
        } else {
            entry.file_type().is_some_and(|t| t.is_file())
        };
        if !searchable || !self.included(&entry) {
            return;
        }
        // Never blocks in open(): an entry swapped for a FIFO, socket or
        // device since the walk saw it is passed over.
        let file = match dsh_tools::regular::open(entry.path()) {
            Ok((file, _)) => file,
            Err(e) if dsh_tools::regular::not_a_file(&e).is_some() => return,
            Err(_) => {
                self.shared.unreadable.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        let mut sink = Collect {
            lines: Vec::new(),
            binary: false,
            shared: self.shared,
        };
        if let Err(e) = self.searcher.search_file(&self.matcher, &file, &mut sink) {
            if !is_line_too_long(&e) {
                self.shared.unreadable.fetch_add(1, Ordering::Relaxed);
                return;
            }
            // The matches before the long line stand.
            self.shared.long_lines.fetch_add(1, Ordering::Relaxed);
        }
        if sink.binary || sink.lines.is_empty() {
            return;
        }
        self.shared
            .total
            .fetch_add(sink.lines.len(), Ordering::Relaxed);
        let mtime = walk::mtime(&entry);
        lock(&self.shared.top).insert(mtime, entry.into_path(), sink.lines);
    }
}

/// Whether a search error is grep-searcher's "configured allocation limit
/// exceeded": a line longer than the line buffer may grow to.
fn is_line_too_long(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Other && e.to_string().contains("allocation limit")
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.cancel.is_cancelled() || self.shared.out_of_time() {
            return WalkState::Quit;
        }
        match entry {
            Ok(e) => self.file(e),
            Err(e) if walk::is_unreadable(&e) => {
                self.shared.unreadable.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {}
        }
        WalkState::Continue
    }
}

/// Runs the search and renders the result text.
///
/// # Errors
/// `ABORTED` when cancelled.
pub(crate) fn run(
    target: &Target,
    matcher: &RegexMatcher,
    include: Option<&Include>,
    budget: Duration,
    cancel: CancellationToken,
) -> Result<String, ToolError> {
    let start = Instant::now();
    let shared = Shared {
        top: Mutex::new(Top::default()),
        total: AtomicUsize::new(0),
        unreadable: AtomicUsize::new(0),
        long_lines: AtomicUsize::new(0),
        deadline: start.checked_add(budget),
        timed_out: AtomicBool::new(false),
        cancel,
    };
    walk::walker(&target.abs)
        .build_parallel()
        .visit(&mut Builder {
            target,
            matcher,
            include,
            shared: &shared,
        });
    if shared.cancel.is_cancelled() {
        return Err(ToolError::aborted("grep cancelled"));
    }
    let top = std::mem::take(&mut *lock(&shared.top));
    let mut out = String::new();
    let mut shown = 0;
    'files: for ((_, path), lines) in &top.files {
        let name = target.show(path);
        for (n, text) in lines {
            if shown == MAX_GREP_MATCHES {
                break 'files;
            }
            out.push_str(&name);
            out.push(':');
            out.push_str(&n.to_string());
            out.push(':');
            out.push_str(text);
            out.push('\n');
            shown += 1;
        }
    }
    if shown == 0 {
        out.push_str("No matches found\n");
    }
    if shared.total.load(Ordering::Relaxed) > MAX_GREP_MATCHES {
        out.push_str(&format!(
            "(results truncated at {MAX_GREP_MATCHES} matches)\n"
        ));
    }
    let unreadable = shared.unreadable.load(Ordering::Relaxed);
    if unreadable > 0 {
        out.push_str(&walk::unreadable_note(unreadable));
        out.push('\n');
    }
    let long_lines = shared.long_lines.load(Ordering::Relaxed);
    if long_lines > 0 {
        out.push_str(&format!(
            "({long_lines} file(s) searched only up to a line longer than {} MiB)\n",
            GREP_LINE_BUFFER_BYTES >> 20
        ));
    }
    if shared.timed_out.load(Ordering::Relaxed) {
        out.push_str(&format!(
            "(search stopped after {} s; results are partial)\n",
            walk::seconds(budget)
        ));
    }
    out.pop();
    Ok(out)
}
