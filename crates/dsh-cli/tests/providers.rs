//! Providers through the real binary: `[providers.<name>]`, presets,
//! `--model provider/model`, keys from the environment, `dsh models`, the
//! exact request log, and trust. Each provider is a loopback server that
//! speaks its dialect.

use dsh_testkit::cli::{outcome, Home};
use dsh_testkit::{LoopbackServer, ScriptedResponse};
use serde_json::{json, Value};

const DSH: &str = env!("CARGO_BIN_EXE_dsh");

/// An OpenAI chat-completions stream answering `text`, with usage in the
/// final chunk.
fn openai_answer(text: &str) -> ScriptedResponse {
    ScriptedResponse::sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":text},"finish_reason":null}]}).to_string(),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}).to_string(),
        json!({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}).to_string(),
        "[DONE]".to_string(),
    ])
}

/// An Anthropic Messages stream answering `text`.
fn anthropic_answer(text: &str) -> ScriptedResponse {
    let events = [
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-5-5","stop_reason":null,"usage":{"input_tokens":20,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}),
        json!({"type":"message_stop"}),
    ];
    let mut body = String::new();
    for e in events {
        body.push_str(&format!(
            "event: {}\ndata: {e}\n\n",
            e["type"].as_str().unwrap_or_default()
        ));
    }
    ScriptedResponse::sse_raw(body)
}

fn body(server: &LoopbackServer, n: usize) -> Value {
    // Not JSON reads as null, which every assertion on a field then fails.
    serde_json::from_slice(&server.requests()[n].body).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_openai_compatible_provider_serves_a_named_model() {
    let server = LoopbackServer::start([openai_answer("hello from local")])
        .await
        .unwrap();
    let home = Home::new(DSH);
    home.write_user_config(&format!(
        "[providers.local]\nkind = \"openai-chat\"\nbase_url = \"{}/v1\"\napi_key_env = \"LOCAL_LLM_KEY\"\n\n[models.\"qwen3-coder\"]\nprovider = \"local\"\nid = \"qwen3-coder:30b\"\ncontext_window = 262144\n",
        server.base_url()
    ));
    let mut cmd = home.tokio_dsh();
    cmd.env("LOCAL_LLM_KEY", "local-secret")
        .args(["run", "--model", "qwen3-coder", "say hi"]);
    let out = outcome(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("hello from local"), "{}", out.stdout);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer local-secret")
    );
    let sent = body(&server, 0);
    assert_eq!(sent["model"], "qwen3-coder:30b", "the wire id is sent");
    assert_eq!(sent["stream"], true);
    assert!(sent["tools"].as_array().is_some_and(|t| !t.is_empty()));

    // The log names the provider, and `session show --requests` rebuilds
    // the body byte for byte.
    let id = home.only_session();
    let shown = home.outcome(&["session", "show", &id, "--requests"]).await;
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let sent_text = String::from_utf8(requests[0].body.to_vec()).unwrap();
    assert!(
        shown.stdout.contains(&sent_text),
        "rebuilt body differs:\n{}\n--- sent:\n{sent_text}",
        shown.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_slash_model_needs_no_config_for_a_local_preset() {
    let server = LoopbackServer::start([openai_answer("ollama says hi")])
        .await
        .unwrap();
    let home = Home::new(DSH);
    // Only the preset's base URL is moved to the loopback server.
    home.write_user_config(&format!(
        "[providers.ollama]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    ));
    let out = home
        .outcome(&["run", "--model", "ollama/llama3.2:1b", "hi"])
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("ollama says hi"), "{}", out.stdout);
    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), None, "no key, no header");
    assert_eq!(body(&server, 0)["model"], "llama3.2:1b");
    assert_eq!(body(&server, 0)["stream_options"]["include_usage"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_preset_speaks_the_messages_api_with_its_key() {
    let server = LoopbackServer::start([anthropic_answer("bonjour")])
        .await
        .unwrap();
    let home = Home::new(DSH);
    home.write_user_config(&format!(
        "[providers.anthropic]\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    let mut cmd = home.tokio_dsh();
    cmd.env("ANTHROPIC_API_KEY", "ant-test-key").args([
        "run",
        "--model",
        "anthropic/claude-sonnet-5-5",
        "hi",
    ]);
    let out = outcome(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("bonjour"), "{}", out.stdout);
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("ant-test-key"));
    assert!(r.header("anthropic-version").is_some());
    let sent = body(&server, 0);
    assert_eq!(sent["model"], "claude-sonnet-5-5");
    assert!(sent["max_tokens"].as_u64().is_some_and(|m| m > 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_preset_without_its_key_is_a_usage_error_naming_the_variable() {
    let home = Home::new(DSH);
    let out = home
        .outcome(&["run", "--model", "openai/gpt-6.1-sol", "hi"])
        .await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("OPENAI_API_KEY"), "{}", out.stderr);
    let out = home
        .outcome(&["run", "--model", "nowhere/some-model", "hi"])
        .await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("unknown model \"nowhere/some-model\""),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_provider_tables_are_config_errors_naming_the_table() {
    let home = Home::new(DSH);
    for (config, needle) in [
        (
            "[providers.mine]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
            "[providers.mine] needs kind",
        ),
        (
            "[providers.mine]\nkind = \"gemini\"\nbase_url = \"http://x\"\n",
            "unknown variant `gemini`",
        ),
        (
            "[providers.openai]\napi_key_env = \"sk-live-123\"\n",
            "must name an environment variable",
        ),
        (
            "[providers.mine]\nkind = \"openai-chat\"\nbase_url = \"ftp://x\"\n[models.m]\nprovider = \"mine\"\n",
            "[providers.mine]",
        ),
        (
            "[models.m]\nprovider = \"ghost\"\n",
            "provider \"ghost\" is not a provider",
        ),
    ] {
        home.write_user_config(config);
        let out = home.outcome(&["run", "hi"]).await;
        assert_eq!(out.code, 2, "{config}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{config}: {}", out.stderr);
        assert!(!out.stderr.contains("sk-live-123 "), "{}", out.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dsh_models_lists_presets_with_window_price_images_and_key_state() {
    let home = Home::new(DSH);
    home.write_user_config(
        "[providers.local]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[models.\"qwen3-coder\"]\nprovider = \"local\"\ncontext_window = 262144\n",
    );
    let mut cmd = home.tokio_dsh();
    cmd.env("ANTHROPIC_API_KEY", "x").args(["models", "--json"]);
    let out = outcome(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let row = |m: &str| {
        rows.iter()
            .find(|r| r["model"] == m)
            .unwrap_or_else(|| panic!("{m} in {rows:?}"))
            .clone()
    };
    assert_eq!(row("echo")["key"], "not needed");
    assert_eq!(
        row("deepseek-v4-flash")["key"],
        "missing (DEEPSEEK_API_KEY)"
    );
    assert_eq!(row("deepseek-v4-flash")["served"], false);
    let sonnet = row("anthropic/claude-sonnet-5-5");
    assert_eq!(sonnet["key"], "set");
    assert_eq!(sonnet["served"], true);
    assert_eq!(sonnet["images"], true);
    assert_eq!(sonnet["price"]["input"], 2.0);
    let gpt = row("openai/gpt-6.1-sol");
    assert_eq!(gpt["key"], "missing (OPENAI_API_KEY)");
    assert_eq!(gpt["served"], false);
    let q = row("qwen3-coder");
    assert_eq!(q["provider"], "local");
    assert_eq!(q["contextWindow"], 262144);
    assert_eq!(q["key"], "not needed");

    let text = home.outcome(&["models"]).await;
    assert_eq!(text.code, 0, "{}", text.stderr);
    let first = text.stdout.lines().next().unwrap();
    assert!(
        first.contains("MODEL") && first.contains("PROVIDER"),
        "{first}"
    );
    assert!(
        text.stdout.lines().any(|l| l.starts_with("* echo")),
        "the model in use is marked:\n{}",
        text.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_project_cannot_send_requests_or_keys_elsewhere() {
    let server = LoopbackServer::start([openai_answer("should not be asked")])
        .await
        .unwrap();
    let home = Home::new(DSH);
    home.write_project_config(&format!(
        "[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    ));
    let mut cmd = home.tokio_dsh();
    cmd.env("OPENAI_API_KEY", "sk-user")
        .args(["run", "--model", "echo", "echo hi"]);
    let out = outcome(cmd).await;
    // Refused or ignored: either way no request reaches the project's URL.
    assert!(out.code == 0 || out.code == 2, "{}", out.stderr);
    assert!(out.stderr.contains("providers"), "{}", out.stderr);
    assert!(server.requests().is_empty());
}
