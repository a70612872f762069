//! Every stable error code dsh produces, in one table.
//!
//! A code is SCREAMING_SNAKE_CASE and never changes when a message is
//! reworded; plugins, logs (`errorCode`) and tests route on it. Each entry
//! says what it means, whether retrying the same thing can help
//! ([`Code::transient`]) and where the failure goes
//! ([`Code::disposition`]): back to the model as an error tool result it can
//! act on, ending the turn, or to the embedder that set the stack up.
//!
//! `docs/error-codes.md` is generated from [`ALL`] by [`markdown`]; a test
//! fails when the file is stale (regenerate it with
//! `DSH_BLESS=1 cargo test -p dsh-protocol`).
//!
//! Tools may return codes of their own (an MCP server's, a plugin's); those
//! are not in the table and [`lookup`] returns `None` for them.

/// Where a failure with this code goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// It becomes an error tool result: the model reads it and can correct
    /// itself on the next step; the turn goes on.
    RespondToModel,
    /// It ends the turn (`turn/end` with reason `error` or `aborted`).
    EndTurn,
    /// It is returned to the caller while setting up or using the stack
    /// (configuration, registration, session files); it never reaches a
    /// model.
    Caller,
}

impl Disposition {
    /// `respond to model`, `end turn` or `caller`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Disposition::RespondToModel => "respond to model",
            Disposition::EndTurn => "end turn",
            Disposition::Caller => "caller",
        }
    }
}

/// One entry of the code table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    /// The code itself (`HTTP_<status>` stands for the family `HTTP_402`, …).
    pub name: &'static str,
    /// The layer that produces it (`tools`, `llm`, `session`, …).
    pub layer: &'static str,
    /// Whether retrying the same request may succeed.
    pub transient: bool,
    /// Where the failure goes.
    pub disposition: Disposition,
    /// What it means, for people reading logs.
    pub meaning: &'static str,
}

/// Anything that carries a stable, machine-readable error code. Every coded
/// error type of dsh implements it.
pub trait ErrorCode {
    /// The stable code of this error (an entry of [`ALL`] for dsh's own
    /// errors; tools may use codes of their own).
    fn code(&self) -> &str;

    /// The table entry of [`ErrorCode::code`], `None` for codes dsh does not
    /// define.
    fn code_info(&self) -> Option<&'static Code> {
        lookup(self.code())
    }
}

/// The table entry of `code`; `HTTP_402` and the like resolve to the
/// `HTTP_<status>` entry. `None` for codes dsh does not define.
pub fn lookup(code: &str) -> Option<&'static Code> {
    let key = match code.strip_prefix("HTTP_") {
        Some(rest) if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) => {
            "HTTP_<status>"
        }
        _ => code,
    };
    ALL.iter().find(|c| c.name == key)
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $konst:ident = $name:literal, $layer:literal, $transient:literal, $disp:ident, $meaning:literal; )*) => {
        $(
            $(#[$doc])*
            #[doc = concat!("`", $name, "`: ", $meaning)]
            pub const $konst: &str = $name;
        )*

        /// Every code, grouped by layer, in documentation order.
        pub const ALL: &[Code] = &[
            $( Code {
                name: $name,
                layer: $layer,
                transient: $transient,
                disposition: Disposition::$disp,
                meaning: $meaning,
            }, )*
        ];
    };
}

codes! {
    // The model boundary and the tool registry.
    INVALID_ARGS = "INVALID_ARGS", "tools", false, RespondToModel,
        "The arguments violate the tool's schema; the result lists every violation.";
    INVALID_JSON = "INVALID_JSON", "tools", false, RespondToModel,
        "The argument text is not JSON (or was cut off at the model's output limit).";
    UNKNOWN_TOOL = "UNKNOWN_TOOL", "tools", false, RespondToModel,
        "No tool of that name is registered; the result suggests the closest name.";
    TOOL_FAILED = "TOOL_FAILED", "tools", false, RespondToModel,
        "The tool body failed with a message of its own.";
    TOOL_PANICKED = "TOOL_PANICKED", "tools", false, RespondToModel,
        "The tool body panicked; the panic was contained.";
    ARGS_DRIFT = "ARGS_DRIFT", "tools", false, RespondToModel,
        "Arguments passed validation but did not deserialize: a bug in the tool's argument type, never the model's fault.";
    INVALID_TOOL_OUTPUT = "INVALID_TOOL_OUTPUT", "tools", false, RespondToModel,
        "A tool's structured output did not match its declared output schema: a bug in the tool, logged with its violations; the model gets a neutral error.";
    ABORTED = "ABORTED", "agent", false, EndTurn,
        "The call, the model request or the step was cancelled (Ctrl-C, abort, dispose).";
    PROMPT_BLOCKED = "PROMPT_BLOCKED", "hooks", false, Caller,
        "A UserPromptSubmit hook blocked the user's prompt; it never reached the model (`dsh run` exits 1).";
    DUPLICATE_TOOL = "DUPLICATE_TOOL", "tools", false, Caller,
        "A tool of that name is already registered.";
    INVALID_SPEC = "INVALID_SPEC", "schema", false, Caller,
        "A schema spec is malformed (names the property and the problem).";
    // The kernel.
    MISSING_SERVICE = "MISSING_SERVICE", "kernel", false, Caller,
        "A service the plugin needs is not provided; load its plugin first.";
    DUPLICATE_SERVICE = "DUPLICATE_SERVICE", "kernel", false, Caller,
        "A service of that type is already provided.";
    LISTENER_FAILED = "LISTENER_FAILED", "kernel", false, EndTurn,
        "A hook listener returned an error (a checked emit or a waterfall stops on it).";
    LISTENER_PANICKED = "LISTENER_PANICKED", "kernel", false, EndTurn,
        "A hook listener panicked; the panic was contained.";
    // The LLM layer and its adapters.
    NO_ADAPTER = "NO_ADAPTER", "llm", false, EndTurn,
        "No adapter serves the requested model.";
    DUPLICATE_ADAPTER = "DUPLICATE_ADAPTER", "llm", false, Caller,
        "A model name is already served by another adapter.";
    UNSUPPORTED = "UNSUPPORTED", "llm", false, EndTurn,
        "The request uses a feature the adapter does not support (for example prefill on DeepSeek).";
    AUTH = "AUTH", "llm", false, EndTurn,
        "No API key, or the provider rejected it (HTTP 401/403).";
    RATE_LIMIT = "RATE_LIMIT", "llm", true, EndTurn,
        "The provider rate-limited the request (HTTP 429); retried with backoff before any output.";
    INVALID_REQUEST = "INVALID_REQUEST", "llm", false, EndTurn,
        "The provider rejected the request as malformed (HTTP 400).";
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED", "llm", false, EndTurn,
        "The request is longer than the model's context window (the provider's HTTP 400 about the maximum context length); compact the history and retry.";
    SERVER = "SERVER", "llm", true, EndTurn,
        "The provider failed (HTTP 5xx); retried with backoff before any output.";
    HTTP_STATUS = "HTTP_<status>", "llm", false, EndTurn,
        "Any other non-2xx status, for example HTTP_402 (insufficient balance).";
    EMPTY_RESPONSE = "EMPTY_RESPONSE", "llm", false, EndTurn,
        "A 2xx answer without a body (204/205).";
    STREAM_CLOSED = "STREAM_CLOSED", "llm", false, EndTurn,
        "The stream ended before its end marker.";
    MALFORMED_RESPONSE = "MALFORMED_RESPONSE", "llm", false, EndTurn,
        "A stream payload could not be parsed.";
    NETWORK = "NETWORK", "llm", true, EndTurn,
        "Connecting or reading failed; retried before any output.";
    TIMEOUT = "TIMEOUT", "llm", true, EndTurn,
        "A configured timeout elapsed (a model request, or an MCP call, which the model then reads).";
    INCOMPLETE_BLOCK = "INCOMPLETE_BLOCK", "llm", false, EndTurn,
        "A chunk sequence could not be assembled into a message.";
    MODEL_ERROR = "MODEL_ERROR", "llm", false, EndTurn,
        "The stream ended with an in-band error that carried no code of its own.";
    CONTENT_FILTER = "CONTENT_FILTER", "llm", false, EndTurn,
        "The provider stopped the answer (a finish reason dsh does not model, upper-cased; content_filter is the common one).";
    // The agent and its loop.
    NO_MODEL = "NO_MODEL", "agent", false, EndTurn,
        "Neither the agent's options nor the agent/request waterfall named a model.";
    MAX_STEPS = "MAX_STEPS", "agent", false, EndTurn,
        "The turn reached the step limit (max_steps) and ended with reason max-steps.";
    TOO_MANY_TOOL_CALLS = "TOO_MANY_TOOL_CALLS", "agent", false, EndTurn,
        "The model asked for more tool calls in one step than max_tool_calls allows; the step ended.";
    STEP_TOO_LARGE = "STEP_TOO_LARGE", "agent", false, EndTurn,
        "A model step's output exceeded max_output_bytes; the step ended.";
    AGENT_DISPOSED = "AGENT_DISPOSED", "agent", false, Caller,
        "The agent was disposed; it accepts no more messages.";
    DUPLICATE_AGENT = "DUPLICATE_AGENT", "agent", false, Caller,
        "An agent with that id is already registered.";
    // Sessions.
    DUPLICATE_SESSION = "DUPLICATE_SESSION", "session", false, Caller,
        "A session with that id already exists in the store.";
    INVALID_SESSION_ID = "INVALID_SESSION_ID", "session", false, Caller,
        "A session id that cannot name a file (empty, a path separator, …).";
    SESSION_DIR_UNWRITABLE = "SESSION_DIR_UNWRITABLE", "session", false, Caller,
        "The session directory cannot be created or written.";
    CORRUPT_LOG = "CORRUPT_LOG", "session", false, Caller,
        "A complete line of a session log is not a valid event (names the line).";
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND", "session", false, Caller,
        "No log for that session id.";
    SESSION_READ_FAILED = "SESSION_READ_FAILED", "session", false, Caller,
        "A session log could not be read.";
    SESSION_WRITE_FAILED = "SESSION_WRITE_FAILED", "session", false, Caller,
        "A session log could not be written or synced.";
    SESSION_LOG_CONFLICT = "SESSION_LOG_CONFLICT", "session", false, Caller,
        "The log on disk does not match the session being appended to it.";
    LOG_REPAIRED = "LOG_REPAIRED", "session", false, Caller,
        "A session log's torn last line (a write cut short by a crash) was removed before appending; the marker event names the file that holds its bytes.";
    INTERRUPTED = "INTERRUPTED", "session", false, RespondToModel,
        "The session ended (crash, kill) before this tool call had a result; synthesized on resume so the history stays valid. The call may or may not have run.";
    SESSION_LOCKED = "SESSION_LOCKED", "session", false, Caller,
        "Another dsh process is writing the session log.";
    SESSION_TASK_FAILED = "SESSION_TASK_FAILED", "session", false, Caller,
        "The background writer of a session log failed.";
    // Checkpoints: the private git object store that snapshots the workspace.
    CHECKPOINT_UNAVAILABLE = "CHECKPOINT_UNAVAILABLE", "checkpoint", false, Caller,
        "The session's checkpoint store is missing or corrupt, or git is not installed; undo/redo cannot restore files and nothing was changed.";
    CHECKPOINT_FAILED = "CHECKPOINT_FAILED", "checkpoint", false, Caller,
        "A git or file operation of a snapshot or a restore failed (the message names the path and the cause); a restore changed nothing when it fails before writing.";
    // The composition library and its front ends.
    INVALID_CONFIG = "INVALID_CONFIG", "dsh", false, Caller,
        "The configuration, a flag or a named file is unusable (the message names it); the CLI exits 2.";
    PERMISSION_RULE_INVALID = "PERMISSION_RULE_INVALID", "dsh", false, Caller,
        "A permission rule (`[permission] allow`/`deny`/`ask` or `permissions.toml`) cannot be parsed; the message names the rule and its file, and dsh does not start (the CLI exits 2).";
    UNKNOWN_SKILL = "UNKNOWN_SKILL", "dsh", false, RespondToModel,
        "The skill tool was called with a name no discovered skill has; the result lists the skills and suggests the closest name.";
    TODO_TOO_MANY_IN_PROGRESS = "TODO_TOO_MANY_IN_PROGRESS", "dsh", false, RespondToModel,
        "A todo_write list marks more than one item in_progress while [todo] allow_parallel_in_progress is off; the list was not changed.";
    PLAN_MODE_INACTIVE = "PLAN_MODE_INACTIVE", "dsh", false, RespondToModel,
        "exit_plan_mode was called while the session is not in plan mode; nothing changed.";
    PLAN_NOT_APPROVED = "PLAN_NOT_APPROVED", "dsh", false, RespondToModel,
        "The user rejected the plan exit_plan_mode presented (or nobody could approve it); the session stays in plan mode and the model revises the plan.";
    ASK_USER_NOT_ROOT = "ASK_USER_NOT_ROOT", "dsh", false, RespondToModel,
        "ask_user was called by a sub-agent; only the main agent may ask the user (a sub-agent decides itself or reports what to ask).";
    QUESTION_DECLINED = "QUESTION_DECLINED", "dsh", false, RespondToModel,
        "The user dismissed the questions ask_user put without answering; the model goes on with its own judgement.";
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED", "dsh", false, EndTurn,
        "The next model request would take the session's cost past `[budget] max_cost_per_session` (its cost so far plus the request's estimated input); the request was not sent and the turn ended.";
    // Bash.
    BAD_WORKDIR = "BAD_WORKDIR", "bash", false, RespondToModel,
        "The command's working directory does not exist or is not a directory.";
    SPAWN_FAILED = "SPAWN_FAILED", "bash", false, RespondToModel,
        "bash could not be started.";
    UNKNOWN_TASK = "UNKNOWN_TASK", "bash", false, RespondToModel,
        "No background task with that id.";
    DISPOSED = "DISPOSED", "bash", false, RespondToModel,
        "The bash executor was disposed; it runs nothing any more.";
    WAIT_FAILED = "WAIT_FAILED", "bash", false, RespondToModel,
        "Waiting for the shell failed; the process state is unknown.";
    // Jobs.
    UNKNOWN_JOB = "UNKNOWN_JOB", "jobs", false, RespondToModel,
        "No job with that id belongs to the calling agent (the message lists its jobs).";
    TOO_MANY_JOBS = "TOO_MANY_JOBS", "jobs", false, RespondToModel,
        "The agent already runs the most background jobs it may (10); wait for one or kill one first.";
    // Sub-agents.
    SUBAGENT_DEPTH_LIMIT = "SUBAGENT_DEPTH_LIMIT", "dsh", false, RespondToModel,
        "A subagent may not start another: it is at the depth limit (`max_depth` of the `[subagents]` table: default 3; 0 forbids subagents).";
    TOO_MANY_SUBAGENTS = "TOO_MANY_SUBAGENTS", "dsh", false, RespondToModel,
        "The agent already runs the most subagents it may at once (4); wait for one to finish.";
    SUBAGENT_FAILED = "SUBAGENT_FAILED", "dsh", false, RespondToModel,
        "The subagent's turn did not complete (an error, an abort, the step limit); the message says how it ended and gives its last answer.";
    // MCP.
    MCP_START_FAILED = "MCP_START_FAILED", "mcp", false, Caller,
        "An MCP server could not be started or did not complete the handshake.";
    MCP_INVALID_CONFIG = "MCP_INVALID_CONFIG", "mcp", false, Caller,
        "An MCP server's configuration is unusable.";
    MCP_TOOL_ERROR = "MCP_TOOL_ERROR", "mcp", false, RespondToModel,
        "The MCP tool answered with isError: true.";
    MCP_CALL_FAILED = "MCP_CALL_FAILED", "mcp", false, RespondToModel,
        "The MCP request failed (protocol or transport error).";
    FS_NOT_FOUND = "FS_NOT_FOUND", "fs", false, RespondToModel,
        "The file or directory does not exist (the message names the closest existing sibling when one is near).";
    FS_IS_DIRECTORY = "FS_IS_DIRECTORY", "fs", false, RespondToModel,
        "A file was expected but the path is a directory.";
    FS_NOT_A_DIRECTORY = "FS_NOT_A_DIRECTORY", "fs", false, RespondToModel,
        "A directory was expected but the path names a file.";
    FS_NOT_TEXT = "FS_NOT_TEXT", "fs", false, RespondToModel,
        "The file holds a NUL byte in its first 8 KiB: binary, not text. For an image (PNG, JPEG, GIF, WebP): the current model does not take images, or the image is corrupt, too large (file, dimensions: refused before decoding) or a renamed non-image; the message says which.";
    FS_NOT_A_FILE = "FS_NOT_A_FILE", "fs", false, RespondToModel,
        "The path is not a regular file (a fifo, socket, character or block device); the message names what it is. The file and search tools refuse it before opening it, so they never block on it.";
    FS_NOT_OBSERVED = "FS_NOT_OBSERVED", "fs", false, RespondToModel,
        "An existing file may be replaced or edited only after this session read it.";
    FS_STALE_VERSION = "FS_STALE_VERSION", "fs", false, RespondToModel,
        "The file changed on disk since this session last read or wrote it; read it again.";
    FS_EDIT_NOT_FOUND = "FS_EDIT_NOT_FOUND", "fs", false, RespondToModel,
        "The edit's old_string does not occur in the file.";
    FS_AMBIGUOUS_EDIT = "FS_AMBIGUOUS_EDIT", "fs", false, RespondToModel,
        "The edit's old_string occurs more than once and replace_all is not set.";
    FS_ALREADY_EXISTS = "FS_ALREADY_EXISTS", "fs", false, RespondToModel,
        "str_replace_editor create refuses a path that exists.";
    FS_IO = "FS_IO", "fs", false, RespondToModel,
        "A file operation failed (permission denied, disk full, …); the message names the path and the cause. Nothing was half-written.";
    FS_SANDBOX_DENIED = "FS_SANDBOX_DENIED", "fs", false, RespondToModel,
        "The file tool may not write there in the current permission mode: the canonical path is outside the writable roots.";
    // Safety: permission, sandbox, hooks.
    PERMISSION_DENIED = "PERMISSION_DENIED", "safety", false, RespondToModel,
        "A guard (permission mode, approval, a hook) denied the call before it ran; the message gives the reason.";
    SANDBOX_UNAVAILABLE = "SANDBOX_UNAVAILABLE", "safety", false, RespondToModel,
        "The confinement the permission mode needs cannot be applied here (no Landlock, or too old an ABI for the setting); the command was not run.";
    HOOK_FAILED = "HOOK_FAILED", "safety", false, Caller,
        "A command hook could not be run or answered with something unusable; it was treated as a warning.";
    RESULT_TOO_LARGE = "RESULT_TOO_LARGE", "mcp", false, RespondToModel,
        "The MCP server's response was larger than max_message_bytes; it was not read into memory.";
    MCP_SERVER_EXITED = "MCP_SERVER_EXITED", "mcp", false, RespondToModel,
        "The MCP server exited; its tools were unregistered.";
    MCP_SERVER_UNAVAILABLE = "MCP_SERVER_UNAVAILABLE", "mcp", true, RespondToModel,
        "The MCP server's connection dropped and dsh is reconnecting (500 ms doubling to 30 s, at most 10 attempts); its tools stay registered, retry the call later.";
    // The web tools: web_fetch and web_search.
    WEB_BLOCKED = "WEB_BLOCKED", "web", false, RespondToModel,
        "web_fetch or web_search refused before connecting: a scheme other than http/https, credentials in the URL, a host `[sandbox] network` does not allow (or `network = false`), or a loopback, private, link-local or other non-public address (an IP literal, a redirect target, or every address a name resolves to) while `[web] allow_private` is off.";
    WEB_FETCH_FAILED = "WEB_FETCH_FAILED", "web", false, RespondToModel,
        "web_fetch got no usable page: the connection failed, the server answered an error status, or it redirected more than 10 times (the message names the URL and the cause).";
    WEB_UNSUPPORTED_CONTENT = "WEB_UNSUPPORTED_CONTENT", "web", false, RespondToModel,
        "web_fetch reads HTML, plain text and JSON; the page is another content type (a PDF, an image, a binary), named in the message.";
    WEB_TIMEOUT = "WEB_TIMEOUT", "web", true, RespondToModel,
        "web_fetch (30 s for the whole call) or web_search (15 s) ran out of time.";
    WEB_SEARCH_KEY_MISSING = "WEB_SEARCH_KEY_MISSING", "web", false, RespondToModel,
        "web_search's provider needs an API key and the environment variable named in the message (`[web.search] api_key_env`, default BRAVE_API_KEY, TAVILY_API_KEY or EXA_API_KEY) is not set.";
    WEB_SEARCH_FAILED = "WEB_SEARCH_FAILED", "web", false, RespondToModel,
        "The search provider could not be reached, refused the key, rate-limited the search, or answered with something that is not its JSON format (the message says which).";
    // The controller: what a front end asks of a session.
    UNKNOWN_SESSION = "UNKNOWN_SESSION", "controller", false, Caller,
        "No open session has that id (it was never opened, or it was closed); list the sessions or open it again.";
    SESSION_CLOSED = "SESSION_CLOSED", "controller", false, Caller,
        "The session was closed while the command ran; nothing more can be done in it.";
    SESSION_OPEN = "SESSION_OPEN", "controller", false, Caller,
        "The session is already open in this process; use the open one.";
    TURN_RUNNING = "TURN_RUNNING", "controller", true, Caller,
        "The command runs between turns (compact, clear) and a turn runs now; retry when it has ended or abort it.";
    UNKNOWN_APPROVAL = "UNKNOWN_APPROVAL", "controller", false, Caller,
        "No question with that id waits for an answer: it was answered already (the first answer wins), withdrawn, or never asked.";
    UNKNOWN_QUESTION = "UNKNOWN_QUESTION", "controller", false, Caller,
        "No ask_user question with that id waits for an answer: it was answered already (the first answer wins), withdrawn, or never asked.";
    INVALID_ANSWER = "INVALID_ANSWER", "controller", false, Caller,
        "An answer to an ask_user question does not fit it (not one answer per question, an option that does not exist, several options for a single-choice question); the message names the question.";
    INVALID_COMMAND = "INVALID_COMMAND", "controller", false, Caller,
        "A command's argument is unusable (an unknown model or permission mode, a malformed slash command); the message says what is accepted.";
}

/// The code table as Markdown: what `docs/error-codes.md` holds.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Error codes\n\n\
         Generated from `crates/dsh-protocol/src/codes.rs` (`dsh_protocol::codes::ALL`); \
         do not edit by hand: run `DSH_BLESS=1 cargo test -p dsh-protocol` after changing the table.\n\n\
         A code never changes when a message is reworded. *Transient*: retrying the same request may succeed. \
         *Goes to*: `respond to model` — an error tool result the model reads and can act on, the turn goes on; \
         `end turn` — the turn ends with this code; `caller` — returned to whoever set up or used the stack, \
         never to a model.\n\n\
         Tools may return codes of their own (MCP servers, plugins); those are not listed here.\n\n\
         | code | layer | transient | goes to | meaning |\n|---|---|---|---|---|\n",
    );
    for c in ALL {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            c.name,
            c.layer,
            if c.transient { "yes" } else { "no" },
            c.disposition.as_str(),
            c.meaning
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_screaming_snake_case() {
        for (i, c) in ALL.iter().enumerate() {
            assert!(
                ALL[i + 1..].iter().all(|d| d.name != c.name),
                "{} listed twice",
                c.name
            );
            let plain = c.name.replace("<status>", "STATUS");
            assert!(
                plain.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{}",
                c.name
            );
        }
    }

    #[test]
    fn lookup_resolves_the_http_family() {
        assert_eq!(lookup("HTTP_402").map(|c| c.name), Some("HTTP_<status>"));
        assert_eq!(lookup("HTTP_").map(|c| c.name), None);
        assert_eq!(
            lookup("INVALID_ARGS").map(|c| c.disposition),
            Some(Disposition::RespondToModel)
        );
        assert!(lookup("RATE_LIMIT").is_some_and(|c| c.transient));
        assert_eq!(lookup("SOMETHING_ELSE"), None);
    }

    #[test]
    fn docs_error_codes_md_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/error-codes.md");
        let want = markdown();
        if std::env::var_os("DSH_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "docs/error-codes.md is stale: run `DSH_BLESS=1 cargo test -p dsh-protocol`"
        );
    }
}
