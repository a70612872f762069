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

/// The `request/adapter` data of `model` served by `setup`.
pub fn routed_adapter_data(setup: &crate::providers::AdapterSetup, model: &str) -> Value {
    use crate::providers::AdapterSetup;
    match setup {
        AdapterSetup::OpenAi(c) => {
            let route = c.models.iter().find(|m| m.name == model);
            json!({
                "provider": "openai-chat",
                "name": c.provider,
                "model": model,
                "wire": route.map_or(model, |r| r.wire.as_str()),
                "images": route.is_some_and(|r| r.images),
                "maxTokensField": match c.quirks.max_tokens_field {
                    dsh_llm_openai::MaxTokensField::MaxTokens => "max_tokens",
                    dsh_llm_openai::MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
                },
                "includeUsage": c.quirks.include_usage,
                "reasoningEffort": c.quirks.reasoning_effort,
            })
        }
        AdapterSetup::Anthropic(c) => {
            let route = c.models.iter().find(|m| m.name == model);
            json!({
                "provider": "anthropic",
                "name": c.provider,
                "model": model,
                "wire": route.map_or(model, |r| r.wire.as_str()),
                "images": route.is_some_and(|r| r.images),
                "maxTokens": c.max_tokens,
                "thinkingBudget": c.thinking_budget,
                "promptCaching": c.prompt_caching,
            })
        }
        AdapterSetup::DeepSeek { names, .. } => json!({
            "provider": "deepseek",
            "name": setup.provider(),
            "model": model,
            "wire": names.get(model).map_or(model, String::as_str),
        }),
    }
}

/// The body the adapter named by the logged `adapter` options sends for
/// `request`, byte for byte (DeepSeek, `openai-chat`, `anthropic`); for
/// the offline model, the request as JSON.
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
    let route = |name: &str| {
        (
            name.to_string(),
            adapter["images"].as_bool().unwrap_or(false),
        )
    };
    match adapter["provider"].as_str() {
        Some("deepseek") => deepseek_body(&request, adapter),
        Some("openai-chat") => {
            let (name, images) = route(&request.model);
            let mut c = dsh_llm_openai::OpenAiConfig {
                provider: adapter["name"].as_str().unwrap_or_default().to_string(),
                models: vec![dsh_llm_openai::ModelRoute {
                    wire: name.clone(),
                    name,
                    images,
                }],
                ..Default::default()
            };
            if adapter["maxTokensField"] == "max_completion_tokens" {
                c.quirks.max_tokens_field = dsh_llm_openai::MaxTokensField::MaxCompletionTokens;
            }
            if let Some(v) = adapter["includeUsage"].as_bool() {
                c.quirks.include_usage = v;
            }
            c.quirks.reasoning_effort = adapter["reasoningEffort"].as_str().map(str::to_string);
            dsh_llm_openai::request_bytes(&request, &c)
        }
        Some("anthropic") => {
            let (name, images) = route(&request.model);
            let mut c = dsh_llm_anthropic::AnthropicConfig {
                provider: adapter["name"].as_str().unwrap_or_default().to_string(),
                models: vec![dsh_llm_anthropic::ModelRoute {
                    wire: name.clone(),
                    name,
                    images,
                }],
                ..Default::default()
            };
            if let Some(v) = adapter["maxTokens"]
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
            {
                c.max_tokens = v;
            }
            c.thinking_budget = adapter["thinkingBudget"]
                .as_u64()
                .and_then(|v| u32::try_from(v).ok());
            if let Some(v) = adapter["promptCaching"].as_bool() {
                c.prompt_caching = v;
            }
            dsh_llm_anthropic::request_bytes(&request, &c)
        }
        _ => serde_json::to_vec(&request).map_err(|e| {
            dsh_llm::LlmError::new(dsh_llm::LlmErrorKind::InvalidRequest, e.to_string())
        }),
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
