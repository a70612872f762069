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

/// Byte offsets where `needle` occurs (non-overlapping, in order).
pub(crate) fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    haystack.match_indices(needle).map(|(i, _)| i).collect()
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

/// A compact unified diff of `changes` made to `old` (LF text), giving
/// `new`, with line numbers in the hunk headers and `CONTEXT` lines of
/// context.
pub(crate) fn unified_diff<'a>(
    path: &str,
    old: &'a str,
    new: &'a str,
    changes: &[Change<'_>],
) -> String {
    // Lines, without the empty one after a final newline.
    let lines = |t: &'a str| {
        let mut v: Vec<&'a str> = t.split('\n').collect();
        if t.ends_with('\n') {
            v.pop();
        }
        v
    };
    let old_lines = lines(old);
    let new_lines = lines(new);
    let mut out = format!("--- {path}\n+++ {path}\n");
    let mut shift: isize = 0;
    for (i, c) in changes.iter().enumerate() {
        if i == MAX_HUNKS {
            out.push_str(&format!(
                "… {} more change(s) not shown\n",
                changes.len() - i
            ));
            break;
        }
        let first = line_of(old, c.old_start); // 1-based
        let old_count = c.old.split('\n').count();
        let new_count = c.new.split('\n').count();
        let ctx_start = first.saturating_sub(CONTEXT).max(1);
        let ctx_before = first - ctx_start;
        let after_old = (first - 1 + old_count).min(old_lines.len());
        let ctx_after = (old_lines.len() - after_old).min(CONTEXT);
        let new_first = usize::try_from(first as isize + shift).unwrap_or(1).max(1);
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            ctx_start,
            ctx_before + old_count + ctx_after,
            new_first - ctx_before,
            ctx_before + new_count + ctx_after
        ));
        for l in &old_lines[ctx_start - 1..first - 1] {
            out.push_str(&format!(" {l}\n"));
        }
        for l in &old_lines[first - 1..after_old] {
            out.push_str(&format!("-{l}\n"));
        }
        let new_end = (new_first - 1 + new_count).min(new_lines.len());
        for l in &new_lines[(new_first - 1).min(new_end)..new_end] {
            out.push_str(&format!("+{l}\n"));
        }
        for l in &old_lines[after_old..after_old + ctx_after] {
            out.push_str(&format!(" {l}\n"));
        }
        shift += new_count as isize - old_count as isize;
    }
    out
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
