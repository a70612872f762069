//! `dsh tools list [--schemas | --json]`: the tools the model is shown.
//!
//! By default a table, one tool a line: name, source (`builtin`, or
//! `mcp:<server>`), who validates its arguments (`dsh`, `local`, `server`,
//! `server (unsupported)`) and the first line of its description.
//! `--schemas` prints the schemas exactly as the model is shown them (a
//! JSON array); `--json` the same entries each with a `"validation"` field.

use dsh_protocol::ToolSchema;
use dsh_tools::ArgsCheck;

use crate::cli::{ToolsArgs, ToolsCommand};
use crate::commands::{block_on, start_app};

/// The most characters of a description the table shows.
const DESCRIPTION_COLUMN: usize = 72;

/// Runs `dsh tools`; returns the exit code.
pub(crate) fn run(args: ToolsArgs) -> u8 {
    let ToolsCommand::List {
        schemas,
        json,
        stack,
    } = args.command;
    // Listing only looks: an untrusted project config's MCP servers are not
    // started (a warning says so) rather than refused.
    let settings = crate::app::settings(&stack, dsh::ProjectTrust::IgnoreUnsafe);
    block_on(async {
        let app = match start_app(&settings).await {
            Ok(app) => app,
            Err(code) => return code,
        };
        let text = if json {
            let listed: Vec<serde_json::Value> = app
                .tools
                .schemas_with_checks()
                .into_iter()
                .filter(|(schema, _)| dsh::tools::offered(&schema.name))
                .map(|(schema, check)| {
                    let mut entry = serde_json::to_value(&schema).unwrap_or_default();
                    if let Some(map) = entry.as_object_mut() {
                        map.insert("validation".into(), check.to_string().into());
                    }
                    entry
                })
                .collect();
            json_text(&listed)
        } else if schemas {
            let listed: Vec<serde_json::Value> = app
                .tools
                .schemas()
                .iter()
                .filter(|s| dsh::tools::offered(&s.name))
                .map(|s| serde_json::to_value(s).unwrap_or_default())
                .collect();
            json_text(&listed)
        } else {
            let servers: Vec<(String, Vec<String>)> = app
                .mcp
                .iter()
                .map(|s| (s.name().to_string(), s.tools()))
                .collect();
            let offered: Vec<_> = app
                .tools
                .schemas_with_checks()
                .into_iter()
                .filter(|(schema, _)| dsh::tools::offered(&schema.name))
                .collect();
            table(&offered, &servers)
        };
        let code = crate::output::emit(&text);
        app.shutdown().await;
        code
    })
}

/// Pretty JSON and a newline, made safe for a terminal.
fn json_text(value: &[serde_json::Value]) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "[]".into());
    format!("{}\n", crate::sanitize::json_visible(&text))
}

/// The table: a header, then one line per tool, columns padded. Names and
/// descriptions can come from an MCP server: sanitised.
fn table(tools: &[(ToolSchema, ArgsCheck)], servers: &[(String, Vec<String>)]) -> String {
    let rows: Vec<[String; 4]> = tools
        .iter()
        .map(|(schema, check)| {
            let source = servers
                .iter()
                .find(|(_, names)| names.contains(&schema.name))
                .map_or_else(
                    || "builtin".to_string(),
                    |(server, _)| format!("mcp:{server}"),
                );
            let validation = match check {
                ArgsCheck::Unsupported(_) => "server (unsupported)".to_string(),
                other => other.to_string(),
            };
            let first = schema.description.lines().next().unwrap_or("").trim();
            [
                crate::sanitize::visible(&schema.name).into_owned(),
                crate::sanitize::visible(&source).into_owned(),
                validation,
                crate::sanitize::visible(&cut(first, DESCRIPTION_COLUMN)).into_owned(),
            ]
        })
        .collect();
    let header = [
        "NAME".to_string(),
        "SOURCE".to_string(),
        "VALIDATION".to_string(),
        "DESCRIPTION".to_string(),
    ];
    let width = |i: usize| {
        std::iter::once(&header)
            .chain(&rows)
            .map(|r| r[i].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2)];
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line = format!(
            "{:w0$}  {:w1$}  {:w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if rows.is_empty() {
        out.push_str("(no tools)\n");
    }
    out
}

/// `s` cut to `max` characters, the last one `…` when cut.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
