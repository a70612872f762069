//! `dsh usage [--since AGE] [--by day|model|project] [--json]
//! [--session-dir DIR]`: tokens and cost over every saved session.
//!
//! Each log is read once and scanned cheaply
//! ([`dsh_session::cost::scan_usage`]: only the `usage` and model lines
//! are parsed, never the streamed chunks), so a thousand sessions take
//! well under a second. Requests are priced by the model that served them
//! at their time with the built-in prices and the user config's
//! `[models.*]` ([`dsh::catalogue::Catalogue::for_reports`]); a model
//! without a price makes its rows' cost unknown (`?`, or `≥ $x` for the
//! part that is known), never 0.
//!
//! Exit codes: 0 (also with no sessions), 2 when the session directory
//! cannot be found or listed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use dsh::catalogue::Catalogue;
use dsh_session::cost::{scan_usage, Cost, LogUsage, Tokens};

use crate::cli::{UsageArgs, UsageGroup};

/// One row: a day, a model or a project.
#[derive(Debug, Default)]
struct Row {
    /// The day (`YYYY-MM-DD`, UTC), the model or the project directory;
    /// `?` when the log does not say.
    key: String,
    /// Sessions with requests in this row.
    sessions: usize,
    tokens: Tokens,
    cost: Cost,
    /// The cost as shown (`$0.0123`, `≥ $0.0123`, `?`).
    cost_text: String,
    seen: BTreeSet<usize>,
}

impl Row {
    /// `{"key", "sessions", "tokens", "cost", "costText"}`.
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "key": self.key,
            "sessions": self.sessions,
            "tokens": self.tokens,
            "cost": self.cost,
            "costText": self.cost_text,
        })
    }

    fn add(&mut self, session: usize, tokens: &Tokens, cost: &Cost) {
        self.seen.insert(session);
        self.sessions = self.seen.len();
        self.tokens.merge(tokens);
        self.cost.merge(cost);
    }
}

/// What `dsh usage` found.
struct Report {
    by: &'static str,
    /// The oldest request time counted (ms), with `--since`.
    since_ms: Option<u64>,
    sessions: usize,
    rows: Vec<Row>,
    total: Row,
    prices_date: &'static str,
    prices_source: &'static str,
}

impl Report {
    /// What `--json` prints: `{"by", "sinceMs"?, "sessions", "rows",
    /// "total", "pricesDate", "pricesSource"}`.
    fn json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "by": self.by,
            "sessions": self.sessions,
            "rows": self.rows.iter().map(Row::json).collect::<Vec<_>>(),
            "total": self.total.json(),
            "pricesDate": self.prices_date,
            "pricesSource": self.prices_source,
        });
        if let Some(since) = self.since_ms {
            v["sinceMs"] = since.into();
        }
        v
    }
}

/// Runs `dsh usage`; returns the exit code.
pub(crate) fn run(args: UsageArgs) -> u8 {
    let Some(dir) = args
        .session_dir
        .clone()
        .or_else(crate::commands::session::default_session_dir)
    else {
        crate::output::say!(
            "dsh: cannot find the session directory: set XDG_DATA_HOME or HOME, or pass --session-dir"
        );
        return 2;
    };
    let logs = match scan_dir(&dir) {
        Ok(logs) => logs,
        Err(e) => {
            crate::output::say!("dsh: cannot list {}: {e}", dir.display());
            return 2;
        }
    };
    let now = dsh_tui::status::now_ms();
    let since_ms = args
        .since
        .map(|d| now.saturating_sub(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)));
    let report = aggregate(&logs, &Catalogue::for_reports(), args.by, since_ms);
    if args.json {
        match serde_json::to_string_pretty(&report.json()) {
            Ok(text) => crate::output::emit(&format!("{}\n", crate::sanitize::json_visible(&text))),
            Err(e) => {
                crate::output::say!("dsh: cannot encode the usage: {e}");
                1
            }
        }
    } else {
        if report.sessions == 0 {
            crate::output::say!("dsh: no usage in the sessions of {}", dir.display());
            return 0;
        }
        crate::output::emit(&crate::sanitize::visible(&render(&report)))
    }
}

/// The usage of every `*.jsonl` log of `dir`, in name order. A missing
/// directory has none; a log that cannot be read is skipped with a
/// warning.
///
/// # Errors
/// When the directory exists but cannot be listed.
pub(crate) fn scan_dir(dir: &Path) -> std::io::Result<Vec<LogUsage>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        // Regular files only: a fifo named `*.jsonl` must not block.
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl") && p.is_file())
        .collect();
    paths.sort();
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        match std::fs::read(&path) {
            Ok(bytes) => out.push(scan_usage(&bytes)),
            Err(e) => crate::output::say!("dsh: skipping {}: {e}", path.display()),
        }
    }
    Ok(out)
}

fn aggregate(
    logs: &[LogUsage],
    catalogue: &Catalogue,
    by: UsageGroup,
    since_ms: Option<u64>,
) -> Report {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut total = Row {
        key: "TOTAL".to_string(),
        ..Row::default()
    };
    for (i, log) in logs.iter().enumerate() {
        for r in &log.records {
            if since_ms.is_some_and(|s| r.time < s) {
                continue;
            }
            let mut tokens = Tokens::default();
            tokens.add(&r.usage);
            let mut cost = Cost::default();
            match r.model.as_deref().and_then(|m| catalogue.price(m)) {
                Some(p) => cost.add_priced(p.cost_of(&r.usage, r.time), &p.currency),
                None => cost.add_unpriced(),
            }
            let key = match by {
                UsageGroup::Day => dsh_protocol::time::Utc::from_unix_ms(r.time).date(),
                UsageGroup::Model => r.model.clone().unwrap_or_else(|| "?".to_string()),
                UsageGroup::Project => log.cwd.clone().unwrap_or_else(|| "?".to_string()),
            };
            rows.entry(key.clone())
                .or_insert_with(|| Row {
                    key,
                    ..Row::default()
                })
                .add(i, &tokens, &cost);
            total.add(i, &tokens, &cost);
        }
    }
    let mut rows: Vec<Row> = rows.into_values().collect();
    if by != UsageGroup::Day {
        // Costliest first; unknown costs last.
        rows.sort_by(|a, b| {
            a.cost
                .is_unknown()
                .cmp(&b.cost.is_unknown())
                .then(b.cost.amount.total_cmp(&a.cost.amount))
                .then_with(|| a.key.cmp(&b.key))
        });
    }
    for row in rows.iter_mut().chain(std::iter::once(&mut total)) {
        row.cost_text = row.cost.display();
    }
    Report {
        by: match by {
            UsageGroup::Day => "day",
            UsageGroup::Model => "model",
            UsageGroup::Project => "project",
        },
        since_ms,
        sessions: total.sessions,
        rows,
        total,
        prices_date: dsh::catalogue::PRICES_DATE,
        prices_source: dsh::catalogue::PRICES_SOURCE,
    }
}

/// The table: one line per row, then the total and a note on unknown
/// costs.
fn render(report: &Report) -> String {
    let head = match report.by {
        "day" => "DAY (UTC)",
        "model" => "MODEL",
        _ => "PROJECT",
    };
    let width = report
        .rows
        .iter()
        .map(|r| r.key.chars().count())
        .chain([head.len(), 5])
        .max()
        .unwrap_or(5);
    let mut out = format!(
        "{head:<width$}  {:>8}  {:>8}  {:>12}  {:>12}  {:>10}  {:>10}\n",
        "SESSIONS", "REQUESTS", "INPUT", "CACHE HIT", "OUTPUT", "COST"
    );
    let line = |r: &Row| {
        format!(
            "{:<width$}  {:>8}  {:>8}  {:>12}  {:>12}  {:>10}  {:>10}\n",
            r.key,
            r.sessions,
            r.tokens.requests,
            r.tokens.input,
            r.tokens.cache_hit,
            r.tokens.output,
            r.cost_text
        )
    };
    for r in &report.rows {
        out.push_str(&line(r));
    }
    out.push_str(&line(&report.total));
    if report.total.cost.unpriced > 0 {
        out.push_str(&format!(
            "? : {} request(s) on a model without a price (add input_price and output_price to [models.<name>] in the user config)\n",
            report.total.cost.unpriced
        ));
    }
    out.push_str(&format!(
        "prices: built in as of {} ({}), and [models.*] of the user config; DeepSeek is half price off-peak\n",
        report.prices_date, report.prices_source
    ));
    out
}

/// The cost of the log at `path` as `dsh session list` shows it
/// (`$0.0123`, `≥ $0.0123`, `?`); `?` when it cannot be read.
pub(crate) fn log_cost(path: &Path, catalogue: &Catalogue) -> String {
    match std::fs::read(path) {
        Ok(bytes) => scan_usage(&bytes)
            .cost(|m: &str| catalogue.price(m))
            .1
            .display(),
        Err(_) => "?".to_string(),
    }
}

/// How many of the costliest tool-calling steps `dsh session stats` lists.
pub(crate) const COSTLIEST_STEPS: usize = 5;

/// `dsh session stats`'s cost lines: the total, one line per turn, the
/// costliest steps that called tools.
pub(crate) fn render_session_cost(cost: &dsh_session::cost::SessionCost) -> String {
    let mut out = format!(
        "cost: {} ({} request(s); cache-hit rate {})\n",
        cost.cost.display(),
        cost.tokens.requests,
        cost.tokens
            .cache_hit_rate()
            .map_or_else(|| "-".to_string(), |r| format!("{:.0}%", r * 100.0))
    );
    for t in &cost.turns {
        out.push_str(&format!(
            "  turn {}: {} ({} step(s), input {}, cache hit {}, output {})\n",
            t.turn,
            t.cost.display(),
            t.steps,
            t.tokens.input,
            t.tokens.cache_hit,
            t.tokens.output
        ));
    }
    let steps = cost.costliest_tool_steps(COSTLIEST_STEPS);
    if !steps.is_empty() {
        out.push_str("costliest steps with tool calls:\n");
        for s in steps {
            out.push_str(&format!(
                "  turn {} step {}: {} ({} tool call(s), {}, input {}, cache hit {}, output {})\n",
                s.turn,
                s.step,
                s.cost.display(),
                s.tool_calls,
                s.model.as_deref().unwrap_or("?"),
                s.tokens.input,
                s.tokens.cache_hit,
                s.tokens.output
            ));
        }
    }
    if cost.cost.unpriced > 0 {
        out.push_str("? : a model without a price (add input_price and output_price to [models.<name>] in the user config)\n");
    }
    out
}

/// `dsh session stats --json`'s `cost`: the total (with its text), the
/// turns, and the costliest steps that called tools.
pub(crate) fn session_cost_json(cost: &dsh_session::cost::SessionCost) -> serde_json::Value {
    serde_json::json!({
        "total": cost.cost,
        "text": cost.cost.display(),
        "tokens": cost.tokens,
        "models": cost.models,
        "turns": cost.turns,
        "costliestToolSteps": cost.costliest_tool_steps(COSTLIEST_STEPS),
    })
}
