use super::*;

fn set(rules: &[(Kind, &str)]) -> RuleSet {
    let mut set = RuleSet::new(Path::new("/work/proj"), Some(Path::new("/home/u")), "mcp");
    for (kind, text) in rules {
        set.add(*kind, text, "test.toml")
            .unwrap_or_else(|e| panic!("{e}"));
    }
    set
}

fn bash(command: &str) -> String {
    serde_json::json!({ "command": command, "description": "d" }).to_string()
}

fn file(path: &str) -> String {
    serde_json::json!({ "file_path": path, "content": "x" }).to_string()
}

fn allowed(set: &RuleSet, tool: &str, args: &str) -> bool {
    matches!(set.evaluate(tool, args), Outcome::Allow(_))
}

#[test]
fn a_prefix_rule_allows_at_word_boundaries_only() {
    let s = set(&[(Kind::Allow, "Bash(cargo test:*)")]);
    assert!(allowed(&s, "bash", &bash("cargo test --all")));
    assert!(allowed(&s, "bash", &bash("'cargo' \"test\" $FLAGS")));
    assert!(allowed(&s, "bash", &bash("  cargo   test -p x ")));
    for no in [
        "cargo testing",
        "cargo",
        "cargo build",
        "cargo test && rm -rf ~",
        "cargo test; rm -rf ~",
        "cargo test | sh",
        "cargo test $(rm -rf ~)",
        "cargo test `rm -rf ~`",
        "FOO=1 cargo test",
        "PATH=/tmp/evil; cargo test",
        "$C test",
        "cargo test 'unterminated",
        "cargo test > >(sh)",
    ] {
        assert!(!allowed(&s, "bash", &bash(no)), "{no}");
    }
    // Not a bash call, or no command: never allowed by a bash rule.
    assert_eq!(s.evaluate("read", &file("x")), Outcome::None);
    assert_eq!(s.evaluate("bash", "{not json"), Outcome::None);
}

#[test]
fn every_simple_command_needs_a_rule_and_the_rules_are_named() {
    let s = set(&[
        (Kind::Allow, "bash(cargo test:*)"),
        (Kind::Allow, "bash(git status)"),
    ]);
    let Outcome::Allow(rules) =
        s.evaluate("bash", &bash("cargo test && git status || cargo test -q"))
    else {
        panic!("allowed");
    };
    let texts: Vec<&str> = rules.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(texts, ["bash(cargo test:*)", "bash(git status)"]);
    assert!(!allowed(&s, "bash", &bash("git status --short")));
    assert!(allowed(&s, "bash", &bash("git  'status'")));
    assert!(!allowed(&s, "bash", &bash("cargo test && git push")));
    // An exact rule of a compound command matches that text only.
    let s = set(&[(Kind::Allow, "bash(make && make install)")]);
    assert!(allowed(&s, "bash", &bash("make  &&  make install")));
    assert!(!allowed(
        &s,
        "bash",
        &bash("make && make install && rm -rf ~")
    ));
    // A line break separates commands: it is not a space.
    let s = set(&[(Kind::Allow, "bash(echo a rm -rf b)")]);
    assert!(allowed(&s, "bash", &bash("echo  a rm -rf b")));
    assert!(!allowed(&s, "bash", &bash("echo a\nrm -rf b")));
    assert_eq!(
        suggest("bash", &bash("cd x\nmake")).as_deref(),
        Some("bash(cd x ; make)")
    );
}

#[test]
fn deny_wins_over_ask_over_allow_and_matches_any_part() {
    let s = set(&[
        (Kind::Allow, "bash"),
        (Kind::Ask, "bash(git push:*)"),
        (Kind::Deny, "bash(rm:*)"),
    ]);
    assert!(allowed(&s, "bash", &bash("ls")));
    for denied in [
        "rm -rf ~",
        "ls && rm -rf ~",
        "echo $(rm -rf ~)",
        "/bin/rm x",
        "sudo -n rm x",
        "env A=1 rm x",
        "ls; rm 'unterminated",
        "git push && rm x",
        "FOO=1 rm x",
    ] {
        match s.evaluate("bash", &bash(denied)) {
            Outcome::Deny(m) => {
                assert_eq!(m.describe(), "\"bash(rm:*)\" (test.toml)", "{denied}")
            }
            other => panic!("{denied}: {other:?}"),
        }
    }
    assert!(matches!(
        s.evaluate("bash", &bash("git push origin main")),
        Outcome::Ask(m) if m.text == "bash(git push:*)"
    ));
    assert!(allowed(&s, "bash", &bash("rmdir x")), "word boundary");
    assert!(allowed(&s, "bash", &bash("echo rm")));
}

#[test]
fn path_rules_match_relative_to_the_workspace() {
    let s = set(&[
        (Kind::Allow, "Edit(src/**)"),
        (Kind::Allow, "read(*.md)"),
        (Kind::Deny, "read(~/.ssh/**)"),
        (Kind::Deny, "write(/etc/**)"),
    ]);
    assert!(allowed(&s, "edit", &file("src/a/b.rs")));
    assert!(allowed(&s, "write", &file("/work/proj/src/new.rs")));
    assert!(allowed(
        &s,
        "str_replace_editor",
        &serde_json::json!({"command": "create", "path": "/work/proj/src/x"}).to_string()
    ));
    assert!(!allowed(&s, "edit", &file("srcx/a.rs")));
    assert!(!allowed(&s, "edit", &file("src/../../etc/passwd")));
    assert!(!allowed(&s, "edit", &file("/elsewhere/src/a.rs")));
    assert!(!allowed(&s, "edit", &file("README.md")), "a read rule");
    assert!(allowed(&s, "read", &file("docs/deep/README.md")));
    assert!(allowed(&s, "read", &file("README.md")));
    assert!(matches!(
        s.evaluate("read", &file("/home/u/.ssh/id_rsa")),
        Outcome::Deny(_)
    ));
    assert!(matches!(
        s.evaluate("read", &file("~/.ssh/id_rsa")),
        Outcome::Deny(_)
    ));
    assert!(matches!(
        s.evaluate("write", &file("/etc/../etc/hosts")),
        Outcome::Deny(_)
    ));
    assert!(
        !matches!(s.evaluate("edit", &file("/etc/hosts")), Outcome::Deny(_)),
        "write only"
    );
}

#[test]
fn mcp_rules_map_claude_code_names_onto_the_prefix() {
    let s = set(&[
        (Kind::Allow, "mcp__github__*"),
        (Kind::Deny, "mcp__github__delete_repo"),
    ]);
    assert!(allowed(&s, "mcp__github__create_issue", "{}"));
    assert!(matches!(
        s.evaluate("mcp__github__delete_repo", "{}"),
        Outcome::Deny(_)
    ));
    assert_eq!(s.evaluate("mcp__gitlab__create_issue", "{}"), Outcome::None);
    assert_eq!(s.evaluate("mcp__github", "{}"), Outcome::None);
    let mut bare = RuleSet::new(Path::new("/w"), None, "");
    bare.add(Kind::Allow, "mcp__my.srv__get*", "x").unwrap();
    assert!(allowed(&bare, "my_srv__get_item", "{}"));
    assert!(!allowed(&bare, "mcp__my_srv__get_item", "{}"));
    assert!(!allowed(&bare, "my_srv__put", "{}"));
}

#[test]
fn web_fetch_domains() {
    let s = set(&[(Kind::Allow, "WebFetch(domain:example.com)")]);
    let url = |u: &str| serde_json::json!({ "url": u }).to_string();
    assert!(allowed(&s, "web_fetch", &url("https://docs.Example.com/x")));
    assert!(allowed(&s, "web_fetch", &url("http://user@example.com:80")));
    assert!(!allowed(
        &s,
        "web_fetch",
        &url("https://example.com.evil.org/")
    ));
    assert!(!allowed(&s, "web_fetch", &url("https://notexample.com/")));
}

#[test]
fn errors_name_the_rule_the_list_and_the_source() {
    let mut s = RuleSet::default();
    let e = s
        .add(Kind::Deny, "Bash(rm -rf", "/home/u/.config/dsh/dsh.toml")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid permission rule \"Bash(rm -rf\" in /home/u/.config/dsh/dsh.toml (deny list): a specifier must end with `)`: write `Tool(specifier)` [PERMISSION_RULE_INVALID]"
    );
    assert_eq!(
        dsh_protocol::codes::ErrorCode::code(&e),
        dsh_protocol::codes::PERMISSION_RULE_INVALID
    );
    assert!(s.is_empty());
}

#[test]
fn suggestions_are_the_rules_that_allow_the_call() {
    assert_eq!(
        suggest("bash", &bash("cargo test --all")).as_deref(),
        Some("bash(cargo test:*)")
    );
    assert_eq!(
        suggest("bash", &bash("git status")).as_deref(),
        Some("bash(git status:*)")
    );
    assert_eq!(suggest("bash", &bash("ls")).as_deref(), Some("bash(ls)"));
    assert_eq!(
        suggest("bash", &bash("make  &&  make install")).as_deref(),
        Some("bash(make && make install)")
    );
    assert_eq!(
        suggest("bash", &bash("FOO=1 make x")).as_deref(),
        Some("bash(FOO=1 make x)")
    );
    // `ls *` as an exact rule would read as a prefix: no suggestion
    // rather than a wrong one.
    assert_eq!(suggest("bash", &bash("echo $(date) *")), None);
    let w = Path::new("/work/proj");
    assert_eq!(
        suggest_for(w, "edit", &file("src/a/b.rs")).as_deref(),
        Some("edit(src/a/**)")
    );
    assert_eq!(
        suggest_for(w, "write", &file("/work/proj/README.md")).as_deref(),
        Some("edit(**)")
    );
    assert_eq!(
        suggest_for(w, "write", &file("/etc/x/y")).as_deref(),
        Some("edit(/etc/x/**)")
    );
    assert_eq!(
        suggest_for(w, "edit", &file("src/[x]/a.rs")).as_deref(),
        Some("edit(src/[[]x[]]/**)")
    );
    assert_eq!(
        suggest("edit", &file("/etc/hosts")).as_deref(),
        Some("edit(/etc/**)")
    );
    assert_eq!(
        suggest("mcp__github__create_issue", "{}").as_deref(),
        Some("mcp__github__create_issue")
    );
    assert_eq!(suggest("todo_write", "{}"), None);
    assert_eq!(suggest("bash", "{}"), None);
}
