//! `dsh_acp::serve_streams` fed raw lines, as `dsh acp` reads stdin: a
//! request on a line over the limit is answered for its own id (so the
//! editor's request fails at once instead of waiting for ever), a line that
//! is no request is answered for `null`, and serving goes on.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Sends each line to a server limited to `max` bytes a line, closes its
/// input and returns every line it answered, once it has shut down.
async fn answers(max: usize, lines: &[Vec<u8>]) -> Vec<serde_json::Value> {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("none.toml"), "").unwrap();
    let settings = dsh::Settings {
        model: Some("echo".into()),
        session_dir: Some(home.path().join("sessions")),
        config: Some(home.path().join("none.toml")),
        ..Default::default()
    };
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    let (client_read, mut client_write) = tokio::io::split(client);
    let served = tokio::spawn(dsh_acp::serve_streams(
        settings,
        server_read,
        server_write,
        max,
    ));
    // Read while writing: the answers must not fill the pipe.
    let reader = tokio::spawn(async move {
        let mut out = Vec::new();
        let mut lines = BufReader::new(client_read).lines();
        while let Some(line) = lines.next_line().await.unwrap() {
            out.push(serde_json::from_str::<serde_json::Value>(&line).unwrap());
        }
        out
    });
    for line in lines {
        client_write.write_all(line).await.unwrap();
        client_write.write_all(b"\n").await.unwrap();
    }
    client_write.shutdown().await.unwrap();
    drop(client_write);
    tokio::time::timeout(Duration::from_secs(60), served)
        .await
        .expect("the server ended with its input")
        .unwrap()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), reader)
        .await
        .expect("the output ended")
        .unwrap()
}

fn line(value: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_long_request_is_answered_for_its_id_and_serving_goes_on() {
    let big = "x".repeat(1 << 20);
    let prompt = |id: serde_json::Value| {
        line(serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": big}]},
        }))
    };
    let got = answers(
        1024,
        &[
            prompt(serde_json::json!(7)),
            prompt(serde_json::json!("req-8")),
            // A response (no method) over the limit: not answered for its id.
            line(serde_json::json!({"jsonrpc": "2.0", "id": 9, "result": {"text": big}})),
            // Under the limit: the protocol crate answers it (an
            // `initialize`, so it succeeds).
            line(serde_json::json!({
                "jsonrpc": "2.0",
                "id": 10,
                "method": "initialize",
                "params": {"protocolVersion": 1},
            })),
        ],
    )
    .await;
    assert_eq!(got.len(), 4, "{got:?}");
    for (answer, id) in got.iter().zip([
        serde_json::json!(7),
        serde_json::json!("req-8"),
        serde_json::Value::Null,
    ]) {
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["error"]["message"], "Line too long", "{answer}");
        assert_eq!(answer["error"]["data"]["maxLineBytes"], 1024, "{answer}");
    }
    assert_eq!(got[3]["id"], 10, "{}", got[3]);
    assert!(
        got[3]["result"]["protocolVersion"].is_number(),
        "{}",
        got[3]
    );
}
