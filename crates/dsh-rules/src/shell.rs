//! A bash command split into the simple commands it runs, with a real
//! shell parser (`brush-parser`).
//!
//! Every simple command of pipelines, `&&`/`||`/`;`/`&` lists, subshells,
//! brace groups, `if`/`while`/`until`/`for`/`case` bodies and function
//! bodies is listed, in source order, with its words. A command or process
//! substitution, a here-document that expands, a function definition,
//! arithmetic, `[[ … ]]` or a bare assignment (`PATH=…`) makes the command
//! *opaque*: its effect cannot be judged from its words, so no allow rule
//! matches it; the simple commands inside substitutions are still listed,
//! so deny and ask rules see them.

use brush_parser::ast;
use brush_parser::word::{WordPiece, WordPieceWithSource};

/// Longest command text handed to the parser; a longer one is
/// [`ParseFailure`] (it is matched by deny and ask rules on its raw text).
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// Deepest bracket nesting handed to the parser (`(`, `{`, `$(`, `` ` ``),
/// so a hostile command cannot exhaust the stack of a recursive parser.
pub const MAX_NESTING: usize = 64;

/// How deep command substitutions are followed inside each other.
const MAX_SUBSTITUTION_DEPTH: usize = 8;

/// One word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word with quotes and escapes removed; an expansion (`$X`,
    /// `~`, `$((…))`, `$(…)`) is kept as written.
    pub text: String,
    /// Whether the text is exactly what the command receives: no
    /// expansion of any kind.
    pub literal: bool,
}

/// One simple command: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command name and its arguments (assignments and redirections
    /// left out).
    pub words: Vec<Word>,
    /// Whether variable assignments precede it (`FOO=1 cargo test`).
    pub assignments: bool,
}

impl SimpleCommand {
    /// The words' texts joined by single spaces.
    pub fn text(&self) -> String {
        self.words
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A parsed command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// Every simple command, in source order (those inside substitutions
    /// after the command that holds them).
    pub commands: Vec<SimpleCommand>,
    /// Whether something in it cannot be judged from the words (see the
    /// module docs).
    pub opaque: bool,
    /// The text of substitutions that could not be parsed themselves
    /// (matched by deny and ask rules on their raw text).
    pub unparsed: Vec<String>,
}

/// The command could not be parsed (bad syntax, too long, nested too
/// deep).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse the command: {0}")]
pub struct ParseFailure(pub String);

/// Splits `command` into its simple commands. Never panics, whatever the
/// input.
///
/// # Errors
/// [`ParseFailure`] for a command the parser rejects, one longer than
/// [`MAX_COMMAND_BYTES`] or nested deeper than [`MAX_NESTING`].
pub fn split(command: &str) -> Result<Split, ParseFailure> {
    let mut out = Split::default();
    split_into(command, 0, &mut out)?;
    Ok(out)
}

fn split_into(command: &str, depth: usize, out: &mut Split) -> Result<(), ParseFailure> {
    if command.len() > MAX_COMMAND_BYTES {
        return Err(ParseFailure(format!(
            "longer than {MAX_COMMAND_BYTES} bytes"
        )));
    }
    if nesting(command) > MAX_NESTING {
        return Err(ParseFailure(format!("nested deeper than {MAX_NESTING}")));
    }
    let options = brush_parser::ParserOptions::default();
    // The parser is third-party code fed untrusted text: a panic in it is
    // a failure to parse, not a crash.
    let parsed = std::panic::catch_unwind(|| {
        let mut parser = brush_parser::Parser::new(std::io::Cursor::new(command), &options);
        parser.parse_program()
    });
    let program = match parsed {
        Ok(Ok(program)) => program,
        Ok(Err(e)) => return Err(ParseFailure(e.to_string())),
        Err(_) => return Err(ParseFailure("the shell parser failed".to_string())),
    };
    let mut walker = Walker {
        out,
        depth,
        options,
    };
    for complete in &program.complete_commands {
        walker.compound_list(complete);
    }
    Ok(())
}

/// The deepest nesting of brackets and backquotes, counted naively
/// (quotes ignored): an upper bound of the parser's recursion.
fn nesting(command: &str) -> usize {
    let (mut depth, mut max, mut backquote) = (0usize, 0usize, false);
    for c in command.chars() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            '`' => {
                backquote = !backquote;
                if backquote {
                    depth += 1;
                } else {
                    depth = depth.saturating_sub(1);
                }
            }
            _ => {}
        }
        max = max.max(depth);
    }
    max
}

struct Walker<'a> {
    out: &'a mut Split,
    depth: usize,
    options: brush_parser::ParserOptions,
}

impl Walker<'_> {
    fn compound_list(&mut self, list: &ast::CompoundList) {
        for item in &list.0 {
            self.and_or(&item.0);
        }
    }

    fn and_or(&mut self, list: &ast::AndOrList) {
        self.pipeline(&list.first);
        for next in &list.additional {
            match next {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p),
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline) {
        for command in &pipeline.seq {
            self.command(command);
        }
    }

    fn command(&mut self, command: &ast::Command) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound);
                self.redirects(redirects.as_ref());
            }
            ast::Command::Function(def) => {
                // A definition runs nothing by itself, but what calls it
                // cannot be told from its words.
                self.out.opaque = true;
                self.compound(&def.body.0);
                self.redirects(def.body.1.as_ref());
            }
            ast::Command::ExtendedTest(_, redirects) => {
                self.out.opaque = true;
                self.redirects(redirects.as_ref());
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand) {
        match compound {
            ast::CompoundCommand::Arithmetic(_) | ast::CompoundCommand::ArithmeticForClause(_) => {
                self.out.opaque = true;
                if let ast::CompoundCommand::ArithmeticForClause(f) = compound {
                    self.compound_list(&f.body.list);
                }
            }
            ast::CompoundCommand::BraceGroup(g) => self.compound_list(&g.list),
            ast::CompoundCommand::Subshell(s) => self.compound_list(&s.list),
            ast::CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(w);
                }
                self.compound_list(&f.body.list);
            }
            ast::CompoundCommand::CaseClause(c) => {
                self.word(&c.value);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(p);
                    }
                    if let Some(cmd) = &item.cmd {
                        self.compound_list(cmd);
                    }
                }
            }
            ast::CompoundCommand::IfClause(i) => {
                self.compound_list(&i.condition);
                self.compound_list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.compound_list(c);
                    }
                    self.compound_list(&e.body);
                }
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.compound_list(&w.0);
                self.compound_list(&w.1.list);
            }
            ast::CompoundCommand::Coprocess(c) => {
                if let Some(name) = &c.name {
                    self.word(name);
                }
                self.command(&c.body);
            }
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand) {
        let mut words = Vec::new();
        let mut assignments = false;
        let items = simple
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .map(Some)
            .chain(std::iter::once(None))
            .chain(simple.suffix.iter().flat_map(|s| s.0.iter()).map(Some));
        for item in items {
            let item = match item {
                Some(item) => item,
                None => {
                    if let Some(name) = &simple.word_or_name {
                        words.push(self.word(name));
                    }
                    continue;
                }
            };
            match item {
                ast::CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r),
                ast::CommandPrefixOrSuffixItem::Word(w) => words.push(self.word(w)),
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    if words.is_empty() {
                        assignments = true;
                        match &a.value {
                            ast::AssignmentValue::Scalar(v) => {
                                self.word(v);
                            }
                            ast::AssignmentValue::Array(items) => {
                                for (k, v) in items {
                                    if let Some(k) = k {
                                        self.word(k);
                                    }
                                    self.word(v);
                                }
                            }
                        }
                    } else {
                        // `declare X=1`: an argument like any other.
                        words.push(self.word(w));
                    }
                }
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    self.out.opaque = true;
                    self.compound_list(&sub.list);
                }
            }
        }
        if words.is_empty() {
            // Only assignments or redirections: a bare `PATH=…` changes
            // what the next commands run.
            self.out.opaque = true;
            return;
        }
        self.out.commands.push(SimpleCommand { words, assignments });
    }

    fn redirects(&mut self, list: Option<&ast::RedirectList>) {
        for r in list.iter().flat_map(|l| l.0.iter()) {
            self.redirect(r);
        }
    }

    fn redirect(&mut self, redirect: &ast::IoRedirect) {
        match redirect {
            ast::IoRedirect::File(_, _, target) => match target {
                ast::IoFileRedirectTarget::Filename(w)
                | ast::IoFileRedirectTarget::Duplicate(w) => {
                    self.word(w);
                }
                ast::IoFileRedirectTarget::Fd(_) => {}
                ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                    self.out.opaque = true;
                    self.compound_list(&sub.list);
                }
            },
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    match brush_parser::word::parse_heredoc(&doc.doc.value, &self.options) {
                        Ok(pieces) => {
                            let mut text = String::new();
                            self.pieces(&doc.doc.value, &pieces, &mut text);
                        }
                        Err(_) => self.unparsed(&doc.doc.value),
                    }
                }
            }
            ast::IoRedirect::HereString(_, w) => {
                self.word(w);
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                self.word(w);
            }
        }
    }

    /// The word's text, recording what it expands.
    fn word(&mut self, word: &ast::Word) -> Word {
        match brush_parser::word::parse(&word.value, &self.options) {
            Ok(pieces) => {
                let mut text = String::new();
                let literal = self.pieces(&word.value, &pieces, &mut text);
                Word { text, literal }
            }
            Err(_) => {
                self.unparsed(&word.value);
                Word {
                    text: brush_parser::unquote_str(&word.value),
                    literal: false,
                }
            }
        }
    }

    /// Appends the text of `pieces` (cut from `source`) to `text`; whether
    /// all of them are literal.
    fn pieces(&mut self, source: &str, pieces: &[WordPieceWithSource], text: &mut String) -> bool {
        let mut literal = true;
        for p in pieces {
            let raw = source.get(p.start_index..p.end_index).unwrap_or("");
            match &p.piece {
                WordPiece::Text(s) | WordPiece::SingleQuotedText(s) => text.push_str(s),
                WordPiece::AnsiCQuotedText(s) => {
                    literal = false;
                    text.push_str(s);
                }
                WordPiece::EscapeSequence(s) => {
                    text.push_str(s.strip_prefix('\\').unwrap_or(s));
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    literal &= self.pieces(source, inner, text);
                }
                WordPiece::TildeExpansion(_)
                | WordPiece::ParameterExpansion(_)
                | WordPiece::ArithmeticExpression(_) => {
                    literal = false;
                    if matches!(p.piece, WordPiece::ArithmeticExpression(_))
                        && raw.contains(['$', '`'])
                    {
                        // `$(( $(cmd) ))`: judged like a substitution.
                        self.out.opaque = true;
                        self.unparsed(raw);
                    }
                    text.push_str(raw);
                }
                WordPiece::CommandSubstitution(inner)
                | WordPiece::BackquotedCommandSubstitution(inner) => {
                    literal = false;
                    self.out.opaque = true;
                    self.substitution(inner);
                    text.push_str(raw);
                }
            }
        }
        literal
    }

    fn substitution(&mut self, inner: &str) {
        if self.depth >= MAX_SUBSTITUTION_DEPTH {
            self.unparsed(inner);
            return;
        }
        let mut nested = Split::default();
        match split_into(inner, self.depth + 1, &mut nested) {
            Ok(()) => {
                self.out.commands.extend(nested.commands);
                self.out.unparsed.extend(nested.unparsed);
            }
            Err(_) => self.unparsed(inner),
        }
    }

    fn unparsed(&mut self, text: &str) {
        self.out.opaque = true;
        self.out.unparsed.push(text.to_string());
    }
}

/// The pieces of a command that could not be parsed, cut at every shell
/// operator and bracket, each with quotes and backslashes removed and its
/// whitespace normalised: what deny and ask rules are matched against
/// when the parser cannot help (fail closed).
pub fn raw_segments(text: &str) -> Vec<Vec<String>> {
    text.split(|c: char| {
        matches!(
            c,
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '{' | '}' | '$' | '<' | '>'
        )
    })
    .map(|seg| {
        seg.split_whitespace()
            .map(|w| {
                w.chars()
                    .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                    .collect::<String>()
            })
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
    })
    .filter(|words| !words.is_empty())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(command: &str) -> (Vec<String>, bool) {
        let split = split(command).unwrap_or_else(|e| panic!("{command}: {e}"));
        (
            split.commands.iter().map(SimpleCommand::text).collect(),
            split.opaque,
        )
    }

    #[test]
    fn lists_pipelines_and_groups_are_split_into_simple_commands() {
        assert_eq!(
            texts("cargo test --all && rm -rf ~ || echo 'a  b' | wc -l; (cd x && make) & { ls; }"),
            (
                vec![
                    "cargo test --all".to_string(),
                    "rm -rf ~".to_string(),
                    "echo a  b".to_string(),
                    "wc -l".to_string(),
                    "cd x".to_string(),
                    "make".to_string(),
                    "ls".to_string(),
                ],
                false
            )
        );
        let (cmds, opaque) =
            texts("if true; then git status; else for f in a b; do echo $f; done; fi");
        assert_eq!(cmds, vec!["true", "git status", "echo $f"]);
        assert!(!opaque);
        let (cmds, _) =
            texts("while read l; do echo \"$l\"; done < in.txt; case x in a) rm a;; esac");
        assert_eq!(cmds, vec!["read l", "echo $l", "rm a"]);
    }

    #[test]
    fn quotes_and_escapes_are_removed_and_expansions_are_not_literal() {
        let split = split(r#"'cargo' t\est "$HOME" ~/x"#).unwrap_or_default();
        let words = &split.commands[0].words;
        assert_eq!(
            words[0],
            Word {
                text: "cargo".into(),
                literal: true
            }
        );
        assert_eq!(
            words[1],
            Word {
                text: "test".into(),
                literal: true
            }
        );
        assert_eq!(
            words[2],
            Word {
                text: "$HOME".into(),
                literal: false
            }
        );
        assert!(!words[3].literal);
        assert!(!split.opaque);
        let split = super::split("FOO=1 cargo test").unwrap_or_default();
        assert!(split.commands[0].assignments);
        assert_eq!(split.commands[0].text(), "cargo test");
    }

    #[test]
    fn substitutions_make_the_command_opaque_and_their_commands_are_listed() {
        for (command, inner) in [
            ("echo $(rm -rf ~)", "rm -rf ~"),
            ("echo `rm -rf ~`", "rm -rf ~"),
            ("cat <(rm -rf ~)", "rm -rf ~"),
            ("X=$(rm -rf ~) ls", "rm -rf ~"),
            ("ls > >(rm -rf ~)", "rm -rf ~"),
            ("cat <<EOF\n$(rm -rf ~)\nEOF\n", "rm -rf ~"),
            ("f() { rm -rf ~; }; f", "rm -rf ~"),
        ] {
            let (cmds, opaque) = texts(command);
            assert!(opaque, "{command}");
            assert!(cmds.iter().any(|c| c == inner), "{command}: {cmds:?}");
        }
        for command in ["PATH=/tmp/evil", "[[ -f x ]] && ls", "(( x++ ))", "> out"] {
            assert!(texts(command).1, "{command}");
        }
        // Quoted: no substitution, nothing opaque.
        assert_eq!(
            texts("echo '$(rm -rf ~)'"),
            (vec!["echo $(rm -rf ~)".to_string()], false)
        );
        assert!(!texts("cat <<'EOF'\n$(rm -rf ~)\nEOF\n").1);
    }

    #[test]
    fn bad_input_is_a_failure_not_a_panic() {
        for bad in ["echo 'unterminated", "if then fi (", "&& ls", "((((", ")"] {
            assert!(split(bad).is_err(), "{bad}");
        }
        assert!(split(&"(".repeat(MAX_NESTING + 1)).is_err());
        assert!(split(&"x".repeat(MAX_COMMAND_BYTES + 1)).is_err());
    }

    #[test]
    fn raw_segments_cut_at_operators() {
        assert_eq!(
            raw_segments("echo 'a; \"rm\" -rf x && ls $(pwd"),
            vec![
                vec!["echo".to_string(), "a".to_string()],
                vec!["rm".to_string(), "-rf".to_string(), "x".to_string()],
                vec!["ls".to_string()],
                vec!["pwd".to_string()],
            ]
        );
    }

    #[test]
    fn long_flat_commands_do_not_exhaust_the_stack() {
        for unit in ["ls && ", "a | ", "x; ", "echo \"$(b)\" ", "a=1 "] {
            let mut text = unit.repeat(MAX_COMMAND_BYTES / unit.len() - 1);
            text.push_str("ls");
            let _ = split(&text);
        }
    }
}
