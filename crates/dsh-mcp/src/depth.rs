//! Messages nested too deep to parse, and tools too deep or too large to
//! offer, found on the raw bytes before rmcp parses a message.
//!
//! serde_json refuses a document nested deeper than 128 levels; rmcp then
//! drops the message, so a request waiting for it (a `tools/list` during
//! start-up) would wait for its timeout and the server would look silent.
//! [`screen`] measures every message first (one pass over the bytes,
//! strings skipped, nothing allocated for a message that passes):
//!
//! - a `tools/list` response (`result.tools`) loses each entry nested more
//!   than [`MAX_TOOL_DEPTH`] levels or longer than [`MAX_TOOL_BYTES`]; each
//!   is recorded in [`Refusals`] with its name and why, and the rest of the
//!   listing goes on to rmcp at once;
//! - any other message (or a listing still) nested more than
//!   [`MAX_MESSAGE_DEPTH`] levels is answered with a JSON-RPC error for its
//!   request id ([`too_deep_reply`]), so the request fails at once saying so.

use std::sync::Mutex;

use dsh_protocol::jsonrpc::string_end;

/// The deepest nesting of a whole message passed to rmcp. serde_json's own
/// limit is 128; this leaves room for the envelope rmcp parses around it.
pub(crate) const MAX_MESSAGE_DEPTH: usize = 100;

/// The deepest nesting inside one tool of a `tools/list` response, counted
/// as the depth of its deepest field (`inputSchema: {"type": "object"}` is
/// 1): a schema deeper than this is no schema a model can follow.
pub(crate) const MAX_TOOL_DEPTH: usize = 64;

/// The largest tool of a `tools/list` response, in bytes of its JSON (its
/// schema and description are sent to the model with every request).
pub(crate) const MAX_TOOL_BYTES: usize = 1024 * 1024;

/// The prefix of the error message synthesized for a too-deep response.
pub(crate) const TOO_DEEP_MARKER: &str = "dsh: message too deep:";

/// Where the `tools` array of a response sits: root object (1), `result`
/// (2), `tools` (3); its entries are level 4.
const TOOLS_LEVEL: usize = 3;

/// A tool left out of a listing before parsing, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The tool's name on the server (`<unnamed #i>` when it has none).
    pub(crate) tool: String,
    /// Why, with the measure and the limit.
    pub(crate) reason: String,
}

/// Tools refused by [`screen`] since they were last taken.
#[derive(Debug, Default)]
pub(crate) struct Refusals(Mutex<Vec<Refused>>);

impl Refusals {
    /// Takes every refusal recorded so far.
    pub(crate) fn take(&self) -> Vec<Refused> {
        std::mem::take(&mut *crate::server::lock(&self.0))
    }

    /// Forgets the refusals of an earlier listing.
    pub(crate) fn clear(&self) {
        crate::server::lock(&self.0).clear();
    }

    fn push(&self, refused: Refused) {
        crate::server::lock(&self.0).push(refused);
    }
}

/// What to do with one message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Screened {
    /// Pass it on unchanged.
    Pass,
    /// Pass on this instead: the listing without its refused tools.
    Rewritten(Vec<u8>),
    /// Nested `depth` levels, above [`MAX_MESSAGE_DEPTH`]: do not pass it
    /// on (answer it with [`too_deep_reply`]).
    TooDeep {
        /// The message's nesting depth.
        depth: usize,
    },
}

/// Screens one message (see the module docs), recording refused tools in
/// `refusals`. Never panics; bytes that are not JSON pass (rmcp reports
/// them as it always did).
pub(crate) fn screen(message: &[u8], refusals: &Refusals) -> Screened {
    let depth = max_depth(message);
    if depth <= TOOLS_LEVEL + 1 + MAX_TOOL_DEPTH && message.len() <= MAX_TOOL_BYTES {
        // No entry can break a limit, and serde_json parses the whole.
        return Screened::Pass;
    }
    let Some(listing) = tools_listing(message) else {
        return too_deep(depth);
    };
    let mut kept: Vec<&[u8]> = Vec::with_capacity(listing.entries.len());
    let mut refused = Vec::new();
    for (i, entry) in listing.entries.iter().enumerate() {
        let bytes = &message[entry.start..entry.end];
        let why = if entry.depth > MAX_TOOL_DEPTH {
            Some(format!(
                "its definition nests {} levels deep (its inputSchema or another field), above the depth limit of {MAX_TOOL_DEPTH}; dsh refused it before parsing",
                entry.depth
            ))
        } else if bytes.len() > MAX_TOOL_BYTES {
            Some(format!(
                "its definition is {} bytes, above the size limit of {MAX_TOOL_BYTES} bytes for one tool; dsh refused it before parsing",
                bytes.len()
            ))
        } else {
            None
        };
        match why {
            Some(reason) => refused.push(Refused {
                tool: top_level_string(bytes, "name")
                    .unwrap_or_else(|| format!("<unnamed #{}>", i + 1)),
                reason,
            }),
            None => kept.push(bytes),
        }
    }
    if refused.is_empty() {
        return too_deep(depth);
    }
    let mut out = Vec::with_capacity(message.len());
    out.extend_from_slice(&message[..=listing.open]);
    for (i, bytes) in kept.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(bytes);
    }
    out.extend_from_slice(&message[listing.close..]);
    let depth = max_depth(&out);
    if depth > MAX_MESSAGE_DEPTH {
        // Deep elsewhere (`_meta`): the listing fails as a whole.
        return Screened::TooDeep { depth };
    }
    for r in refused {
        refusals.push(r);
    }
    Screened::Rewritten(out)
}

fn too_deep(depth: usize) -> Screened {
    if depth > MAX_MESSAGE_DEPTH {
        Screened::TooDeep { depth }
    } else {
        Screened::Pass
    }
}

/// The text of the JSON-RPC error that answers a too-deep response.
pub(crate) fn too_deep_message(depth: usize) -> String {
    format!(
        "{TOO_DEEP_MARKER} the server sent a message nested {depth} levels deep, above the depth limit of {MAX_MESSAGE_DEPTH}"
    )
}

/// The deepest nesting of arrays and objects in `bytes` (0 for a scalar),
/// strings skipped. Unbalanced input is measured as far as it goes.
pub(crate) fn max_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => match string_end(bytes, i) {
                Some(end) => i = end,
                None => return max,
            },
            _ => {}
        }
        i += 1;
    }
    max
}

/// One entry of a `tools` array: its byte span and the depth of its
/// deepest field.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    start: usize,
    end: usize,
    depth: usize,
}

/// The `result.tools` array of a response: where it opens and closes and
/// its entries. `None` when the message has none, or the array holds
/// something other than objects (then it is not rewritten).
#[derive(Debug)]
struct Listing {
    open: usize,
    close: usize,
    entries: Vec<Entry>,
}

/// One open array or object while scanning.
struct Frame {
    object: bool,
    /// Whether this is the `result.tools` array.
    tools: bool,
    /// Whether this is the root's `result` object.
    result: bool,
    /// In an object: whether the next string is a key.
    expecting_key: bool,
    /// In an object: the span of the last key read.
    key: (usize, usize),
}

fn tools_listing(bytes: &[u8]) -> Option<Listing> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut open = None;
    let mut entries = Vec::new();
    // The entry being read: its start and deepest level so far.
    let mut entry: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                let end = string_end(bytes, i)?;
                let top = stack.last_mut()?;
                if top.object && top.expecting_key {
                    top.key = (i + 1, end);
                    top.expecting_key = false;
                } else if top.tools {
                    return None; // a string where a tool should be
                }
                i = end;
            }
            b',' => {
                if let Some(top) = stack.last_mut() {
                    top.expecting_key = top.object;
                }
            }
            b'{' | b'[' => {
                let key_is = |name: &[u8]| {
                    stack
                        .last()
                        .is_some_and(|f| f.object && &bytes[f.key.0..f.key.1] == name)
                };
                let result = stack.len() == 1 && b == b'{' && key_is(b"result");
                let tools = stack.len() == 2
                    && b == b'['
                    && stack.get(1).is_some_and(|f| f.result)
                    && key_is(b"tools");
                if tools {
                    open = Some(i);
                }
                if stack.last().is_some_and(|f| f.tools) {
                    if b != b'{' {
                        return None;
                    }
                    entry = Some((i, 0));
                }
                stack.push(Frame {
                    object: b == b'{',
                    tools,
                    result,
                    expecting_key: b == b'{',
                    key: (0, 0),
                });
                if let Some((_, deepest)) = &mut entry {
                    // The tool object itself is level 0.
                    *deepest = (*deepest).max(stack.len() - TOOLS_LEVEL - 1);
                }
            }
            b'}' | b']' => {
                let frame = stack.pop()?;
                if frame.tools {
                    return open.map(|open| Listing {
                        open,
                        close: i,
                        entries,
                    });
                }
                if stack.len() == TOOLS_LEVEL && stack.last().is_some_and(|f| f.tools) {
                    let (start, depth) = entry.take()?;
                    entries.push(Entry {
                        start,
                        end: i + 1,
                        depth,
                    });
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' | b':' => {}
            _ => {
                if stack.last().is_some_and(|f| f.tools) {
                    return None; // a number or literal where a tool should be
                }
            }
        }
        i += 1;
    }
    None
}

/// The string value of the key `key` of the object `bytes` (at its top
/// level), unescaped; at most 200 characters of it.
fn top_level_string(bytes: &[u8], key: &str) -> Option<String> {
    let value = dsh_protocol::jsonrpc::top_level_value(bytes, key)?;
    if value.first() != Some(&b'"') {
        return None;
    }
    let close = string_end(value, 0)?;
    let text: String = serde_json::from_slice(value.get(..=close)?).ok()?;
    Some(text.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn nested(depth: usize) -> Value {
        let mut v = json!({"type": "object"});
        for _ in 1..depth {
            v = json!([v]);
        }
        v
    }

    fn listing(tools: Vec<Value>) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": 7, "result": {"tools": tools, "nextCursor": "2"}}),
        )
        .unwrap()
    }

    #[test]
    fn depth_counts_containers_and_skips_strings() {
        assert_eq!(max_depth(b"1"), 0);
        assert_eq!(max_depth(b"{}"), 1);
        assert_eq!(max_depth(br#"{"a":[{"b":"[[[{{"}]}"#), 3);
        assert_eq!(max_depth(br#"{"a":"\"[["}"#), 1);
        assert_eq!(max_depth(&serde_json::to_vec(&nested(50)).unwrap()), 50);
    }

    #[test]
    fn ordinary_messages_pass_untouched() {
        let refusals = Refusals::default();
        let small = listing(vec![
            json!({"name": "a", "inputSchema": {"type": "object"}}),
        ]);
        assert_eq!(screen(&small, &refusals), Screened::Pass);
        assert!(refusals.take().is_empty());
    }

    #[test]
    fn a_deep_tool_is_cut_out_of_its_listing_and_named() {
        let refusals = Refusals::default();
        let message = listing(vec![
            json!({"name": "ok", "inputSchema": {"type": "object"}}),
            json!({"inputSchema": nested(200), "name": "deep\u{1b}"}),
            json!({"name": "also", "inputSchema": {"type": "object"}}),
        ]);
        let Screened::Rewritten(out) = screen(&message, &refusals) else {
            panic!("not rewritten");
        };
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            out,
            json!({"jsonrpc": "2.0", "id": 7, "result": {"tools": [
                {"name": "ok", "inputSchema": {"type": "object"}},
                {"name": "also", "inputSchema": {"type": "object"}}
            ], "nextCursor": "2"}})
        );
        let refused = refusals.take();
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].tool, "deep\u{1b}");
        assert!(
            refused[0].reason.contains("nests 200 levels deep"),
            "{:?}",
            refused[0]
        );
        assert!(refused[0].reason.contains("depth limit of 64"));
    }

    #[test]
    fn a_huge_tool_is_refused_for_its_size() {
        let refusals = Refusals::default();
        let message = listing(vec![
            json!({"name": "huge", "description": "h".repeat(MAX_TOOL_BYTES)}),
            json!({"name": "ok"}),
        ]);
        let Screened::Rewritten(out) = screen(&message, &refusals) else {
            panic!("not rewritten");
        };
        assert_eq!(
            serde_json::from_slice::<Value>(&out).unwrap()["result"]["tools"],
            json!([{"name": "ok"}])
        );
        let refused = refusals.take();
        assert_eq!(refused[0].tool, "huge");
        assert!(refused[0].reason.contains("size limit of 1048576 bytes"));
    }

    #[test]
    fn other_deep_messages_are_too_deep() {
        let refusals = Refusals::default();
        let call = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": 3, "result": {"content": nested(150)}}),
        )
        .unwrap();
        assert_eq!(screen(&call, &refusals), Screened::TooDeep { depth: 152 });
        // Deep but within serde_json's reach, and not a listing: passes.
        let fine = serde_json::to_vec(&json!({"id": 3, "result": nested(90)})).unwrap();
        assert_eq!(screen(&fine, &refusals), Screened::Pass);
        // A listing deep outside its tools fails whole.
        let meta = serde_json::to_vec(&json!({"id": 1, "result": {"tools": [{"name": "x", "s": nested(120)}], "_meta": nested(120)}})).unwrap();
        assert!(matches!(screen(&meta, &refusals), Screened::TooDeep { .. }));
        assert!(
            refusals.take().is_empty(),
            "nothing refused when the listing fails whole"
        );
    }

    proptest! {
        /// Any bytes: never panics; a rewrite is valid JSON no deeper than
        /// the limit whenever the input was JSON.
        #[test]
        fn screening_never_panics(bytes in proptest::collection::vec(prop_oneof![
            Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b'\\'),
            Just(b','), Just(b':'), any::<u8>()
        ], 0..300)) {
            let refusals = Refusals::default();
            let _ = screen(&bytes, &refusals);
            let _ = max_depth(&bytes);
            let _ = tools_listing(&bytes);
            let _ = top_level_string(&bytes, "name");
        }

        #[test]
        fn rewritten_listings_parse(depths in proptest::collection::vec(1usize..140, 1..6)) {
            let refusals = Refusals::default();
            let tools: Vec<Value> = depths
                .iter()
                .enumerate()
                .map(|(i, d)| json!({"name": format!("t{i}"), "inputSchema": nested(*d)}))
                .collect();
            let message = listing(tools);
            match screen(&message, &refusals) {
                Screened::Pass => prop_assert!(depths.iter().all(|d| *d <= MAX_TOOL_DEPTH)),
                Screened::Rewritten(out) => {
                    let v: Value = serde_json::from_slice(&out).unwrap();
                    let kept = v["result"]["tools"].as_array().unwrap().len();
                    let refused = refusals.take();
                    prop_assert_eq!(kept + refused.len(), depths.len());
                    for (i, d) in depths.iter().enumerate() {
                        let was_refused = refused.iter().any(|r| r.tool == format!("t{i}"));
                        prop_assert_eq!(was_refused, *d > MAX_TOOL_DEPTH);
                    }
                }
                Screened::TooDeep { .. } => prop_assert!(false, "a listing is never refused whole here"),
            }
        }
    }
}
