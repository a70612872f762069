//! Images attached to a prompt: `@shot.png` anywhere in it, or a pasted
//! path to an existing image file (a whole token, absolute or `./`/`../`
//! relative, ending in `.png`, `.jpg`, `.jpeg`, `.gif` or `.webp`).
//!
//! Each is loaded with the `read` tool's rules ([`dsh_tool_fs::load_image`]:
//! size, header and decode limits, scaled to what a model takes) and sent
//! after the prompt as a label (`[image: shot.png 800×600]`, what the
//! transcript shows) and the image block. A model that takes no images, or
//! an image that cannot be loaded, gets a notice instead and the prompt is
//! sent without it.

use std::path::{Path, PathBuf};

use dsh_llm::ContentBlock;

/// What attaching found for one prompt.
#[derive(Debug, Default)]
pub struct Attached {
    /// Blocks to send after the prompt: a label and an image per image.
    pub blocks: Vec<ContentBlock>,
    /// One line per image that was not attached, saying why.
    pub notices: Vec<String>,
}

/// A token of the prompt that names an image file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The path as typed (without the `@`).
    pub typed: String,
    /// The path resolved against the working directory.
    pub path: PathBuf,
    /// Whether it was an `@` mention (reported when missing) rather than a
    /// pasted path (plain text when no such file exists).
    pub at: bool,
}

/// The image files `text` names, in order, each once: `@path` tokens whose
/// name ends in an image extension, and pasted absolute or `./`, `../`
/// relative paths that end in one and exist. Trailing punctuation
/// (`,.;:!?)` and quotes) is not part of a path; a pasted path in single
/// or double quotes (as terminals paste names with spaces) is one token.
pub fn image_mentions(text: &str, cwd: &Path) -> Vec<Mention> {
    let mut out: Vec<Mention> = Vec::new();
    for token in tokens(text) {
        let (at, raw) = match token.strip_prefix('@') {
            Some(rest) => (true, rest),
            None => (false, token.as_str()),
        };
        let typed = raw.trim_end_matches([',', ';', ':', '!', '?', ')', '.']);
        if typed.is_empty() || !dsh_tool_fs::has_image_extension(Path::new(typed)) {
            continue;
        }
        let pasted = typed.starts_with('/') || typed.starts_with("./") || typed.starts_with("../");
        if !at && !pasted {
            continue;
        }
        let path = cwd.join(typed);
        if !at && !path.is_file() {
            continue;
        }
        if out.iter().any(|m| m.path == path) {
            continue;
        }
        out.push(Mention {
            typed: typed.to_string(),
            path,
            at,
        });
    }
    out
}

/// Splits on whitespace, keeping a quoted run (`'a b.png'`, `"a b.png"`)
/// as one token without its quotes, and a backslash-escaped space inside
/// a token.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut token = String::new();
        if c == '\'' || c == '"' {
            chars.next();
            for ch in chars.by_ref() {
                if ch == c {
                    break;
                }
                token.push(ch);
            }
            out.push(token);
            continue;
        }
        while let Some(&ch) = chars.peek() {
            if ch.is_whitespace() {
                break;
            }
            chars.next();
            if ch == '\\' && chars.peek() == Some(&' ') {
                token.push(' ');
                chars.next();
            } else {
                token.push(ch);
            }
        }
        out.push(token);
    }
    out
}

/// Loads the images `text` names (see [`image_mentions`]) for a model
/// that takes images when `model_takes_images`, else only says why none
/// was attached. Blocking (reads and decodes files): call it off the async
/// threads.
pub fn attach_images(text: &str, cwd: &Path, model: &str, model_takes_images: bool) -> Attached {
    let mut attached = Attached::default();
    for m in image_mentions(text, cwd) {
        let name = m
            .path
            .file_name()
            .map_or_else(|| m.typed.clone(), |n| n.to_string_lossy().into_owned());
        if !m.path.exists() {
            attached
                .notices
                .push(format!("@{} was not attached: no such file", m.typed));
            continue;
        }
        if !model_takes_images {
            attached.notices.push(format!(
                "{name} was not attached: model {model} does not take images \
                 (set `images = true` under [models.\"{model}\"] if it does)"
            ));
            continue;
        }
        match dsh_tool_fs::load_image(&m.path) {
            Ok(image) => {
                attached.blocks.push(ContentBlock::text(format!(
                    "[image: {name} {}×{}]",
                    image.width, image.height
                )));
                attached.blocks.push(ContentBlock::Image(image.block()));
            }
            Err(e) => attached
                .notices
                .push(format!("{name} was not attached: {e}")),
        }
    }
    attached
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_and_pasted_paths() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cwd = dir.path();
        std::fs::write(cwd.join("a.png"), b"x").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(cwd.join("b c.jpg"), b"x").unwrap_or_else(|e| panic!("{e}"));
        let abs = cwd.join("a.png").display().to_string();
        let text = format!(
            "see @a.png, and {abs} and ./a.png and 'b c.jpg' '{}' @missing.gif x.png /nope.png @notes.txt",
            cwd.join("b c.jpg").display()
        );
        let found: Vec<(String, bool)> = image_mentions(&text, cwd)
            .into_iter()
            .map(|m| (m.typed, m.at))
            .collect();
        assert_eq!(
            found,
            vec![
                ("a.png".to_string(), true),
                (cwd.join("b c.jpg").display().to_string(), false),
                ("missing.gif".to_string(), true),
            ],
            "same file once; bare names and missing pasted paths are text"
        );
    }
}
