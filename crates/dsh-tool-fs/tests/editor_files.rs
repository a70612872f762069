//! The file tools reading and writing through an editor ([`EditorFiles`]):
//! the editor's buffers are what the model reads, writes land in the
//! editor (the disk is left to it), and the freshness guard holds on
//! either side. The editor here is an in-memory stand-in for an ACP
//! client; `dsh-acp`'s tests drive the real protocol.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_kernel::BoxFuture;
use dsh_tool_fs::{EditorFiles, Fence, FileAccess};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry, ToolResult};
use serde_json::json;

/// One write the editor took: the path, the text it replaced, the new text.
type Write = (PathBuf, Option<String>, String);

/// Buffers by path; a path without a buffer is read from the disk (as an
/// editor opens a file it has no buffer for).
#[derive(Default)]
struct Editor {
    reads: bool,
    writes: bool,
    buffers: Mutex<HashMap<PathBuf, String>>,
    taken: Mutex<Vec<Write>>,
    read_calls: Mutex<usize>,
    refuse: Mutex<Option<String>>,
    hang: bool,
}

impl EditorFiles for Editor {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    fn read_text(&self, path: &Path) -> BoxFuture<'static, Result<String, String>> {
        *self.read_calls.lock().unwrap() += 1;
        let text = self.buffers.lock().unwrap().get(path).cloned();
        let path = path.to_path_buf();
        let hang = self.hang;
        Box::pin(async move {
            if hang {
                std::future::pending::<()>().await;
            }
            match text {
                Some(t) => Ok(t),
                None => std::fs::read_to_string(&path).map_err(|e| format!("cannot open: {e}")),
            }
        })
    }

    fn write_text(
        &self,
        path: &Path,
        old: Option<String>,
        new: String,
    ) -> BoxFuture<'static, Result<(), String>> {
        let refused = self.refuse.lock().unwrap().clone();
        if refused.is_none() {
            self.buffers
                .lock()
                .unwrap()
                .insert(path.to_path_buf(), new.clone());
            self.taken
                .lock()
                .unwrap()
                .push((path.to_path_buf(), old, new));
        }
        Box::pin(async move { refused.map_or(Ok(()), Err) })
    }
}

struct Fx {
    dir: tempfile::TempDir,
    registry: ToolRegistry,
    editor: Arc<Editor>,
    fence: Fence,
    _reg: dsh_kernel::Registration,
}

impl Fx {
    fn new(editor: Editor) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let registry = ToolRegistry::new();
        let files = FileAccess::disk();
        let fence = Fence::open();
        let reg = dsh_tool_fs::install_with(
            &registry,
            dir.path().to_path_buf(),
            |_| true,
            fence.clone(),
            files.clone(),
        )
        .unwrap();
        let editor = Arc::new(editor);
        files.set_editor(Some(editor.clone()));
        Fx {
            dir,
            registry,
            editor,
            fence,
            _reg: reg,
        }
    }

    fn both() -> Self {
        Self::new(Editor {
            reads: true,
            writes: true,
            ..Editor::default()
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn buffer(&self, name: &str, text: &str) {
        self.editor
            .buffers
            .lock()
            .unwrap()
            .insert(self.path(name), text.to_string());
    }

    fn taken(&self) -> Vec<Write> {
        self.editor.taken.lock().unwrap().clone()
    }

    async fn call(&self, tool: &str, args: serde_json::Value) -> ToolResult {
        self.call_in(tool, args, CallEnv::default()).await
    }

    async fn call_in(&self, tool: &str, args: serde_json::Value, env: CallEnv) -> ToolResult {
        self.registry
            .execute(&ToolCall::new("c1", tool, args.to_string()), env)
            .await
    }
}

fn ok(r: &ToolResult) -> String {
    assert!(!r.is_error, "expected success, got {r:?}");
    r.text()
}

fn err(r: &ToolResult, code: &str) -> String {
    assert!(r.is_error, "expected {code}, got success {}", r.text());
    assert_eq!(r.code(), Some(code), "{}", r.text());
    r.text()
}

#[tokio::test]
async fn the_model_reads_the_unsaved_buffer_and_edits_land_in_the_editor() {
    let fx = Fx::both();
    std::fs::write(fx.path("a.rs"), "fn main() {}\n").unwrap();
    fx.buffer("a.rs", "fn main() {\n    todo!()\n}\n");

    let r = ok(&fx.call("read", json!({"file_path": "a.rs"})).await);
    assert_eq!(r, "     1\tfn main() {\n     2\t    todo!()\n     3\t}\n");

    let r = ok(&fx
        .call(
            "edit",
            json!({"file_path": "a.rs", "old_string": "todo!()", "new_string": "run()"}),
        )
        .await);
    assert!(
        r.contains("-    todo!()") && r.contains("+    run()"),
        "{r}"
    );
    // The editor took the change, with the text it replaced; the disk is
    // the editor's business.
    assert_eq!(
        fx.taken(),
        [(
            fx.path("a.rs"),
            Some("fn main() {\n    todo!()\n}\n".to_string()),
            "fn main() {\n    run()\n}\n".to_string()
        )]
    );
    assert_eq!(
        std::fs::read_to_string(fx.path("a.rs")).unwrap(),
        "fn main() {}\n"
    );
    // What dsh wrote counts as seen: a second edit needs no new read.
    ok(&fx
        .call(
            "edit",
            json!({"file_path": "a.rs", "old_string": "run()", "new_string": "go()"}),
        )
        .await);
    assert_eq!(fx.taken()[1].2, "fn main() {\n    go()\n}\n");
}

#[tokio::test]
async fn a_buffer_changed_in_the_editor_since_the_read_is_stale() {
    let fx = Fx::both();
    std::fs::write(fx.path("n.txt"), "one\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "n.txt"})).await);
    // The user types in the editor; the disk stays the same.
    fx.buffer("n.txt", "one\ntwo\n");
    let r = fx
        .call(
            "edit",
            json!({"file_path": "n.txt", "old_string": "one", "new_string": "1"}),
        )
        .await;
    assert!(err(&r, "FS_STALE_VERSION").contains("read it again"));
    let r = fx
        .call("write", json!({"file_path": "n.txt", "content": "x\n"}))
        .await;
    err(&r, "FS_STALE_VERSION");
    assert!(fx.taken().is_empty(), "nothing reached the editor");
    // Reading again sees the buffer and unblocks the change.
    let r = ok(&fx.call("read", json!({"file_path": "n.txt"})).await);
    assert!(r.contains("two"), "{r}");
    ok(&fx
        .call(
            "write",
            json!({"file_path": "n.txt", "content": "replaced\n"}),
        )
        .await);
    assert_eq!(
        fx.taken(),
        [(
            fx.path("n.txt"),
            Some("one\ntwo\n".to_string()),
            "replaced\n".to_string()
        )]
    );
}

#[tokio::test]
async fn a_new_file_goes_to_the_editor_with_its_directory_made() {
    let fx = Fx::both();
    let r = ok(&fx
        .call(
            "write",
            json!({"file_path": "src/new.rs", "content": "pub fn f() {}\n"}),
        )
        .await);
    assert!(r.starts_with("Created "), "{r}");
    assert!(fx.path("src").is_dir(), "the parent exists for the editor");
    assert!(
        !fx.path("src/new.rs").exists(),
        "the editor writes the file"
    );
    assert_eq!(
        fx.taken(),
        [(fx.path("src/new.rs"), None, "pub fn f() {}\n".to_string())]
    );
    // str_replace_editor: create, view and str_replace through the editor.
    let p = fx.path("e.txt").display().to_string();
    ok(&fx
        .call(
            "str_replace_editor",
            json!({"command": "create", "path": p, "file_text": "alpha\nbeta\n"}),
        )
        .await);
    let r = ok(&fx
        .call("str_replace_editor", json!({"command": "view", "path": p}))
        .await);
    assert!(r.contains("     2\tbeta"), "{r}");
    ok(&fx
        .call(
            "str_replace_editor",
            json!({"command": "str_replace", "path": p, "old_str": "beta", "new_str": "gamma"}),
        )
        .await);
    let last = fx.taken().pop().unwrap();
    assert_eq!(
        (last.1.as_deref(), last.2.as_str()),
        (Some("alpha\nbeta\n"), "alpha\ngamma\n")
    );
}

#[tokio::test]
async fn a_refused_write_is_an_error_and_nothing_counts_as_seen() {
    let fx = Fx::both();
    std::fs::write(fx.path("r.txt"), "v1\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "r.txt"})).await);
    *fx.editor.refuse.lock().unwrap() = Some("the buffer is read-only".into());
    let r = fx
        .call(
            "edit",
            json!({"file_path": "r.txt", "old_string": "v1", "new_string": "v2"}),
        )
        .await;
    let text = err(&r, "FS_IO");
    assert!(
        text.contains("the buffer is read-only") && text.contains("was not changed"),
        "{text}"
    );
    // The editor still holds v1 (from the disk), which dsh saw: the next
    // edit goes through once the editor takes writes again.
    *fx.editor.refuse.lock().unwrap() = None;
    ok(&fx
        .call(
            "edit",
            json!({"file_path": "r.txt", "old_string": "v1", "new_string": "v3"}),
        )
        .await);
    assert_eq!(fx.taken()[0].2, "v3\n");
}

#[tokio::test]
async fn the_fence_stops_a_write_before_the_editor_sees_it() {
    let fx = Fx::both();
    fx.fence.set("read-only", Some(Vec::new()));
    let r = fx
        .call("write", json!({"file_path": "x.txt", "content": "no\n"}))
        .await;
    err(&r, "FS_SANDBOX_DENIED");
    assert!(fx.taken().is_empty());
    assert!(!fx.path("x.txt").exists());
}

#[tokio::test]
async fn an_editor_that_only_reads_leaves_writes_to_the_disk() {
    let fx = Fx::new(Editor {
        reads: true,
        writes: false,
        ..Editor::default()
    });
    std::fs::write(fx.path("d.txt"), "disk\n").unwrap();
    ok(&fx.call("read", json!({"file_path": "d.txt"})).await);
    assert_eq!(*fx.editor.read_calls.lock().unwrap(), 1);
    ok(&fx
        .call(
            "edit",
            json!({"file_path": "d.txt", "old_string": "disk", "new_string": "atomic"}),
        )
        .await);
    assert_eq!(
        std::fs::read_to_string(fx.path("d.txt")).unwrap(),
        "atomic\n"
    );
    assert!(fx.taken().is_empty());

    // And one that only writes: reads come from the disk, the editor gets
    // the disk's text as the old text of its diff.
    let fx = Fx::new(Editor {
        reads: false,
        writes: true,
        ..Editor::default()
    });
    std::fs::write(fx.path("w.txt"), "before\n").unwrap();
    fx.buffer("w.txt", "never read\n");
    let r = ok(&fx.call("read", json!({"file_path": "w.txt"})).await);
    assert!(r.contains("before"), "{r}");
    assert_eq!(*fx.editor.read_calls.lock().unwrap(), 0);
    ok(&fx
        .call("write", json!({"file_path": "w.txt", "content": "after\n"}))
        .await);
    assert_eq!(
        fx.taken(),
        [(
            fx.path("w.txt"),
            Some("before\n".to_string()),
            "after\n".to_string()
        )]
    );
}

#[tokio::test]
async fn the_disk_answers_when_the_editor_cannot_read() {
    let fx = Fx::both();
    // Neither a buffer nor a file: the disk's FS_NOT_FOUND, with its hint.
    std::fs::write(fx.path("notes.txt"), "n\n").unwrap();
    let r = fx.call("read", json!({"file_path": "note.txt"})).await;
    assert!(err(&r, "FS_NOT_FOUND").contains("did you mean"));
    // A directory is one before the editor is asked.
    std::fs::create_dir(fx.path("dir")).unwrap();
    let r = fx.call("read", json!({"file_path": "dir"})).await;
    err(&r, "FS_IS_DIRECTORY");
    // A buffer with a NUL is not text either.
    fx.buffer("bin.dat", "a\0b");
    let r = fx.call("read", json!({"file_path": "bin.dat"})).await;
    err(&r, "FS_NOT_TEXT");
    // An unsaved buffer of a file not on disk yet is readable.
    fx.buffer("draft.md", "# draft\n");
    let r = ok(&fx.call("read", json!({"file_path": "draft.md"})).await);
    assert_eq!(r, "     1\t# draft\n");
}

#[tokio::test]
async fn an_editor_that_never_answers_is_left_when_the_call_is_aborted() {
    let fx = Fx::new(Editor {
        reads: true,
        writes: true,
        hang: true,
        ..Editor::default()
    });
    std::fs::write(fx.path("h.txt"), "h\n").unwrap();
    let env = CallEnv::default();
    let cancel = env.cancel.clone();
    let call = fx.call_in("read", json!({"file_path": "h.txt"}), env);
    let (r, ()) = tokio::join!(call, async {
        tokio::task::yield_now().await;
        cancel.cancel();
    });
    assert!(err(&r, "ABORTED").contains("waiting for the editor"));
}
