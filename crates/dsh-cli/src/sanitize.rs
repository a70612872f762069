//! Untrusted text made safe for a terminal.
//!
//! Model text, reasoning, tool names, arguments and tool output can carry
//! escape sequences: OSC 52 writes the clipboard, OSC 8 hides a link, OSC 0
//! retitles the window, CSI moves the cursor, `\r` overwrites a line. Every
//! control character except `\n` and `\t` is shown instead of sent: C0 as
//! `\x1b`-style escapes (`\r` as `\r`), DEL as `\x7f`, C1 (U+0080–U+009F) as
//! `\u{9b}`. Printable text, including all other Unicode, is unchanged. dsh's
//! own styling is added after sanitising, so it is the only escape code
//! written.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character but `\n` and `\t` made visible;
/// borrowed when there is none (the common case).
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if c == '\r' {
            out.push_str("\\r");
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// JSON text (as serde_json writes it) with DEL and C1 characters inside
/// strings written as `\u007f`-style escapes too (serde_json escapes only
/// C0), so printing JSON cannot drive a terminal either. The JSON value is
/// unchanged.
pub(crate) fn json_visible(json: &str) -> Cow<'_, str> {
    if !json.chars().any(needs_escape) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if needs_escape(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_class_is_made_visible() {
        let hostile = "A\u{1b}]52;c;SGVsbG8=\u{7}B\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\C\u{1b}]0;title\u{7}D\rE\u{9b}F\u{7f}G\u{1b}[2J";
        assert_eq!(
            visible(hostile),
            "A\\x1b]52;c;SGVsbG8=\\x07B\\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\C\\x1b]0;title\\x07D\\rE\\u{9b}F\\x7fG\\x1b[2J"
        );
        assert!(matches!(visible("plain\ttext\né ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_keeps_its_value() {
        let v = serde_json::json!({"t": "a\u{9b}b\u{7f}c\u{1b}"});
        let text = serde_json::to_string(&v).unwrap();
        let safe = json_visible(&text);
        assert!(!safe.chars().any(needs_escape), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
    }

    proptest! {
        #[test]
        fn output_never_holds_a_control_character(s in any::<String>()) {
            let v = visible(&s);
            prop_assert!(!v.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
            if !s.chars().any(needs_escape) {
                prop_assert_eq!(v.as_ref(), s.as_str());
            }
        }
    }
}
