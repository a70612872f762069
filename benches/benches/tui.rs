//! Rendering the model's markdown for the terminal (`dsh_tui::markdown`):
//! a 2,000-chunk streamed answer with code blocks pushed through
//! `MarkdownStream` at 120 columns, `pending()` after every chunk as the
//! live area asks for it (target < 50 µs per chunk); the same document
//! rendered whole; and the load of syntect's bundled syntaxes and themes,
//! which the first highlighted line pays.
//!
//! Then the TUI as a whole: the recorded 2,000-event DeepSeek fixture
//! replayed into the transcript and status line with a frame after every
//! event (target < 100 ms for all of it), and the release `dsh chat` on a
//! pseudo-terminal: a key press until the frame showing it reached the
//! terminal (target < 5 ms), the idle chat's CPU over 5 s (target < 1% of
//! a core) and its memory next to the line mode's (target within 5 MB).
//! The last part needs the release binary (`cargo build --release -p
//! dsh-cli`) and says so when it is missing.
//!
//! `cargo bench -p dsh-benches --bench tui`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsh_testkit::screen::{key, Screen};
use dsh_tui::markdown::{render, MarkdownStream};
use dsh_tui::status::Status;
use dsh_tui::text::Paint;
use dsh_tui::transcript::{Options as TranscriptOptions, Transcript};
use std::hint::black_box;

const WIDTH: usize = 120;
const CHUNKS: usize = 2000;

/// An answer as a model writes one: headings, paragraphs with inline
/// markup, nested and numbered lists, a table, a quote, four fenced code
/// blocks (Rust, Python, shell, Rust).
fn answer() -> String {
    let para = "The change keeps the **settled** part of the answer where it is and \
                renders only the *open* block again, so a long answer costs no more per \
                chunk than a short one; see [the issue](https://example.com/issues/36) \
                and `MarkdownStream::push` for the details.";
    let mut md = String::new();
    md.push_str("# Streaming markdown in the terminal\n\n");
    md.push_str(para);
    md.push_str("\n\n## What changed\n\n");
    md.push_str("1. **Blocks** settle at blank lines and closing fences.\n");
    md.push_str("2. Code lines settle one by one, highlighted with the state kept.\n");
    md.push_str("   - the parser's stack carries across lines\n");
    md.push_str("   - an unknown language is plain\n");
    md.push_str("3. Tables are sized to their content and shrunk to fit.\n\n");
    md.push_str(para);
    md.push_str("\n\n```rust\n");
    md.push_str(
        "/// Adds two numbers.\n\
         pub fn add(a: u64, b: u64) -> u64 {\n\
         \x20   let sum = a.checked_add(b).unwrap_or(u64::MAX); // saturate\n\
         \x20   println!(\"{a} + {b} = {sum}\");\n\
         \x20   sum\n\
         }\n\n\
         #[cfg(test)]\n\
         mod tests {\n\
         \x20   #[test]\n\
         \x20   fn adds() {\n\
         \x20       assert_eq!(super::add(2, 3), 5);\n\
         \x20   }\n\
         }\n",
    );
    md.push_str("```\n\nThe same in Python, with a docstring and a loop:\n\n```python\n");
    md.push_str(
        "def add(a: int, b: int) -> int:\n\
         \x20   \"\"\"Adds two numbers.\"\"\"\n\
         \x20   total = a + b  # no overflow in Python\n\
         \x20   for i in range(3):\n\
         \x20       print(f\"{i}: {total}\")\n\
         \x20   return total\n\n\
         if __name__ == \"__main__\":\n\
         \x20   add(2, 3)\n",
    );
    md.push_str("```\n\n| Step | Command | Time |\n|------|---------|-----:|\n");
    for (step, cmd, time) in [
        ("build", "`cargo build --release -p dsh-cli`", "41 s"),
        ("test", "`cargo test -p dsh-tui`", "9 s"),
        ("bench", "`cargo bench -p dsh-benches --bench tui`", "60 s"),
        (
            "lint",
            "`cargo clippy -p dsh-tui --all-targets -- -D warnings`",
            "12 s",
        ),
    ] {
        md.push_str(&format!("| {step} | {cmd} | {time} |\n"));
    }
    md.push_str("\nRun it all with:\n\n```sh\n");
    md.push_str(
        "set -euo pipefail\n\
         for crate in dsh-tui dsh-cli; do\n\
         \x20 cargo test -p \"$crate\" 2>&1 | tail -n 3\n\
         done\n\
         echo \"done: $(date +%s)\"\n",
    );
    md.push_str("```\n\n> Note: a quote with a **strong** word, long enough to wrap at a narrow width but not at 120 columns.\n\n");
    md.push_str("- [x] streaming\n- [x] highlighting\n- [ ] screenshots\n\n");
    md.push_str(para);
    md.push_str("\n\n```rust\n");
    for i in 0..40 {
        md.push_str(&format!(
            "    let value_{i} = compute({i}, \"label {i}\").map(|v| v * 2).unwrap_or_default();\n"
        ));
    }
    md.push_str("```\n\n");
    md.push_str(para);
    md.push('\n');
    md
}

/// `text` cut into `n` chunks of a few characters (sizes varying around
/// the mean, on character boundaries), as a model streams it.
fn chunks(text: &str, n: usize) -> Vec<&str> {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let mean = bounds.len() as f64 / n as f64;
    let mut out = Vec::with_capacity(n);
    let mut from = 0usize;
    for k in 1..n {
        // A little jitter around the even cut.
        let jitter = ((k * 7919) % 5) as f64 - 2.0;
        let at = ((k as f64 * mean + jitter).max(0.0) as usize).min(bounds.len() - 1);
        let byte = bounds[at].max(from);
        out.push(&text[from..byte]);
        from = byte;
    }
    out.push(&text[from..]);
    out
}

fn stream(parts: &[&str], pending: bool) -> usize {
    let mut s = MarkdownStream::new(WIDTH);
    let mut lines = 0;
    for part in parts {
        lines += s.push(part).len();
        if pending {
            lines += s.pending().len();
        }
    }
    lines + s.finish().len()
}

/// Per-chunk times of one streamed pass (push + pending), printed once:
/// mean, p99 and the worst chunk; `label` says whether syntect's regexes
/// were compiled already (they are compiled lazily, at the first line of
/// each language that uses them).
fn per_chunk_report(parts: &[&str], label: &str) {
    let mut s = MarkdownStream::new(WIDTH);
    let mut times: Vec<Duration> = Vec::with_capacity(parts.len());
    for part in parts {
        let t = Instant::now();
        let settled = s.push(part);
        let pending = s.pending().len();
        times.push(t.elapsed());
        std::hint::black_box((settled, pending));
    }
    let total: Duration = times.iter().sum();
    times.sort_unstable();
    let p99 = times[times.len() * 99 / 100];
    let max = times[times.len() - 1];
    println!(
        "tui/per_chunk ({label}): {} chunks, mean {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        parts.len(),
        total.as_secs_f64() * 1e6 / parts.len() as f64,
        p99.as_secs_f64() * 1e6,
        max.as_secs_f64() * 1e6,
    );
}

fn bench(c: &mut Criterion) {
    let md = answer();
    let parts = chunks(&md, CHUNKS);
    assert_eq!(parts.len(), CHUNKS);
    assert_eq!(parts.concat(), md);
    // The first pass pays the syntax set's load and its regexes'
    // compilation (for this answer's three languages).
    let t = Instant::now();
    dsh_tui::highlight::preload();
    let load = t.elapsed();
    per_chunk_report(&parts, "first pass, cold");
    println!(
        "tui/first_pass: syntax set and theme load {:.1} ms, first pass {:.1} ms in all",
        load.as_secs_f64() * 1e3,
        t.elapsed().as_secs_f64() * 1e3
    );
    // Streaming and rendering whole agree (the renderer's contract).
    let mut s = MarkdownStream::new(WIDTH);
    let mut streamed = Vec::new();
    for part in &parts {
        streamed.extend(s.push(part));
    }
    streamed.extend(s.finish());
    assert_eq!(streamed, render(&md, WIDTH));
    println!(
        "tui: answer of {} bytes, {} chunks (mean {:.1} bytes), {} lines at {WIDTH} columns",
        md.len(),
        parts.len(),
        md.len() as f64 / parts.len() as f64,
        streamed.len()
    );

    // The first pass above loaded the syntax set and compiled the regexes
    // the answer's languages use; this one is warm.
    per_chunk_report(&parts, "one pass, warm");

    let mut g = c.benchmark_group("tui");
    g.throughput(Throughput::Elements(CHUNKS as u64));
    g.bench_function("stream_2000_chunks/push+pending", |b| {
        b.iter(|| stream(&parts, true))
    });
    g.bench_function("stream_2000_chunks/push_only", |b| {
        b.iter(|| stream(&parts, false))
    });
    g.throughput(Throughput::Bytes(md.len() as u64));
    g.bench_function("render_whole", |b| b.iter(|| render(&md, WIDTH)));
    g.finish();

    let mut g = c.benchmark_group("tui");
    g.sample_size(10);
    g.bench_function("syntax_set_load", |b| {
        b.iter(syntect::parsing::SyntaxSet::load_defaults_newlines)
    });
    g.bench_function("theme_set_load", |b| {
        b.iter(syntect::highlighting::ThemeSet::load_defaults)
    });
    // A fresh syntax set's first highlighted line also compiles the
    // regexes that line's contexts use (syntect compiles them lazily).
    g.bench_function("syntax_set_load+first_rust_line", |b| {
        b.iter(|| {
            let set = syntect::parsing::SyntaxSet::load_defaults_newlines();
            let syntax = set.find_syntax_by_token("rs").unwrap();
            let mut state = syntect::parsing::ParseState::new(syntax);
            state
                .parse_line("fn main() { let x = \"s\"; }\n", &set)
                .unwrap()
        })
    });
    g.finish();
}

// ---- the TUI as a whole (the lead's part) ----

/// The recorded 2,000-event fixture as the UI events a live chat gets:
/// the user's message, every reasoning and text delta, the tool call and
/// a result, the turn's end.
fn fixture_events() -> Vec<dsh_controller::Event> {
    use dsh_controller::{Event, EventBody};
    use dsh_llm::StreamChunk;
    let mut bodies = vec![
        EventBody::TurnStarted { turn: 1 },
        EventBody::UserMessage {
            text: "Explain the parser and fix the failing test".into(),
            source: dsh_llm::MessageSource::User,
            steering: false,
        },
    ];
    let mut text = String::new();
    let mut call: Option<(String, String, String)> = None;
    for chunk in dsh_benches::fixture_chunks() {
        match chunk {
            StreamChunk::TextDelta { text: t, .. } => {
                text.push_str(&t);
                bodies.push(EventBody::MessageDelta { text: t });
            }
            StreamChunk::ReasoningDelta { text: t, .. } => {
                bodies.push(EventBody::ReasoningDelta { text: t });
            }
            StreamChunk::ToolCallDelta {
                id,
                name,
                arguments_delta,
                ..
            } => {
                let c = call.get_or_insert_with(Default::default);
                c.0 = id;
                if let Some(name) = name {
                    c.1 = name;
                }
                c.2.push_str(&arguments_delta);
            }
            _ => {}
        }
    }
    bodies.push(EventBody::MessageCompleted { text });
    if let Some((id, name, arguments)) = call {
        bodies.push(EventBody::ToolStarted {
            call_id: id.clone(),
            title: dsh_controller::translate::tool_title(&name, &arguments),
            name: name.clone(),
            arguments,
        });
        bodies.push(EventBody::ToolRunning {
            call_id: id.clone(),
        });
        bodies.push(EventBody::ToolFinished {
            call_id: id,
            name,
            is_error: false,
            output: (1..=40)
                .map(|i| format!("line {i} of the result\n"))
                .collect(),
            diff: None,
        });
    }
    bodies.push(EventBody::TurnEnded {
        turn: 1,
        reason: dsh_protocol::TurnEndReason::Completed,
        finish: Some("stop".into()),
        duration_ms: 9_100,
        first_token_ms: Some(400),
        output_tokens: 1_800,
        tokens_per_second: Some(210.0),
        cache_hit_rate: None,
    });
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| Event {
            seq: i as u64,
            time: 1_796_000_000_000 + i as u64 * 5,
            body,
        })
        .collect()
}

/// The fixture replayed into the TUI's renderers as a live chat would
/// take it, with a frame (the live area and the status line rendered)
/// after every event: the worst case, since the chat draws once per batch.
fn bench_replay(c: &mut Criterion) {
    let events = fixture_events();
    let mut g = c.benchmark_group("tui");
    g.sample_size(20);
    g.bench_function(
        format!(
            "replay the fixture into the TUI ({} events, a frame each)",
            events.len()
        ),
        |b| {
            b.iter(|| {
                let mut transcript = Transcript::new(TranscriptOptions::new(120));
                let mut status = Status::new("deepseek-v4-flash", "workspace-write");
                let paint = Paint {
                    color: true,
                    links: true,
                };
                let mut written = 0usize;
                for e in &events {
                    status.on_event(e);
                    for line in transcript.on_event(e) {
                        written += paint.line(&line).len();
                    }
                    for line in transcript.live(e.time) {
                        written += paint.line(&line).len();
                    }
                    written += paint.line(&status.line(e.time, 120)).len();
                }
                black_box(written)
            })
        },
    );
    g.finish();
}

/// The release `dsh chat` on a pseudo-terminal: a key typed into the
/// composer until the frame that shows it has reached the terminal
/// (parsed by the emulator). Also prints the idle chat's CPU use and its
/// memory next to the line mode's. Needs the release binary
/// (`cargo build --release -p dsh-cli`); skipped with a note without it.
fn bench_keypress(c: &mut Criterion) {
    let bin = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/dsh");
    if !bin.is_file() {
        eprintln!("tui keypress: skipped, build the release binary first (cargo build --release -p dsh-cli)");
        return;
    }
    let home = dsh_testkit::cli::Home::new(&bin);
    let chat = |tui: bool| {
        let mut cmd = home.dsh();
        cmd.arg("chat").env("TERM", "xterm-256color");
        if !tui {
            cmd.env("DSH_TUI", "0");
        }
        Screen::spawn(&cmd, 40, 120)
    };
    let mut s = chat(true);
    s.wait_for("the composer", |t| t.contains("type a message"));
    let mut g = c.benchmark_group("tui");
    g.sample_size(50);
    g.bench_function(
        "key press to screen update (release dsh chat on a pty)",
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    let before = s.frames();
                    let started = Instant::now();
                    // Typing and erasing keep the composer short.
                    s.keys(if i % 2 == 0 { "x" } else { key::BACKSPACE });
                    while s.frames() == before {
                        std::hint::spin_loop();
                    }
                    total += started.elapsed();
                }
                total
            })
        },
    );
    g.finish();
    // Idle: CPU over 5 s with nothing happening, and memory.
    std::thread::sleep(Duration::from_millis(500));
    let cpu = |pid: u32| -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit(')').next().unwrap_or("");
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks: f64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
            + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
        ticks / 100.0
    };
    let rss = |pid: u32| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap_or(0)
    };
    let start = cpu(s.pid());
    std::thread::sleep(Duration::from_secs(5));
    let idle = (cpu(s.pid()) - start) / 5.0 * 100.0;
    let tui_rss = rss(s.pid());
    let line = chat(false);
    line.wait_for("the line editor's prompt", |t| t.lines().any(|l| l == "›"));
    std::thread::sleep(Duration::from_millis(500));
    let line_rss = rss(line.pid());
    println!(
        "tui idle: {idle:.2}% of one core over 5 s; RSS {} KiB (line mode {} KiB, {:+} KiB)",
        tui_rss,
        line_rss,
        tui_rss as i64 - line_rss as i64
    );
}

criterion_group!(benches, bench, bench_replay, bench_keypress);
criterion_main!(benches);
