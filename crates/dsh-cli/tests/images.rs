//! Images end to end with the real binary and the offline echo model
//! (whose catalogue entry takes images): `read` of a PNG, an `@image` in
//! a prompt, both stored beside the log by hash; `session show` and
//! `replay` after it, a resume and a fork; and a model configured without
//! images.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use dsh_testkit::cli::{output_within, stderr, stdout, Home};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");
const LIMIT: Duration = Duration::from_secs(60);

fn dsh(home: &Home, args: &[&str]) -> Output {
    let mut c = home.dsh();
    c.args(args);
    output_within(c, None, LIMIT)
}

fn ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    stdout(out)
}

/// A 40×30 PNG in the working directory.
fn picture(home: &Home, name: &str) -> PathBuf {
    let path = home.cwd().join(name);
    image::RgbImage::from_fn(40, 30, |x, y| image::Rgb([x as u8 * 6, y as u8 * 8, 90]))
        .save_with_format(&path, image::ImageFormat::Png)
        .unwrap();
    path
}

/// The files in a session's `images/` directory.
fn stored_images(home: &Home, id: &str) -> Vec<PathBuf> {
    let dir = home.sessions().join(id).join("images");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn read_of_a_png_is_stored_by_hash_and_comes_back_on_resume_and_fork() {
    let home = Home::new(DSH);
    let png = picture(&home, "x.png");
    let out = dsh(&home, &["run", r#"call read {"file_path": "x.png"}"#]);
    let answer = ok(&out);
    assert!(
        answer.contains(&format!("Image: {} (40×30 PNG", png.display())),
        "{answer}"
    );
    let id = home.only_session();
    let log = home.sessions().join(format!("{id}.jsonl"));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(";base64,"), "no inline image in the log");
    let files = stored_images(&home, &id);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::read(&files[0]).unwrap(),
        std::fs::read(&png).unwrap()
    );
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(files[0].parent().unwrap()), 0o700);
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        text.contains(&format!("\"url\":\"dsh-image:{name}\"")),
        "{text}"
    );

    // `session show` names the image, never its bytes.
    let shown = ok(&dsh(&home, &["session", "show", &id, "--full"]));
    assert!(!shown.contains("base64"), "{shown}");
    assert!(shown.contains("Image: "), "{shown}");
    let timeline = ok(&dsh(&home, &["session", "show", &id, "--timeline"]));
    assert!(!timeline.contains("base64"), "{timeline}");

    // Resumed: the history holds the image again (as a data URL).
    ok(&dsh(&home, &["run", "--resume", &id, "echo again"]));
    let replay = ok(&dsh(&home, &["session", "replay", &id]));
    assert!(replay.contains("data:image/png;base64,"), "{replay}");
    assert_eq!(stored_images(&home, &id).len(), 1);

    // A fork gets its own copy beside its own log.
    let fork = ok(&dsh(&home, &["session", "fork", &id]));
    let fork = fork.trim();
    let copied = stored_images(&home, fork);
    assert_eq!(copied.len(), 1);
    assert_eq!(copied[0].file_name(), files[0].file_name());
    let fork_log = std::fs::read_to_string(home.sessions().join(format!("{fork}.jsonl"))).unwrap();
    assert!(!fork_log.contains(";base64,"));

    // The image removed from the session's directory: a note, no crash.
    std::fs::remove_file(&files[0]).unwrap();
    let replay = ok(&dsh(&home, &["session", "replay", &id]));
    assert!(
        replay.contains("missing from the session directory"),
        "{replay}"
    );
}

#[test]
fn an_at_mention_attaches_the_image_to_the_prompt() {
    let home = Home::new(DSH);
    picture(&home, "shot.png");
    ok(&dsh(&home, &["run", "echo look at @shot.png please"]));
    let users = home.of_type("user/message");
    let content = users[0]["content"].as_array().unwrap();
    let kinds: Vec<&str> = content
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "text", "image"], "{content:?}");
    assert_eq!(content[1]["text"], "[image: shot.png 40×30]");
    assert!(content[2]["url"]
        .as_str()
        .unwrap()
        .starts_with("dsh-image:"));
    assert_eq!(content[2]["mimeType"], "image/png");
    assert_eq!(stored_images(&home, &home.only_session()).len(), 1);
}

#[test]
fn a_model_without_images_refuses_the_read_and_the_attachment() {
    let home = Home::new(DSH);
    home.write_user_config("[models.\"echo\"]\nimages = false\n");
    picture(&home, "x.png");
    let out = dsh(&home, &["run", r#"call read {"file_path": "x.png"}"#]);
    let answer = stdout(&out);
    assert!(
        answer.contains("is a PNG image and model echo does not take images (set `images = true` under [models.\"echo\"] if it does)"),
        "{answer}\n{}",
        stderr(&out)
    );
    let out = dsh(&home, &["run", "echo see @x.png"]);
    ok(&out);
    assert!(
        stderr(&out).contains("x.png was not attached: model echo does not take images"),
        "{}",
        stderr(&out)
    );
    let logs = home.logs();
    let last = logs.iter().find(|l| {
        l.iter()
            .any(|e| e["type"] == "user/message" && e.to_string().contains("see @x.png"))
    });
    let last = last.unwrap();
    assert!(!last.iter().any(|e| e.to_string().contains("\"image\"")));
    for id in home.session_logs() {
        let id = id.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(stored_images(&home, &id).is_empty());
    }
}

#[test]
fn the_chat_shows_an_attached_image_and_a_refused_one() {
    use dsh_testkit::screen::{key, Screen};
    let home = Home::new(DSH);
    picture(&home, "shot.png");
    std::fs::write(home.cwd().join("fake.png"), "not an image\n").unwrap();
    let mut s = Screen::chat(&home, &[], 30, 100);
    s.wait_for("the composer", |t| t.contains("type a message"));
    // A space after the last mention closes the file completion list.
    s.keys("echo see @shot.png and @fake.png ");
    s.keys(key::ENTER);
    let history = s.wait_for_history("the attachment", |t| {
        t.contains("[image: shot.png 40×30]") && t.contains("The echo tool says")
    });
    assert!(
        history.contains("fake.png was not attached: ")
            && history.contains("is named as a PNG image but its bytes are"),
        "{history}"
    );
    s.keys(key::CTRL_D);
    assert_eq!(s.wait_exit(Duration::from_secs(30)), 0);
    let users = home.of_type("user/message");
    let images = users[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "image")
        .count();
    assert_eq!(images, 1);
}
