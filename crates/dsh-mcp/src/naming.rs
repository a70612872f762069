//! Tool names the model sees: `<prefix>__<server>__<tool>` (by default
//! `mcp__<server>__<tool>`, as Claude Code names them), sanitised to what
//! the DeepSeek (OpenAI-style) API accepts in function names.

/// The longest function name the API accepts.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// `<prefix>__<server>__<tool>`, or `<server>__<tool>` when `prefix` is
/// empty (the older form), with every character outside `[A-Za-z0-9_-]`
/// replaced by `_`. A name longer than [`MAX_TOOL_NAME_LEN`] is cut and
/// ends in `_` plus 8 hex digits of a hash of the unsanitised parts, so two
/// long names that share a beginning stay distinct and the result is stable
/// across runs.
pub fn tool_name(prefix: &str, server: &str, tool: &str) -> String {
    let full = if prefix.is_empty() {
        format!("{}__{}", sanitize(server), sanitize(tool))
    } else {
        format!(
            "{}__{}__{}",
            sanitize(prefix),
            sanitize(server),
            sanitize(tool)
        )
    };
    if full.len() <= MAX_TOOL_NAME_LEN {
        return full;
    }
    // Without a prefix the hash input is what it always was, so the older
    // names do not change.
    let key = if prefix.is_empty() {
        format!("{server}\u{0}{tool}")
    } else {
        format!("{prefix}\u{0}{server}\u{0}{tool}")
    };
    let hash = fnv1a(key.as_bytes());
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
        assert_eq!(tool_name("mcp", "fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(
            tool_name("mcp", "my.srv", "get-item/v2 ü"),
            "mcp__my_srv__get-item_v2__"
        );
        assert_eq!(tool_name("my tools", "fs", "x"), "my_tools__fs__x");
    }

    #[test]
    fn an_empty_prefix_gives_the_older_names() {
        assert_eq!(tool_name("", "fs", "read_file"), "fs__read_file");
        assert_eq!(
            tool_name("", "my.srv", "get-item/v2 ü"),
            "my_srv__get-item_v2__"
        );
        // The long form is the one older releases produced (pinned).
        assert_eq!(
            tool_name("", "server", &"x".repeat(100)),
            format!("server__{}_5e6282e2", "x".repeat(47))
        );
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        for prefix in ["", "mcp"] {
            let a = tool_name(prefix, "server", &"x".repeat(100));
            let b = tool_name(prefix, "server", &format!("{}y", "x".repeat(99)));
            assert_eq!(a.len(), MAX_TOOL_NAME_LEN);
            assert_eq!(b.len(), MAX_TOOL_NAME_LEN);
            assert_ne!(a, b);
            let start = if prefix.is_empty() {
                "server__xxx".to_string()
            } else {
                format!("{prefix}__server__xxx")
            };
            assert!(a.starts_with(&start), "{a}");
            assert_eq!(a, tool_name(prefix, "server", &"x".repeat(100)));
            assert!(a
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        }
        assert_ne!(
            tool_name("", "server", &"x".repeat(100))[20..],
            tool_name("mcp", "server", &"x".repeat(100))[20..]
        );
    }
}
