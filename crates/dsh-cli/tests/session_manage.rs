//! `dsh session rm|clean --older-than|fork|export`, run as the real binary
//! against sessions it saved with the offline echo model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use dsh_testkit::cli::{events, output_within, stderr, stdout, Home};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");
const LIMIT: Duration = Duration::from_secs(60);

fn dsh(home: &Home, args: &[&str]) -> Output {
    let mut c = home.dsh();
    c.args(args);
    output_within(c, None, LIMIT)
}

fn ids(home: &Home) -> Vec<String> {
    home.session_logs()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// `dsh run PROMPT`; the ids of the sessions it made (the main one
/// first when sub-agents ran: it was created first).
fn run(home: &Home, prompt: &str) -> Vec<String> {
    let before = ids(home);
    let out = dsh(home, &["run", prompt]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    ids(home)
        .into_iter()
        .filter(|id| !before.contains(id))
        .collect()
}

fn resume(home: &Home, id: &str, prompt: &str) {
    let out = dsh(home, &["run", "--resume", id, prompt]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

fn log_of(home: &Home, id: &str) -> PathBuf {
    home.sessions().join(format!("{id}.jsonl"))
}

fn count(home: &Home, id: &str, ty: &str) -> usize {
    events(&log_of(home, id))
        .iter()
        .filter(|e| e["type"] == ty)
        .count()
}

/// A home whose bash output spills past 1000 bytes (into
/// `<session-dir>/<id>/spill/`).
fn spilling_home() -> Home {
    let home = Home::new(DSH);
    home.write_user_config("[bash]\nmax_output_bytes = 1000\n");
    home
}

#[test]
fn rm_deletes_a_session_its_files_and_its_sub_agents_but_not_one_in_use() {
    let home = spilling_home();
    let spilled = run(&home, "run seq 1 5000")[0].clone();
    assert!(home.sessions().join(&spilled).join("spill").is_dir());
    let inner = r#"{\"description\":\"inner\",\"prompt\":\"echo deep\"}"#;
    let prompt =
        format!(r#"call subagent {{"description":"outer","prompt":"call subagent {inner}"}}"#);
    let family = run(&home, &prompt);
    assert_eq!(family.len(), 3, "{family:?}");
    let parent = family
        .iter()
        .find(|id| {
            !events(&log_of(&home, id))
                .iter()
                .any(|e| e["type"] == "subagent/start")
        })
        .unwrap()
        .clone();
    let keep = run(&home, "echo keep")[0].clone();

    let out = dsh(&home, &["session", "rm", &spilled, &parent]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("removed {spilled}: log, ")),
        "{text}"
    );
    assert!(!home.sessions().join(&spilled).exists());
    for id in &family {
        assert!(text.contains(&format!("removed {id}")), "{text}");
    }
    assert_eq!(text.matches("(a sub-agent's, of ").count(), 2, "{text}");
    assert_eq!(ids(&home), std::slice::from_ref(&keep));
    // Only `keep`'s own log and files are left.
    for entry in home.session_entries() {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(&keep), "{name} is left");
    }

    // A log a process holds is refused, and stays.
    let held = std::fs::File::open(log_of(&home, &keep)).unwrap();
    held.try_lock().unwrap();
    let out = dsh(&home, &["session", "rm", &keep]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is in use by another dsh process"),
        "{}",
        stderr(&out)
    );
    assert!(log_of(&home, &keep).is_file());
    drop(held);

    // An unknown session: exit 2, nothing removed.
    let out = dsh(&home, &["session", "rm", &keep, "no-such-session"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no session \"no-such-session\""));
    assert!(log_of(&home, &keep).is_file());
}

/// Moves every event time of `id`'s log `days` back.
fn age(home: &Home, id: &str, days: u64) {
    let path = log_of(home, id);
    let shift = days * 86_400_000;
    let text: String = events(&path)
        .into_iter()
        .map(|mut e| {
            e["time"] = (e["time"].as_u64().unwrap() - shift).into();
            format!("{e}\n")
        })
        .collect();
    std::fs::write(&path, text).unwrap();
}

#[test]
fn clean_older_than_removes_whole_old_sessions_and_a_dry_run_only_lists_them() {
    let home = spilling_home();
    let old = run(&home, "run seq 1 5000")[0].clone();
    let recent = run(&home, "run seq 1 6000")[0].clone();
    age(&home, &old, 40);

    let out = dsh(
        &home,
        &["session", "clean", "--older-than", "30d", "--dry-run"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("would remove {old}: last active ")),
        "{text}"
    );
    assert!(!text.contains(&recent), "{text}");
    assert_eq!(ids(&home).len(), 2);

    let out = dsh(&home, &["session", "clean", "--older-than", "12h"]);
    assert!(
        stdout(&out).starts_with(&format!("removed {old}: log, ")),
        "{}",
        stdout(&out)
    );
    assert_eq!(ids(&home), std::slice::from_ref(&recent));
    assert!(!home.sessions().join(&old).exists());
    assert!(home.sessions().join(&recent).join("spill").is_dir());

    let out = dsh(&home, &["session", "clean", "--older-than", "12h"]);
    assert_eq!(stdout(&out), "nothing to clean\n");

    // The spill-only clean still keeps the log.
    let out = dsh(&home, &["session", "clean", &recent, "--dry-run"]);
    assert!(
        stdout(&out).starts_with(&format!("{recent}: would remove ")),
        "{}",
        stdout(&out)
    );
    assert!(home.sessions().join(&recent).is_dir());
    let out = dsh(&home, &["session", "clean", &recent]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!home.sessions().join(&recent).join("spill").exists());
    assert!(
        home.sessions().join(&recent).join("checkpoints").is_dir(),
        "the spill-only clean keeps the checkpoints"
    );
    assert_eq!(ids(&home), [recent]);

    let out = dsh(&home, &["session", "clean", "--older-than", "30x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("invalid age"), "{}", stderr(&out));
}

#[test]
fn fork_copies_a_session_whole_or_up_to_a_turn_and_the_copy_resumes() {
    let home = Home::new(DSH);
    let id = run(&home, "echo one")[0].clone();
    resume(&home, &id, "echo two");
    resume(&home, &id, "echo three");
    let original = std::fs::read(log_of(&home, &id)).unwrap();

    let out = dsh(&home, &["session", "fork", &id, "--at-turn", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let fork = stdout(&out).trim().to_string();
    assert!(fork.starts_with("s-") && fork != id, "{fork}");
    assert!(stderr(&out).contains(&format!("dsh chat --resume {fork}")));
    assert_eq!(count(&home, &fork, "turn/start"), 2);
    assert_eq!(count(&home, &fork, "turn/end"), 2);
    let first = &events(&log_of(&home, &fork))[0];
    assert_eq!(first["type"], "session/fork");
    assert_eq!(first["data"]["from"], id.as_str());
    assert_eq!(std::fs::read(log_of(&home, &id)).unwrap(), original);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(log_of(&home, &fork))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // The copy goes on from its own history: one, two, four.
    resume(&home, &fork, "echo four");
    let out = dsh(&home, &["session", "replay", &fork]);
    let history = stdout(&out);
    for word in ["echo one", "echo two", "echo four"] {
        assert!(history.contains(word), "{word}: {history}");
    }
    assert!(!history.contains("echo three"), "{history}");
    assert_eq!(std::fs::read(log_of(&home, &id)).unwrap(), original);

    // Whole.
    let out = dsh(&home, &["session", "fork", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let whole = stdout(&out).trim().to_string();
    assert_eq!(count(&home, &whole, "turn/start"), 3);

    for n in ["4", "0"] {
        let out = dsh(&home, &["session", "fork", &id, "--at-turn", n]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains(&format!(
                "--at-turn {n} is out of range: the session has turns 1..=3"
            )),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(ids(&home).len(), 3);
}

/// A session (one chat, piped) with a file written, read and edited, a
/// long bash output, and a message holding HTML.
fn exported_session(home: &Home) -> String {
    let lines = [
        r#"call write {"file_path":"notes.txt","content":"alpha\nbeta\n"}"#,
        r#"call read {"file_path":"notes.txt"}"#,
        r#"call edit {"file_path":"notes.txt","old_string":"beta\n","new_string":"gamma\n"}"#,
        "run seq 1 300",
        "echo <script>alert('x')</script> [docs](https://example.com/docs) ![pic](https://example.com/p.png) [bad](javascript:alert(1))",
    ];
    let mut c = home.dsh();
    c.arg("chat");
    let out = output_within(c, Some(&(lines.join("\n") + "\n")), LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(home.cwd().join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    home.only_session()
}

#[test]
fn export_writes_markdown_html_and_the_log() {
    let home = Home::new(DSH);
    let id = exported_session(&home);

    let out = dsh(&home, &["session", "export", &id, "--format", "md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = stdout(&out);
    assert!(md.starts_with("# call write "), "{md}");
    assert!(md.contains(&format!("- **Session:** `{id}`")), "{md}");
    assert!(md.contains("- **Model:** `echo`"), "{md}");
    assert!(md.contains("## User\n\ncall write"), "{md}");
    assert!(md.contains("**Tool call: `write`**"), "{md}");
    assert!(
        md.contains("```diff\n--- /dev/null\n+++ b/notes.txt\n"),
        "{md}"
    );
    assert!(
        md.contains("```diff\n--- a/notes.txt\n+++ b/notes.txt\n"),
        "{md}"
    );
    assert!(md.contains("-beta\n+gamma\n"), "{md}");
    assert!(md.contains("\"new_string\": \"(in the diff)\""), "{md}");
    assert!(md.contains("**Tool call: `bash`**"), "{md}");
    // The result is cut after 200 lines, with a note.
    assert!(
        md.contains("\n199\n200\n```\n\n*… 100 more line(s) not shown; `dsh session show --full"),
        "{md}"
    );
    assert!(md.contains("## Usage"), "{md}");

    let out = dsh(&home, &["session", "export", &id, "--format", "html"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = stdout(&out);
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    let lower = html.to_lowercase();
    assert!(!lower.contains("<script"), "{html}");
    assert!(lower.contains("&lt;script&gt;alert("), "{html}");
    assert!(!lower.contains("src="), "nothing is loaded: {html}");
    assert!(!lower.contains("<link") && !lower.contains("@import") && !lower.contains("url("));
    // `javascript:` stays only as text (the arguments, the result).
    assert!(html.contains("<a href=\"#\">bad</a>"), "{html}");
    let hrefs: Vec<&str> = html
        .split("href=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assert!(!hrefs.is_empty());
    for href in &hrefs {
        assert!(
            ["https://example.com/docs", "https://example.com/p.png", "#"].contains(href),
            "{href}"
        );
    }
    assert!(html.contains("<pre class=\"diff\">"), "{html}");
    assert!(html.contains("<span class=\"add\">+gamma</span>"), "{html}");

    // jsonl: the log as stored; -o writes a private file.
    let target = home.path().join("out.jsonl");
    let out = dsh(
        &home,
        &[
            "session",
            "export",
            &id,
            "--format",
            "jsonl",
            "-o",
            target.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    assert_eq!(
        std::fs::read(&target).unwrap(),
        std::fs::read(log_of(&home, &id)).unwrap()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let out = dsh(&home, &["session", "export", &id, "--format", "jsonl"]);
    assert_eq!(
        stdout(&out).as_bytes(),
        std::fs::read(log_of(&home, &id)).unwrap()
    );
    // A path works as for `session show`.
    let path = log_of(&home, &id);
    let out = dsh(&home, &["session", "export", path.to_str().unwrap()]);
    assert_eq!(stdout(&out), md);
}
