//! The parent's git environment and the user's git configuration never
//! reach the store. (Its own test binary: it changes the process
//! environment.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;

use common::{user_git, write, Fixture};

#[test]
fn git_variables_and_user_configuration_of_the_parent_do_not_leak_in() {
    let fx = Fixture::new();
    // A decoy repository the variables point at.
    let decoy = fx.dir.path().join("decoy");
    fs::create_dir(&decoy).unwrap();
    user_git(&decoy, &["init", "-q"]);
    write(&decoy, "d.txt", "decoy\n");
    user_git(&decoy, &["add", "d.txt"]);
    let decoy_before = common::tree(&decoy.join(".git"), &[]);

    // A user configuration that would ignore, filter and hook everything.
    let home = fx.dir.path().join("home");
    write(
        &home,
        ".gitconfig",
        "[core]\n\texcludesFile = ~/ignore-all\n\thooksPath = /nonexistent\n",
    );
    write(&home, "ignore-all", "*.txt\n");
    write(&home, ".config/git/ignore", "*.txt\n");
    write(&home, ".config/git/attributes", "*.txt text eol=crlf\n");

    std::env::set_var("GIT_DIR", decoy.join(".git"));
    std::env::set_var("GIT_WORK_TREE", &decoy);
    std::env::set_var("GIT_INDEX_FILE", decoy.join(".git/index"));
    std::env::set_var("GIT_OBJECT_DIRECTORY", decoy.join(".git/objects"));
    std::env::set_var(
        "GIT_CONFIG_PARAMETERS",
        "'core.excludesfile'='/nonexistent'",
    );
    std::env::set_var("HOME", &home);
    std::env::set_var("XDG_CONFIG_HOME", home.join(".config"));

    write(&fx.ws, "a.txt", "line\n");
    let store = fx.open();
    let b = store.snapshot().unwrap();
    write(&fx.ws, "a.txt", "changed\n");
    let e = store.snapshot().unwrap();
    let changed = store.changed(&b.tree, &e.tree).unwrap();
    assert_eq!(changed.len(), 1, "a.txt is covered: no user excludes apply");
    store.revert(&b.tree, &e.tree, false).unwrap();
    assert_eq!(
        fs::read(fx.ws.join("a.txt")).unwrap(),
        b"line\n",
        "no eol conversion"
    );

    assert_eq!(
        common::tree(&decoy.join(".git"), &[]),
        decoy_before,
        "the decoy repository is untouched"
    );
    assert!(fx.store_dir.join("objects").is_dir());
    assert!(
        !fx.ws.join(".git").exists(),
        "no repository was created in the workspace"
    );
}
