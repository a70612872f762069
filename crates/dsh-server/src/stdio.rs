//! `dsh serve --stdio`: one client on a byte stream pair, one JSON-RPC
//! message per line (newline-delimited JSON), like the reference's SDK
//! server. Lines are read in bounded memory: a line longer than the limit
//! is dropped as it streams in and answered `-32600` ("Line too long");
//! a line that is not UTF-8 is answered `-32700`. Serving goes on either
//! way.

use std::sync::Arc;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::server::{Connection, Server};

/// The longest line taken by default (16 MiB, without the newline).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Serves one client on `input`/`output` until it closes `input`, sends
/// `shutdown`, or stops reading (its queue filled). Every frame queued
/// before the end is written. The sessions it opened stay open: the
/// caller shuts the controller down.
///
/// # Errors
/// Reading `input` or writing `output` failed.
pub async fn serve_stdio<R, W>(
    server: Arc<Server>,
    input: R,
    output: W,
    max_line_bytes: usize,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (conn, mut frames) = Connection::new(server.clone(), true);
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(frame) = frames.recv().await {
            output.write_all(frame.as_bytes()).await?;
            output.write_all(b"\n").await?;
            if frames.is_empty() {
                output.flush().await?;
            }
        }
        output.flush().await
    });
    let read = {
        let conn = conn.clone();
        async move {
            let mut input = BufReader::with_capacity(64 * 1024, input);
            let mut line = Vec::new();
            let mut too_long = false;
            loop {
                let chunk = input.fill_buf().await?;
                if chunk.is_empty() {
                    // A last line without its newline still counts.
                    if !line.is_empty() && !too_long {
                        take_line(&conn, &line);
                    }
                    return Ok::<(), std::io::Error>(());
                }
                let (part, ended) = match memchr::memchr(b'\n', chunk) {
                    Some(at) => (&chunk[..at], Some(at + 1)),
                    None => (chunk, None),
                };
                if !too_long {
                    if line.len() + part.len() > max_line_bytes {
                        too_long = true;
                        line.clear();
                    } else {
                        line.extend_from_slice(part);
                    }
                }
                let used = ended.unwrap_or(chunk.len());
                input.consume(used);
                if ended.is_some() {
                    if too_long {
                        let frame = json!({"jsonrpc": "2.0", "id": null, "error": {
                            "code": -32600,
                            "message": format!("Line too long: the limit is {max_line_bytes} bytes"),
                        }});
                        conn.handle_raw_answer(frame.to_string());
                    } else {
                        take_line(&conn, &line);
                    }
                    line.clear();
                    too_long = false;
                }
            }
        }
    };
    let result = tokio::select! {
        r = read => r,
        () = server.stop_requested() => Ok(()),
        () = conn.dropped() => Ok(()),
    };
    // The requests taken before the end are answered (a slow one, such as
    // a session opening its MCP servers, for a bounded time).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), conn.settled()).await;
    conn.close();
    drop(conn);
    // The writer ends when the last sender is gone (the tasks still
    // answering hold one for as long as they run).
    match writer.await {
        Ok(written) => written.and(result),
        Err(e) => Err(std::io::Error::other(e)),
    }
}

/// One complete line: a frame when it is UTF-8 (blank lines are skipped).
fn take_line(conn: &Arc<Connection>, line: &[u8]) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match std::str::from_utf8(line) {
        Ok(text) if text.trim().is_empty() => {}
        Ok(text) => conn.handle(text),
        Err(e) => {
            let frame = json!({"jsonrpc": "2.0", "id": null, "error": {
                "code": -32700,
                "message": format!("Parse error: the line is not UTF-8 (invalid byte at {})", e.valid_up_to()),
            }});
            conn.handle_raw_answer(frame.to_string());
        }
    }
}
