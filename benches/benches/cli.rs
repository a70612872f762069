//! Wall time of the release `dsh` binary: `dsh --version` (cold start) and a
//! one-turn offline `dsh run "echo hi"`. Build it first:
//! `cargo build --release -p dsh-cli && cargo bench -p dsh-benches --bench cli`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use criterion::{criterion_group, criterion_main, Criterion};

fn binary() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/dsh");
    p.is_file().then_some(p)
}

fn bench(c: &mut Criterion) {
    let Some(bin) = binary() else {
        eprintln!("skipped: build the release binary first (cargo build --release -p dsh-cli)");
        return;
    };
    let home = tempfile::tempdir().expect("temp dir");
    let cmd = |args: &[&str]| {
        let mut c = Command::new(&bin);
        c.args(args)
            .env_remove("DEEPSEEK_API_KEY")
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .current_dir(home.path());
        c
    };
    let mut g = c.benchmark_group("cli");
    g.sample_size(30);
    g.bench_function("dsh --version", |b| {
        b.iter(|| {
            let out = cmd(&["--version"]).output().expect("runs");
            assert!(out.status.success());
        })
    });
    g.bench_function("dsh run \"echo hi\"", |b| {
        b.iter(|| {
            let out = cmd(&["run", "echo hi"]).output().expect("runs");
            assert!(out.status.success());
            assert_eq!(out.stdout, b"The echo tool says: hi\n");
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
