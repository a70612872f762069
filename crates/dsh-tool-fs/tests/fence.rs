//! The file-tool fence: writes only inside the writable roots, checked on
//! the canonical path (links, `..`, `/proc/self/root`); reads everywhere.
//! Each refused write leaves the world as it was (checked on disk).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use common::{err, ok, Fx};
use dsh_tool_fs::Fence;
use serde_json::json;

/// A fixture whose working directory `ws` is the only writable root, and
/// `out`, a sibling outside it with `out/secret.txt`.
struct Fenced {
    fx: Fx,
    fence: Fence,
    out: PathBuf,
}

fn fenced() -> Fenced {
    let fence = Fence::open();
    let fx = Fx::fenced(fence.clone());
    let ws = fx.dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let out = fx.dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("secret.txt"), "outside\n").unwrap();
    fence.set("workspace-write", Some(vec![ws]));
    Fenced { fx, fence, out }
}

impl Fenced {
    fn ws(&self, name: &str) -> String {
        self.fx.p(&format!("ws/{name}"))
    }

    fn untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.out.join("secret.txt")).unwrap(),
            "outside\n"
        );
        let names: Vec<String> = std::fs::read_dir(&self.out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["secret.txt"], "nothing new outside");
    }
}

#[tokio::test]
async fn writes_inside_the_roots_work_and_outside_are_refused() {
    let f = fenced();
    ok(&f
        .fx
        .call(
            "write",
            json!({"file_path": f.ws("a.txt"), "content": "in\n"}),
        )
        .await);
    assert_eq!(std::fs::read_to_string(f.ws("a.txt")).unwrap(), "in\n");
    let outside = f.out.join("new.txt").display().to_string();
    let t = err(
        &f.fx
            .call("write", json!({"file_path": outside, "content": "x"}))
            .await,
        "FS_SANDBOX_DENIED",
    );
    assert!(
        t.contains("outside the writable roots of workspace-write mode"),
        "{t}"
    );
    f.untouched();
}

#[tokio::test]
async fn links_dot_dot_and_proc_root_do_not_get_out() {
    let f = fenced();
    symlink(&f.out, f.ws("link")).unwrap();
    symlink(f.out.join("planted.txt"), f.ws("dangling")).unwrap();
    let proc_root = format!("/proc/self/root{}", f.out.join("p.txt").display());
    for path in [
        f.ws("link/secret.txt"),
        f.ws("link/new.txt"),
        f.ws("dangling"),
        f.ws("../out/new.txt"),
        f.ws("sub/../../out/new.txt"),
        proc_root,
    ] {
        let t = err(
            &f.fx
                .call("write", json!({"file_path": path, "content": "x"}))
                .await,
            "FS_SANDBOX_DENIED",
        );
        assert!(t.contains("really"), "the canonical path is named: {t}");
    }
    f.untouched();
}

#[tokio::test]
async fn reads_stay_allowed_and_edits_outside_are_refused() {
    let f = fenced();
    let secret = f.out.join("secret.txt").display().to_string();
    ok(&f.fx.call("read", json!({"file_path": secret})).await);
    err(
        &f.fx
            .call(
                "edit",
                json!({"file_path": secret, "old_string": "outside", "new_string": "owned"}),
            )
            .await,
        "FS_SANDBOX_DENIED",
    );
    for args in [
        json!({"command": "create", "path": f.out.join("c.txt"), "file_text": "x"}),
        json!({"command": "str_replace", "path": secret, "old_str": "outside", "new_str": "owned"}),
        json!({"command": "insert", "path": secret, "insert_line": 0, "new_str": "owned"}),
    ] {
        err(
            &f.fx.call("str_replace_editor", args).await,
            "FS_SANDBOX_DENIED",
        );
    }
    ok(&f
        .fx
        .call(
            "str_replace_editor",
            json!({"command": "view", "path": secret}),
        )
        .await);
    f.untouched();
}

#[tokio::test]
async fn a_hard_link_inside_is_replaced_not_written_through() {
    let f = fenced();
    std::fs::hard_link(f.out.join("secret.txt"), f.ws("hard")).unwrap();
    ok(&f.fx.call("read", json!({"file_path": f.ws("hard")})).await);
    ok(&f
        .fx
        .call(
            "write",
            json!({"file_path": f.ws("hard"), "content": "mine\n"}),
        )
        .await);
    assert_eq!(std::fs::read_to_string(f.ws("hard")).unwrap(), "mine\n");
    f.untouched();
}

#[tokio::test]
async fn opening_the_fence_allows_writes_everywhere() {
    let f = fenced();
    assert!(f.fence.is_confining());
    f.fence.set("danger-full-access", None);
    assert!(!f.fence.is_confining());
    let outside = f.out.join("new.txt");
    ok(&f
        .fx
        .call("write", json!({"file_path": outside, "content": "x\n"}))
        .await);
    assert_eq!(std::fs::read_to_string(outside).unwrap(), "x\n");
}

/// Read-only mode has no writable roots, and the refusal says so instead of
/// showing an empty list.
#[tokio::test]
async fn read_only_refusals_say_nothing_is_writable() {
    let f = fenced();
    f.fence.set("read-only", Some(vec![]));
    let t = err(
        &f.fx
            .call("write", json!({"file_path": f.ws("a.txt"), "content": "x"}))
            .await,
        "FS_SANDBOX_DENIED",
    );
    assert!(
        t.contains("writable roots of read-only mode (none: nothing is writable)"),
        "{t}"
    );
    assert!(!t.contains("()"), "{t}");
}
