//! Process-wide conditions, so one test in a binary of its own: the memory
//! an edit of a 100 MB file takes (peak RSS), and a write that fails for
//! lack of space (RLIMIT_FSIZE makes the kernel refuse to grow a file, as a
//! full disk does) leaving the original intact.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;

use common::{err, ok, Fx};
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use serde_json::json;

const MB: u64 = 1024 * 1024;

/// This process's peak resident set size, in bytes (`VmHWM`).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .unwrap()
        .to_string();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Writes a text file of about `size` bytes without holding it in memory;
/// its last line is `the needle`.
fn big_file(path: &std::path::Path, size: u64) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let line = format!("{}\n", "0123456789".repeat(10));
    let mut written = 0;
    while written < size {
        w.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
    }
    w.write_all(b"the needle\n").unwrap();
    w.flush().unwrap();
}

#[test]
fn huge_edits_stay_within_twice_the_file_and_a_full_disk_changes_nothing() {
    // Block SIGXFSZ before any thread exists, so an over-limit write fails
    // with EFBIG instead of killing the process.
    let mut xfsz = SigSet::empty();
    xfsz.add(Signal::SIGXFSZ);
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&xfsz), None).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let fx = Fx::new();

        // 1. An edit of a 100 MB file, measured by peak RSS.
        let size = 100 * MB;
        big_file(&fx.path("huge.txt"), size);
        let r = ok(&fx
            .call(
                "read",
                json!({"file_path": "huge.txt", "offset": 1_000_000, "limit": 5}),
            )
            .await);
        assert!(r.contains("use offset to read on"), "{r}");
        let before = peak_rss();
        ok(&fx
            .call(
                "edit",
                json!({"file_path": "huge.txt", "old_string": "the needle", "new_string": "the thread"}),
            )
            .await);
        let grown = peak_rss().saturating_sub(before);
        eprintln!("edit of a {} MB file: peak RSS grew by {} MB", size / MB, grown / MB);
        assert!(
            grown <= 2 * size + 16 * MB,
            "the edit raised peak memory by {} MB for a {} MB file",
            grown / MB,
            size / MB
        );
        let len = std::fs::metadata(fx.path("huge.txt")).unwrap().len();
        assert!(len > size, "the file kept its size: {len}");
        let mut tail = vec![0u8; 11];
        {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = std::fs::File::open(fx.path("huge.txt")).unwrap();
            f.seek(SeekFrom::End(-11)).unwrap();
            f.read_exact(&mut tail).unwrap();
        }
        assert_eq!(tail, b"the thread\n");
        std::fs::remove_file(fx.path("huge.txt")).unwrap();

        // 2. No room to write: the replacement cannot be written whole.
        std::fs::write(fx.path("keep.txt"), "original\n").unwrap();
        ok(&fx.call("read", json!({"file_path": "keep.txt"})).await);
        let (soft, hard) = getrlimit(Resource::RLIMIT_FSIZE).unwrap();
        setrlimit(Resource::RLIMIT_FSIZE, 64 * 1024, hard).unwrap();
        let big = "x".repeat(MB as usize);
        let write = fx
            .call("write", json!({"file_path": "keep.txt", "content": big}))
            .await;
        let edit = fx
            .call(
                "edit",
                json!({"file_path": "keep.txt", "old_string": "original", "new_string": big}),
            )
            .await;
        setrlimit(Resource::RLIMIT_FSIZE, soft, hard).unwrap();
        for r in [&write, &edit] {
            let t = err(r, "FS_IO");
            assert!(t.contains("the file was not changed"), "{t}");
        }
        assert_eq!(
            std::fs::read_to_string(fx.path("keep.txt")).unwrap(),
            "original\n"
        );
        let leftovers: Vec<_> = std::fs::read_dir(fx.dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".dsh-write-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        // And with room again, the same write lands.
        ok(&fx
            .call("write", json!({"file_path": "keep.txt", "content": "new\n"}))
            .await);
        assert_eq!(std::fs::read_to_string(fx.path("keep.txt")).unwrap(), "new\n");
    });
}
