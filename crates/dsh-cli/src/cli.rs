//! The command line's grammar: every clap definition of `dsh`, and nothing
//! else.
//!
//! This module depends on `clap` and `std` only, so that `build.rs`
//! includes it as well (`#[path = "src/cli.rs"] mod cli;`) and renders the
//! man pages from the very definitions the parser uses, at build time. The
//! values it parses are the command line's own ([`PermissionMode`],
//! [`Shell`]); the binary maps them onto the library's types
//! ([`crate::app`], `main.rs`), and each command module under `commands/`
//! takes its `Args` from here.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// dsh — a coding agent that drives DeepSeek models (or the offline echo
/// model) in a tool loop.
#[derive(Debug, Parser)]
#[command(name = "dsh", version, about, long_about = None)]
pub(crate) struct Cli {
    /// The subcommand (chat when none is given).
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Chat's options, for `dsh` without a subcommand.
    #[command(flatten)]
    pub(crate) chat: ChatArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Chat interactively (the default command).
    Chat(ChatArgs),
    /// Run one turn and print the final answer.
    Run(RunArgs),
    /// Serve the Agent Client Protocol on stdin/stdout (for editors).
    Acp(AcpArgs),
    /// Serve the session API over JSON-RPC: WebSocket and REST on
    /// 127.0.0.1 (a random port and a token printed on start), or stdio.
    Serve(ServeArgs),
    /// Serve the browser app (`dsh serve` plus the web app) and open it.
    Web(WebArgs),
    /// List the tools the model is shown.
    Tools(ToolsArgs),
    /// List the skills found (project .dsh/skills, .agents/skills, user).
    Skills(SkillsArgs),
    /// Work with tool argument schemas (the model boundary).
    Schema(SchemaArgs),
    /// List, show and replay session logs.
    Session(SessionArgs),
    /// Tokens and cost over all saved sessions, by day, model or project.
    Usage(UsageArgs),
    /// List the models dsh can run: provider, context window, price,
    /// images, and whether the key is set.
    Models(ModelsArgs),
    /// MCP servers: list their state and tools.
    Mcp(McpArgs),
    /// Trust the working directory's dsh.toml (its MCP servers, base_url…).
    Trust(TrustArgs),
    /// Lasting permission rules: list the rules in force and where each
    /// comes from.
    Permissions(PermissionsArgs),
    /// Report the sandbox (mechanism, ABI, full or partial enforcement),
    /// the config files read, the model and key, the MCP servers.
    Doctor(DoctorArgs),
    /// Print a shell completion script: `dsh completions bash >
    /// ~/.local/share/bash-completion/completions/dsh`.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print a man page (troff, generated at build time): `dsh man >
    /// ~/.local/share/man/man1/dsh.1`; `dsh man run > …/dsh-run.1`.
    #[command(hide = true)]
    Man {
        /// The subcommand whose page to print (e.g. `run`, `tools list`;
        /// default: dsh's own page).
        #[arg(value_name = "COMMAND")]
        command: Vec<String>,
    },
}

/// The shells `dsh completions` writes a script for: clap_complete's,
/// by the same names (`main.rs` maps them onto it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shell {
    /// `bash`.
    Bash,
    /// `elvish`.
    Elvish,
    /// `fish`.
    Fish,
    /// `powershell`.
    Powershell,
    /// `zsh`.
    Zsh,
}

// Written out rather than derived: a derived value enum would show each
// variant's doc as help, which clap_complete's own `Shell` does not.
impl ValueEnum for Shell {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Shell::Bash,
            Shell::Elvish,
            Shell::Fish,
            Shell::Powershell,
            Shell::Zsh,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            Shell::Bash => "bash",
            Shell::Elvish => "elvish",
            Shell::Fish => "fish",
            Shell::Powershell => "powershell",
            Shell::Zsh => "zsh",
        }))
    }
}

/// Options shared by the commands that run an agent (and by `tools list`,
/// `mcp list`, `doctor`). Every one is global: accepted before the
/// subcommand as well as after it (`dsh --model M run …`); a command that
/// runs no agent ignores them.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Agent options")]
pub(crate) struct StackArgs {
    /// Model to use (default: deepseek-v4-flash with an API key, else echo).
    #[arg(long, short = 'm', global = true)]
    pub(crate) model: Option<String>,
    /// Directory of session logs (default $XDG_DATA_HOME/dsh/sessions).
    #[arg(long, global = true)]
    pub(crate) session_dir: Option<PathBuf>,
    /// A file whose text is appended to the system prompt.
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) system_prompt: Option<PathBuf>,
    /// Configuration file (default: ./dsh.toml, then $XDG_CONFIG_HOME/dsh/dsh.toml).
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) config: Option<PathBuf>,
    /// An MCP server whose tools the agent gets, as NAME=COMMAND ARGS…
    /// (split like a shell) or NAME=URL (http:// or https://, streamable
    /// HTTP); repeatable; overrides a configured server of the same name.
    #[arg(
        long = "mcp",
        value_name = "NAME=COMMAND ARGS…|NAME=URL",
        global = true
    )]
    pub(crate) mcp: Vec<String>,
    /// Trust the working directory's dsh.toml for this run (its MCP servers,
    /// base_url, system_prompt… apply) without recording it; see `dsh trust`.
    #[arg(long, global = true)]
    pub(crate) trust_project: bool,
    /// Send tools in DeepSeek's strict function-calling dialect where their
    /// schema allows (the beta endpoint; also `[deepseek] strict_tools`).
    #[arg(long, global = true)]
    pub(crate) strict_tools: bool,
    /// The built-in tools to offer, comma-separated (default: all; also
    /// `tools = [..]` in dsh.toml), e.g. `--tools bash,read,edit`.
    #[arg(long, value_delimiter = ',', value_name = "NAMES", global = true)]
    pub(crate) tools: Option<Vec<String>>,
    /// The permission mode: read-only, workspace-write (default) or
    /// danger-full-access (also DSH_PERMISSION and `[permission] mode`).
    #[arg(long, value_name = "MODE", global = true)]
    pub(crate) permission: Option<PermissionMode>,
}

/// `--permission`: the permission mode as typed (the library's
/// `SandboxMode`, which [`crate::app`] maps it to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PermissionMode {
    /// `read-only`.
    ReadOnly,
    /// `workspace-write`.
    WorkspaceWrite,
    /// `danger-full-access`.
    DangerFullAccess,
}

impl PermissionMode {
    /// Every mode, narrowest first.
    pub(crate) const ALL: [PermissionMode; 3] = [
        PermissionMode::ReadOnly,
        PermissionMode::WorkspaceWrite,
        PermissionMode::DangerFullAccess,
    ];

    /// The mode's name, as typed.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PermissionMode::ReadOnly => "read-only",
            PermissionMode::WorkspaceWrite => "workspace-write",
            PermissionMode::DangerFullAccess => "danger-full-access",
        }
    }
}

impl std::str::FromStr for PermissionMode {
    type Err = String;

    /// One of the three names; any other text is an error listing them
    /// (the words `DSH_PERMISSION` and `[permission] mode` errors use).
    fn from_str(s: &str) -> Result<Self, String> {
        PermissionMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown permission mode {s:?}; expected read-only, workspace-write or danger-full-access"
                )
            })
    }
}

/// Arguments of `dsh chat`.
#[derive(Debug, Default, Args)]
pub(crate) struct ChatArgs {
    /// The agent options.
    #[command(flatten)]
    pub(crate) stack: StackArgs,
    /// Continue a saved session: its id, a unique start of its id, or a
    /// part of its title (as `dsh session list` shows it). Without a
    /// value, pick one from a list (on a terminal; type to filter).
    #[arg(long, value_name = "ID", conflicts_with = "continue_session")]
    pub(crate) resume: Option<Option<String>>,
    /// Continue the newest session of the working directory.
    #[arg(long = "continue", short = 'c')]
    pub(crate) continue_session: bool,
}

/// Arguments of `dsh run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The agent options.
    #[command(flatten)]
    pub(crate) stack: StackArgs,
    /// Continue a saved session (its log is replayed, new events are
    /// appended): its id, a unique start of its id, or a part of its title.
    #[arg(long, value_name = "ID", conflicts_with = "continue_session")]
    pub(crate) resume: Option<String>,
    /// Continue the newest session of the working directory.
    #[arg(long = "continue", short = 'c')]
    pub(crate) continue_session: bool,
    /// What goes to stdout: `text`, the answer (the default); `json`, one
    /// JSON object at the end (`{"type":"result","subtype","is_error",
    /// "result","session_id","num_turns","duration_ms","usage"}`, and
    /// `error` on an error); `stream-json`, every session event as one
    /// JSON line as it happens.
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub(crate) output_format: Option<OutputFormat>,
    /// Print every session event as one JSON line instead of the answer
    /// (`--output-format stream-json`).
    #[arg(long)]
    pub(crate) json: bool,
    /// No progress on stderr (warnings and errors still print).
    #[arg(long, short = 'q')]
    pub(crate) quiet: bool,
    /// Plan only: commands and file changes are denied; the plan the model
    /// presents (exit_plan_mode) is printed and the run ends.
    #[arg(long)]
    pub(crate) plan: bool,
    /// Wait at most this long (e.g. 500ms, 30s, 10m, 1h) for the background
    /// jobs the turn started and the wake-up turns they cause; then stop
    /// what still runs.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub(crate) wait_jobs: Duration,
    /// Stop the turn's background jobs when the turn ends instead of
    /// waiting for them.
    #[arg(long, conflicts_with = "wait_jobs")]
    pub(crate) no_wait: bool,
    /// The prompt (several words are joined with spaces). `-`, or none at
    /// all, reads it from stdin (a pipe or a file; not a terminal). Words
    /// and a piped stdin (a pipe or a file) send both: the input follows
    /// the words as a fenced block.
    #[arg(num_args = 0.., value_name = "PROMPT")]
    pub(crate) prompt: Vec<String>,
}

/// What `dsh run` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// The answer (or the plan) as text.
    Text,
    /// One JSON object at the end: the result, the session, the usage.
    Json,
    /// Every session event as one JSON line as it happens.
    StreamJson,
}

/// The default of `dsh acp --max-line-bytes`: 64 MiB (the ACP server's
/// `DEFAULT_MAX_LINE_BYTES`; a test in `commands::acp` keeps them equal).
pub(crate) const DEFAULT_MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;

/// Arguments of `dsh acp`.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    /// The agent options.
    #[command(flatten)]
    pub(crate) stack: StackArgs,
    /// The longest JSON-RPC line taken from the client, in bytes (without
    /// the newline); a longer one is discarded as it streams in and
    /// answered with an error (-32600 "Line too long").
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = DEFAULT_MAX_LINE_BYTES,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_line_bytes: u64,
}

/// Where `dsh serve` and `dsh web` listen and how clients prove who they
/// are.
#[derive(Debug, Args)]
pub(crate) struct ListenArgs {
    /// The address to listen on. Anything but a loopback address lets
    /// others reach the server (a warning says so); put TLS in front.
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1")]
    pub(crate) host: std::net::IpAddr,
    /// The port (0: a free one, printed on start).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub(crate) port: u16,
    /// Write the token clients must present to this file (mode 0600)
    /// instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,
}

/// Arguments of `dsh serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The agent options every session starts from.
    #[command(flatten)]
    pub(crate) stack: StackArgs,
    /// Where to listen.
    #[command(flatten)]
    pub(crate) listen: ListenArgs,
    /// Serve one client on stdin/stdout instead (newline-delimited
    /// JSON-RPC, no token: the client started the process).
    #[arg(long, conflicts_with_all = ["host", "port", "token_file"])]
    pub(crate) stdio: bool,
}

/// Arguments of `dsh web`.
#[derive(Debug, Args)]
pub(crate) struct WebArgs {
    /// The agent options every session starts from.
    #[command(flatten)]
    pub(crate) stack: StackArgs,
    /// Where to listen.
    #[command(flatten)]
    pub(crate) listen: ListenArgs,
    /// Do not open the browser (the address is printed either way).
    #[arg(long)]
    pub(crate) no_open: bool,
}

/// Arguments of `dsh tools`.
#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: ToolsCommand,
}

/// The subcommands of `dsh tools`.
#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// List the tools the model would be shown: a table of name, source,
    /// who validates the arguments, and what the tool does.
    List {
        /// Print the tool schemas (JSON) exactly as the model is shown them.
        #[arg(long, conflicts_with = "json")]
        schemas: bool,
        /// Each schema with who checks its arguments: `"validation"` is
        /// `dsh`, `local` (an MCP server with validate_args), `server`, or
        /// `unsupported: <keyword at path>` (a raw schema dsh cannot enforce).
        #[arg(long)]
        json: bool,
        /// The agent options.
        #[command(flatten)]
        stack: StackArgs,
    },
}

/// Arguments of `dsh skills`.
#[derive(Debug, Args)]
pub(crate) struct SkillsArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: SkillsCommand,
}

/// The subcommands of `dsh skills`.
#[derive(Debug, Subcommand)]
pub(crate) enum SkillsCommand {
    /// List the skills found for the working directory (project
    /// .dsh/skills and .agents/skills, then $XDG_CONFIG_HOME/dsh/skills),
    /// the shadowed ones and the files skipped.
    List {
        /// Print one JSON object: skills, shadowed, warnings, roots.
        #[arg(long)]
        json: bool,
    },
}

/// Arguments of `dsh schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: SchemaCommand,
}

/// The subcommands of `dsh schema`.
#[derive(Debug, Subcommand)]
pub(crate) enum SchemaCommand {
    /// Print the JSON Schema a spec converts to (what the model is shown).
    JsonSchema {
        /// The spec file (JSON, or TOML when it ends in `.toml`).
        #[arg(long, value_name = "FILE")]
        spec: PathBuf,
        /// One line instead of pretty-printed.
        #[arg(long)]
        compact: bool,
    },
    /// Validate tool arguments against a spec; prints
    /// `{"valid": bool, "violations": [...]}` on one line. Exit 0 valid,
    /// 1 invalid, 2 unusable input.
    Validate {
        /// The spec file (JSON, or TOML when it ends in `.toml`).
        #[arg(long, value_name = "FILE")]
        spec: PathBuf,
        /// The arguments as the model would send them (JSON; `-` reads
        /// stdin; an empty file means `{}`).
        #[arg(long, value_name = "FILE")]
        args: PathBuf,
    },
}

/// Arguments of `dsh session`.
#[derive(Debug, Args)]
pub(crate) struct SessionArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: SessionCommand,
}

/// The subcommands of `dsh session`.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionCommand {
    /// Print a session as the chat showed it (messages, rendered answers,
    /// tool calls with folded results and diffs, usage totals); with
    /// --timeline, every logged event with its time instead.
    Show {
        /// The session log (`<id>.jsonl`), or the id of a session in the
        /// session directory.
        #[arg(value_name = "FILE|ID")]
        file: String,
        /// Print tool results and reasoning whole instead of folded.
        #[arg(long, conflicts_with_all = ["timeline", "requests"])]
        full: bool,
        /// Print the event timeline (turns, steps, calls, results, errors,
        /// usage, each with its sequence number and time).
        #[arg(long)]
        timeline: bool,
        /// Also print every raw stream chunk (in the timeline).
        #[arg(long)]
        chunks: bool,
        /// Print the exact request body of every step instead, rebuilt
        /// from the log (`--- turn T step S: N bytes`, then the body).
        #[arg(long, conflicts_with = "chunks")]
        requests: bool,
        /// Directory of session logs (default as for `list`), for an ID.
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
    },
    /// Re-derive the model message history from a session log and print it as JSON.
    Replay {
        /// The session log (`<id>.jsonl`), or the id of a session in the
        /// session directory.
        #[arg(value_name = "FILE|ID")]
        file: String,
        /// Directory of session logs (default as for `list`), for an ID.
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
    },
    /// List the saved sessions, newest first: id, creation time, turns,
    /// tokens used, title (a model's, else the first prompt cut to 60
    /// characters).
    List {
        /// Directory of session logs (default $XDG_DATA_HOME/dsh/sessions,
        /// else ~/.local/share/dsh/sessions).
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
        /// Show sub-agents' sessions under their parent's, indented.
        #[arg(long)]
        tree: bool,
    },
    /// Validation telemetry of a session: per tool calls, failures (by
    /// code), most frequent violation paths, self-corrections; turns, steps
    /// and tokens.
    Stats {
        /// A session log file, or the id of a session in the session directory.
        #[arg(value_name = "FILE|ID")]
        session: String,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
        /// Directory of session logs (default as for `list`), for an ID.
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
    },
    /// Go back to before turn N of a saved session: its files (set back
    /// to the checkpoint taken before that turn) and its conversation (the
    /// later turns stay in the log as an earlier branch). Files changed by
    /// hand since the session last ran are left alone unless --force.
    Rewind {
        /// The session (an id, the start of one, or part of its title).
        #[arg(value_name = "ID")]
        id: String,
        /// The turn to go back to (`/rewind` in the chat lists them).
        #[arg(long, value_name = "N")]
        to_turn: u64,
        /// Only the files; the conversation stays.
        #[arg(long, conflicts_with = "conversation_only")]
        files_only: bool,
        /// Only the conversation; the files stay as they are.
        #[arg(long)]
        conversation_only: bool,
        /// Also overwrite files changed by hand since.
        #[arg(long)]
        force: bool,
        /// The agent options.
        #[command(flatten)]
        stack: StackArgs,
    },
    /// Compact a saved session now: old tool results are cut and the older
    /// history is replaced by a summary the model writes (needs a model;
    /// the offline echo model cannot, exit 2). The events are appended to
    /// the session's log.
    Compact {
        /// The session to compact.
        #[arg(value_name = "ID")]
        id: String,
        /// What the summary should keep in particular.
        #[arg(long, value_name = "TEXT")]
        focus: Option<String>,
        /// The agent options.
        #[command(flatten)]
        stack: StackArgs,
    },
    /// With IDs or --all: remove the spilled tool output kept for saved
    /// sessions (<session-dir>/<id>/spill/); the logs and checkpoints
    /// stay, and `session show` then says which files were removed. With
    /// --older-than: remove whole sessions (as `session rm` does) last
    /// active longer ago than that. Sessions in use are skipped.
    Clean {
        /// The sessions to clean (an id, a unique start of one, or a part
        /// of a title).
        #[arg(
            value_name = "ID",
            required_unless_present_any = ["all", "older_than"],
            conflicts_with_all = ["all", "older_than"]
        )]
        ids: Vec<String>,
        /// Clean every session in the directory.
        #[arg(long, conflicts_with = "older_than")]
        all: bool,
        /// Remove whole sessions last active longer ago than this (e.g.
        /// 30d, 12h, 90m, 2w).
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        older_than: Option<Duration>,
        /// List what would be removed, and remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Directory of session logs (default as for `list`).
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
    },
    /// Delete saved sessions: each log, its files (<session-dir>/<id>/:
    /// spilled output, checkpoints) and the sessions of its sub-agents.
    /// A session in use by a dsh process is refused (exit 1).
    Rm {
        /// The sessions to delete (an id, a unique start of one, or a part
        /// of a title).
        #[arg(value_name = "ID", required = true)]
        ids: Vec<String>,
        /// Directory of session logs (default as for `list`).
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
    },
    /// Start a new session from a copy of a saved one (whole, or up to the
    /// end of a turn) and print its id; the original is unchanged.
    /// `dsh chat --resume NEWID` continues it.
    Fork {
        /// The session to copy (an id, a unique start of one, or a part of
        /// a title).
        #[arg(value_name = "ID")]
        id: String,
        /// Copy turns 1..=N only.
        #[arg(long, value_name = "N")]
        at_turn: Option<u64>,
        /// Directory of session logs (default as for `list`).
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
    },
    /// Write a session as a readable transcript (Markdown, or one
    /// self-contained HTML file that loads nothing from the network), or
    /// its log lines as stored (jsonl), to share it or attach it to an
    /// issue.
    Export {
        /// The session (a log file, an id, a unique start of one, or a
        /// part of a title).
        #[arg(value_name = "FILE|ID")]
        id: String,
        /// The format.
        #[arg(long, value_enum, default_value = "md")]
        format: ExportFormat,
        /// Write to FILE (mode 0600, replaced atomically) instead of stdout.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
        /// Directory of session logs (default as for `list`).
        #[arg(long, value_name = "DIR")]
        session_dir: Option<PathBuf>,
    },
}

/// What `dsh session export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// A Markdown transcript.
    Md,
    /// The transcript as one self-contained HTML file.
    Html,
    /// The log's lines as stored.
    Jsonl,
}

/// Arguments of `dsh mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: McpCommand,
}

/// The subcommands of `dsh mcp`.
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Start every configured server (dsh.toml and --mcp), list its state
    /// and tools, then stop them. Exit 1 when a server failed to start.
    List {
        /// The agent options.
        #[command(flatten)]
        stack: StackArgs,
    },
}

/// Arguments of `dsh models`.
#[derive(Debug, Args)]
pub(crate) struct ModelsArgs {
    /// Print one JSON array of `{model, provider, kind, wire,
    /// contextWindow, price, images, key, served}`.
    #[arg(long)]
    pub(crate) json: bool,
    /// The agent options.
    #[command(flatten)]
    pub(crate) stack: StackArgs,
}

/// Arguments of `dsh permissions`.
#[derive(Debug, Args)]
pub(crate) struct PermissionsArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: PermissionsCommand,
}

/// The subcommands of `dsh permissions`.
#[derive(Debug, Subcommand)]
pub(crate) enum PermissionsCommand {
    /// List the permission rules in force in the working directory, deny
    /// then ask then allow, each with its source (the user config, a
    /// trusted ./dsh.toml, permissions.toml).
    List {
        /// Print one JSON object: `deny`, `ask`, `allow` (each a list of
        /// `{rule, source}`) and `workspace`.
        #[arg(long)]
        json: bool,
        /// The agent options.
        #[command(flatten)]
        stack: StackArgs,
    },
}

/// Arguments of `dsh trust`.
#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// The directory whose dsh.toml to trust (default: the working directory).
    #[arg(value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Forget the decision about DIR's dsh.toml instead.
    #[arg(long, conflicts_with = "list")]
    pub(crate) revoke: bool,
    /// List the recorded decisions.
    #[arg(long, conflicts_with = "dir")]
    pub(crate) list: bool,
}

/// Arguments of `dsh usage`.
#[derive(Debug, Args)]
pub(crate) struct UsageArgs {
    /// Count only the requests of the last AGE (e.g. 7d, 12h, 30m, 2w);
    /// default: all.
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub(crate) since: Option<Duration>,
    /// One row per day (UTC), per model, or per project (the session's
    /// working directory).
    #[arg(long, value_enum, default_value = "day")]
    pub(crate) by: UsageGroup,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Directory of session logs (default: $XDG_DATA_HOME/dsh/sessions,
    /// else ~/.local/share/dsh/sessions).
    #[arg(long, value_name = "DIR")]
    pub(crate) session_dir: Option<PathBuf>,
}

/// How `dsh usage` groups its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum UsageGroup {
    /// One row per day (UTC).
    Day,
    /// One row per model.
    Model,
    /// One row per project (working directory).
    Project,
}

/// Arguments of `dsh doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// The agent options.
    #[command(flatten)]
    pub(crate) stack: StackArgs,
}

/// Parses `--older-than`: a whole number followed by `m` (minutes), `h`,
/// `d` or `w` (weeks).
///
/// # Errors
/// Any other text, or an age past `u64` seconds, with the form expected.
pub(crate) fn parse_age(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let bad = || {
        format!("invalid age {text:?}: expected a number followed by m, h, d or w (e.g. 30d, 12h)")
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    let secs_per = match unit {
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(secs_per)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

/// Parses `--wait-jobs`: a whole number followed by `ms`, `s`, `m` or `h`.
///
/// # Errors
/// Any other text, or a duration past `u64` milliseconds, with the form
/// expected.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let bad = || {
        format!("invalid duration {text:?}: expected a number followed by ms, s, m or h (e.g. 30s, 10m)")
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    let ms_per = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(bad()),
    };
    n.checked_mul(ms_per)
        .map(Duration::from_millis)
        .ok_or_else(bad)
}
