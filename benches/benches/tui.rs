//! Rendering the model's markdown for the terminal (`dsh_tui::markdown`):
//! a 2,000-chunk streamed answer with code blocks pushed through
//! `MarkdownStream` at 120 columns, `pending()` after every chunk as the
//! live area asks for it (target < 50 µs per chunk); the same document
//! rendered whole; and the load of syntect's bundled syntaxes and themes,
//! which the first highlighted line pays.
//!
//! `cargo bench -p dsh-benches --bench tui`

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsh_tui::markdown::{render, MarkdownStream};

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

criterion_group!(benches, bench);
criterion_main!(benches);
