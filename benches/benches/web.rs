//! `web_fetch` of a 1 MB HTML page from loopback, converted to markdown:
//! the whole tool call through `ToolRegistry::execute` (schema validation,
//! the guard, the HTTP request, reading the body, the conversion on its
//! thread, rendering). Target: under 50 ms.
//!
//! `cargo bench -p dsh-benches --bench web`
//!
//! The page (about 1 MiB) is generated: sections with headings, paragraphs
//! with links, emphasis and inline code, lists, a table and code blocks,
//! nested a few `<div>`s deep like a documentation page. A tiny HTTP/1.1
//! server on 127.0.0.1 serves it (its address exempt from the
//! private-address rule, as in the tests). The mean per call is printed at
//! the end with the page and markdown sizes.

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Lines printed after the criterion output.
static SUMMARY: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A documentation-like page of at least `bytes` bytes.
fn page(bytes: usize) -> String {
    let mut html = String::from(
        "<!DOCTYPE html><html><head><title>Guide</title><style>body{margin:0}</style>\
         <script>window.x = 1 < 2;</script></head><body><nav><ul><li><a href=\"/\">Home</a></li>\
         <li><a href=\"/docs\">Docs</a></li></ul></nav><main><div class=\"content\"><article>",
    );
    let mut i = 0;
    while html.len() < bytes {
        html.push_str(&format!(
            "<section id=\"s{i}\"><h2>Section {i}</h2><div class=\"body\"><p>The <strong>runtime</strong> \
             schedules <em>tasks</em> on worker threads; see <a href=\"/docs/{i}\">the chapter {i}</a> \
             and call <code>spawn({i})</code> to start one. Each task is polled until it is ready, \
             and a waker tells the scheduler when to poll again.</p>\
             <ul><li>first point {i}</li><li>second point with <a href=\"https://example.org/{i}\">a link</a></li>\
             <li>third point</li></ul>\
             <table><thead><tr><th>name</th><th>value</th></tr></thead><tbody>\
             <tr><td>alpha</td><td>{i}</td></tr><tr><td>beta</td><td>{}</td></tr></tbody></table>\
             <pre><code>fn main() {{\n    let x = {i};\n    println!(\"{{x}}\");\n}}\n</code></pre>\
             <blockquote><p>Note {i}: keep tasks short.</p></blockquote></div></section>",
            i * 2
        ));
        i += 1;
    }
    html.push_str("</article></div></main><footer>end</footer></body></html>");
    html
}

/// Serves `body` as text/html to every request on a loopback port.
async fn serve(body: &'static [u8]) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                // A client that goes away early is not this benchmark's concern.
                let _ = conn.write_all(head.as_bytes()).await;
                let _ = conn.write_all(body).await;
                let _ = conn.shutdown().await;
            });
        }
    });
    addr
}

fn bench_fetch(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let html: &'static str = Box::leak(page(1 << 20).into_boxed_str());
    let addr = rt.block_on(serve(html.as_bytes()));
    let registry = ToolRegistry::new();
    let cfg = dsh_tool_web::FetchConfig {
        exempt: vec![addr],
        ..Default::default()
    };
    let _reg = dsh_tool_web::install(&registry, Some(cfg), None).unwrap();
    let call = ToolCall::new(
        "b",
        "web_fetch",
        serde_json::json!({"url": format!("http://{addr}/guide"), "prompt": "how are tasks scheduled?"})
            .to_string(),
    );
    let run = || {
        let r = rt.block_on(registry.execute(&call, CallEnv::default()));
        assert!(!r.is_error, "{}", r.text());
        r.text().len()
    };
    let out_len = run();
    let mut group = c.benchmark_group("web");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    let mut total = Duration::ZERO;
    let mut iterations = 0u64;
    group.bench_function("web_fetch 1 MiB html to markdown", |b| {
        b.iter_custom(|n| {
            let started = Instant::now();
            for _ in 0..n {
                std::hint::black_box(run());
            }
            let took = started.elapsed();
            total += took;
            iterations += n;
            took
        })
    });
    group.finish();
    let mean = total.as_secs_f64() * 1000.0 / iterations.max(1) as f64;
    SUMMARY.lock().unwrap().push(format!(
        "web_fetch of a {} byte HTML page from loopback → {} bytes of result: mean {mean:.1} ms per call (target < 50 ms): {}",
        html.len(),
        out_len,
        if mean < 50.0 { "ok" } else { "OVER TARGET" }
    ));
}

criterion_group!(benches, bench_fetch);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    for line in SUMMARY.lock().unwrap().iter() {
        println!("{line}");
    }
}
