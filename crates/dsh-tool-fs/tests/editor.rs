//! `str_replace_editor` against real files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{err, ok, Fx};
use dsh_tools::ToolRegistry;
use serde_json::json;

const EDITOR: &str = "str_replace_editor";

#[test]
fn it_is_not_in_the_default_set() {
    let registry = ToolRegistry::new();
    let _reg = dsh_tool_fs::install(&registry, std::env::temp_dir()).unwrap();
    assert_eq!(registry.names(), ["read", "write", "edit"]);
}

#[tokio::test]
async fn create_view_replace_insert() {
    let fx = Fx::new();
    let f = fx.p("src/a.py");
    let t = ok(&fx
        .call(
            EDITOR,
            json!({"command": "create", "path": f, "file_text": "a = 1\nb = 2\nc = 3\n"}),
        )
        .await);
    assert_eq!(t, format!("File created successfully at: {f}"));
    err(
        &fx.call(
            EDITOR,
            json!({"command": "create", "path": f, "file_text": "x"}),
        )
        .await,
        "FS_ALREADY_EXISTS",
    );
    let t = ok(&fx
        .call(
            EDITOR,
            json!({"command": "view", "path": f, "view_range": [2, -1]}),
        )
        .await);
    assert!(t.starts_with("     2\tb = 2\n     3\tc = 3\n"), "{t}");
    let t = ok(&fx
        .call(
            EDITOR,
            json!({"command": "str_replace", "path": f, "old_str": "b = 2", "new_str": "b = 20"}),
        )
        .await);
    assert!(t.contains("has been edited"), "{t}");
    assert!(t.contains("     2\tb = 20\n"), "{t}");
    err(
        &fx.call(
            EDITOR,
            json!({"command": "str_replace", "path": f, "old_str": " = ", "new_str": "="}),
        )
        .await,
        "FS_AMBIGUOUS_EDIT",
    );
    err(
        &fx.call(
            EDITOR,
            json!({"command": "str_replace", "path": f, "old_str": "zzz", "new_str": ""}),
        )
        .await,
        "FS_EDIT_NOT_FOUND",
    );
    ok(&fx
        .call(
            EDITOR,
            json!({"command": "insert", "path": f, "insert_line": 0, "new_str": "# top"}),
        )
        .await);
    ok(&fx
        .call(
            EDITOR,
            json!({"command": "insert", "path": f, "insert_line": 4, "new_str": "d = 4"}),
        )
        .await);
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "# top\na = 1\nb = 20\nc = 3\nd = 4\n"
    );
    let t = err(
        &fx.call(
            EDITOR,
            json!({"command": "insert", "path": f, "insert_line": 99, "new_str": "x"}),
        )
        .await,
        "INVALID_ARGS",
    );
    assert!(t.contains("past the end"), "{t}");
}

#[tokio::test]
async fn the_guard_and_argument_rules_hold() {
    let fx = Fx::new();
    let f = fx.p("theirs.txt");
    std::fs::write(&f, "x\n").unwrap();
    err(
        &fx.call(
            EDITOR,
            json!({"command": "str_replace", "path": f, "old_str": "x", "new_str": "y"}),
        )
        .await,
        "FS_NOT_OBSERVED",
    );
    ok(&fx.call(EDITOR, json!({"command": "view", "path": f})).await);
    std::fs::write(&f, "x changed\n").unwrap();
    err(
        &fx.call(
            EDITOR,
            json!({"command": "insert", "path": f, "insert_line": 1, "new_str": "y"}),
        )
        .await,
        "FS_STALE_VERSION",
    );
    let t = err(
        &fx.call(EDITOR, json!({"command": "view", "path": "relative.txt"}))
            .await,
        "INVALID_ARGS",
    );
    assert!(t.contains("must be an absolute path"), "{t}");
    let t = err(
        &fx.call(EDITOR, json!({"command": "create", "path": fx.p("n.txt")}))
            .await,
        "INVALID_ARGS",
    );
    assert!(
        t.contains("\"file_text\" is required for command \"create\""),
        "{t}"
    );
    let t = err(
        &fx.call(
            EDITOR,
            json!({"command": "view", "path": f, "view_range": [1]}),
        )
        .await,
        "INVALID_ARGS",
    );
    assert!(
        t.contains("\"view_range\" must have at least 2 items"),
        "{t}"
    );
    let t = err(
        &fx.call(EDITOR, json!({"command": "delete", "path": f}))
            .await,
        "INVALID_ARGS",
    );
    assert!(t.contains("\"command\" must be one of"), "{t}");
}

#[tokio::test]
async fn directories_list_two_levels_without_hidden_entries_and_output_is_clipped() {
    let fx = Fx::new();
    std::fs::create_dir_all(fx.dir.path().join("a/b/c")).unwrap();
    std::fs::write(fx.dir.path().join("a/b/c/deep.txt"), "").unwrap();
    std::fs::write(fx.dir.path().join("a/top.txt"), "").unwrap();
    std::fs::create_dir(fx.dir.path().join(".git")).unwrap();
    let t = ok(&fx
        .call(EDITOR, json!({"command": "view", "path": fx.dir.path()}))
        .await);
    assert!(t.contains(&format!("{}/", fx.p("a"))), "{t}");
    assert!(t.contains(&fx.p("a/top.txt")), "{t}");
    assert!(t.contains(&format!("{}/", fx.p("a/b"))), "{t}");
    assert!(!t.contains("deep.txt"), "two levels only: {t}");
    assert!(!t.contains(".git"), "{t}");
    let big: String = (0..3000).map(|i| format!("line number {i}\n")).collect();
    let f = fx.p("big.txt");
    std::fs::write(&f, big).unwrap();
    let t = ok(&fx.call(EDITOR, json!({"command": "view", "path": f})).await);
    assert!(t.contains("<response clipped"), "{}", &t[t.len() - 200..]);
    assert!(t.chars().count() < 16_200);
}
