//! The exact request of every step, rebuilt from a session log alone.
//!
//! The loop logs what a request holds that the log does not already:
//! `request/system`, `request/tools` and `request/options` when they
//! change, then a `request/sent` marker right before each step's request
//! (see [`dsh_agent_loop::REQUEST_SENT_KIND`]); the stack logs the
//! provider's wire options once per session start (`request/adapter`).
//! [`step_requests`] replays the log: at each marker the request is the
//! latest parts plus the history derived up to that point (or the
//! marker's own `messages` when a plugin had rewritten them);
//! [`deepseek_body`] serialises one exactly as the DeepSeek adapter does.

use dsh_agent::Agent;
use dsh_agent_loop::{
    REQUEST_OPTIONS_KIND, REQUEST_SENT_KIND, REQUEST_SYSTEM_KIND, REQUEST_TOOLS_KIND,
};
use dsh_llm::{History, ModelRequest};
use dsh_llm_deepseek::{DeepSeekConfig, ReasoningEffort, Thinking};
use dsh_protocol::{ToolSchema, ToolSet};
use dsh_session::{Deriver, EventPayload, SessionEvent};
use serde_json::{json, Value};

use crate::providers::{Provider, ProviderKind, ProviderSection, Route};

/// Log-only event: the provider and its wire options for the requests
/// that follow, `{"provider": "deepseek", "thinking"?, "reasoningEffort"?}`,
/// `{"provider": "echo"}`, or for a routed model (see
/// [`crate::providers`]) `{"provider": "openai-chat" | "anthropic",
/// "name", "model", "wire", "images", …}` with the dialect's options
/// (`maxTokensField`, `includeUsage`, `reasoningEffort`; `maxTokens`,
/// `thinkingBudget`, `promptCaching`).
pub const REQUEST_ADAPTER_KIND: &str = "request/adapter";

/// A step's request as rebuilt from the log.
#[derive(Debug, Clone)]
pub struct StepRequest {
    /// The turn.
    pub turn: u64,
    /// The step.
    pub step: u64,
    /// The `seq` of its `request/sent` marker.
    pub seq: u64,
    /// The request (model, messages, system, tools, options).
    pub request: ModelRequest,
    /// The provider options in force (`request/adapter`'s data).
    pub adapter: Value,
}

/// Logs `request/adapter` for `agent`'s session: the DeepSeek options of
/// `config`, or the offline provider when there is none.
pub fn log_adapter(agent: &dyn Agent, config: Option<&DeepSeekConfig>) {
    let data = match config {
        Some(c) => {
            let mut d = json!({ "provider": "deepseek" });
            if let Some(t) = c.thinking {
                d["thinking"] = json!(t.as_str());
            }
            if let Some(e) = c.reasoning_effort {
                d["reasoningEffort"] = json!(e.as_str());
            }
            d
        }
        None => json!({ "provider": "echo" }),
    };
    agent.session().append(EventPayload::Other {
        kind: REQUEST_ADAPTER_KIND.to_string(),
        data,
    });
}

/// Logs `request/adapter` for a model served by `setup` (a routed model).
pub fn log_routed_adapter(agent: &dyn Agent, setup: &crate::providers::AdapterSetup, model: &str) {
    agent.session().append(EventPayload::Other {
        kind: REQUEST_ADAPTER_KIND.to_string(),
        data: routed_adapter_data(setup, model),
    });
}

/// The `request/adapter` data of `model` served by `setup`: `provider`
/// (the dialect), `name`, `model`, `wire`, then `images` and the
/// dialect's options (none for DeepSeek), in that order;
/// [`request_body`] reads them back.
pub fn routed_adapter_data(setup: &crate::providers::AdapterSetup, model: &str) -> Value {
    use crate::providers::AdapterSetup;
    let (kind, wire, images) = match setup {
        AdapterSetup::OpenAi(c) => {
            let route = c.route(model);
            let wire = route.map(|r| r.wire.as_str());
            ("openai-chat", wire, Some(route.is_some_and(|r| r.images)))
        }
        AdapterSetup::Anthropic(c) => {
            let route = c.route(model);
            let wire = route.map(|r| r.wire.as_str());
            ("anthropic", wire, Some(route.is_some_and(|r| r.images)))
        }
        AdapterSetup::DeepSeek { names, .. } => {
            ("deepseek", names.get(model).map(String::as_str), None)
        }
    };
    let mut data = json!({
        "provider": kind,
        "name": setup.provider(),
        "model": model,
        "wire": wire.unwrap_or(model),
    });
    if let Some(images) = images {
        data["images"] = json!(images);
    }
    match setup {
        AdapterSetup::OpenAi(c) => {
            data["maxTokensField"] = json!(c.quirks.max_tokens_field.as_str());
            data["includeUsage"] = json!(c.quirks.include_usage);
            data["reasoningEffort"] = json!(c.quirks.reasoning_effort);
        }
        AdapterSetup::Anthropic(c) => {
            data["maxTokens"] = json!(c.max_tokens);
            data["thinkingBudget"] = json!(c.thinking_budget);
            data["promptCaching"] = json!(c.prompt_caching);
        }
        AdapterSetup::DeepSeek { .. } => {}
    }
    data
}

/// The body the adapter named by the logged `adapter` options sends for
/// `request`, byte for byte (DeepSeek, `openai-chat`, `anthropic`); for
/// the offline model, the request as JSON. A routed model's adapter is
/// configured by [`crate::providers::Provider::adapter_setup`], as in the
/// live session, from the provider the log describes.
///
/// # Errors
/// The adapter's own refusals.
pub fn request_body(request: &ModelRequest, adapter: &Value) -> Result<Vec<u8>, dsh_llm::LlmError> {
    let mut request = request.clone();
    if let Some(wire) = adapter["wire"].as_str() {
        if adapter["model"].as_str() == Some(request.model.as_str()) {
            request.model = wire.to_string();
        }
    }
    match serde_json::from_value::<ProviderKind>(adapter["provider"].clone()) {
        // The built-in DeepSeek adapter (a routed provider's data has a name).
        Ok(ProviderKind::DeepSeek) if adapter.get("name").is_none() => {
            deepseek_body(&request, adapter)
        }
        Ok(kind) => {
            let route = Route {
                name: request.model.clone(),
                provider: String::new(),
                wire: request.model.clone(),
                images: adapter["images"].as_bool().unwrap_or(false),
                local: false,
            };
            logged_provider(kind, adapter)
                .adapter_setup(&[&route])
                .request_bytes(&request)
        }
        Err(_) => serde_json::to_vec(&request).map_err(|e| {
            dsh_llm::LlmError::new(dsh_llm::LlmErrorKind::InvalidRequest, e.to_string())
        }),
    }
}

/// The provider a routed model's `request/adapter` data describes: its
/// name and the dialect's options [`routed_adapter_data`] logged, as a
/// `[providers.<name>]` table (no key, no base URL: a body depends on
/// neither).
fn logged_provider(kind: ProviderKind, adapter: &Value) -> Provider {
    let max_tokens_field = if adapter["maxTokensField"] == "max_completion_tokens" {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    let u32_of = |key: &str| adapter[key].as_u64().and_then(|v| u32::try_from(v).ok());
    Provider {
        name: adapter["name"].as_str().unwrap_or_default().to_string(),
        kind,
        base_url: String::new(),
        api_key_env: None,
        key_required: false,
        local: false,
        section: ProviderSection {
            kind: Some(kind),
            max_tokens_field: Some(max_tokens_field.to_string()),
            include_usage: adapter["includeUsage"].as_bool(),
            reasoning_effort: adapter["reasoningEffort"].as_str().map(str::to_string),
            max_tokens: u32_of("maxTokens"),
            thinking_budget: u32_of("thinkingBudget"),
            prompt_caching: adapter["promptCaching"].as_bool(),
            ..Default::default()
        },
        preset: None,
    }
}

/// Every step request of the log, in order. Markers whose parts cannot
/// be read back (a hand-edited log) are skipped.
pub fn step_requests(events: &[SessionEvent]) -> Vec<StepRequest> {
    let mut deriver = Deriver::new();
    let mut system: Option<String> = None;
    let mut tools: Option<ToolSet> = None;
    let mut options = Value::Null;
    let mut adapter = Value::Null;
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if let EventPayload::Rewind(_) = &e.data {
            // The next requests were built from the branch point's history.
            deriver = Deriver::replay(&events[..=i]);
        }
        if let EventPayload::Other { kind, data } = &e.data {
            match kind.as_str() {
                k if k == REQUEST_SYSTEM_KIND => {
                    system = data["text"].as_str().map(str::to_string);
                }
                k if k == REQUEST_TOOLS_KIND => {
                    tools = serde_json::from_value::<Vec<ToolSchema>>(data["tools"].clone())
                        .ok()
                        .filter(|t| !t.is_empty())
                        .map(ToolSet::new);
                }
                k if k == REQUEST_OPTIONS_KIND => options = data.clone(),
                k if k == REQUEST_ADAPTER_KIND => adapter = data.clone(),
                k if k == REQUEST_SENT_KIND => {
                    let messages = match data.get("messages") {
                        Some(m) => match serde_json::from_value::<History>(m.clone()) {
                            Ok(h) => h,
                            Err(_) => continue,
                        },
                        None => deriver.history(),
                    };
                    let request = ModelRequest {
                        model: options["model"].as_str().unwrap_or_default().to_string(),
                        messages,
                        system: system.clone(),
                        tools: tools.clone(),
                        max_tokens: options["maxTokens"]
                            .as_u64()
                            .and_then(|m| u32::try_from(m).ok()),
                        temperature: options["temperature"].as_f64(),
                        stop: serde_json::from_value(options["stop"].clone()).ok(),
                        ..Default::default()
                    };
                    out.push(StepRequest {
                        turn: data["turn"].as_u64().unwrap_or(0),
                        step: data["step"].as_u64().unwrap_or(0),
                        seq: e.seq,
                        request,
                        adapter: adapter.clone(),
                    });
                }
                _ => {}
            }
        }
        deriver.apply(e);
    }
    out
}

/// The body the DeepSeek adapter sends for `request` under the logged
/// `adapter` options (`request/adapter`'s data), byte for byte.
///
/// # Errors
/// The adapter's own refusals (`UNSUPPORTED` for a prefill).
pub fn deepseek_body(
    request: &ModelRequest,
    adapter: &Value,
) -> Result<Vec<u8>, dsh_llm::LlmError> {
    let config = DeepSeekConfig {
        thinking: match adapter["thinking"].as_str() {
            Some("enabled") => Some(Thinking::Enabled),
            Some("disabled") => Some(Thinking::Disabled),
            _ => None,
        },
        reasoning_effort: match adapter["reasoningEffort"].as_str() {
            Some("high") => Some(ReasoningEffort::High),
            Some("max") => Some(ReasoningEffort::Max),
            _ => None,
        },
        ..Default::default()
    };
    dsh_llm_deepseek::request_bytes(request, &config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_routed_request_is_rebuilt_as_the_live_adapter_sent_it() {
        let tables: BTreeMap<String, ProviderSection> = toml::from_str(concat!(
            "[oai]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
            "max_tokens_field = \"max_completion_tokens\"\nreasoning_effort = \"low\"\ninclude_usage = false\n",
            "[ant]\nkind = \"anthropic\"\nbase_url = \"http://127.0.0.1:9\"\n",
            "max_tokens = 4096\nthinking_budget = 2048\nprompt_caching = false\n",
            "[ds]\nkind = \"deepseek\"\nbase_url = \"http://127.0.0.1:9\"\n",
        ))
        .unwrap();
        let (all, problems) = crate::providers::providers(&tables);
        assert!(problems.is_empty(), "{problems:?}");
        for name in ["oai", "ant", "ds"] {
            let p = all.iter().find(|p| p.name == name).unwrap();
            let route = Route {
                name: format!("{name}-model"),
                provider: name.into(),
                wire: "wire-id".into(),
                images: true,
                local: true,
            };
            let setup = p.adapter_setup(&[&route]);
            let request = ModelRequest {
                model: route.name.clone(),
                system: Some("be brief".into()),
                max_tokens: Some(8192),
                ..Default::default()
            };
            // A DeepSeek-kind adapter is wrapped to send the wire id.
            let live = match p.kind {
                ProviderKind::DeepSeek => ModelRequest {
                    model: route.wire.clone(),
                    ..request.clone()
                },
                _ => request.clone(),
            };
            let sent = setup.request_bytes(&live).unwrap();
            let data = routed_adapter_data(&setup, &route.name);
            assert_eq!(data["name"], name);
            let keys: Vec<&str> = data
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            let options: &[&str] = match p.kind {
                ProviderKind::OpenAiChat => &[
                    "images",
                    "maxTokensField",
                    "includeUsage",
                    "reasoningEffort",
                ],
                ProviderKind::Anthropic => {
                    &["images", "maxTokens", "thinkingBudget", "promptCaching"]
                }
                ProviderKind::DeepSeek => &[],
            };
            assert_eq!(
                keys,
                [&["provider", "name", "model", "wire"], options].concat()
            );
            assert_eq!(
                String::from_utf8(request_body(&request, &data).unwrap()).unwrap(),
                String::from_utf8(sent).unwrap(),
                "{data}"
            );
        }
    }
}
