//! Images in the JSONL log by content hash: the bytes once in
//! `<dir>/<id>/images/<sha256>.<ext>` (0700 / 0600), the log line holding
//! only `dsh-image:<sha256>.<ext>`; loading brings the data URL back, a
//! missing file becomes a text block; placeholders never show base64.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::Engine as _;
use dsh_protocol::{
    CallId, ContentBlock, ImageBlock, MessageEvent, MessageSource, ToolResult, ToolResultEvent,
};
use dsh_session::{
    image_placeholder, images_dir, install_jsonl, load_jsonl, store_images, EventPayload,
    SessionStore, IMAGE_URL_PREFIX,
};

/// A PNG signature and IHDR declaring `w`×`h`, then `tail` bytes.
fn png(w: u32, h: u32, tail: &[u8]) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend_from_slice(&w.to_be_bytes());
    png.extend_from_slice(&h.to_be_bytes());
    png.extend_from_slice(tail);
    png
}

fn data_url(bytes: &[u8]) -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

fn image(url: String) -> ContentBlock {
    ContentBlock::Image(ImageBlock {
        url,
        mime_type: Some("image/png".into()),
        cache: None,
    })
}

fn user(content: Vec<ContentBlock>) -> EventPayload {
    EventPayload::UserMessage(MessageEvent {
        content,
        source: MessageSource::default(),
    })
}

fn tool_result(content: Vec<ContentBlock>) -> EventPayload {
    EventPayload::ToolResult(ToolResultEvent {
        turn: 1,
        step: 1,
        result: ToolResult {
            call_id: CallId::from("c1"),
            content,
            is_error: false,
            failure: None,
        },
    })
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn images_are_stored_once_by_hash_and_come_back_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new();
    let plugin = install_jsonl(&store, dir.path()).unwrap();
    let (s, reg) = store.create(Some("img".into()), vec![]).unwrap();
    let bytes = png(800, 600, &[7u8; 50_000]);
    let url = data_url(&bytes);
    s.append(user(vec![ContentBlock::text("look"), image(url.clone())]));
    s.append(tool_result(vec![
        ContentBlock::text("Image: a.png"),
        image(url.clone()),
    ]));
    store.flush(&s).await.unwrap();

    let hash = sha256_hex(&bytes);
    let log = dir.path().join("img.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains(&format!("\"url\":\"{IMAGE_URL_PREFIX}{hash}.png\"")),
        "{text}"
    );
    assert!(!text.contains("base64"), "no image inline in the log");
    assert!(text.len() < 2_000, "{} bytes", text.len());

    let images = images_dir(dir.path(), "img");
    assert_eq!(images, dir.path().join("img").join("images"));
    let files: Vec<_> = std::fs::read_dir(&images)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, vec![format!("{hash}.png")], "the same bytes once");
    assert_eq!(mode(&images), 0o700);
    assert_eq!(mode(&images.join(format!("{hash}.png"))), 0o600);
    assert_eq!(
        std::fs::read(images.join(format!("{hash}.png"))).unwrap(),
        bytes
    );

    // Loaded (resume, replay, fork, show): the data URLs are back, exactly.
    let loaded = load_jsonl(&log).unwrap();
    let originals: Vec<_> = s.events().iter().map(|e| (**e).clone()).collect();
    assert_eq!(loaded.events, originals);

    // Resumed and appended to: the seeded events are not written again,
    // a new image with the same bytes adds no file.
    reg.undo();
    plugin.undo();
    let store2 = SessionStore::new();
    let _plugin2 = install_jsonl(&store2, dir.path()).unwrap();
    let (s2, _reg2) = store2.create(Some("img".into()), loaded.events).unwrap();
    s2.append(user(vec![image(url)]));
    store2.flush(&s2).await.unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(!text.contains("base64"));
    assert_eq!(std::fs::read_dir(&images).unwrap().count(), 1);
}

#[tokio::test]
async fn a_missing_image_file_loads_as_a_text_block_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new();
    let _plugin = install_jsonl(&store, dir.path()).unwrap();
    let (s, _reg) = store.create(Some("gone".into()), vec![]).unwrap();
    let bytes = png(10, 10, b"pixels");
    s.append(user(vec![image(data_url(&bytes))]));
    store.flush(&s).await.unwrap();
    let hash = sha256_hex(&bytes);
    std::fs::remove_dir_all(dir.path().join("gone")).unwrap();
    let loaded = load_jsonl(&dir.path().join("gone.jsonl")).unwrap();
    let EventPayload::UserMessage(m) = &loaded.events[0].data else {
        panic!("{:?}", loaded.events[0]);
    };
    assert_eq!(
        m.content,
        vec![ContentBlock::text(format!(
            "[image {hash} missing from the session directory]"
        ))]
    );

    // A file whose bytes do not match its name counts as missing too, and
    // a name outside the form dsh writes is never looked up.
    let images = images_dir(dir.path(), "gone");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join(format!("{hash}.png")), b"other bytes").unwrap();
    let loaded = load_jsonl(&dir.path().join("gone.jsonl")).unwrap();
    let EventPayload::UserMessage(m) = &loaded.events[0].data else {
        panic!();
    };
    assert!(matches!(&m.content[0], ContentBlock::Text(_)));
}

#[test]
fn events_without_inline_images_are_logged_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let event = dsh_protocol::SessionEvent {
        seq: 0,
        time: 0,
        data: user(vec![
            ContentBlock::text("hi"),
            image("https://example.invalid/a.png".into()),
        ]),
    };
    assert!(store_images(&event, dir.path()).unwrap().is_none());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn placeholders_name_the_size_never_the_bytes() {
    let bytes = png(800, 600, &[1u8; 3000]);
    let block = ImageBlock {
        url: data_url(&bytes),
        mime_type: Some("image/png".into()),
        cache: None,
    };
    assert_eq!(image_placeholder(&block), "[image 800×600 PNG, 3 KB]");
    let stored = ImageBlock {
        url: format!("{IMAGE_URL_PREFIX}{}.png", "ab".repeat(32)),
        mime_type: None,
        cache: None,
    };
    assert!(image_placeholder(&stored).starts_with("[image abab"));
    let garbage = ImageBlock {
        url: "data:image/png;base64,!!!!".into(),
        mime_type: None,
        cache: None,
    };
    assert_eq!(image_placeholder(&garbage), "[image image/png, 1 KB]");
}

#[test]
fn an_image_counts_for_its_pixels_not_its_base64() {
    let big = image(data_url(&png(1568, 1000, &vec![0u8; 1 << 20])));
    let small = image(data_url(&png(10, 10, b"")));
    let expected = dsh_session::IMAGE_ESTIMATE_TOKENS * dsh_session::BYTES_PER_TOKEN;
    assert_eq!(dsh_session::blocks_bytes(&[big]), expected);
    assert_eq!(dsh_session::blocks_bytes(&[small]), expected);
}
