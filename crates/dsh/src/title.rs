//! Session titles. A session's title is the last `session/title` event's
//! `title` when one was logged, else its first user message on one line,
//! cut to 60 characters (derived when listing; nothing is logged).

/// Longest offline title, in characters.
pub const OFFLINE_TITLE_CHARS: usize = 60;

/// The offline title: the text's first line(s) on one line, cut to
/// [`OFFLINE_TITLE_CHARS`] characters (with `…` when cut).
pub fn offline_title(first_prompt: &str) -> String {
    let one_line = first_prompt
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match one_line.char_indices().nth(OFFLINE_TITLE_CHARS) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_titles_are_one_line_and_cut() {
        assert_eq!(offline_title("fix the\n  build"), "fix the build");
        let long = "word ".repeat(30);
        let t = offline_title(&long);
        assert_eq!(t.chars().count(), OFFLINE_TITLE_CHARS + 1);
        assert!(t.ends_with('…'));
    }
}
