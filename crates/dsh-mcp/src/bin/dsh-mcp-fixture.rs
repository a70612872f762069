//! The MCP server the `dsh-mcp` tests drive (built only with the `fixture`
//! feature, which the crate's self dev-dependency turns on for tests).
//!
//! Speaks MCP over stdio with the rmcp server side; with `--http ADDR`
//! (e.g. `--http 127.0.0.1:0`) it serves the streamable HTTP transport at
//! `http://ADDR/mcp` instead and prints the bound address on stdout. Its
//! tools, listed two per page so that clients must follow `nextCursor`:
//! - `add {a, b}` → the sum as text;
//! - `echo {…}` → the raw arguments it received, as JSON text;
//! - `fail {message?}` → an `isError` result;
//! - `sleep {ms, marker?}` → sleeps; honours `notifications/cancelled`. With
//!   `marker`, writes `started` to that file when it starts and `cancelled`
//!   when it is cancelled;
//! - `crash {code?}` → exits the process (default code 3);
//! - `grow` → adds tool `extra`, removes tool `doomed`, sends
//!   `notifications/tools/list_changed`;
//! - `image` → a 1×1 PNG and an embedded text resource;
//! - `stubborn` → from now on ignores `SIGTERM` and keeps running after its
//!   stdin closes (only `SIGKILL` stops it);
//! - `env {name}` → the value of an environment variable, or `<unset>`;
//! - `header {name}` → the value of that header of the HTTP request, or
//!   `<unset>` (always `<unset>` over stdio);
//! - `twin.tool` and `twin_tool` (same registry name), `doomed`, and after
//!   `grow` `extra` → their own name as text;
//! - with `DSH_FIXTURE_DEEP=N` in its environment, last, `deep`, whose
//!   `inputSchema` nests `N` levels deep (objects in `properties`), and
//!   `nest {depth}`, whose result's `structuredContent` nests that deep; with
//!   `DSH_FIXTURE_HUGE=BYTES`, `huge`, whose description is that long.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

/// Set by `stubborn`: keep running after stdin closes.
static STUBBORN: AtomicBool = AtomicBool::new(false);

/// Tools per `tools/list` page.
const PAGE: usize = 2;

/// 1×1 transparent PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[derive(Clone, Default)]
struct Fixture {
    grown: Arc<AtomicBool>,
}

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("fixture schemas are objects")
    };
    Tool::new(name, description, Arc::new(schema))
}

/// An object schema whose JSON nests `depth` levels deep (at least 1):
/// `{"type":"object","properties":{"x":{…}}}`, each object two levels.
fn deep_schema(depth: usize) -> Value {
    let (mut schema, mut levels) = if depth % 2 == 1 {
        (json!({"type": "object"}), 1)
    } else {
        (json!({"type": "object", "properties": {}}), 2)
    };
    while levels + 2 <= depth {
        schema = json!({"type": "object", "properties": {"x": schema}});
        levels += 2;
    }
    schema
}

fn text(t: impl Into<String>) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(t)]))
}

impl Fixture {
    fn tools(&self) -> Vec<Tool> {
        let obj = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required});
        let mut tools = vec![
            // Read-only: its calls may run alongside other safe calls.
            tool(
                "add",
                "Adds two numbers",
                obj(
                    json!({"a": {"type": "number"}, "b": {"type": "number"}}),
                    json!(["a", "b"]),
                ),
            )
            .annotate(rmcp::model::ToolAnnotations::new().read_only(true)),
            tool(
                "echo",
                "Returns the raw arguments",
                json!({"type": "object"}),
            ),
            tool(
                "fail",
                "Always fails",
                obj(json!({"message": {"type": "string"}}), json!([])),
            ),
            tool(
                "sleep",
                "Sleeps",
                obj(
                    json!({"ms": {"type": "integer"}, "marker": {"type": "string"}}),
                    json!(["ms"]),
                ),
            ),
            tool(
                "crash",
                "Exits the server",
                obj(json!({"code": {"type": "integer"}}), json!([])),
            ),
            tool("grow", "Changes the tool list", json!({"type": "object"})),
            tool("image", "Returns an image", json!({"type": "object"})),
            tool(
                "env",
                "Reads an environment variable",
                obj(json!({"name": {"type": "string"}}), json!(["name"])),
            ),
            tool(
                "header",
                "Reads a header of the HTTP request",
                obj(json!({"name": {"type": "string"}}), json!(["name"])),
            ),
            tool(
                "stubborn",
                "Ignores SIGTERM and stdin EOF from now on",
                json!({"type": "object"}),
            ),
            tool(
                "big",
                "Returns a text of `bytes` bytes",
                obj(json!({"bytes": {"type": "integer"}}), json!(["bytes"])),
            ),
            tool(
                "shout",
                "Writes one stderr line of `bytes` bytes",
                obj(json!({"bytes": {"type": "integer"}}), json!(["bytes"])),
            ),
            // Both sanitise to the same registry name: the second is skipped.
            tool("twin.tool", "First twin", json!({"type": "object"})),
            tool("twin_tool", "Second twin", json!({"type": "object"})),
        ];
        let env_number = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
        };
        if let Some(depth) = env_number("DSH_FIXTURE_DEEP") {
            tools.push(tool(
                "nest",
                "A result nested `depth` levels deep",
                obj(json!({"depth": {"type": "integer"}}), json!(["depth"])),
            ));
            tools.push(tool("deep", "A schema nested too deep", deep_schema(depth)));
        }
        if let Some(bytes) = env_number("DSH_FIXTURE_HUGE") {
            let mut huge = tool("huge", "", json!({"type": "object"}));
            huge.description = Some("h".repeat(bytes).into());
            tools.push(huge);
        }
        if self.grown.load(Ordering::SeqCst) {
            tools.push(tool(
                "extra",
                "Appeared after grow",
                json!({"type": "object"}),
            ));
        } else {
            tools.push(tool(
                "doomed",
                "Disappears after grow",
                json!({"type": "object"}),
            ));
        }
        tools
    }

    async fn run(
        &self,
        name: &str,
        args: Map<String, Value>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let num = |k: &str| args.get(k).and_then(Value::as_f64);
        match name {
            "add" => match (num("a"), num("b")) {
                (Some(a), Some(b)) => Ok(text(format!("{}", a + b))),
                _ => Err(ErrorData::invalid_params("add needs numbers a and b", None)),
            },
            "echo" => Ok(text(Value::Object(args).to_string())),
            "fail" => {
                let msg = args
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("it failed");
                Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text(msg),
                ])))
            }
            "sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(1000);
                let marker = args
                    .get("marker")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if let Some(m) = &marker {
                    let _ = std::fs::write(m, "started");
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(text("slept")),
                    () = ctx.ct.cancelled() => {
                        eprintln!("fixture: sleep cancelled");
                        if let Some(m) = &marker {
                            let _ = std::fs::write(m, "cancelled");
                        }
                        Err(ErrorData::internal_error("cancelled", None))
                    }
                }
            }
            "crash" => {
                eprintln!("fixture: crashing on request");
                let code = args.get("code").and_then(Value::as_i64).unwrap_or(3);
                std::process::exit(i32::try_from(code).unwrap_or(3));
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                if let Err(e) = ctx.peer.notify_tool_list_changed().await {
                    eprintln!("fixture: list_changed failed: {e}");
                }
                Ok(text("grown"))
            }
            "image" => Ok(CallToolResponse::Complete(CallToolResult::success(vec![
                ContentBlock::image(PNG, "image/png"),
                ContentBlock::embedded_text("file:///note.txt", "a note"),
            ]))),
            "env" => {
                let var = args.get("name").and_then(Value::as_str).unwrap_or_default();
                Ok(text(
                    std::env::var(var).unwrap_or_else(|_| "<unset>".into()),
                ))
            }
            "header" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
                let value = ctx
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .and_then(|parts| parts.headers.get(name))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("<unset>");
                Ok(text(value))
            }
            "stubborn" => {
                // SAFETY: SIG_IGN installs no handler code.
                #[allow(unsafe_code)]
                let ignored = unsafe {
                    nix::sys::signal::signal(
                        nix::sys::signal::Signal::SIGTERM,
                        nix::sys::signal::SigHandler::SigIgn,
                    )
                };
                if let Err(e) = ignored {
                    return Err(ErrorData::internal_error(
                        format!("cannot ignore SIGTERM: {e}"),
                        None,
                    ));
                }
                STUBBORN.store(true, Ordering::SeqCst);
                Ok(text("stubborn"))
            }
            "big" => {
                let n = args.get("bytes").and_then(Value::as_u64).unwrap_or(0);
                Ok(text("b".repeat(usize::try_from(n).unwrap_or(0))))
            }
            "shout" => {
                let n = args.get("bytes").and_then(Value::as_u64).unwrap_or(0);
                let line = "s".repeat(usize::try_from(n).unwrap_or(0));
                eprintln!("{line}");
                eprintln!("fixture: shouted");
                Ok(text("shouted"))
            }
            "nest" => {
                let depth = args.get("depth").and_then(Value::as_u64).unwrap_or(1);
                let mut result = CallToolResult::success(vec![ContentBlock::text("nested")]);
                result.structured_content = Some(deep_schema(usize::try_from(depth).unwrap_or(1)));
                Ok(CallToolResponse::Complete(result))
            }
            "doomed" | "extra" | "twin.tool" | "twin_tool" => Ok(text(name.to_string())),
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let all = self.tools();
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let page: Vec<Tool> = all.iter().skip(start).take(PAGE).cloned().collect();
        let mut result = ListToolsResult::with_all_items(page);
        result.next_cursor = (start + PAGE < all.len()).then(|| (start + PAGE).to_string());
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        self.run(&request.name, args, ctx).await
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, addr] = args.as_slice() {
        if flag == "--http" {
            if let Err(e) = serve_http(addr).await {
                eprintln!("fixture: HTTP server failed: {e}");
                std::process::exit(1);
            }
            return;
        }
    }
    eprintln!("fixture: starting");
    match Fixture::default().serve(rmcp::transport::stdio()).await {
        Ok(service) => {
            let _ = service.waiting().await;
            if STUBBORN.load(Ordering::SeqCst) {
                eprintln!("fixture: stdin closed, staying alive");
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
        }
        Err(e) => {
            eprintln!("fixture: initialize failed: {e}");
            std::process::exit(1);
        }
    }
}

/// Serves MCP over streamable HTTP at `http://ADDR/mcp` (one fixture per
/// session); prints the bound address as the first stdout line.
async fn serve_http(addr: &str) -> std::io::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    use std::io::Write;

    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    println!("{bound}");
    std::io::stdout().flush()?;
    let service = StreamableHttpService::new(
        || Ok(Fixture::default()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    axum::serve(listener, app).await
}
