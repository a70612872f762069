// Types of @dsh/sdk (src/index.js), written from the protocol's JSON Schema
// (`GET /api/protocol`, generated from crates/dsh-server/src/protocol.rs).
// Field names are the wire's (camelCase); an optional field is absent,
// never null.

// -- values ---------------------------------------------------------------------

/** The permission modes `session/create` and `session/set_permission` take. */
export type PermissionMode = "read-only" | "workspace-write" | "danger-full-access";

/** An answer to an approval question; `note` (for the model) goes with `reject` only. */
export type Decision =
  | { decision: "allow_once" }
  | { decision: "allow_always" }
  | { decision: "reject"; note?: string }
  | { decision: "cancelled" };

/** How an approval question can be answered. */
export type DecisionName = Decision["decision"];

/**
 * The answer to one `ask_user` question: option indexes (from 0; one
 * unless the question is `multiSelect`), free text, both, or neither
 * (`{}`: skipped).
 */
export interface QuestionAnswer {
  selected?: number[];
  text?: string;
}

/** The reply to a `question_asked` event: one answer per question, in order, or declined. */
export type QuestionReply =
  | { outcome: "answered"; answers: QuestionAnswer[] }
  | { outcome: "declined" };

// -- parameters ---------------------------------------------------------------

/** `initialize`: who the client is. */
export interface InitializeParams {
  /** The client's name, for logs. */
  client?: string;
  /** The protocol version the client speaks (default PROTOCOL_VERSION). */
  protocol?: number;
}

/** `session/create`: a new session; the server's defaults for what is left out. */
export interface CreateParams {
  /** Its workspace (absolute; default: the server's). */
  cwd?: string;
  /** The model (default: the configured one). */
  model?: string;
  /** The permission mode (default: the configured one). */
  permission?: PermissionMode;
  /** Start in plan mode. */
  planMode?: boolean;
}

/** The parameters of the methods that name only a session. */
export interface SessionParams {
  /** The session: the id it was opened under, or its log's. */
  sessionId: string;
}

/** `session/subscribe`. */
export interface SubscribeParams {
  sessionId: string;
  /** The first event wanted (default: from now). */
  fromSeq?: number;
  /** Also stream the session log's events (`type: "log"`). */
  log?: boolean;
}

/** `session/prompt` and `session/steer`. */
export interface PromptParams {
  sessionId: string;
  text: string;
}

/** `session/abort`. */
export interface AbortParams {
  sessionId: string;
  /** Why (logged with the turn's end). */
  reason?: string;
}

/** `session/set_model`. */
export interface SetModelParams {
  sessionId: string;
  model: string;
}

/** `session/set_permission`. */
export interface SetPermissionParams {
  sessionId: string;
  mode: PermissionMode;
}

/** `session/set_plan_mode`. */
export interface SetPlanModeParams {
  sessionId: string;
  on: boolean;
}

/** `session/compact`. */
export interface CompactParams {
  sessionId: string;
  /** What the summary should keep. */
  focus?: string;
}

/** `session/answer`. */
export interface AnswerParams {
  sessionId: string;
  /** The `approvalId` of the `approval_asked` event. */
  approvalId: string;
  decision: Decision;
}

/** `session/answer_question`. */
export interface AnswerQuestionParams {
  sessionId: string;
  /** The `questionId` of the `question_asked` event. */
  questionId: string;
  reply: QuestionReply;
}

/** `session/command`. */
export interface CommandParams {
  sessionId: string;
  /** The line, starting with `/`. */
  line: string;
}

/** `session/files`. */
export interface FilesParams {
  sessionId: string;
  /** Part of the path (case blind; empty or absent: any). */
  query?: string;
  /** At most this many (default 50, cap 1,000). */
  limit?: number;
}

/** The options of `Client.files`. */
export interface FilesOptions {
  query?: string;
  limit?: number;
}

/** `session/events` and `session/log`: a page of history. */
export interface PageParams {
  sessionId: string;
  /** The first number wanted (default 0). */
  fromSeq?: number;
  /** At most this many (default and cap 1,000). */
  limit?: number;
}

/** The options of `Client.events`. */
export interface EventsOptions {
  /** The first event wanted (default: from now); a reconnecting client passes the last `seq` it saw plus one. */
  fromSeq?: number;
  /** Also stream the session log's events (`type: "log"`). */
  log?: boolean;
}

/** The options of `Client.readEvents` and `Client.readLog`. */
export interface PageOptions {
  fromSeq?: number;
  limit?: number;
}

/** A result with nothing to say. */
export type Empty = Record<string, never>;

// -- results ------------------------------------------------------------------

/** `initialize`'s result. */
export interface InitializeResult {
  /** `dsh`. */
  server: string;
  /** dsh's version. */
  version: string;
  protocol: number;
  /** The methods served. */
  methods: string[];
  /** The chat commands `session/command` runs, in `/help` order. */
  commands: CommandInfo[];
}

/** One chat command. */
export interface CommandInfo {
  /** Its name, without the slash (`model`). */
  name: string;
  /** What it does, one sentence. */
  description: string;
  /** The argument it takes, when it takes one (`name`, `mode`); always optional. */
  hint?: string;
  /** Where a custom command comes from (`project` or `user`); absent for a built-in one. */
  scope?: "project" | "user" | (string & {});
}

/** What an open session is now. */
export interface SessionInfo {
  id: string;
  /** Its log file. */
  log?: string;
  cwd: string;
  model: string;
  /** The models the session may switch to (`session/set_model`). */
  models: string[];
  permission: string;
  planMode: boolean;
  status: string;
  /** `[tokens, window]` after the last request. */
  context?: [number, number];
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  title?: string;
}

/** A session as `session/create`, `load`, `fork` and `info` return it. */
export interface SessionResult {
  /** The id to name it by in later calls (stays the same after `/clear`). */
  sessionId: string;
  info: SessionInfo;
  /** Its custom commands (Markdown command files), which `session/command` runs like the built-in ones `initialize` lists. */
  commands?: CommandInfo[];
}

/** An open session in `session/list`. */
export interface OpenSession {
  sessionId: string;
  info: SessionInfo;
}

/** A saved session in `session/list`. */
export interface SavedSession {
  sessionId: string;
  /** When it started, milliseconds since the Unix epoch. */
  createdMs: number;
  title?: string;
  firstPrompt?: string;
  turns: number;
  tokens: number;
}

/** `session/list`'s result. */
export interface ListResult {
  open: OpenSession[];
  /** Newest first. */
  saved: SavedSession[];
}

/** `session/subscribe`'s result. */
export interface SubscribeResult {
  /** The number the next event published will have. */
  nextSeq: number;
  /** The first number after a resumed session's replayed history. */
  liveFrom: number;
}

/** `session/set_plan_mode`'s result. */
export interface Changed {
  changed: boolean;
}

/** `session/compact`'s result. */
export interface Text {
  text: string;
}

/** `session/command`'s result. */
export interface CommandResult {
  /** The reply, worded for a person. */
  text: string;
  /** Whether the command failed (`text` says why). */
  failed: boolean;
  /** `/exit`: the client should leave the session. */
  exit: boolean;
}

/** `session/files`' result. */
export interface FilesResult {
  /** Paths relative to the workspace, shortest first (ignored and hidden files left out). */
  paths: string[];
}

/** `session/events`' result. */
export interface EventsPage {
  events: Event[];
  /** Where the next page starts. */
  nextSeq: number;
  /** When events before `fromSeq` were dropped: the first number held. */
  oldestSeq?: number;
}

/** One event of a session's log (a JSONL line). */
export interface LogEvent {
  type: string;
  seq: number;
  time: number;
  data: unknown;
}

/** `session/log`'s result. */
export interface LogPage {
  events: LogEvent[];
  /** Where the next page starts. */
  nextSeq: number;
}

/** The `error` of a failed JSON-RPC response. */
export interface RpcError {
  /** JSON-RPC's code (-32000: a dsh error). */
  code: number;
  message: string;
  /** dsh's stable code and message. */
  data?: { code: string; message: string };
}

/** Every method: its params and its result (what `Client.call` takes and gives). */
export interface Methods {
  initialize: { params: InitializeParams; result: InitializeResult };
  "session/create": { params: CreateParams; result: SessionResult };
  "session/load": { params: SessionParams; result: SessionResult };
  "session/fork": { params: SessionParams; result: SessionResult };
  "session/list": { params: Empty; result: ListResult };
  "session/info": { params: SessionParams; result: SessionResult };
  "session/close": { params: SessionParams; result: Empty };
  "session/subscribe": { params: SubscribeParams; result: SubscribeResult };
  "session/unsubscribe": { params: SessionParams; result: Empty };
  "session/prompt": { params: PromptParams; result: Empty };
  "session/steer": { params: PromptParams; result: Empty };
  "session/abort": { params: AbortParams; result: Empty };
  "session/set_model": { params: SetModelParams; result: Empty };
  "session/set_permission": { params: SetPermissionParams; result: Empty };
  "session/set_plan_mode": { params: SetPlanModeParams; result: Changed };
  "session/compact": { params: CompactParams; result: Text };
  "session/answer": { params: AnswerParams; result: Empty };
  "session/answer_question": { params: AnswerQuestionParams; result: Empty };
  "session/command": { params: CommandParams; result: CommandResult };
  "session/files": { params: FilesParams; result: FilesResult };
  "session/events": { params: PageParams; result: EventsPage };
  "session/log": { params: PageParams; result: LogPage };
  shutdown: { params: Empty; result: Empty };
}

/** A method's name. */
export type Method = keyof Methods;

// -- events -------------------------------------------------------------------

/** What every event carries. */
export interface EventBase {
  /** Its number in the session's stream (from 0, growing by one, with gaps for events not shown). */
  seq: number;
  /** Milliseconds since the Unix epoch. */
  time: number;
}

/** Who sent a message. */
export interface MessageSource {
  /** `user`, `plugin`, `agent`, or a kind this SDK does not know. */
  kind: string;
  plugin?: string;
  agent_id?: string;
  [field: string]: unknown;
}

/** How a turn ended. */
export interface TurnEndReason {
  /** `completed`, `aborted`, `error`, `disposed`, `max-steps`, `interrupted`, ... */
  kind: string;
  reason?: string;
  message?: string;
  code?: string;
  [field: string]: unknown;
}

/** A file change. */
export interface FileDiff {
  path: string;
  /** Absent for a new file. */
  oldText?: string;
  newText: string;
}

/** One item of the todo list. */
export interface TodoEntry {
  content: string;
  status: string;
}

/** One choice of an `ask_user` question. */
export interface QuestionChoice {
  label: string;
  description?: string;
}

/** One `ask_user` question; the person may always answer in free text. */
export interface QuestionSpec {
  question: string;
  /** A short label (`Database`). */
  header?: string;
  /** The choices, in order: an answer selects their indexes. */
  options?: QuestionChoice[];
  /** Whether several options may be chosen. */
  multiSelect?: boolean;
}

/** First event; again after `/clear` (`cleared`: the old log's id). */
export interface SessionStarted extends EventBase {
  type: "session_started";
  sessionId: string;
  model: string;
  permission: string;
  planMode: boolean;
  cwd: string;
  resumed: boolean;
  cleared?: string;
}
/** An ignored config key, a repaired log, an MCP server that did not start. */
export interface Warning extends EventBase {
  type: "warning";
  message: string;
}
/** A message started (or steered) a turn. */
export interface UserMessage extends EventBase {
  type: "user_message";
  text: string;
  source: MessageSource;
  steering?: boolean;
}
/** A turn started. */
export interface TurnStarted extends EventBase {
  type: "turn_started";
  turn: number;
}
/** Answer text as the model streams it. */
export interface MessageDelta extends EventBase {
  type: "message_delta";
  text: string;
}
/** Reasoning text as the model streams it. */
export interface ReasoningDelta extends EventBase {
  type: "reasoning_delta";
  text: string;
}
/** A step's message is complete. */
export interface MessageCompleted extends EventBase {
  type: "message_completed";
  text: string;
}
/** The model called a tool; `arguments` is JSON text. */
export interface ToolStarted extends EventBase {
  type: "tool_started";
  callId: string;
  name: string;
  arguments: string;
  title: string;
}
/** The call passed the boundary and approval. */
export interface ToolRunning extends EventBase {
  type: "tool_running";
  callId: string;
}
/** A call's result. */
export interface ToolFinished extends EventBase {
  type: "tool_finished";
  callId: string;
  name: string;
  isError: boolean;
  output: string;
  diff?: FileDiff;
}
/** The todo list changed. */
export interface Todos extends EventBase {
  type: "todos";
  items: TodoEntry[];
}
/** A question for the person: answer it with `Client.answer`. */
export interface ApprovalAsked extends EventBase {
  type: "approval_asked";
  approvalId: string;
  kind: "tool" | "plan";
  callId: string;
  tool: string;
  /** The call's arguments, JSON text. */
  arguments: string;
  summary: string;
  detail?: string;
  justification?: string;
  /** The permission rule "always allow" would save (`bash(cargo test:*)`). */
  suggestedRule?: string;
}
/** A question was answered (or withdrawn: `cancelled`). */
export interface ApprovalDecided extends EventBase {
  type: "approval_decided";
  approvalId: string;
  decision: Decision;
}
/** The model asks the person (`ask_user`): reply with `Client.answerQuestion`. */
export interface QuestionAsked extends EventBase {
  type: "question_asked";
  questionId: string;
  callId: string;
  questions: QuestionSpec[];
}
/** The questions were answered or declined (a withdrawn question reads as declined). */
export interface QuestionAnswered extends EventBase {
  type: "question_answered";
  questionId: string;
  reply: QuestionReply;
}
/** The agent's status; the session takes a new prompt once it is `idle`. */
export interface Status extends EventBase {
  type: "status";
  status: "idle" | "running" | "disposed" | (string & {});
}
/** What the agent is doing now, told when it changes. */
export interface Activity extends EventBase {
  type: "activity";
  state: "thinking" | "streaming" | "running" | "waiting" | "idle" | (string & {});
  /** For `running`: the tool call's title. */
  detail?: string;
}
/** A request's token usage. */
export interface Usage extends EventBase {
  type: "usage";
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
}
/** The context meter after a request. */
export interface Context extends EventBase {
  type: "context";
  tokens: number;
  window: number;
}
/** A turn ended, with its timings. */
export interface TurnEnded extends EventBase {
  type: "turn_ended";
  turn: number;
  reason: TurnEndReason;
  finish?: string;
  durationMs: number;
  firstTokenMs?: number;
  outputTokens: number;
  tokensPerSecond?: number;
  cacheHitRate?: number;
}
/** An error was logged. */
export interface ErrorEvent extends EventBase {
  type: "error";
  code?: string;
  message: string;
}
/** The model changed. */
export interface ModelChanged extends EventBase {
  type: "model_changed";
  model: string;
}
/** The permission mode changed. */
export interface PermissionChanged extends EventBase {
  type: "permission_changed";
  mode: string;
}
/** Plan mode was turned on or off. */
export interface PlanModeChanged extends EventBase {
  type: "plan_mode_changed";
  on: boolean;
}
/** The history was compacted. */
export interface Compacted extends EventBase {
  type: "compacted";
  tokensAfter: number;
}
/** Files were set back to a checkpoint (`/undo`, `/redo`, `/rewind`). */
export interface FilesRestored extends EventBase {
  type: "files_restored";
  action: "undo" | "redo" | "rewind";
  turn: number;
  restored: string[];
  deleted: string[];
  userChanged: string[];
}
/** The conversation went back to before turn `toTurn`. */
export interface Rewound extends EventBase {
  type: "rewound";
  toTurn: number;
}
/** The session got a title. */
export interface TitleChanged extends EventBase {
  type: "title_changed";
  title: string;
}
/** A log event (only when subscribed with `log: true`). */
export interface Log extends EventBase {
  type: "log";
  event: LogEvent;
}
/** The session closed: the last event of its stream. */
export interface Closed extends EventBase {
  type: "closed";
  reason: string;
}

/** Every event of a session's stream, told apart by `type`. */
export type Event =
  | SessionStarted
  | Warning
  | UserMessage
  | TurnStarted
  | MessageDelta
  | ReasoningDelta
  | MessageCompleted
  | ToolStarted
  | ToolRunning
  | ToolFinished
  | Todos
  | ApprovalAsked
  | ApprovalDecided
  | QuestionAsked
  | QuestionAnswered
  | Status
  | Activity
  | Usage
  | Context
  | TurnEnded
  | ErrorEvent
  | ModelChanged
  | PermissionChanged
  | PlanModeChanged
  | Compacted
  | FilesRestored
  | Rewound
  | TitleChanged
  | Log
  | Closed;

/** An event's `type`. */
export type EventType = Event["type"];

/**
 * Not a server event: the `session.lost` notification in the stream.
 * Events `from` to `to` (exclusive) were dropped because this client read
 * too slowly; `Client.readLog` still has them.
 */
export interface Lost {
  type: "lost";
  from: number;
  to: number;
}

/** What an EventStream yields. */
export type StreamItem = Event | Lost;

/** The `session.event` notification's params. */
export interface EventNotification {
  sessionId: string;
  event: Event;
}

/** The `session.lost` notification's params. */
export interface LostNotification {
  sessionId: string;
  from: number;
  to: number;
}

// -- the client ---------------------------------------------------------------

/** Every method of the protocol, in `initialize`'s order. */
export declare const METHODS: readonly Method[];
/** The `type` of every event, in the protocol's order. */
export declare const EVENT_TYPES: readonly EventType[];
/** The protocol version this SDK speaks. */
export declare const PROTOCOL_VERSION: 1;

/**
 * The codes the SDK gives errors that carry no dsh code: `RPC_*` (a
 * JSON-RPC error without one; `rpcCode` says which), `CONNECTION_CLOSED`
 * (the connection ended, or was closed, before the answer), `SPAWN_FAILED`
 * (the dsh binary could not be started), `CONNECT_FAILED` (no connection,
 * no WebSocket on this platform, a bad URL), `UNAUTHORIZED` (HTTP 401: a
 * missing or wrong token), `FORBIDDEN` (HTTP 403: a refused origin),
 * `HANDSHAKE_FAILED` (any other failed handshake), `PROTOCOL_ERROR` (the
 * server broke the framing).
 */
export type SdkErrorCode =
  | "RPC_PARSE_ERROR"
  | "RPC_INVALID_REQUEST"
  | "RPC_METHOD_NOT_FOUND"
  | "RPC_INVALID_PARAMS"
  | "RPC_ERROR"
  | "CONNECTION_CLOSED"
  | "SPAWN_FAILED"
  | "CONNECT_FAILED"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "HANDSHAKE_FAILED"
  | "PROTOCOL_ERROR";

/** A call failed, or the connection did. `message` is `"<code>: <detail>"`. */
export declare class DshError extends Error {
  constructor(code: string, message: string, options?: { rpcCode?: number; status?: number; data?: unknown });
  /** dsh's stable code (`UNKNOWN_SESSION`, `TURN_RUNNING`, ... docs/error-codes.md) or an SdkErrorCode. */
  readonly code: SdkErrorCode | (string & {});
  /** The server's (or the SDK's) message, without the code. */
  readonly detail: string;
  /** The JSON-RPC error code, for an error the server sent. */
  readonly rpcCode?: number;
  /** The HTTP status of a refused WebSocket handshake. */
  readonly status?: number;
  /** The error object's `data`. */
  readonly data?: unknown;
  /** The error of a JSON-RPC error object. */
  static fromRpc(error: unknown): DshError;
}

/**
 * A subscribed session's events (from `Client.events`): events and `lost`
 * gaps, in order. It ends after the `closed` event, `close()` or
 * `Client.unsubscribe`, `Client.closeSession` and `Client.close`; it
 * rejects with `CONNECTION_CLOSED` when the connection is lost. Leaving a
 * `for await` early keeps the subscription: iterate again to go on.
 * Events are buffered until read; one reader at a time.
 */
export interface EventStream extends AsyncIterableIterator<StreamItem> {
  readonly sessionId: string;
  /** The number the next event published would have when subscribed. */
  readonly nextSeq: number;
  /** The first number after a resumed session's replayed history. */
  readonly liveFrom: number;
  next(): Promise<IteratorResult<StreamItem, undefined>>;
  /** Unsubscribes; the stream ends. */
  close(): Promise<void>;
}

/** The options of `Client.spawn`. */
export interface SpawnOptions {
  /** The dsh binary (default `dsh` on PATH; a path with a slash is from our working directory). */
  dsh?: string;
  /** Arguments after `dsh serve --stdio` (`--model`, `--permission`, `--session-dir`, ...). */
  args?: string[];
  /** Its working directory. */
  cwd?: string;
  /** Its environment (default: ours). */
  env?: Record<string, string | undefined>;
  /** Where its stderr goes (default `inherit`). */
  stderr?: "inherit" | "ignore" | "pipe";
  /** The name `initialize` gives (default `dsh-sdk-typescript`). */
  clientName?: string;
}

/** What the SDK uses of a WebSocket (the WHATWG API: browsers, Node, the `ws` package). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "error", listener: () => void, options?: { once?: boolean }): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void, options?: { once?: boolean }): void;
}

/** The options of `Client.connect`. */
export interface ConnectOptions {
  /** The WebSocket class (default `globalThis.WebSocket`). */
  WebSocket?: new (url: string) => WebSocketLike;
  /** How long the handshake may take (default 10,000 ms). */
  timeoutMs?: number;
  /** The name `initialize` gives (default `dsh-sdk-typescript`). */
  clientName?: string;
}

/** A connection to `dsh serve`. Every method rejects with a DshError when the call fails. */
export declare class Client {
  /** Starts `dsh serve --stdio ...args` and initializes it; the process ends when the client is closed. */
  static spawn(options?: SpawnOptions): Promise<Client>;
  /**
   * Connects to a running `dsh serve` and initializes. `url` is what it
   * printed (`http://127.0.0.1:<port>`, meaning its `/api/ws`) or a `ws://`
   * URL; `token` goes as `?token=`. A wrong token rejects with
   * `UNAUTHORIZED` (HTTP 401).
   */
  static connect(url: string, token: string, options?: ConnectOptions): Promise<Client>;
  private constructor();

  /** `initialize`'s answer, from spawn or connect. */
  server: InitializeResult | undefined;

  /** Ends the connection (a spawned server exits, closing its sessions); waiting calls and streams end. Idempotent. */
  close(): Promise<void>;

  /**
   * Calls a method with its params (typed for the protocol's methods,
   * `object` for any other name) and resolves to its result.
   */
  call<M extends string>(
    method: M,
    ...params: M extends Method ? [params: Methods[M]["params"]] : [params?: object]
  ): Promise<M extends Method ? Methods[M]["result"] : unknown>;

  /** `initialize`: says who the client is. */
  initialize(params?: InitializeParams): Promise<InitializeResult>;
  /** `session/create`: a new session. */
  createSession(params?: CreateParams): Promise<SessionResult>;
  /** `session/load`: opens a saved session (its history replayed as events from 0), or returns the open one. */
  loadSession(sessionId: string): Promise<SessionResult>;
  /** `session/fork`: a new session whose history is a copy of another's. */
  forkSession(sessionId: string): Promise<SessionResult>;
  /** `session/list`: the open and the saved sessions. */
  listSessions(): Promise<ListResult>;
  /** `session/info`: what an open session is now. */
  sessionInfo(sessionId: string): Promise<SessionResult>;
  /** `session/close`: its turn aborted, its log flushed; this client's stream of it ends. */
  closeSession(sessionId: string): Promise<void>;
  /**
   * `session/subscribe`: the session's events from `fromSeq` (default: from
   * now). While subscribed this client is asked the session's approval
   * questions. A second call for the same session ends the first stream.
   */
  events(sessionId: string, options?: EventsOptions): Promise<EventStream>;
  /** `session/unsubscribe`: stops the session's stream. */
  unsubscribe(sessionId: string): Promise<void>;
  /** `session/prompt`: a message that starts a turn (`TURN_RUNNING` while one runs: wait for the `idle` status). */
  prompt(sessionId: string, text: string): Promise<void>;
  /** `session/steer`: a message into the running turn (or a new one). */
  steer(sessionId: string, text: string): Promise<void>;
  /** `session/abort`: aborts the running turn. */
  abort(sessionId: string, reason?: string): Promise<void>;
  /** `session/set_model`: the model for the next requests. */
  setModel(sessionId: string, model: string): Promise<void>;
  /** `session/set_permission`: the permission mode. */
  setPermission(sessionId: string, mode: PermissionMode): Promise<void>;
  /** `session/set_plan_mode`: plan mode on or off; whether it changed. */
  setPlanMode(sessionId: string, on: boolean): Promise<Changed>;
  /** `session/compact`: compacts the history now (between turns). */
  compact(sessionId: string, focus?: string): Promise<Text>;
  /** `session/answer`: answers an `approval_asked` event; the first answer wins (`UNKNOWN_APPROVAL` after). */
  answer(sessionId: string, approvalId: string, decision: DecisionName | Decision, note?: string): Promise<void>;
  /**
   * `session/answer_question`: replies to a `question_asked` event (an
   * array of answers, one per question, or a whole `QuestionReply` such as
   * `{ outcome: "declined" }`); the first reply wins (`UNKNOWN_QUESTION`
   * after, `INVALID_ANSWER` when the answers do not fit).
   */
  answerQuestion(sessionId: string, questionId: string, reply: QuestionAnswer[] | QuestionReply): Promise<void>;
  /** `session/command`: a chat command line (`/model`, `/todo`, ...). */
  command(sessionId: string, line: string): Promise<CommandResult>;
  /** `session/files`: workspace paths containing `query`, shortest first (for `@` completion). */
  files(sessionId: string, options?: FilesOptions): Promise<FilesResult>;
  /** `session/events`: a page of the events the session still holds. */
  readEvents(sessionId: string, options?: PageOptions): Promise<EventsPage>;
  /** `session/log`: a page (at most 1,000) of the session's log events. */
  readLog(sessionId: string, options?: PageOptions): Promise<LogPage>;
  /** `shutdown`: over stdio the server stops; over a WebSocket only this connection ends. */
  shutdown(): Promise<void>;
}
