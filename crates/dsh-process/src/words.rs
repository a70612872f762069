//! Command lines split into words the way a POSIX shell quotes them, with
//! nothing expanded: no variables, globs or substitutions.
//!
//! Two readings of one grammar:
//! - [`split_words`] is strict, for a command dsh is about to run (an MCP
//!   server's `--mcp NAME=COMMAND ARGS…`): an unbalanced quote or a trailing
//!   backslash is an error naming where it is.
//! - [`split_words_lenient`] never fails, for text a person typed as
//!   arguments (a custom command's `$1`, `$2`): an unbalanced quote runs to
//!   the end and a trailing backslash is dropped.
//!
//! The grammar: whitespace separates words; `'…'` is literal; inside `"…"` a
//! backslash escapes `"`, `\`, `$` and `` ` `` and joins lines before a
//! newline, and is kept before anything else; outside quotes a backslash
//! escapes the next character and joins lines before a newline. An empty
//! quoted string is a word of its own (`''` is `[""]`).

/// Splits `input` into words (see the module documentation).
///
/// # Errors
/// A message naming the unbalanced quote and its byte offset, or the
/// trailing backslash.
pub fn split_words(input: &str) -> Result<Vec<String>, String> {
    split(input, true)
}

/// Splits `input` into words, reading an unbalanced quote as running to the
/// end and dropping a trailing backslash. Never fails.
pub fn split_words_lenient(input: &str) -> Vec<String> {
    // The lenient reading has no error path.
    split(input, false).unwrap_or_default()
}

/// The splitter; `strict` turns the lenient readings into errors.
fn split(input: &str, strict: bool) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    // A word exists once something (even an empty quoted string) started it.
    let mut in_word = false;
    let mut chars = input.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, c)) => word.push(c),
                        None if strict => {
                            return Err(format!("unbalanced single quote at byte {at}"))
                        }
                        None => break,
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, c @ ('"' | '\\' | '$' | '`'))) => word.push(c),
                            Some((_, '\n')) => {}
                            Some((_, c)) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None if strict => {
                                return Err(format!("unbalanced double quote at byte {at}"))
                            }
                            None => {
                                word.push('\\');
                                break;
                            }
                        },
                        Some((_, c)) => word.push(c),
                        None if strict => {
                            return Err(format!("unbalanced double quote at byte {at}"))
                        }
                        None => break,
                    }
                }
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, c)) => {
                    in_word = true;
                    word.push(c);
                }
                None if strict => {
                    return Err("trailing backslash at the end of the command line".to_string())
                }
                None => {}
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_escapes_follow_the_shell() {
        assert_eq!(
            split_words(r#"a 'b c' "d \"e\" \$f \x" g\ h"#).unwrap(),
            ["a", "b c", r#"d "e" $f \x"#, "g h"]
        );
        assert_eq!(split_words("''").unwrap(), [""]);
        assert_eq!(split_words("a\\\nb").unwrap(), ["ab"]);
        assert!(split_words("   ").unwrap().is_empty());
    }

    #[test]
    fn strict_reading_names_what_is_unbalanced() {
        assert_eq!(
            split_words("a 'b").unwrap_err(),
            "unbalanced single quote at byte 2"
        );
        assert_eq!(
            split_words(r#"a "b\""#).unwrap_err(),
            "unbalanced double quote at byte 2"
        );
        assert!(split_words("a \\")
            .unwrap_err()
            .contains("trailing backslash"));
    }

    #[test]
    fn lenient_reading_runs_an_open_quote_to_the_end() {
        assert_eq!(split_words_lenient("a \"b c"), ["a", "b c"]);
        assert_eq!(split_words_lenient("a 'b c"), ["a", "b c"]);
        assert_eq!(split_words_lenient("a b\\"), ["a", "b"]);
        assert_eq!(split_words_lenient(r#"x "y\"#), ["x", "y\\"]);
    }

    proptest::proptest! {
        /// Whatever the input, the lenient reading agrees with the strict one
        /// wherever the strict one succeeds.
        #[test]
        fn lenient_agrees_with_strict_on_balanced_input(s in r#"[a-c '"\\\n$]{0,24}"#) {
            if let Ok(words) = split_words(&s) {
                proptest::prop_assert_eq!(split_words_lenient(&s), words);
            }
        }
    }
}
