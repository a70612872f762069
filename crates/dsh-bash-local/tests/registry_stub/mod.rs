//! A package registry stub for the package-manager tests: an HTTP/1.1
//! server on the host's loopback that serves the files a test puts in it
//! and records every request it got, plus the archive building the tests
//! need (done by the host's `python3`, which the tests need anyway).
#![allow(dead_code)] // not every test uses every helper
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic
#![allow(unreachable_pub)] // test support

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request the stub received: its request line and `Host` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The request target as sent (origin-form when it came through the
    /// proxy, which rewrites absolute-form requests).
    pub target: String,
    /// The `Host` header, empty when absent.
    pub host: String,
}

/// A file the stub serves.
#[derive(Clone)]
struct Entry {
    content_type: String,
    body: Vec<u8>,
}

/// The registry stub: one thread accepts, one thread per connection
/// answers. A path it does not serve gets `404`; every answer closes the
/// connection (the proxy forwards each request with `Connection: close`
/// anyway). The threads live as long as the test process.
pub struct Stub {
    /// The port on 127.0.0.1.
    pub port: u16,
    files: Arc<Mutex<HashMap<String, Entry>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Stub {
    /// Starts a stub serving nothing yet on `127.0.0.1:0`.
    pub fn start() -> Self {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let files: Arc<Mutex<HashMap<String, Entry>>> = Arc::default();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (served, recorded) = (files.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (served, recorded) = (served.clone(), recorded.clone());
                std::thread::spawn(move || answer(stream, &served, &recorded));
            }
        });
        Self { port, files, seen }
    }

    /// Serves `body` at `path` (an origin-form path, `/a/b`).
    pub fn serve(&self, path: &str, content_type: &str, body: Vec<u8>) {
        self.files.lock().unwrap().insert(
            path.to_string(),
            Entry {
                content_type: content_type.to_string(),
                body,
            },
        );
    }

    /// Every request received so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The targets of the requests received so far, in arrival order.
    pub fn targets(&self) -> Vec<String> {
        self.seen().into_iter().map(|s| s.target).collect()
    }
}

/// Reads one request head (bodies are not expected: the clients only
/// GET), records it and answers it.
fn answer(mut stream: TcpStream, files: &Mutex<HashMap<String, Entry>>, seen: &Mutex<Vec<Seen>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head);
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_string();
    let target = first.next().unwrap_or_default().to_string();
    let host = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    seen.lock().unwrap().push(Seen {
        method: method.clone(),
        target: target.clone(),
        host,
    });
    let path = target.split(['?', '#']).next().unwrap_or_default();
    let entry = files.lock().unwrap().get(path).cloned();
    let (status, entry) = match entry {
        Some(e) => ("200 OK", e),
        None => (
            "404 Not Found",
            Entry {
                content_type: "text/plain".into(),
                body: b"not here\n".to_vec(),
            },
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        entry.content_type,
        entry.body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(&entry.body);
    }
    let _ = stream.write_all(&out); // the client may have given up; the test checks what it got
}

/// Runs `python3 -c script args...` on the host and returns its stdout,
/// failing the test when it fails.
pub fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Digests of a file as the registries write them.
#[derive(Debug, Clone)]
pub struct Digests {
    /// SHA-1, lowercase hex (npm's `shasum`).
    pub sha1_hex: String,
    /// SHA-256, lowercase hex (pip's `#sha256=`, cargo's `cksum`).
    pub sha256_hex: String,
    /// SHA-512, standard base64 (npm's `integrity` after `sha512-`).
    pub sha512_b64: String,
}

/// The digests of `bytes`.
pub fn digests(bytes: &[u8]) -> Digests {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blob");
    std::fs::write(&file, bytes).unwrap();
    let out = python(
        "import base64, hashlib, sys\n\
         b = open(sys.argv[1], 'rb').read()\n\
         print(hashlib.sha1(b).hexdigest())\n\
         print(hashlib.sha256(b).hexdigest())\n\
         print(base64.b64encode(hashlib.sha512(b).digest()).decode())\n",
        &[file.to_str().unwrap()],
    );
    let mut lines = out.lines().map(str::to_string);
    Digests {
        sha1_hex: lines.next().unwrap(),
        sha256_hex: lines.next().unwrap(),
        sha512_b64: lines.next().unwrap(),
    }
}

/// A gzipped tar of `files` (archive path → contents), every entry a
/// regular file of mode 0644.
pub fn tar_gz(files: &[(&str, &str)]) -> Vec<u8> {
    archive(
        "import io, sys, tarfile, json\n\
         files = json.loads(sys.argv[2])\n\
         with tarfile.open(sys.argv[1], 'w:gz') as t:\n\
         \x20   for name, text in files:\n\
         \x20       data = text.encode()\n\
         \x20       info = tarfile.TarInfo(name)\n\
         \x20       info.size = len(data)\n\
         \x20       info.mode = 0o644\n\
         \x20       info.mtime = 1700000000\n\
         \x20       t.addfile(info, io.BytesIO(data))\n",
        files,
    )
}

/// A zip (a wheel, when `files` are one) of `files`.
pub fn zip(files: &[(&str, &str)]) -> Vec<u8> {
    archive(
        "import sys, zipfile, json\n\
         files = json.loads(sys.argv[2])\n\
         with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
         \x20   for name, text in files:\n\
         \x20       z.writestr(name, text)\n",
        files,
    )
}

/// Runs an archive-writing script with the output path and the files as
/// a JSON list of pairs; returns the archive's bytes.
fn archive(script: &str, files: &[(&str, &str)]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("archive");
    python(script, &[out.to_str().unwrap(), &json_pairs(files)]);
    std::fs::read(&out).unwrap()
}

/// `[["a","b"],...]` with JSON string escaping of the characters the
/// tests' contents use.
fn json_pairs(files: &[(&str, &str)]) -> String {
    let items: Vec<String> = files
        .iter()
        .map(|(k, v)| format!("[{},{}]", json_str(k), json_str(v)))
        .collect();
    format!("[{}]", items.join(","))
}

/// A JSON string literal for `s`.
pub fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Reads `path`, with the path in the failure message.
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
