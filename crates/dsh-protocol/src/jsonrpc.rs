//! Finding a JSON-RPC message's `id` in the raw bytes of a message too
//! large (or too deep) to parse, so that an error can still answer the
//! request: the MCP client answers a server's over-large response with it,
//! the ACP server an editor's over-long request.
//!
//! Every function reads only the bytes it is given (a bounded head or tail
//! of the message), never panics, and answers `None` when what it looks for
//! is not wholly inside them: an id cut at the edge is not guessed at.

use serde_json::Value;

/// The value of the top-level `"id"` key of the JSON object `head` starts,
/// when the key and its whole value appear in `head` and the value is a
/// number or a string. Keys nested deeper (an `"id"` inside `params` or
/// `result`) and text inside strings are skipped.
pub fn leading_id(head: &[u8]) -> Option<Value> {
    id_value(top_level_value(head, "id")?)
}

/// Whether the JSON object `head` starts has a top-level key `key` within
/// `head` (`"method"`: the message is a request or a notification).
pub fn has_top_level_key(head: &[u8], key: &str) -> bool {
    top_level_value(head, key).is_some()
}

/// The value of an `"id"` key that ends the JSON object `tail` ends
/// (`…,"id":7}`), as some servers write a response, result first; a number
/// or a string.
pub fn trailing_id(tail: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(tail).ok()?.trim_end();
    let body = text.strip_suffix('}')?;
    let at = body.rfind("\"id\"")?;
    let value = body[at + 4..].trim_start().strip_prefix(':')?.trim();
    parse_id(value)
}

/// Index of the `"` closing the JSON string whose opening `"` is at
/// `start` (escapes skipped); `None` when it does not close in `bytes`.
pub fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The bytes after the `:` of the top-level key `key` (spelt without
/// escapes) of the object `head` starts, from its value on; `None` when the
/// key is not there, or the brackets before it do not balance.
pub fn top_level_value<'a>(head: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b'"' => {
                let end = string_end(head, i)?;
                let name = &head[i + 1..end];
                if depth == 1 && name == key.as_bytes() {
                    let colon = skip_ws(head, end + 1);
                    if head.get(colon) == Some(&b':') {
                        return head.get(skip_ws(head, colon + 1)..);
                    }
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Parses a number or string id at the start of `bytes`; a number must be
/// followed by `,`, `}` or white space inside `bytes` (else it may be cut).
fn id_value(bytes: &[u8]) -> Option<Value> {
    let end = if bytes.first() == Some(&b'"') {
        string_end(bytes, 0)? + 1
    } else {
        bytes
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b' ' | b'\n' | b'\t' | b'\r'))?
    };
    parse_id(std::str::from_utf8(bytes.get(..end)?).ok()?)
}

fn parse_id(text: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(text).ok()? {
        v @ (Value::Number(_) | Value::String(_)) => Some(v),
        _ => None,
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_found_first_or_last_and_not_inside_the_result() {
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"te"#),
            Some(json!(17))
        );
        assert_eq!(
            leading_id(br#"{"result":{"id":5,"x":"\"id\":9"},"id":"a-1","#),
            Some(json!("a-1"))
        );
        assert_eq!(leading_id(br#"{"result":{"content":[{"text":"aaaa"#), None);
        assert_eq!(
            trailing_id(br#"aaaa"}]},"jsonrpc":"2.0","id":42}"#),
            Some(json!(42))
        );
        assert_eq!(trailing_id(br#"aaaa"}]}}"#), None);
    }

    #[test]
    fn an_id_cut_at_the_edge_or_of_another_type_is_not_guessed() {
        assert_eq!(leading_id(br#"{"id":12"#), None, "the number may go on");
        assert_eq!(leading_id(br#"{"id":"ab"#), None);
        assert_eq!(leading_id(br#"{"id" : 12 ,"#), Some(json!(12)));
        assert_eq!(leading_id(br#"{"id":null,"#), None);
        assert_eq!(leading_id(br#"{"id":{"a":1},"#), None);
        assert_eq!(leading_id(br#"{"ids":1,"#), None);
        assert_eq!(leading_id(b""), None);
        assert_eq!(leading_id(b"}}{\"id\":1,"), None, "unbalanced");
        assert_eq!(leading_id(b"{\"id\":1\xff,"), None);
    }

    #[test]
    fn a_top_level_key_is_found_only_at_the_top() {
        let request = br#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"#;
        assert!(has_top_level_key(request, "method"));
        assert!(!has_top_level_key(
            br#"{"id":7,"result":{"method":"x"}}"#,
            "method"
        ));
        assert!(!has_top_level_key(
            br#"{"id":7,"result":"\"method\":1"}"#,
            "method"
        ));
        assert!(!has_top_level_key(br#"{"id":7,"meth"#, "method"));
    }

    #[test]
    fn no_byte_string_panics() {
        // Every prefix of a message, and bytes that are not JSON at all.
        let msg = br#"{"jsonrpc":"2.0","id":"x\"y","method":"m","params":{"a":[1,{"id":2}]}}"#;
        for end in 0..=msg.len() {
            let _ = leading_id(&msg[..end]);
            let _ = trailing_id(&msg[end..]);
            let _ = has_top_level_key(&msg[..end], "method");
        }
        assert_eq!(leading_id(msg), Some(json!("x\"y")));
        for junk in [
            &b"\"\\"[..],
            b"{\"",
            b"{\"id\"",
            b"{\"id\":",
            b"]]]",
            b"\\\\\"",
        ] {
            assert_eq!(leading_id(junk), None);
            assert_eq!(trailing_id(junk), None);
        }
    }
}
