//! Syntax highlighting of code, one line at a time, with syntect's bundled
//! syntaxes and the `base16-ocean.dark` theme.
//!
//! The syntax set and theme are loaded once, lazily, on the first
//! highlighted line (or by [`preload`]). Costs, release build on the
//! 2-core development machine (`cargo bench -p dsh-benches --bench tui`):
//! loading the syntax set ~1 ms and the themes ~0.9 ms; syntect then
//! compiles a syntax's regexes as its lines first need them, so the first
//! line of a language costs 15–55 ms more (`syntax_set_load+first_rust_line`
//! ~37 ms), once per process; after that a line costs 100–500 µs
//! (regex-fancy; Oniguruma would be about twice as fast, and compile
//! 10× faster, but needs a C build). A caller that wants no pause at the
//! first code block calls [`preload`] on a spare thread at start-up; the
//! markdown renderer highlights each code line once, when it is complete.
//!
//! A [`CodeHighlighter`] keeps syntect's parse and highlight state from one
//! line to the next, so a code block streamed line by line costs each line
//! once. Colours are foreground only (no background: the terminal's own
//! shows through); the theme's default foreground is left unset so plain
//! code reads in the terminal's text colour. They are 24-bit
//! ([`Color::Rgb`]) when `COLORTERM` is `truecolor` or `24bit`, else the
//! nearest of the 256-colour palette ([`Color::Indexed`]), decided once per
//! process.

use std::sync::OnceLock;

use syntect::highlighting::{
    Color as SynColor, FontStyle, HighlightIterator, HighlightState, Highlighter, Theme, ThemeSet,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference, SyntaxSet};

use crate::text::{Color, Modifier, Span, Style};

/// The theme code is drawn in: dark, and readable on a dark terminal.
const THEME: &str = "base16-ocean.dark";

/// syntect's bundled syntaxes, loaded on first use.
fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// The theme and its highlighter (selectors compiled once), loaded on
/// first use; `None` if the bundled theme set somehow lacks [`THEME`].
fn highlighter() -> Option<&'static Highlighter<'static>> {
    static THEME_CELL: OnceLock<Option<Theme>> = OnceLock::new();
    static HIGHLIGHTER: OnceLock<Option<Highlighter<'static>>> = OnceLock::new();
    HIGHLIGHTER
        .get_or_init(|| {
            let theme = THEME_CELL.get_or_init(|| ThemeSet::load_defaults().themes.remove(THEME));
            theme.as_ref().map(Highlighter::new)
        })
        .as_ref()
}

/// Whether colours are written as 24-bit RGB (`COLORTERM` says the
/// terminal takes them) rather than mapped to the 256-colour palette.
fn truecolor() -> bool {
    static TRUECOLOR: OnceLock<bool> = OnceLock::new();
    *TRUECOLOR.get_or_init(|| {
        std::env::var("COLORTERM")
            .map(|v| {
                let v = v.to_ascii_lowercase();
                v == "truecolor" || v == "24bit"
            })
            .unwrap_or(false)
    })
}

/// Loads the syntax set and theme now rather than at the first highlighted
/// line (idempotent; safe from any thread).
pub fn preload() {
    let _ = syntaxes();
    let _ = highlighter();
    let _ = truecolor();
}

/// The syntax a code fence's language tag names: a syntect name or file
/// extension (`rust`, `rs`, `python`, `py`, `js`, `json`, `yaml`, `diff`,
/// `go`, `c`, `cpp`, `java`, `md`, …, case-insensitive) or a common alias
/// (`sh`/`shell`/`zsh`/`console` → Bash, `ts`/`tsx`/`typescript`/`jsx` →
/// JavaScript, `toml`/`ini` → the nearest bundled grammar, `c++` → C++,
/// `golang` → Go, `yml` → YAML, `python3`/`py3` → Python). `None` for an
/// empty, unknown or plain-text tag.
fn syntax_for_token(tag: &str) -> Option<&'static SyntaxReference> {
    let tag = tag.trim().to_ascii_lowercase();
    let token = match tag.as_str() {
        "" | "text" | "txt" | "plain" | "plaintext" | "none" => return None,
        "sh" | "shell" | "zsh" | "console" | "shellsession" | "shell-session" | "bash" => "bash",
        "ts" | "tsx" | "typescript" | "jsx" | "javascript" | "mjs" | "cjs" | "node" => "js",
        "c++" | "cxx" | "hpp" | "cc" => "cpp",
        "golang" => "go",
        "yml" => "yaml",
        "python3" | "py3" | "python" => "py",
        "rust" => "rs",
        "markdown" => "md",
        "patch" => "diff",
        "make" | "makefile" => "Makefile",
        other => other,
    };
    let set = syntaxes();
    let found = set.find_syntax_by_token(token).or_else(|| match token {
        // Not bundled with syntect: the nearest grammar that colours
        // their comments, strings and section headers sensibly.
        "toml" | "ini" | "cfg" | "conf" => set
            .find_syntax_by_token("properties")
            .or_else(|| set.find_syntax_by_token("yaml")),
        _ => None,
    })?;
    (found.name != "Plain Text").then_some(found)
}

/// The highlighting of one code block (or one file's lines): feed it the
/// block's lines in order with [`CodeHighlighter::line`]; it keeps the
/// parser's state between them (a string or comment opened on one line is
/// still one on the next). Cloning it copies that state (a preview of a
/// partial line can be highlighted on a clone without disturbing the
/// original).
#[derive(Debug, Clone)]
pub struct CodeHighlighter {
    /// `None`: plain text (no known syntax, or the parser gave up).
    state: Option<State>,
}

#[derive(Debug, Clone)]
struct State {
    syntax: &'static SyntaxReference,
    parse: ParseState,
    highlight: HighlightState,
}

impl CodeHighlighter {
    /// A highlighter for a code fence's language tag (only its first word
    /// counts, up to a `,`, and braces and a leading `.` are dropped:
    /// `rust,ignore` and `{.rust}` are Rust); an unknown or empty tag gives
    /// plain text. Loads the syntax set on first use.
    pub fn new(lang: &str) -> Self {
        let word = lang
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | '{' | '}'))
            .find(|w| !w.is_empty())
            .unwrap_or("");
        let word = word.trim_start_matches('.');
        Self::from_syntax(syntax_for_token(word))
    }

    /// A highlighter for a file's contents chosen by its path (extension,
    /// or a whole file name such as `Makefile`); `None` when no bundled
    /// syntax matches (the caller shows the lines plain). Reads nothing
    /// from disk.
    pub fn for_path(path: &str) -> Option<Self> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let set = syntaxes();
        let by_name = set.find_syntax_by_extension(name);
        let ext = name.rsplit_once('.').map(|(_, ext)| ext).unwrap_or("");
        let syntax = by_name
            .or_else(|| (!ext.is_empty()).then(|| syntax_for_token(ext)).flatten())
            .filter(|s| s.name != "Plain Text")?;
        Some(Self::from_syntax(Some(syntax)))
    }

    /// A highlighter that leaves every line plain (no syntax set loaded).
    pub fn plain() -> Self {
        CodeHighlighter { state: None }
    }

    fn from_syntax(syntax: Option<&'static SyntaxReference>) -> Self {
        let state = syntax.zip(highlighter()).map(|(syntax, hl)| State {
            syntax,
            parse: ParseState::new(syntax),
            highlight: HighlightState::new(hl, ScopeStack::new()),
        });
        CodeHighlighter { state }
    }

    /// The name of the syntax in use (`Rust`, `Python`, …), `None` when
    /// lines come out plain.
    pub fn syntax_name(&self) -> Option<&'static str> {
        self.state.as_ref().map(|s| s.syntax.name.as_str())
    }

    /// The next line of the block (without its newline; one that has one
    /// has it ignored) as coloured spans, adjacent spans of one style
    /// merged. Plain text is one unstyled span (none for an empty line). If
    /// syntect fails on a line, that line and the rest of the block come
    /// out plain.
    pub fn line(&mut self, line: &str) -> Vec<Span> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let spans = match (self.state.as_mut(), highlighter()) {
            (Some(state), Some(hl)) => highlight_line(state, hl, line),
            _ => None,
        };
        match spans {
            Some(spans) => spans,
            None => {
                self.state = None;
                if line.is_empty() {
                    Vec::new()
                } else {
                    vec![Span::plain(line)]
                }
            }
        }
    }
}

/// `line` highlighted with `state`, advancing it; `None` if syntect fails.
fn highlight_line(state: &mut State, hl: &Highlighter<'_>, line: &str) -> Option<Vec<Span>> {
    // The bundled syntaxes are the "newlines" variant: they expect each
    // line to end in one.
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    let ops = state.parse.parse_line(&text, syntaxes()).ok()?;
    let default_fg = hl.get_default().foreground;
    let mut spans: Vec<Span> = Vec::new();
    for (style, piece) in HighlightIterator::new(&mut state.highlight, &ops, &text, hl) {
        let piece = piece.strip_suffix('\n').unwrap_or(piece);
        if piece.is_empty() {
            continue;
        }
        let style = convert(style, default_fg);
        match spans.last_mut() {
            Some(last) if last.style == style => last.text.push_str(piece),
            _ => spans.push(Span::styled(piece, style)),
        }
    }
    Some(spans)
}

/// A syntect style as a ratatui one: foreground (unless it is the theme's
/// default), bold and italic; never a background.
fn convert(style: syntect::highlighting::Style, default_fg: SynColor) -> Style {
    let mut out = Style::new();
    let fg = style.foreground;
    if (fg.r, fg.g, fg.b) != (default_fg.r, default_fg.g, default_fg.b) {
        out = out.fg(color(fg.r, fg.g, fg.b));
    }
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    out
}

/// An RGB colour as the terminal takes it: itself, or the nearest entry of
/// the 256-colour palette.
fn color(r: u8, g: u8, b: u8) -> Color {
    if truecolor() {
        Color::Rgb(r, g, b)
    } else {
        Color::Indexed(to_256(r, g, b))
    }
}

/// The xterm 256-colour palette entry nearest to an RGB colour: the 6×6×6
/// cube (16–231) or the grey ramp (232–255), whichever is closer.
fn to_256(r: u8, g: u8, b: u8) -> u8 {
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    let level = |v: u8| -> usize {
        match v {
            0..=47 => 0,
            48..=114 => 1,
            _ => ((usize::from(v) - 35) / 40).min(5),
        }
    };
    let (ri, gi, bi) = (level(r), level(g), level(b));
    let cube = (LEVELS[ri], LEVELS[gi], LEVELS[bi]);
    let dist = |(x, y, z): (u8, u8, u8)| -> u32 {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).unsigned_abs().pow(2);
        d(x, r) + d(y, g) + d(z, b)
    };
    let mean = (u32::from(r) + u32::from(g) + u32::from(b)) / 3;
    // Grey ramp entries are 8, 18, …, 238.
    let grey_index = (mean.saturating_sub(3) / 10).min(23) as u8;
    let grey_level = 8 + 10 * grey_index;
    let cube_index = 16 + 36 * ri as u8 + 6 * gi as u8 + bi as u8;
    if dist((grey_level, grey_level, grey_level)) < dist(cube) {
        232 + grey_index
    } else {
        cube_index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(spans: &[Span]) -> String {
        spans.iter().map(|s| s.text.as_str()).collect()
    }

    fn coloured(spans: &[Span]) -> usize {
        spans.iter().filter(|s| s.style.fg.is_some()).count()
    }

    #[test]
    fn rust_lines_come_out_coloured_and_whole() {
        let mut h = CodeHighlighter::new("rust");
        assert_eq!(h.syntax_name(), Some("Rust"));
        let spans = h.line("fn main() { let x = \"hi\"; }");
        assert_eq!(text(&spans), "fn main() { let x = \"hi\"; }");
        assert!(coloured(&spans) >= 2, "{spans:?}");
        assert!(spans.iter().all(|s| s.style.bg.is_none()));
        // The keyword and the string differ in colour.
        let fg_of = |needle: &str| {
            spans
                .iter()
                .find(|s| s.text.contains(needle))
                .and_then(|s| s.style.fg)
        };
        assert_ne!(fg_of("fn"), fg_of("\"hi\""));
    }

    #[test]
    fn state_carries_from_line_to_line() {
        // The second line is inside a block comment opened on the first:
        // it is coloured like a comment, not like code.
        let mut h = CodeHighlighter::new("rs");
        let _ = h.line("/* start");
        let inside = h.line("let x = 1;");
        let mut fresh = CodeHighlighter::new("rs");
        let alone = fresh.line("let x = 1;");
        assert_ne!(inside, alone);
        assert_eq!(coloured(&inside), 1, "{inside:?}");
    }

    #[test]
    fn language_tags_and_aliases_resolve() {
        for (tag, name) in [
            ("rust", "Rust"),
            ("rs", "Rust"),
            ("py", "Python"),
            ("python", "Python"),
            ("sh", "Bourne Again Shell (bash)"),
            ("bash", "Bourne Again Shell (bash)"),
            ("console", "Bourne Again Shell (bash)"),
            ("js", "JavaScript"),
            ("ts", "JavaScript"),
            ("json", "JSON"),
            ("yaml", "YAML"),
            ("yml", "YAML"),
            ("diff", "Diff"),
            ("go", "Go"),
            ("c", "C"),
            ("cpp", "C++"),
            ("c++", "C++"),
            ("java", "Java"),
            ("md", "Markdown"),
            ("RUST", "Rust"),
            ("rust,ignore", "Rust"),
            ("{.python}", "Python"),
        ] {
            assert_eq!(CodeHighlighter::new(tag).syntax_name(), Some(name), "{tag}");
        }
        assert!(CodeHighlighter::new("toml").syntax_name().is_some());
        for tag in ["", "text", "no-such-language", "🦀"] {
            assert_eq!(CodeHighlighter::new(tag).syntax_name(), None, "{tag}");
        }
    }

    #[test]
    fn unknown_languages_are_plain() {
        let mut h = CodeHighlighter::new("klingon");
        assert_eq!(h.line("qapla' batlh"), vec![Span::plain("qapla' batlh")]);
        assert!(h.line("").is_empty());
    }

    #[test]
    fn paths_pick_their_syntax() {
        let name = |p: &str| CodeHighlighter::for_path(p).and_then(|h| h.syntax_name());
        assert_eq!(name("src/main.rs"), Some("Rust"));
        assert_eq!(name("a/b/c.py"), Some("Python"));
        assert_eq!(name("Makefile"), Some("Makefile"));
        assert_eq!(name("x.ts"), Some("JavaScript"));
        assert_eq!(name("notes.txt"), None);
        assert_eq!(name("LICENSE"), None);
        assert_eq!(name(""), None);
    }

    #[test]
    fn the_256_colour_mapping_is_nearest() {
        assert_eq!(to_256(0, 0, 0), 16);
        assert_eq!(to_256(255, 255, 255), 231);
        assert_eq!(to_256(255, 0, 0), 196);
        assert_eq!(to_256(0, 135, 255), 33);
        // A mid grey lands on the grey ramp, not a cube corner.
        assert_eq!(to_256(128, 128, 128), 244);
        assert_eq!(to_256(0x65, 0x73, 0x7e), 243);
    }

    #[test]
    fn odd_input_never_panics() {
        let mut h = CodeHighlighter::new("rust");
        for line in [
            "\u{0}\u{7}\x1b[2J",
            "\"unterminated",
            "'",
            "r#\"",
            "\t\t",
            "日本語",
        ] {
            let spans = h.line(line);
            assert_eq!(text(&spans), line);
        }
    }
}
