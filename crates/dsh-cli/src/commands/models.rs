//! `dsh models [--json]`: every model dsh can run here, with its provider,
//! context window, price, whether it takes images and whether its key is
//! set.
//!
//! Rows, in order: the offline `echo` model; the DeepSeek models (built in
//! and `[deepseek] models`); the presets' known models
//! (`anthropic/claude-sonnet-5-5`, …); the configured routes
//! (`[models.<name>] provider = …`) and the `--model provider/model` of
//! this call. Text: one aligned row per model under a header; `--json`:
//! one array of `{model, provider, kind, wire, contextWindow, price,
//! images, key, served}` where `key` is `"set"`, `"missing (<VAR>)"` or
//! `"not needed"`, `price` `{currency, input, cachedInput, output}` per
//! 1,000,000 tokens or null, and `served` says whether this configuration
//! registers the model (a missing key does not). A configuration that does
//! not resolve fails like any command (exit 2).

use dsh::catalogue::Catalogue;
use dsh::providers::{Provider, Route};
use dsh::Resolved;
use serde_json::{json, Value};

use crate::cli::ModelsArgs;
use crate::commands::report;
use crate::output::emit;
use crate::sanitize::{json_visible, visible};

/// One row of the listing.
struct Row {
    model: String,
    provider: String,
    kind: &'static str,
    wire: String,
    window: Option<u64>,
    price: Option<dsh_session::cost::Price>,
    images: bool,
    key: String,
    served: bool,
}

/// Runs `dsh models`; returns the exit code.
pub(crate) fn run(args: ModelsArgs) -> u8 {
    let settings = crate::app::settings(&args.stack, dsh::ProjectTrust::IgnoreUnsafe);
    let resolved = match crate::app::resolve(&settings) {
        Ok(resolved) => resolved,
        Err(e) => return report(&e),
    };
    for warning in &resolved.warnings {
        crate::output::say!("dsh: {warning}");
    }
    let rows = rows(&resolved);
    if args.json {
        let list: Vec<Value> = rows.iter().map(to_json).collect();
        let text = serde_json::to_string_pretty(&list).unwrap_or_else(|_| "[]".into());
        emit(&format!("{}\n", json_visible(&text)))
    } else {
        emit(&visible(&to_text(&rows, &resolved.model)))
    }
}

/// The key column of a provider.
fn key_state(p: &Provider) -> String {
    match (&p.api_key_env, p.api_key().is_some()) {
        (_, true) => "set".to_string(),
        (Some(var), false) if p.key_required => format!("missing ({var})"),
        _ => "not needed".to_string(),
    }
}

/// The rows of the listing, in the order of the module's doc.
fn rows(resolved: &Resolved) -> Vec<Row> {
    let cat: &Catalogue = &resolved.catalogue;
    // A row with the catalogue's window, price and images for `model`.
    let entry_row =
        |model: &str, provider: &str, kind: &'static str, wire: &str, key: String, served: bool| {
            let e = cat.entry(model);
            Row {
                model: model.to_string(),
                provider: provider.to_string(),
                kind,
                wire: wire.to_string(),
                window: e.and_then(|e| e.context_window),
                price: e.and_then(|e| e.price.clone()),
                images: e.is_some_and(|e| e.images),
                key,
                served,
            }
        };
    let mut out = vec![entry_row(
        dsh::echo_model::ECHO_MODEL,
        "offline",
        "echo",
        "-",
        "not needed".into(),
        true,
    )];
    let deepseek = resolved.providers.iter().find(|p| p.name == "deepseek");
    let mut ds_models: Vec<String> = dsh::providers::DEEPSEEK_MODELS
        .iter()
        .map(|m| m.to_string())
        .collect();
    if let Some(cfg) = &resolved.deepseek {
        for m in &cfg.models {
            if !ds_models.contains(m) {
                ds_models.push(m.clone());
            }
        }
    }
    for m in ds_models {
        let key = match (&resolved.deepseek, deepseek) {
            (Some(_), _) => "set".into(),
            (None, Some(p)) => format!(
                "missing ({})",
                p.api_key_env.as_deref().unwrap_or("DEEPSEEK_API_KEY")
            ),
            (None, None) => "missing (DEEPSEEK_API_KEY)".into(),
        };
        let mut row = entry_row(
            &m,
            "deepseek",
            "deepseek",
            &m,
            key,
            resolved.deepseek.is_some(),
        );
        row.window = row.window.or(Some(dsh::providers::DEEPSEEK_CONTEXT_WINDOW));
        out.push(row);
    }
    let mut routes: Vec<Route> = resolved.routes.clone();
    // The presets' known models, also those whose key is missing.
    for p in &resolved.providers {
        for k in p.preset.map(|p| p.models).unwrap_or_default() {
            let name = format!("{}/{}", p.name, k.id);
            if !routes.iter().any(|r| r.name == name) {
                routes.push(Route {
                    name,
                    provider: p.name.clone(),
                    wire: k.id.to_string(),
                    images: k.images,
                    local: p.local,
                });
            }
        }
    }
    for r in &routes {
        let Some(p) = resolved.providers.iter().find(|p| p.name == r.provider) else {
            continue;
        };
        let served = resolved
            .adapters
            .iter()
            .any(|a| a.names().iter().any(|n| n == &r.name));
        let mut row = entry_row(
            &r.name,
            &p.name,
            p.kind.as_str(),
            &r.wire,
            key_state(p),
            served,
        );
        row.images |= r.images;
        out.push(row);
    }
    out
}

/// `$2.00/$0.10/$10.00` (input/cached/output per 1M tokens), `free`, or `?`.
fn price_text(price: &Option<dsh_session::cost::Price>) -> String {
    match price {
        None => "?".to_string(),
        Some(p) if p.rates.input == 0.0 && p.rates.output == 0.0 => "free".to_string(),
        Some(p) => {
            let m = |v: f64| dsh_session::cost::format_money(v, &p.currency);
            format!(
                "{}/{}/{}",
                m(p.rates.input),
                m(p.rates.cached_input),
                m(p.rates.output)
            )
        }
    }
}

fn window_text(window: Option<u64>) -> String {
    match window {
        None => "?".to_string(),
        Some(w) if w % 1_048_576 == 0 => format!("{}M", w / 1_048_576),
        Some(w) if w % 1_000_000 == 0 => format!("{}M", w / 1_000_000),
        Some(w) if w % 1_024 == 0 => format!("{}K", w / 1_024),
        Some(w) => format!("{}K", w / 1_000),
    }
}

fn to_text(rows: &[Row], current: &str) -> String {
    let header = [
        "MODEL",
        "PROVIDER",
        "CONTEXT",
        "PRICE IN/CACHED/OUT PER 1M",
        "IMAGES",
        "KEY",
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            let mark = if r.model == current { "* " } else { "  " };
            [
                format!("{mark}{}", r.model),
                r.provider.clone(),
                window_text(r.window),
                price_text(&r.price),
                if r.images { "yes" } else { "no" }.to_string(),
                r.key.clone(),
            ]
        })
        .collect();
    let mut width = header.map(|h| h.chars().count() + 2);
    width[0] = width[0].max(2 + header[0].len());
    for row in &cells {
        for (i, c) in row.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cols: Vec<String>, out: &mut String| {
        let mut s = String::new();
        for (i, c) in cols.iter().enumerate() {
            if i + 1 == cols.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = width[i]));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    let mut head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    head[0] = format!("  {}", head[0]);
    line(head, &mut out);
    for row in cells {
        line(row.to_vec(), &mut out);
    }
    out.push_str("* the model in use. Pick one with --model NAME (or provider/model for any model of a provider); see docs/providers.md\n");
    out
}

fn to_json(r: &Row) -> Value {
    json!({
        "model": r.model,
        "provider": r.provider,
        "kind": r.kind,
        "wire": r.wire,
        "contextWindow": r.window,
        "price": r.price.as_ref().map(|p| json!({
            "currency": p.currency,
            "input": p.rates.input,
            "cachedInput": p.rates.cached_input,
            "output": p.rates.output,
        })),
        "images": r.images,
        "key": r.key,
        "served": r.served,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_and_windows_read_as_people_write_them() {
        assert_eq!(price_text(&None), "?");
        let p = dsh_session::cost::Price::flat(
            "USD",
            dsh_session::cost::Rates {
                input: 2.0,
                cached_input: 0.1,
                output: 10.0,
            },
        );
        assert_eq!(price_text(&Some(p)), "$2.0000/$0.1000/$10.0000");
        assert_eq!(window_text(Some(1_048_576)), "1M");
        assert_eq!(window_text(Some(1_000_000)), "1M");
        assert_eq!(window_text(Some(272_000)), "272K");
        assert_eq!(window_text(Some(131_072)), "128K");
        assert_eq!(window_text(None), "?");
    }
}
