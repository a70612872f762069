//! Untrusted text made safe for a terminal.
//!
//! Model text, reasoning, tool names, arguments and tool output can carry
//! escape sequences: OSC 52 writes the clipboard, OSC 8 hides a link, OSC 0
//! retitles the window, CSI moves the cursor, `\r` overwrites a line. Every
//! control character except `\n` and `\t` is shown instead of sent: C0 as
//! `\x1b`-style escapes (`\r` as `\r`), DEL as `\x7f`, C1 (U+0080–U+009F) as
//! `\u{9b}`. Unicode bidirectional controls (U+202A–U+202E, U+2066–U+2069,
//! U+200E, U+200F, U+061C), which reorder what the terminal shows so that
//! text reads differently from what it is ("Trojan Source"), are shown as
//! `\u{202e}` too. Printable text, including all other Unicode, is
//! unchanged. dsh's own styling is added after sanitising, so it is the
//! only escape code written.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character but `\n` and `\t` made visible;
/// borrowed when there is none (the common case).
pub fn visible(text: &str) -> Cow<'_, str> {
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
pub fn json_visible(json: &str) -> Cow<'_, str> {
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
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// The Unicode bidirectional formatting characters: embeddings and
/// overrides (U+202A–U+202E), isolates (U+2066–U+2069) and the implicit
/// marks (U+200E, U+200F, U+061C).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
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

    #[test]
    fn bidi_controls_are_shown_escaped() {
        let trojan = "if admin \u{202e}} \u{2066}begin\u{2069}\u{200f}\u{61c}";
        assert_eq!(
            visible(trojan),
            "if admin \\u{202e}} \\u{2066}begin\\u{2069}\\u{200f}\\u{61c}"
        );
        let v = serde_json::json!({"t": trojan});
        let safe = json_visible(&v.to_string()).into_owned();
        assert!(!safe.chars().any(is_bidi_control), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
    }

    /// Strings that favour what the sanitiser must catch: C0, DEL, C1,
    /// bidi controls and ESC-led sequences, mixed with plain text.
    fn hostile() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            any::<char>().prop_map(String::from),
            (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('?').to_string()),
            (0x7fu32..0xa0).prop_map(|c| char::from_u32(c).unwrap_or('?').to_string()),
            prop::sample::select(vec![
                '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}',
                '\u{2068}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{61c}'
            ])
            .prop_map(String::from),
            Just("\u{1b}]52;c;SGVsbG8=\u{7}".to_string()),
            Just("\u{1b}[2J".to_string()),
            "[a-z ]{0,8}",
        ];
        prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
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

        #[test]
        fn hostile_text_is_inert(s in hostile()) {
            let v = visible(&s);
            prop_assert!(!v.chars().any(needs_escape), "{:?}", v);
            // Plain text between the escapes survives unchanged.
            let plain: String = s.chars().filter(|c| !needs_escape(*c)).collect();
            let kept: String = v.chars().filter(|c| c.is_alphabetic() && !c.is_ascii()).collect();
            let orig: String = plain.chars().filter(|c| c.is_alphabetic() && !c.is_ascii()).collect();
            prop_assert_eq!(kept, orig);
            let json = serde_json::Value::String(s.clone()).to_string();
            let safe = json_visible(&json);
            prop_assert!(!safe.chars().any(needs_escape), "{:?}", safe);
            prop_assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).ok(), Some(serde_json::Value::String(s)));
        }
    }
}
