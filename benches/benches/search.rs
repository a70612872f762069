//! The `grep` and `glob` tools versus `rg`, side by side in one run.
//!
//! `cargo bench -p dsh-benches --bench search`
//!
//! Memory: the peak RSS of a child process making one `grep` over a 1 GiB
//! file of lines and over a 1 GiB line must stay under 64 MiB (see
//! `memory`); `-- 1GiB` runs only its timing.
//!
//! Over a generated tree (20,000 files in 400 nested directories, about
//! 4 KiB each, a fixed literal in 1 % of them) and, when present, the cargo
//! registry sources (`~/.cargo/registry/src`): `grep` of a fixed literal and
//! of a regex, and `glob` of `**/*.rs`, each through `ToolRegistry::execute`
//! (schema validation, the walk, rendering), next to
//! `rg -n --no-heading PATTERN DIR` and `rg --files -g '*.rs' DIR` run with
//! `std::process::Command` (output read through a pipe). Without `rg` on the
//! `PATH` the comparison is skipped with a message; the dsh figures are
//! still measured. Prints the ratios (dsh / rg of the mean per-iteration
//! times) and the result counts of both at the end.
//!
//! Both sides walk the same files with the same ignore rules, with two
//! differences that favour rg: dsh includes hidden files (rg needs
//! `--hidden`), and dsh stats every file with a match (for the newest-first
//! order), which rg does not.

// A benchmark panics on a broken set-up; that is its failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use dsh_tools::{CallEnv, ToolCall, ToolRegistry};

/// Total measured time and iterations per benchmark, for the final ratios.
static TOTALS: Mutex<Vec<(String, Duration, u64)>> = Mutex::new(Vec::new());

/// Lines printed after the criterion output.
static SUMMARY: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn record(name: &str, elapsed: Duration, iters: u64) {
    let mut totals = TOTALS.lock().expect("totals lock");
    match totals.iter_mut().find(|(n, _, _)| n == name) {
        Some(entry) => {
            entry.1 += elapsed;
            entry.2 += iters;
        }
        None => totals.push((name.to_string(), elapsed, iters)),
    }
}

fn mean(name: &str) -> Option<Duration> {
    let totals = TOTALS.lock().expect("totals lock");
    let (_, total, iters) = totals.iter().find(|(n, _, _)| n == name)?;
    (*iters > 0).then(|| *total / u32::try_from(*iters).unwrap_or(u32::MAX))
}

fn summary(line: String) {
    SUMMARY.lock().expect("summary lock").push(line);
}

/// The fixed literal of the generated tree.
const LITERAL: &str = "needle_literal_42";

/// 20,000 files of ~4 KiB under `dir`: 20 × 20 directories of 50 files,
/// every hundredth file holding [`LITERAL`]; half are `.rs`.
fn generate(dir: &Path) {
    let filler: String = (0..60)
        .map(|i| format!("    let value_{i} = compute(value_{i}, {i}); // filler text\n"))
        .collect();
    let mut n = 0;
    for a in 0..20 {
        for b in 0..20 {
            let d = dir.join(format!("mod_{a}/sub_{b}"));
            std::fs::create_dir_all(&d).expect("mkdir");
            for c in 0..50 {
                let ext = if c % 2 == 0 { "rs" } else { "txt" };
                let mut body = format!("fn item_{n}() {{\n{filler}");
                if n % 100 == 0 {
                    body.push_str(&format!("    // {LITERAL} in file {n}\n"));
                }
                body.push_str("}\n");
                std::fs::write(d.join(format!("file_{c}.{ext}")), body).expect("write");
                n += 1;
            }
        }
    }
}

fn rg_available() -> bool {
    Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `rg args…` and returns its stdout line count.
fn rg(args: &[&str]) -> usize {
    let out = Command::new("rg")
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("spawn rg");
    // 1 is "no match"; 2 with partial output is an unreadable file.
    assert!(out.status.code().is_some_and(|c| c <= 2), "rg failed");
    out.stdout.iter().filter(|&&b| b == b'\n').count()
}

/// One tool call through the registry; returns the result text.
fn call(rt: &tokio::runtime::Runtime, registry: &ToolRegistry, tool: &str, args: &str) -> String {
    let r = rt.block_on(registry.execute(&ToolCall::new("c1", tool, args), CallEnv::default()));
    assert!(!r.is_error, "{tool} {args}: {}", r.text());
    r.text()
}

/// How many results a dsh answer stands for: shown lines plus the counted
/// rest, and whether the count is exact.
fn dsh_count(text: &str) -> String {
    let shown = text
        .lines()
        .filter(|l| !l.starts_with('(') && *l != "No matches found" && *l != "No files found")
        .count();
    match text.lines().find_map(|l| {
        l.strip_suffix(" more not shown)")?
            .strip_prefix('(')?
            .parse::<usize>()
            .ok()
    }) {
        Some(rest) => format!("{}", shown + rest),
        None if text.contains("(results truncated") => format!("{shown} shown (capped)"),
        None => format!("{shown}"),
    }
}

struct Case {
    /// Group name: `generated` or `registry`.
    tree: &'static str,
    dir: PathBuf,
    literal: String,
    regex: String,
}

fn bench_tree(c: &mut Criterion, rt: &tokio::runtime::Runtime, case: &Case, with_rg: bool) {
    let registry = ToolRegistry::new();
    let _installed = dsh_tool_search::install(&registry, case.dir.clone()).expect("install");
    let dir = case.dir.to_str().expect("UTF-8 bench dir").to_string();
    let json = |s: &str| serde_json::to_string(s).expect("json");
    let ops: [(&str, &str, String, Vec<String>); 3] = [
        (
            "grep_literal",
            "grep",
            format!(r#"{{"pattern":{}}}"#, json(&case.literal)),
            vec![
                "-n".into(),
                "--no-heading".into(),
                case.literal.clone(),
                dir.clone(),
            ],
        ),
        (
            "grep_regex",
            "grep",
            format!(r#"{{"pattern":{}}}"#, json(&case.regex)),
            vec![
                "-n".into(),
                "--no-heading".into(),
                case.regex.clone(),
                dir.clone(),
            ],
        ),
        (
            "glob_rs",
            "glob",
            r#"{"pattern":"**/*.rs"}"#.to_string(),
            vec!["--files".into(), "-g".into(), "*.rs".into(), dir.clone()],
        ),
    ];
    let mut g = c.benchmark_group(format!("search_{}", case.tree));
    g.sample_size(10);
    for (op, tool, args, rg_args) in &ops {
        let text = call(rt, &registry, tool, args);
        let dsh_name = format!("{}/{op}/dsh", case.tree);
        g.bench_function(format!("{op}/dsh"), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    std::hint::black_box(call(rt, &registry, tool, args));
                }
                let elapsed = start.elapsed();
                record(&dsh_name, elapsed, iters);
                elapsed
            })
        });
        let mut line = format!("{:<9} {op:<13} dsh results {}", case.tree, dsh_count(&text));
        if with_rg {
            let rg_args: Vec<&str> = rg_args.iter().map(String::as_str).collect();
            let rg_lines = rg(&rg_args);
            let rg_name = format!("{}/{op}/rg", case.tree);
            g.bench_function(format!("{op}/rg"), |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        std::hint::black_box(rg(&rg_args));
                    }
                    let elapsed = start.elapsed();
                    record(&rg_name, elapsed, iters);
                    elapsed
                })
            });
            if let (Some(d), Some(r)) = (mean(&dsh_name), mean(&rg_name)) {
                line.push_str(&format!(
                    ", rg lines {rg_lines}; dsh {:.1} ms, rg {:.1} ms, dsh/rg {:.2}×",
                    d.as_secs_f64() * 1e3,
                    r.as_secs_f64() * 1e3,
                    d.as_secs_f64() / r.as_secs_f64()
                ));
            }
        } else if let Some(d) = mean(&dsh_name) {
            line.push_str(&format!("; dsh {:.1} ms", d.as_secs_f64() * 1e3));
        }
        summary(line);
    }
    g.finish();
}

fn search(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let with_rg = rg_available();
    if !with_rg {
        eprintln!(
            "rg not found on PATH: measuring dsh only, no comparison (apt-get install ripgrep)"
        );
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    generate(tmp.path());
    let mut cases = vec![Case {
        tree: "generated",
        dir: tmp.path().to_path_buf(),
        literal: LITERAL.to_string(),
        regex: r"fn\s+item_\d*7\(".to_string(),
    }];
    match std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/registry/src")) {
        Some(reg) if reg.is_dir() => cases.push(Case {
            tree: "registry",
            dir: reg,
            literal: "CARGO_PKG_VERSION".to_string(),
            regex: r"fn\s+from_str\w*".to_string(),
        }),
        _ => eprintln!("no ~/.cargo/registry/src: the registry tree is skipped"),
    }
    for case in &cases {
        bench_tree(c, &rt, case, with_rg);
    }
    println!("\nsearch: dsh tool vs rg (mean per iteration)");
    for line in SUMMARY.lock().expect("summary lock").iter() {
        println!("  {line}");
    }
}

/// The most a `grep` child may peak at, in KiB.
const PEAK_LIMIT_KIB: u64 = 64 * 1024;

/// Memory: the peak RSS of a child (this binary again, see
/// `dsh_benches::tool_call_in_child`) making one `grep` over a 1 GiB file
/// of 100-byte lines (the only match on its last line) and over a 1 GiB
/// file that is one line; both must stay under 64 MiB. The child's time
/// over the lines is benchmarked too.
fn memory(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.txt"), "the needle\n").unwrap();
    dsh_benches::big_text_files(dir.path());
    let over_lines = r#"{"pattern": "the needle", "path": "lines.txt"}"#;
    let cases = [
        (
            "a small file",
            r#"{"pattern": "the needle", "path": "small.txt"}"#,
        ),
        ("1 GiB of lines", over_lines),
        (
            "a 1 GiB line",
            r#"{"pattern": "the needle", "path": "line.txt"}"#,
        ),
    ];
    dsh_benches::assert_child_peaks("search", "grep", dir.path(), &cases, PEAK_LIMIT_KIB);
    dsh_benches::bench_call_in_child(
        c,
        "search",
        "grep/1GiB_of_lines_in_a_child",
        "grep",
        dir.path(),
        over_lines,
    );
}

criterion_group!(benches, search, memory);

fn main() {
    // A child of `tool_call_in_child` makes its call and exits here.
    dsh_benches::serve_child_call();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
