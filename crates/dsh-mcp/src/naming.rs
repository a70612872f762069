//! Tool names the model sees: `<server>__<tool>`, sanitised to what the
//! DeepSeek (OpenAI-style) API accepts in function names.

/// The longest function name the API accepts.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// `<server>__<tool>` with every character outside `[A-Za-z0-9_-]` replaced
/// by `_`. A name longer than [`MAX_TOOL_NAME_LEN`] is cut and ends in `_`
/// plus 8 hex digits of a hash of the unsanitised pair, so two long names
/// that share a prefix stay distinct and the result is stable across runs.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_TOOL_NAME_LEN {
        return full;
    }
    let hash = fnv1a(format!("{server}\u{0}{tool}").as_bytes());
    let suffix = format!("_{:08x}", (hash ^ (hash >> 32)) as u32);
    // Only ASCII remains after sanitising, so byte slicing is safe.
    format!("{}{suffix}", &full[..MAX_TOOL_NAME_LEN - suffix.len()])
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if crate::config::is_name_char(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, 64 bit: stable across runs and platforms (std's hasher is not).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_and_sanitises() {
        assert_eq!(tool_name("fs", "read_file"), "fs__read_file");
        assert_eq!(
            tool_name("my.srv", "get-item/v2 ü"),
            "my_srv__get-item_v2__"
        );
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let a = tool_name("server", &"x".repeat(100));
        let b = tool_name("server", &format!("{}y", "x".repeat(99)));
        assert_eq!(a.len(), MAX_TOOL_NAME_LEN);
        assert_eq!(b.len(), MAX_TOOL_NAME_LEN);
        assert_ne!(a, b);
        assert!(a.starts_with("server__xxx"));
        assert_eq!(a, tool_name("server", &"x".repeat(100)));
        assert!(a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }
}
