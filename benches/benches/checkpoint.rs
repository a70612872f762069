//! Workspace checkpoints (`dsh-checkpoint`) on a generated 10,000-file
//! workspace (100 directories of 100 small files, a `.gitignore` and an
//! ignored `target/`), the store beside it:
//!
//! - `checkpoint/snapshot/unchanged` — the watch saw nothing: target < 20 ms;
//! - `checkpoint/snapshot/unchanged_full_scan` — the same without the watch
//!   (`Options { watch: false }`): the git scan alone;
//! - `checkpoint/snapshot/10_changed` — 10 files rewritten before each
//!   snapshot (the writes are not timed): target < 200 ms;
//! - `checkpoint/revert/100_files` — `/undo` and `/redo` of a turn that
//!   rewrote 90 files, created 5 and deleted 5, alternately: target < 300 ms.
//!
//! The first snapshot (every file hashed into an empty store) is printed
//! once, as `checkpoint/first_snapshot`.
//!
//! `cargo bench -p dsh-benches --bench checkpoint`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use dsh_checkpoint::{CheckpointStore, Options};

const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;

fn file(ws: &Path, i: usize) -> std::path::PathBuf {
    ws.join(format!(
        "src/m{:02}/d{}/f{i:05}.rs",
        (i / FILES_PER_DIR) % 10,
        i / FILES_PER_DIR
    ))
}

fn workspace(ws: &Path) {
    for i in 0..DIRS * FILES_PER_DIR {
        let path = file(ws, i);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            format!("// file {i}\npub fn f{i}() -> u32 {{ {i} }}\n"),
        )
        .unwrap();
    }
    std::fs::write(ws.join(".gitignore"), "/target/\n").unwrap();
    std::fs::create_dir_all(ws.join("target/debug")).unwrap();
    for i in 0..200 {
        std::fs::write(ws.join(format!("target/debug/o{i}")), "object").unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    workspace(&ws);
    let store = CheckpointStore::open(dir.path().join("store"), &ws).unwrap();
    let started = Instant::now();
    let first = store.snapshot().unwrap();
    println!(
        "checkpoint/first_snapshot: {:?} for {} files",
        started.elapsed(),
        DIRS * FILES_PER_DIR
    );
    let full = CheckpointStore::open_with(
        dir.path().join("store"),
        &ws,
        Options {
            watch: false,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(full.snapshot().unwrap().tree, first.tree);

    let mut g = c.benchmark_group("checkpoint");
    g.sample_size(30);
    g.bench_function("snapshot/unchanged", |b| {
        b.iter(|| assert_eq!(store.snapshot().unwrap().tree, first.tree))
    });
    g.bench_function("snapshot/unchanged_full_scan", |b| {
        b.iter(|| assert_eq!(full.snapshot().unwrap().tree, first.tree))
    });
    let mut round = 0usize;
    g.bench_function("snapshot/10_changed", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                for k in 0..10 {
                    let i = (k * 997 + round * 13) % (DIRS * FILES_PER_DIR);
                    std::fs::write(file(&ws, i), format!("// round {round}\n")).unwrap();
                }
                let t = Instant::now();
                let s = store.snapshot().unwrap();
                total += t.elapsed();
                assert_ne!(s.tree, first.tree);
            }
            total
        })
    });

    // A turn that touched 100 files.
    let before = store.snapshot().unwrap();
    for k in 0..90 {
        std::fs::write(
            file(&ws, k * 101),
            format!("// rewritten by the turn {k}\n"),
        )
        .unwrap();
    }
    for k in 0..5 {
        std::fs::write(ws.join(format!("src/new{k}.rs")), "// new\n").unwrap();
        std::fs::remove_file(file(&ws, k * 101 + 50)).unwrap();
    }
    let after = store.snapshot().unwrap();
    assert_eq!(store.changed(&before.tree, &after.tree).unwrap().len(), 100);
    let mut undone = false;
    g.bench_function("revert/100_files", |b| {
        b.iter(|| {
            let report = if undone {
                store.revert(&after.tree, &before.tree, false).unwrap()
            } else {
                store.revert(&before.tree, &after.tree, false).unwrap()
            };
            undone = !undone;
            assert_eq!(report.restored.len() + report.deleted.len(), 100);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
