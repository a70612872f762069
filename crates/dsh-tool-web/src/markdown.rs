//! HTML to markdown, on `htmd` (html5ever underneath), bounded in time and
//! stack.
//!
//! Two costs grow with how deeply a page nests its elements: html5ever's
//! tree building (each start tag checks the stack of open elements, so a
//! page nesting `n` elements costs about `n²`: 50,000 nested `<div>`s take
//! seconds, a million hours) and htmd's walk of the tree, which recurses
//! once per level (a deep enough page overflows the stack). So a cheap
//! scan estimates the nesting first ([`nesting`]) and the tree's real depth
//! is measured after parsing (without recursion): a page deeper than
//! [`MAX_DEPTH`] either way is shown as its text with the tags stripped.
//! The conversion runs on a thread with a stack of [`STACK_BYTES`], which
//! [`MAX_DEPTH`] levels fit in with a wide margin (a test proves it).

use std::rc::Rc;

/// The deepest element nesting converted to markdown (browsers cap the
/// DOM the parser builds at 512 levels too); deeper pages are shown as
/// text with the tags stripped.
pub const MAX_DEPTH: usize = 512;

/// The stack of the conversion thread.
pub(crate) const STACK_BYTES: usize = 16 << 20;

/// Tags whose content is never shown.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "head",
];

/// The markdown of `html`, and whether the page was too deep to convert
/// (then it is the text with the tags stripped). (The fetch path uses
/// [`convert_keeping_tree`].)
#[cfg(test)]
pub(crate) fn convert(html: &str) -> (String, bool) {
    let (out, tree) = convert_keeping_tree(html);
    drop(tree);
    out
}

/// [`convert`], handing back the parsed tree (when there is one) so the
/// caller can free it after it has passed the result on: freeing a large
/// page's tree takes a noticeable part of the conversion's time.
pub(crate) fn convert_keeping_tree(html: &str) -> ((String, bool), Option<Rc<htmd::Node>>) {
    if nesting(html, MAX_DEPTH) > MAX_DEPTH {
        return ((strip_tags(html), true), None);
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let tree = match converter.html_to_tree(html) {
        Ok(tree) => tree,
        // html5ever's one-shot parse of a &str does no I/O; should it fail
        // anyway, the text is still worth showing.
        Err(_) => return ((strip_tags(html), true), None),
    };
    if depth(&tree) > MAX_DEPTH {
        return ((strip_tags(html), true), Some(tree));
    }
    ((converter.tree_to_markdown(&tree), false), Some(tree))
}

/// Elements that are void, or that the parser closes by itself when a
/// sibling starts (`<p>`, `<li>`, table cells, …): they are not counted,
/// so pages that leave them open are not mistaken for deep ones.
const UNCOUNTED: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "tbody",
    "thead", "tfoot", "colgroup", "rb", "rt", "rp",
];

/// Elements whose content is raw text (a `<` inside is not a tag).
const RAW_TEXT: &[&str] = &["script", "style", "textarea", "title", "xmp", "noscript"];

/// An estimate of how deeply `html` nests its elements, from its tags
/// alone: a start tag opens an element (unless it is one of [`UNCOUNTED`]
/// or self-closing), an end tag closes the innermost open element of its
/// name (an end tag nothing open matches is ignored, as the parser ignores
/// it); comments and raw-text content are skipped. The deepest nesting
/// seen; stops at `limit + 1`, so the cost is linear in the page's length
/// times at most `limit`.
pub(crate) fn nesting(html: &str, limit: usize) -> usize {
    let bytes = html.as_bytes();
    let mut open: Vec<&str> = Vec::new();
    let mut deepest = 0;
    let mut i = 0;
    while let Some(off) = memchr_lt(&bytes[i..]) {
        i += off + 1;
        let closing = bytes.get(i) == Some(&b'/');
        let start = if closing { i + 1 } else { i };
        if bytes.get(start..start + 3) == Some(b"!--") {
            match html[start..].find("-->") {
                Some(e) => i = start + e + 3,
                None => break,
            }
            continue;
        }
        let len = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
            .count();
        // `<!doctype>`, `<![CDATA[`, `a < b`: not elements.
        if len == 0 || !bytes[start].is_ascii_alphabetic() {
            continue;
        }
        let tag = &html[start..start + len];
        let Some(gt) = html[start..].find('>') else {
            break;
        };
        let self_closing = html[..start + gt].ends_with('/');
        i = start + gt + 1;
        if closing {
            if let Some(pos) = open.iter().rposition(|o| o.eq_ignore_ascii_case(tag)) {
                open.truncate(pos);
            }
            continue;
        }
        if let Some(raw) = RAW_TEXT.iter().find(|r| r.eq_ignore_ascii_case(tag)) {
            match find_ascii_ci(&html[i..], &format!("</{raw}")) {
                Some(e) => i += e,
                None => break,
            }
            continue;
        }
        if self_closing || UNCOUNTED.iter().any(|u| u.eq_ignore_ascii_case(tag)) {
            continue;
        }
        open.push(tag);
        deepest = deepest.max(open.len());
        if deepest > limit {
            return deepest;
        }
    }
    deepest
}

/// The offset of the first `<` in `b`.
fn memchr_lt(b: &[u8]) -> Option<usize> {
    b.iter().position(|c| *c == b'<')
}

/// The depth of the tree under `root`, measured without recursion.
fn depth(root: &Rc<htmd::Node>) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, d)) = stack.pop() {
        deepest = deepest.max(d);
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), d + 1));
        }
    }
    deepest
}

/// `html` without its tags, `<script>`/`<style>` content and comments,
/// blanks collapsed (a line per line of text), the common entities
/// decoded; for pages too deep to convert. One pass, linear in the input.
pub(crate) fn strip_tags(html: &str) -> String {
    let mut text = String::with_capacity(html.len() / 4);
    let mut rest = html;
    while !rest.is_empty() {
        let lt = rest.find('<').unwrap_or(rest.len());
        push_text(&mut text, &rest[..lt]);
        rest = &rest[lt..];
        if rest.is_empty() {
            break;
        }
        push_text(&mut text, " ");
        let starts = |p: &str| {
            rest.len() >= p.len() && rest.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes())
        };
        let skip_to = if starts("<!--") {
            Some("-->")
        } else if starts("<script") {
            Some("</script")
        } else if starts("<style") {
            Some("</style")
        } else {
            None
        };
        if let Some(marker) = skip_to {
            match find_ascii_ci(rest, marker) {
                Some(i) => rest = &rest[i + marker.len()..],
                None => break,
            }
            if marker == "-->" {
                continue;
            }
        }
        match rest.find('>') {
            Some(gt) => rest = &rest[gt + 1..],
            None => break,
        }
    }
    let decoded = if text.contains('&') {
        text.replace("&nbsp;", " ")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    } else {
        text
    };
    let mut out = String::with_capacity(decoded.len());
    for line in decoded.lines() {
        let line = line.trim();
        if !line.is_empty() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Appends `piece` to `text`, a run of blanks as one space (a newline as a
/// newline), no blank at the start of a line.
fn push_text(text: &mut String, piece: &str) {
    for c in piece.chars() {
        if c.is_whitespace() {
            let nl = c == '\n';
            match text.chars().next_back() {
                None => {}
                Some('\n') => {}
                Some(' ') if nl => {
                    text.pop();
                    text.push('\n');
                }
                Some(' ') => {}
                Some(_) => text.push(if nl { '\n' } else { ' ' }),
            }
        } else {
            text.push(c);
        }
    }
}

/// The byte offset of `needle` (ASCII) in `hay`, ignoring ASCII case.
fn find_ascii_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    (0..h.len().saturating_sub(n.len() - 1)).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts_or_styles() {
        let (md, deep) = convert(
            "<html><head><title>T</title><style>p{}</style></head><body><h1>Hello</h1>\
             <p>Some <a href=\"https://e.org/x\">link</a> and <code>code</code>.</p>\
             <script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>",
        );
        assert!(!deep);
        assert!(md.contains("# Hello"), "{md}");
        assert!(md.contains("[link](https://e.org/x)"), "{md}");
        assert!(md.contains("`code`"), "{md}");
        assert!(md.contains("one") && md.contains("two"), "{md}");
        assert!(!md.contains("alert") && !md.contains("p{}"), "{md}");
    }

    /// A page nested far deeper than [`MAX_DEPTH`] is stripped to text
    /// at once (never handed to the quadratic parser nor the recursive
    /// walk), and one just under the limit converts on the conversion
    /// thread's stack.
    #[test]
    fn deep_pages_are_bounded() {
        let deep = format!(
            "{}deep text{}",
            "<div>".repeat(1_000_000),
            "</div>".repeat(1_000_000)
        );
        let started = std::time::Instant::now();
        let (text, was_deep) = convert(&deep);
        assert!(was_deep);
        assert_eq!(text.trim(), "deep text");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let nested = MAX_DEPTH - 20;
        let html = format!(
            "{}<b>inner</b>{}",
            "<div><span>".repeat(nested / 2),
            "</span></div>".repeat(nested / 2)
        );
        let handle = std::thread::Builder::new()
            .stack_size(STACK_BYTES)
            .spawn(move || convert(&html))
            .unwrap();
        let (md, was_deep) = handle.join().unwrap();
        assert!(!was_deep);
        assert!(md.contains("**inner**"), "{md}");
    }

    #[test]
    fn the_nesting_estimate_follows_the_parser_where_it_matters() {
        let page = "<!DOCTYPE html><html><body><div><p>a<p>b<ul><li>x<li>y</ul>\
                    <my-widget><i>w</i></my-widget><br><img src=x/></div></body></html>";
        assert_eq!(nesting(page, 100), 5, "html body div ul|my-widget i");
        // Sequential elements, closed or left open by design, do not add up.
        let flat = "<my-el>x</my-el><p>para".repeat(10_000);
        assert_eq!(nesting(&flat, MAX_DEPTH), 1);
        // An end tag that closes nothing does not hide an opening.
        let trick = "<div></span>".repeat(600);
        assert_eq!(nesting(&trick, MAX_DEPTH), MAX_DEPTH + 1);
        // Script and comment text is not markup.
        let script = format!(
            "<script>{}</script><!-- {} -->ok",
            "if (a<b) {}".repeat(1000),
            "<div>".repeat(1000)
        );
        assert_eq!(nesting(&script, MAX_DEPTH), 0);
        assert_eq!(nesting("a < b <", 10), 0);
    }

    #[test]
    fn strip_tags_drops_markup_comments_and_scripts() {
        let text = strip_tags(
            "<p>a &amp; b</p><!-- hidden --><SCRIPT>x()</SCRIPT><style>s</style>c&lt;d<br",
        );
        assert_eq!(text, "a & b c<d\n");
    }
}
