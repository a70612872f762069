//! Kill -9 safety: a process SIGKILLed while it logs loses at most the events
//! after its last flush, and its file still loads.
//!
//! The test re-runs this test binary as the child (`kill9_child`, switched on
//! by the `DSH_KILL9_DIR` environment variable; a no-op otherwise).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use dsh_llm::{ContentBlock, MessageSource};
use dsh_session::{install_jsonl, load_jsonl, EventPayload, MessageEvent, SessionStore};

const FLUSHED: usize = 200;

fn event(i: usize, big: bool) -> EventPayload {
    let text = if big {
        format!("{i} {}", "ü".repeat(4096))
    } else {
        format!("message {i}")
    };
    EventPayload::UserMessage(MessageEvent {
        content: vec![ContentBlock::text(text)],
        source: MessageSource::User,
    })
}

/// The child side. Mode `buffer`: flush 200 events, then keep appending
/// without flushing. Mode `write`: flush 200 events, then keep appending and
/// flushing large batches, reporting each completed flush.
#[test]
fn kill9_child() {
    let Ok(dir) = std::env::var("DSH_KILL9_DIR") else {
        return;
    };
    let mode = std::env::var("DSH_KILL9_MODE").unwrap_or_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = SessionStore::new();
    let plugin = install_jsonl(&store, std::path::Path::new(&dir)).unwrap();
    std::mem::forget(plugin); // never undone: the process dies holding buffers
    let (s, reg) = store.create(Some("k".into()), vec![]).unwrap();
    std::mem::forget(reg);
    for i in 0..FLUSHED {
        s.append(event(i, false));
    }
    rt.block_on(store.flush(&s)).unwrap();
    let mut out = std::io::stdout();
    writeln!(out, "FLUSHED {}", s.len()).unwrap();
    out.flush().unwrap();
    if mode == "buffer" {
        for i in 0..10_000 {
            s.append(event(FLUSHED + i, false));
        }
        writeln!(out, "BUFFERED {}", s.len()).unwrap();
        out.flush().unwrap();
        // Wait to be killed (bounded, in case the parent died).
        std::thread::sleep(std::time::Duration::from_secs(60));
    } else {
        for round in 0..500 {
            for i in 0..8 {
                s.append(event(round * 8 + i, true));
            }
            rt.block_on(store.flush(&s)).unwrap();
            writeln!(out, "WROTE {}", s.len()).unwrap();
            out.flush().unwrap();
        }
        // Bounded output; wait to be killed.
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

/// Starts the child, reads its stdout until `until` returns true for a
/// reported `(tag, count)`, SIGKILLs it, and returns the last count it reported.
fn run_child(dir: &std::path::Path, mode: &str, until: impl Fn(&str, usize) -> bool) -> usize {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["kill9_child", "--exact", "--nocapture", "--test-threads=1"])
        .env("DSH_KILL9_DIR", dir)
        .env("DSH_KILL9_MODE", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut last = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        // libtest may print "test kill9_child ... " on the same line.
        let mut words = line.split_whitespace().rev();
        let (Some(n), Some(tag)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else {
            continue;
        };
        match tag {
            "FLUSHED" | "WROTE" => last = n,
            "BUFFERED" => {}
            _ => continue,
        }
        if until(tag, n) {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL on unix
    let status = child.wait().unwrap();
    assert!(!status.success());
    last
}

#[test]
fn kill9_after_flush_loses_only_unflushed_events() {
    let dir = tempfile::tempdir().unwrap();
    let flushed = run_child(dir.path(), "buffer", |tag, _| tag == "BUFFERED");
    assert_eq!(flushed, FLUSHED);
    let log = load_jsonl(&dir.path().join("k.jsonl")).unwrap();
    assert!(log.torn_tail.is_none());
    assert_eq!(log.events.len(), FLUSHED);
    for (i, e) in log.events.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
    }
}

#[test]
fn kill9_during_writes_leaves_a_loadable_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let flushed = run_child(dir.path(), "write", |tag, n| {
        tag == "WROTE" && n >= FLUSHED + 8 * 5
    });
    let log = load_jsonl(&dir.path().join("k.jsonl")).unwrap();
    // Everything flushed before the kill is there, in order; a write cut
    // short can only show up as a reported torn last line.
    assert!(
        log.events.len() >= flushed,
        "{} < {flushed}",
        log.events.len()
    );
    for (i, e) in log.events.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
    }
    if let Some(torn) = log.torn_tail {
        assert_eq!(torn.line_no, log.events.len() + 1);
    }
}
