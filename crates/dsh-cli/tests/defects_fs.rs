//! Issue 33, the file and search tools through the binary: a fifo (or a
//! socket) never blocks them (`FS_NOT_A_FILE` naming what it is), a read
//! window and a grep cost bounded memory whatever the file's size or its
//! longest line (peak RSS of the `dsh` child), replacing a file's content
//! drops its setuid and setgid bits, and `str_replace_editor`'s tail line
//! names `view_range`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use dsh_testkit::cli;

/// How long one `dsh run` may take before it counts as hung.
const BOUND: Duration = Duration::from_secs(60);

/// A home directory with the working directory `work` in it (session
/// logs live beside it, out of `grep`'s way).
struct Home {
    home: cli::Home,
}

impl Home {
    fn new() -> Self {
        Home {
            home: cli::Home::new(env!("CARGO_BIN_EXE_dsh")).in_dir("work"),
        }
    }

    /// `name` in the working directory.
    fn path(&self, name: &str) -> PathBuf {
        self.home.cwd().join(name)
    }

    /// `dsh run --json <extra…> PROMPT` in the working directory, its
    /// sessions in `sessions` of the home.
    fn command(&self, extra: &[&str], prompt: &str) -> Command {
        self.command_in("sessions", extra, prompt)
    }

    fn command_in(&self, sessions: &str, extra: &[&str], prompt: &str) -> Command {
        let mut cmd = self.home.dsh();
        cmd.args(["run", "--json", "--session-dir"])
            .arg(self.home.path().join(sessions))
            .args(extra)
            .arg(prompt);
        cmd
    }

    /// The newest session id in `sessions`.
    fn session_id(&self, sessions: &str) -> String {
        let newest = std::fs::read_dir(self.home.path().join(sessions))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .max_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap())
            .expect("a session log");
        newest.file_stem().unwrap().to_str().unwrap().to_string()
    }
}

/// Runs `cmd` to its end, failing (after killing it) when it takes longer
/// than [`BOUND`]: a hang is a failure, not a stuck test.
fn bounded(cmd: Command) -> Output {
    cli::output_within(cmd, None, BOUND)
}

/// The `data` of the one `tool/result` event of a `--json` run.
fn tool_result(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "tool/result")
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(
        results.len(),
        1,
        "one tool result expected; stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    results.into_iter().next().unwrap()
}

/// The text of a successful tool result.
fn ok_text(out: &Output) -> String {
    let r = tool_result(out);
    assert_eq!(r["isError"], false, "{r}");
    r["content"][0]["text"].as_str().unwrap().to_string()
}

/// The message of a failed tool result with `code`.
fn err_text(out: &Output, code: &str) -> String {
    let r = tool_result(out);
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["errorCode"], code, "{r}");
    r["errorMessage"].as_str().unwrap().to_string()
}

fn call(tool: &str, args: &serde_json::Value) -> String {
    format!("call {tool} {args}")
}

#[test]
fn no_file_tool_blocks_on_a_fifo_or_a_socket_and_each_names_it() {
    let home = Home::new();
    nix::unistd::mkfifo(
        &home.path("ff"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("ff", home.path("to-ff")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(home.path("sock")).unwrap();
    std::fs::write(home.path("a.txt"), "one\nthe needle\n").unwrap();
    let ff = home.path("ff").display().to_string();
    let tools = ["--tools", "read,write,edit,grep,glob,str_replace_editor"];
    let refused = [
        call("read", &serde_json::json!({"file_path": "ff"})),
        call("read", &serde_json::json!({"file_path": "to-ff"})),
        call(
            "write",
            &serde_json::json!({"file_path": "ff", "content": "x"}),
        ),
        call(
            "edit",
            &serde_json::json!({"file_path": "ff", "old_string": "a", "new_string": "b"}),
        ),
        call(
            "str_replace_editor",
            &serde_json::json!({"command": "view", "path": ff}),
        ),
        call(
            "str_replace_editor",
            &serde_json::json!({"command": "str_replace", "path": ff, "old_str": "a", "new_str": "b"}),
        ),
        call(
            "grep",
            &serde_json::json!({"pattern": "needle", "path": "ff"}),
        ),
    ];
    for prompt in &refused {
        let out = bounded(home.command(&tools, prompt));
        let message = err_text(&out, "FS_NOT_A_FILE");
        assert!(message.contains("is a fifo"), "{prompt}: {message}");
    }
    let out = bounded(home.command(
        &tools,
        &call("read", &serde_json::json!({"file_path": "sock"})),
    ));
    let message = err_text(&out, "FS_NOT_A_FILE");
    assert!(message.contains("is a socket"), "{message}");
    // A walk over the directory skips the fifo and the socket.
    let out = bounded(home.command(
        &tools,
        &call("grep", &serde_json::json!({"pattern": "needle"})),
    ));
    assert_eq!(ok_text(&out), "a.txt:2:the needle");
    // Nothing was written in place of the fifo.
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(home.path("ff"))
        .unwrap()
        .file_type()
        .is_fifo());
}

/// The largest peak RSS of any child this process has waited for, in MB
/// (`ru_maxrss` is in KiB on Linux).
fn children_peak_mb() -> u64 {
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    u64::try_from(usage.max_rss()).unwrap() / 1024
}

#[test]
fn a_read_window_and_a_grep_of_a_96_mb_line_stay_under_64_mb() {
    let home = Home::new();
    let mb = 1 << 20;
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(home.path("huge.txt")).unwrap());
        let chunk = vec![b'a'; mb];
        for _ in 0..96 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\nthe needle\n").unwrap();
        f.flush().unwrap();
    }
    let out = bounded(home.command(
        &[],
        &call(
            "read",
            &serde_json::json!({"file_path": "huge.txt", "offset": 1, "limit": 2}),
        ),
    ));
    let text = ok_text(&out);
    assert!(
        text.starts_with(&format!(
            "     1\t{}… [line cut at 2000 characters]\n",
            "a".repeat(2000)
        )),
        "{}",
        &text[..100]
    );
    assert!(text.contains("     2\tthe needle\n"), "{text}");
    assert!(
        text.ends_with("\n(1 line(s) longer than 2000 characters were cut)\n"),
        "{text}"
    );
    let read_peak = children_peak_mb();
    let out = bounded(home.command(
        &[],
        &call(
            "grep",
            &serde_json::json!({"pattern": "needle", "path": "huge.txt"}),
        ),
    ));
    let peak = children_peak_mb();
    eprintln!("peak RSS of the dsh children: read {read_peak} MB, read and grep {peak} MB");
    assert!(
        read_peak < 64,
        "read of a window of a 96 MB line peaked at {read_peak} MB"
    );
    assert!(peak < 64, "grep of a 96 MB line peaked at {peak} MB");
    // The line outgrew grep's line buffer: the note says so.
    let text = ok_text(&out);
    assert_eq!(
        text,
        "No matches found\n(1 file(s) searched only up to a line longer than 8 MiB)"
    );
}

/// Reads `name` in a new session under `sessions`, then runs `change` in
/// the same session (`--resume`).
fn read_then(home: &Home, sessions: &str, tools: &[&str], view: &str, change: &str) -> Output {
    let first = bounded(home.command_in(sessions, tools, view));
    assert_eq!(tool_result(&first)["isError"], false);
    let id = home.session_id(sessions);
    let mut args = tools.to_vec();
    args.extend(["--resume", &id]);
    bounded(home.command_in(sessions, &args, change))
}

#[test]
fn replacing_a_files_content_drops_setuid_and_setgid_and_keeps_the_rest() {
    let home = Home::new();
    for name in ["w.sh", "e.sh", "s.sh"] {
        std::fs::write(home.path(name), "#!/bin/sh\necho old\n").unwrap();
        std::fs::set_permissions(home.path(name), std::fs::Permissions::from_mode(0o6755)).unwrap();
        let mode = std::fs::metadata(home.path(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o6755, "the set-up kept its bits");
    }
    let read = |name: &str| call("read", &serde_json::json!({"file_path": name}));
    let out = read_then(
        &home,
        "s1",
        &[],
        &read("w.sh"),
        &call(
            "write",
            &serde_json::json!({"file_path": "w.sh", "content": "#!/bin/sh\necho new\n"}),
        ),
    );
    ok_text(&out);
    let out = read_then(
        &home,
        "s2",
        &[],
        &read("e.sh"),
        &call(
            "edit",
            &serde_json::json!({"file_path": "e.sh", "old_string": "old", "new_string": "new"}),
        ),
    );
    ok_text(&out);
    let s = home.path("s.sh").display().to_string();
    let out = read_then(
        &home,
        "s3",
        &["--tools", "str_replace_editor"],
        &call(
            "str_replace_editor",
            &serde_json::json!({"command": "view", "path": s}),
        ),
        &call(
            "str_replace_editor",
            &serde_json::json!({"command": "str_replace", "path": s, "old_str": "old", "new_str": "new"}),
        ),
    );
    ok_text(&out);
    for name in ["w.sh", "e.sh", "s.sh"] {
        let path = home.path(name);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "#!/bin/sh\necho new\n",
            "{name}"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o755, "{name}: {mode:o}");
    }
}

#[test]
fn each_tail_line_names_the_argument_its_tool_reads_on_with() {
    let home = Home::new();
    let lines: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    std::fs::write(home.path("ten.txt"), &lines).unwrap();
    let ten = home.path("ten.txt").display().to_string();
    let out = bounded(home.command(
        &["--tools", "str_replace_editor"],
        &call(
            "str_replace_editor",
            &serde_json::json!({"command": "view", "path": ten, "view_range": [2, 4]}),
        ),
    ));
    assert_eq!(
        ok_text(&out),
        "     2\tline 2\n     3\tline 3\n     4\tline 4\n(lines 2-4 of 10; use view_range to read on)\n"
    );
    let out = bounded(home.command(
        &[],
        &call(
            "read",
            &serde_json::json!({"file_path": "ten.txt", "offset": 9}),
        ),
    ));
    assert_eq!(
        ok_text(&out),
        "     9\tline 9\n    10\tline 10\n(lines 9-10 of 10; use offset to read on)\n"
    );
    // The numbered lines stop at 51,200 bytes; the tail line comes after.
    // 7 bytes of number and tab, 1,016 of text, a newline: 50 lines fill
    // the 51,200 bytes exactly.
    let long: String = (0..100)
        .map(|_| format!("{}\n", "x".repeat(1016)))
        .collect();
    std::fs::write(home.path("long.txt"), long).unwrap();
    let out = bounded(home.command(
        &[],
        &call("read", &serde_json::json!({"file_path": "long.txt"})),
    ));
    let text = ok_text(&out);
    let (numbered, tail) = text.trim_end().rsplit_once('\n').unwrap();
    assert_eq!(numbered.len() + 1, 51_200);
    assert!(text.len() > 51_200, "{}", text.len());
    assert_eq!(
        tail,
        "(lines 1-50 of 100; output capped at 51200 bytes; use offset to read on)"
    );
}
