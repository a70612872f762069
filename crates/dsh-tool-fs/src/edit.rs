//! Exact-text replacement and the compact diff of an edit.

/// Lines of context around a change in the diff.
const CONTEXT: usize = 3;
/// Most hunks shown for one edit.
const MAX_HUNKS: usize = 8;

/// The line ending a text mostly uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Lf,
    CrLf,
}

/// The dominant line ending of `text` (LF on a tie or without any).
pub(crate) fn dominant_ending(text: &str) -> Ending {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count() - crlf;
    if crlf > lf {
        Ending::CrLf
    } else {
        Ending::Lf
    }
}

/// `text` with CRLF turned into LF (borrowed when there is none, so an
/// edit of a big LF file holds about two copies: the old and the new).
pub(crate) fn to_lf(text: &str) -> std::borrow::Cow<'_, str> {
    if memchr::memmem::find(text.as_bytes(), b"\r\n").is_some() {
        text.replace("\r\n", "\n").into()
    } else {
        text.into()
    }
}

/// `text` (LF) in `ending` (borrowed for LF).
pub(crate) fn with_ending(text: &str, ending: Ending) -> std::borrow::Cow<'_, str> {
    match ending {
        Ending::Lf => text.into(),
        Ending::CrLf => text.replace('\n', "\r\n").into(),
    }
}

/// The 1-based line of byte `at` in `text`.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..at.min(text.len())]).count() + 1
}

/// The 1-based lines of the (ascending) byte offsets `offsets`, counted in
/// one pass, written as a list for a message: at most `MAX_LISTED`, then
/// `… and N more`.
pub(crate) fn list_lines(text: &str, offsets: &[usize]) -> String {
    let mut line = 1;
    let mut counted = 0;
    let mut shown = Vec::new();
    for &at in offsets.iter().take(MAX_LISTED) {
        let at = at.min(text.len());
        line += memchr::memchr_iter(b'\n', &text.as_bytes()[counted..at]).count();
        counted = at;
        shown.push(line.to_string());
    }
    let mut out = shown.join(", ");
    if offsets.len() > MAX_LISTED {
        out.push_str(&format!(" … and {} more", offsets.len() - MAX_LISTED));
    }
    out
}

/// Most line numbers a message lists.
const MAX_LISTED: usize = 20;

/// Byte offsets where `needle` occurs (non-overlapping, in order).
pub(crate) fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    haystack.match_indices(needle).map(|(i, _)| i).collect()
}

/// `haystack` with the `old_len` bytes at each offset of `found` (in order,
/// not overlapping) replaced by `new`, built in one allocation of the exact
/// size, so an edit of a big file holds two copies and no more.
pub(crate) fn replace_at(haystack: &str, found: &[usize], old_len: usize, new: &str) -> String {
    let size = (haystack.len() + found.len() * new.len()).saturating_sub(found.len() * old_len);
    let mut out = String::with_capacity(size);
    let mut from = 0;
    for &at in found {
        out.push_str(&haystack[from..at]);
        out.push_str(new);
        from = at + old_len;
    }
    out.push_str(&haystack[from..]);
    out
}

/// Lines where `needle` occurs when runs of whitespace are ignored, for the
/// "differs only in whitespace" hint (at most five).
pub(crate) fn whitespace_candidates(haystack: &str, needle: &str) -> Vec<usize> {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let target = squash(needle);
    if target.is_empty() {
        return Vec::new();
    }
    let lines: Vec<&str> = haystack.lines().collect();
    let span = needle.lines().count().max(1);
    let mut found = Vec::new();
    for start in 0..lines.len() {
        let end = (start + span).min(lines.len());
        if squash(&lines[start..end].join("\n")).contains(&target) {
            found.push(start + 1);
        }
        if found.len() == 5 {
            break;
        }
    }
    found
}

/// One replaced region: where it starts in the old text and the new, and
/// its old and new text.
pub(crate) struct Change<'a> {
    pub(crate) old_start: usize,
    pub(crate) old: &'a str,
    pub(crate) new: &'a str,
}

/// A compact unified diff of `changes` (in order, not overlapping) made to
/// `old` (LF text), giving `new`, with line numbers in the hunk headers and
/// `CONTEXT` lines of context. Changes whose contexts touch share one hunk,
/// as in `diff -u`. Only the lines around each change are visited, so the
/// diff of one line in a huge file costs no per-line memory.
pub(crate) fn unified_diff(path: &str, old: &str, new: &str, changes: &[Change<'_>]) -> String {
    let mut out = format!("--- {path}\n+++ {path}\n");
    // Each change's first old line (1-based), counted incrementally.
    let mut line = 1;
    let mut counted = 0;
    let mut spans = Vec::with_capacity(changes.len());
    for c in changes {
        line += memchr::memchr_iter(b'\n', &old.as_bytes()[counted..c.old_start]).count();
        counted = c.old_start;
        let old_lines = c.old.split('\n').count();
        let new_lines = c.new.split('\n').count();
        spans.push((
            line,
            line + old_lines - 1,
            new_lines as isize - old_lines as isize,
        ));
    }
    let mut shift_lines: isize = 0;
    let mut shift_bytes: isize = 0;
    let mut i = 0;
    let mut hunks = 0;
    while i < changes.len() {
        if hunks == MAX_HUNKS {
            out.push_str(&format!(
                "… {} more change(s) not shown\n",
                changes.len() - i
            ));
            break;
        }
        // The group: this change and the next ones whose context touches.
        let (first, mut last, mut grow) = spans[i];
        let mut end = i + 1;
        while end < changes.len() && spans[end].0 <= last + 2 * CONTEXT + 1 {
            last = last.max(spans[end].1);
            grow += spans[end].2;
            end += 1;
        }
        let c = &changes[i];
        let start = line_start(old, c.old_start);
        let mut ctx_from = start;
        let mut ctx_before = 0;
        while ctx_before < CONTEXT && ctx_from > 0 {
            ctx_from = line_start(old, ctx_from - 1);
            ctx_before += 1;
        }
        let span = last - first + 1;
        let mut rest = old[start..].lines();
        let removed: Vec<&str> = rest.by_ref().take(span).collect();
        let after: Vec<&str> = rest.take(CONTEXT).collect();
        let at_new = usize::try_from(c.old_start as isize + shift_bytes)
            .unwrap_or(0)
            .min(new.len());
        let added_span = usize::try_from(span as isize + grow).unwrap_or(0);
        let added: Vec<&str> = new[line_start(new, at_new)..]
            .lines()
            .take(added_span)
            .collect();
        let new_first = usize::try_from(first as isize + shift_lines)
            .unwrap_or(1)
            .max(1);
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            first - ctx_before,
            ctx_before + removed.len() + after.len(),
            new_first - ctx_before,
            ctx_before + added.len() + after.len()
        ));
        for l in old[ctx_from..start].lines() {
            out.push_str(&format!(" {l}\n"));
        }
        for l in removed {
            out.push_str(&format!("-{l}\n"));
        }
        for l in added {
            out.push_str(&format!("+{l}\n"));
        }
        for l in after {
            out.push_str(&format!(" {l}\n"));
        }
        for c in &changes[i..end] {
            shift_bytes += c.new.len() as isize - c.old.len() as isize;
        }
        shift_lines += grow;
        hunks += 1;
        i = end;
    }
    out
}

/// The byte offset where the line holding byte `at` of `text` starts.
fn line_start(text: &str, at: usize) -> usize {
    memchr::memrchr(b'\n', &text.as_bytes()[..at.min(text.len())]).map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_are_detected_and_restored() {
        assert_eq!(dominant_ending("a\r\nb\r\nc\n"), Ending::CrLf);
        assert_eq!(dominant_ending("a\nb"), Ending::Lf);
        assert_eq!(
            with_ending(&to_lf("a\r\nb\r\n"), Ending::CrLf),
            "a\r\nb\r\n"
        );
    }

    #[test]
    fn listed_lines_are_counted_once_and_capped() {
        let text = "x\n".repeat(30);
        let all: Vec<usize> = occurrences(&text, "x");
        assert_eq!(list_lines(&text, &all[..3]), "1, 2, 3");
        let listed = list_lines(&text, &all);
        assert!(listed.starts_with("1, 2, 3, "), "{listed}");
        assert!(listed.ends_with("19, 20 … and 10 more"), "{listed}");
    }

    #[test]
    fn later_hunks_find_their_lines_after_earlier_changes() {
        // Two changes on one line (one hunk), then one further down, after
        // changes that added lines.
        let old = "a a\nx\ny\nz\n4\n5\n6\n7\nw\nv\nu\na\n";
        let found = occurrences(old, "a");
        assert_eq!(found.len(), 3);
        let new = replace_at(old, &found, 1, "b\nb");
        let changes: Vec<Change<'_>> = found
            .iter()
            .map(|at| Change {
                old_start: *at,
                old: "a",
                new: "b\nb",
            })
            .collect();
        let d = unified_diff("f", old, &new, &changes);
        let hunks: Vec<&str> = d.lines().filter(|l| l.starts_with("@@")).collect();
        assert_eq!(hunks, ["@@ -1,4 +1,6 @@", "@@ -9,4 +11,5 @@"], "{d}");
        assert!(
            d.contains("@@ -1,4 +1,6 @@\n-a a\n+b\n+b b\n+b\n x\n y\n z\n"),
            "{d}"
        );
        assert!(d.ends_with(" w\n v\n u\n-a\n+b\n+b\n"), "{d}");
    }

    #[test]
    fn diff_has_numbered_hunks_with_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n";
        let new = "1\n2\n3\n4 changed\nextra\n5\n6\n7\n8\n";
        let at = old.find("4").unwrap();
        let d = unified_diff(
            "f",
            old,
            new,
            &[Change {
                old_start: at,
                old: "4",
                new: "4 changed\nextra",
            }],
        );
        assert_eq!(
            d,
            "--- f\n+++ f\n@@ -1,7 +1,8 @@\n 1\n 2\n 3\n-4\n+4 changed\n+extra\n 5\n 6\n 7\n"
        );
    }

    #[test]
    fn whitespace_differences_are_found() {
        let text = "fn main() {\n    let  x =  1;\n}\n";
        assert_eq!(whitespace_candidates(text, "let x = 1;"), [2]);
        assert!(whitespace_candidates(text, "let y").is_empty());
    }
}
