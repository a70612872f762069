//! ACP images: `promptCapabilities.image` follows the configured model's
//! catalogue entry; an image content block in `session/prompt` reaches the
//! user message (stored beside the log by hash); a decompression bomb,
//! data that is not base64 and an image for a model without images are
//! refused with a JSON-RPC error naming why.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, ImageContent, InitializeRequest, NewSessionRequest, PromptRequest, StopReason,
    TextContent,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client};
use base64::Engine as _;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

fn settings(home: &Path, config: &str) -> dsh::Settings {
    std::fs::write(home.join("dsh.toml"), config).unwrap();
    dsh::Settings {
        model: Some("echo".into()),
        session_dir: Some(home.join("sessions")),
        config: Some(home.join("dsh.toml")),
        ..Default::default()
    }
}

/// Runs `body` as a client of `dsh acp` served on in-process pipes.
async fn with_client<F>(settings: dsh::Settings, body: F)
where
    F: AsyncFnOnce(ConnectionTo<Agent>) -> Result<(), agent_client_protocol::Error>,
{
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let server = tokio::spawn(dsh_acp::serve_streams(
        settings,
        server_read,
        server_write,
        dsh_acp::DEFAULT_MAX_LINE_BYTES,
    ));
    let client = Client.v1().name("dsh-acp-images-test").connect_with(
        ByteStreams::new(client_write.compat_write(), client_read.compat()),
        body,
    );
    tokio::time::timeout(Duration::from_secs(60), client)
        .await
        .expect("the client finished in time")
        .expect("the client succeeded");
    let _ = tokio::time::timeout(Duration::from_secs(30), server).await;
}

/// `initialize` (returning whether images are advertised), `session/new`.
async fn open(cx: &ConnectionTo<Agent>, cwd: &Path) -> (bool, String) {
    let init = cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    let images = init.agent_capabilities.prompt_capabilities.image;
    let new = cx
        .send_request(NewSessionRequest::new(cwd.to_path_buf()))
        .block_task()
        .await
        .unwrap();
    (images, new.session_id.to_string())
}

fn png_base64(w: u32, h: u32) -> String {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 7]));
    let mut bytes = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut bytes),
        image::ImageFormat::Png,
    )
    .unwrap();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A PNG that is only a header declaring 20,000 × 20,000 pixels.
fn bomb_base64() -> String {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend_from_slice(&20_000u32.to_be_bytes());
    png.extend_from_slice(&20_000u32.to_be_bytes());
    png.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    base64::engine::general_purpose::STANDARD.encode(png)
}

async fn send(
    cx: &ConnectionTo<Agent>,
    session: &str,
    image: ImageContent,
) -> Result<StopReason, agent_client_protocol::Error> {
    cx.send_request(PromptRequest::new(
        session.to_string(),
        vec![
            ContentBlock::Text(TextContent::new("echo what is this")),
            ContentBlock::Image(image),
        ],
    ))
    .block_task()
    .await
    .map(|r| r.stop_reason)
}

/// Every `user/message` of the session logs under `home`.
fn user_messages(home: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(home.join("sessions")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "jsonl") {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            for line in text.lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                if v["type"] == "user/message" {
                    out.push(v["data"].clone());
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_prompt_reaches_the_user_message_and_bad_ones_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().to_path_buf();
    with_client(settings(home.path(), ""), async move |cx| {
        let (images, session) = open(&cx, &cwd).await;
        assert!(images, "the echo model takes images: advertised");

        let image = ImageContent::new(png_base64(30, 20), "image/png")
            .uri("file:///tmp/screenshot.png".to_string());
        assert_eq!(
            send(&cx, &session, image).await.unwrap(),
            StopReason::EndTurn
        );

        let bomb = send(&cx, &session, ImageContent::new(bomb_base64(), "image/png"))
            .await
            .unwrap_err();
        let said = format!("{} {:?}", bomb.message, bomb.data);
        assert!(said.contains("is a 20000×20000 PNG"), "{said}");
        assert!(said.contains("refused before decoding"), "{said}");

        let garbage = send(
            &cx,
            &session,
            ImageContent::new("@@not base64@@", "image/png"),
        )
        .await
        .unwrap_err();
        let said = format!("{} {:?}", garbage.message, garbage.data);
        assert!(said.contains("image 1 is not valid base64 data"), "{said}");

        let text = ImageContent::new(
            base64::engine::general_purpose::STANDARD.encode("hello, not a picture"),
            "image/png",
        );
        let refused = send(&cx, &session, text).await.unwrap_err();
        let said = format!("{} {:?}", refused.message, refused.data);
        assert!(
            said.contains("is named as a PNG image but its bytes are text"),
            "{said}"
        );
        Ok(())
    })
    .await;
    let users = user_messages(home.path());
    assert_eq!(
        users.len(),
        1,
        "the refused prompts sent nothing: {users:?}"
    );
    let content = users[0]["content"].as_array().unwrap();
    assert_eq!(content[1]["text"], "[image: screenshot.png 30×20]");
    assert_eq!(content[2]["type"], "image");
    assert!(content[2]["url"]
        .as_str()
        .unwrap()
        .starts_with("dsh-image:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_images_advertises_none_and_refuses_them() {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().to_path_buf();
    let config = "[models.\"echo\"]\nimages = false\n";
    with_client(settings(home.path(), config), async move |cx| {
        let (images, session) = open(&cx, &cwd).await;
        assert!(!images);
        let image = ImageContent::new(png_base64(4, 4), "image/png");
        let refused = send(&cx, &session, image).await.unwrap_err();
        let said = format!("{} {:?}", refused.message, refused.data);
        assert!(said.contains("model echo does not take images"), "{said}");
        Ok(())
    })
    .await;
    assert!(user_messages(home.path()).is_empty());
}
