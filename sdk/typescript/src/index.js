// @dsh/sdk: a client for `dsh serve`, dsh's session API (JSON-RPC 2.0 over
// stdio or WebSocket). No dependencies: Node's child_process (loaded only
// by Client.spawn) and the platform's WebSocket (Client.connect). The
// types are in index.d.ts.
//
// One reader takes every message the server sends: an answer settles the
// call waiting for it, a `session.event` or `session.lost` notification
// goes to that session's EventStream. Calls may run concurrently.

/** Every method of the protocol, in `initialize`'s order. */
export const METHODS = Object.freeze([
  "initialize",
  "session/create",
  "session/load",
  "session/fork",
  "session/list",
  "session/info",
  "session/close",
  "session/subscribe",
  "session/unsubscribe",
  "session/prompt",
  "session/steer",
  "session/abort",
  "session/set_model",
  "session/set_permission",
  "session/set_plan_mode",
  "session/compact",
  "session/answer",
  "session/answer_question",
  "session/command",
  "session/files",
  "session/events",
  "session/log",
  "shutdown",
]);

/** The `type` of every event, in the protocol's order. */
export const EVENT_TYPES = Object.freeze([
  "session_started",
  "warning",
  "user_message",
  "turn_started",
  "message_delta",
  "reasoning_delta",
  "message_completed",
  "tool_started",
  "tool_running",
  "tool_finished",
  "todos",
  "approval_asked",
  "approval_decided",
  "question_asked",
  "question_answered",
  "status",
  "activity",
  "usage",
  "context",
  "turn_ended",
  "error",
  "model_changed",
  "permission_changed",
  "plan_mode_changed",
  "compacted",
  "files_restored",
  "rewound",
  "title_changed",
  "log",
  "closed",
]);

/** The protocol version this SDK speaks. */
export const PROTOCOL_VERSION = 1;

/** How long close() waits for the server to end the connection. */
const CLOSE_TIMEOUT_MS = 10_000;

/** JSON-RPC's own codes, as the `code` of an error without a dsh code. */
const RPC_CODES = {
  "-32700": "RPC_PARSE_ERROR",
  "-32600": "RPC_INVALID_REQUEST",
  "-32601": "RPC_METHOD_NOT_FOUND",
  "-32602": "RPC_INVALID_PARAMS",
};

/** A call failed, or the connection did; `code` says which (index.d.ts). */
export class DshError extends Error {
  constructor(code, message, { rpcCode, status, data } = {}) {
    super(`${code}: ${message}`);
    this.name = "DshError";
    this.code = code;
    this.detail = message;
    if (rpcCode !== undefined) this.rpcCode = rpcCode;
    if (status !== undefined) this.status = status;
    if (data !== undefined) this.data = data;
  }

  /** The error of a JSON-RPC error object (`{code, message, data?}`). */
  static fromRpc(error) {
    if (error === null || typeof error !== "object") {
      return new DshError("PROTOCOL_ERROR", `malformed error object: ${JSON.stringify(error)}`);
    }
    const rpcCode = Number.isInteger(error.code) ? error.code : undefined;
    const message = String(error.message ?? "");
    const data = error.data;
    if (data && typeof data === "object" && typeof data.code === "string") {
      return new DshError(data.code, String(data.message ?? message), { rpcCode, data });
    }
    const code = (rpcCode !== undefined && RPC_CODES[rpcCode]) || "RPC_ERROR";
    return new DshError(code, message, { rpcCode, data });
  }
}

const END = Symbol("end");

/**
 * A subscribed session's events (Client.events): an async iterator of
 * events and `{type: "lost", from, to}` gaps. Ends after `closed`,
 * close()/unsubscribe, closeSession and client.close(); rejects with
 * CONNECTION_CLOSED when the connection is lost. Leaving a `for await`
 * early keeps the subscription (there is no return()): iterate again to
 * go on. Events are buffered until read; one reader at a time.
 */
class EventStream {
  #client;
  #items = [];
  #waiters = [];
  #end = null;
  #ending = false;

  constructor(client, sessionId) {
    this.#client = client;
    this.sessionId = sessionId;
    this.nextSeq = 0;
    this.liveFrom = 0;
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  next() {
    if (this.#items.length > 0) return this.#take(this.#items.shift());
    if (this.#end) return this.#take(this.#end);
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  #take(item) {
    if (item?.[END]) {
      this.#end = item;
      return item.error ? Promise.reject(item.error) : Promise.resolve({ done: true, value: undefined });
    }
    return Promise.resolve({ done: false, value: item });
  }

  /** Unsubscribes (session/unsubscribe); the stream ends. */
  async close() {
    if (!this.#ending) await this.#client.unsubscribe(this.sessionId);
  }

  /** @internal */
  _push(item) {
    if (this.#ending) return;
    const waiter = this.#waiters.shift();
    if (waiter) waiter.resolve({ done: false, value: item });
    else this.#items.push(item);
  }

  /** @internal */
  _finish(error) {
    if (this.#ending) return;
    this.#ending = true;
    const end = { [END]: true, error };
    if (this.#items.length > 0) {
      this.#items.push(end);
      return;
    }
    this.#end = end;
    for (const waiter of this.#waiters.splice(0)) {
      if (error) waiter.reject(error);
      else waiter.resolve({ done: true, value: undefined });
    }
  }
}

/** A connection to `dsh serve`: Client.spawn(...) or Client.connect(url, token). */
export class Client {
  #transport;
  #nextId = 0;
  #pending = new Map();
  #streams = new Map();
  #closing = false;
  #ended = null;
  #endedPromise;
  #resolveEnded;

  /** @internal Use Client.spawn or Client.connect. */
  constructor(open) {
    this.server = undefined;
    this.#endedPromise = new Promise((resolve) => (this.#resolveEnded = resolve));
    this.#transport = open({
      message: (text) => this.#dispatch(text),
      end: (reason, error) => this.#end(reason, error),
    });
  }

  /** Starts `dsh serve --stdio ...args` and initializes it. */
  static async spawn(options = {}) {
    const transport = await spawnTransport(options);
    return Client.#initialized((sink) => transport.attach(sink), options.clientName);
  }

  /** Connects to a running `dsh serve` (its printed url, or a ws:// URL) and initializes. */
  static async connect(url, token, options = {}) {
    const transport = await webSocketTransport(url, token, options);
    return Client.#initialized((sink) => transport.attach(sink), options.clientName);
  }

  static async #initialized(open, clientName = "dsh-sdk-typescript") {
    const client = new Client(open);
    try {
      client.server = await client.initialize({ client: clientName });
    } catch (e) {
      await client.close();
      throw e;
    }
    return client;
  }

  /** Ends the connection; waiting calls and streams end. Idempotent. */
  async close() {
    if (!this.#closing) {
      this.#closing = true;
      this.#transport.close();
      let timer;
      const timeout = new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
      await Promise.race([this.#endedPromise, timeout]);
      clearTimeout(timer);
      await this.#transport.release();
      this.#end("the client was closed");
    }
    await this.#endedPromise;
  }

  /** Calls `method` with `params` and resolves to its result. */
  call(method, params = {}) {
    if (this.#ended) return Promise.reject(this.#ended);
    if (this.#closing) return Promise.reject(new DshError("CONNECTION_CLOSED", "the client is closed"));
    const id = ++this.#nextId;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      const frame = JSON.stringify({ jsonrpc: "2.0", id, method, params: withoutUndefined(params) });
      this.#transport.send(frame).catch(async (error) => {
        // The other side is gone; the reader learns why (an exit status)
        // when it sees the end.
        this.#pending.delete(id);
        let timer;
        await Promise.race([this.#endedPromise, new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]);
        clearTimeout(timer);
        reject(this.#ended ?? error);
      });
    });
  }

  #dispatch(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch (e) {
      this.#transport.close();
      this.#end("the server sent a message that is not JSON", new DshError("PROTOCOL_ERROR", `not JSON: ${text.slice(0, 200)}`));
      return;
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) return;
    if ("result" in message || "error" in message) {
      const pending = this.#pending.get(message.id);
      if (!pending) return; // an answer to nothing this client waits for
      this.#pending.delete(message.id);
      if ("error" in message) pending.reject(DshError.fromRpc(message.error));
      else pending.resolve(message.result);
      return;
    }
    const params = message.params;
    if (params === null || typeof params !== "object") return;
    const stream = this.#streams.get(params.sessionId);
    if (!stream) return;
    if (message.method === "session.event" && params.event && typeof params.event === "object") {
      stream._push(params.event);
      if (params.event.type === "closed") this.#dropStream(stream);
    } else if (message.method === "session.lost") {
      stream._push({ type: "lost", from: params.from, to: params.to });
    }
  }

  #end(reason, error) {
    if (this.#ended) return;
    this.#ended = error ?? new DshError("CONNECTION_CLOSED", this.#closing ? "the client was closed" : reason);
    for (const { reject } of this.#pending.values()) reject(this.#ended);
    this.#pending.clear();
    for (const stream of this.#streams.values()) stream._finish(this.#closing ? undefined : this.#ended);
    this.#streams.clear();
    this.#resolveEnded();
  }

  #dropStream(stream) {
    if (this.#streams.get(stream.sessionId) === stream) this.#streams.delete(stream.sessionId);
    stream._finish();
  }

  // -- the methods ------------------------------------------------------------

  initialize(params = {}) {
    return this.call("initialize", { protocol: PROTOCOL_VERSION, ...params });
  }

  createSession(params = {}) {
    return this.call("session/create", params);
  }

  loadSession(sessionId) {
    return this.call("session/load", { sessionId });
  }

  forkSession(sessionId) {
    return this.call("session/fork", { sessionId });
  }

  listSessions() {
    return this.call("session/list", {});
  }

  sessionInfo(sessionId) {
    return this.call("session/info", { sessionId });
  }

  async closeSession(sessionId) {
    await this.call("session/close", { sessionId });
    const stream = this.#streams.get(sessionId);
    if (stream) this.#dropStream(stream);
  }

  async events(sessionId, { fromSeq, log } = {}) {
    const old = this.#streams.get(sessionId);
    if (old) this.#dropStream(old);
    const stream = new EventStream(this, sessionId);
    this.#streams.set(sessionId, stream);
    try {
      const result = await this.call("session/subscribe", { sessionId, fromSeq, log: log || undefined });
      stream.nextSeq = result.nextSeq;
      stream.liveFrom = result.liveFrom;
    } catch (e) {
      this.#dropStream(stream);
      throw e;
    }
    return stream;
  }

  async unsubscribe(sessionId) {
    await this.call("session/unsubscribe", { sessionId });
    const stream = this.#streams.get(sessionId);
    if (stream) this.#dropStream(stream);
  }

  async prompt(sessionId, text) {
    await this.call("session/prompt", { sessionId, text });
  }

  async steer(sessionId, text) {
    await this.call("session/steer", { sessionId, text });
  }

  async abort(sessionId, reason) {
    await this.call("session/abort", { sessionId, reason });
  }

  async setModel(sessionId, model) {
    await this.call("session/set_model", { sessionId, model });
  }

  async setPermission(sessionId, mode) {
    await this.call("session/set_permission", { sessionId, mode });
  }

  setPlanMode(sessionId, on) {
    return this.call("session/set_plan_mode", { sessionId, on });
  }

  compact(sessionId, focus) {
    return this.call("session/compact", { sessionId, focus });
  }

  async answer(sessionId, approvalId, decision, note) {
    const body = typeof decision === "string" ? { decision } : { ...decision };
    if (note !== undefined) body.note = note;
    await this.call("session/answer", { sessionId, approvalId, decision: body });
  }

  async answerQuestion(sessionId, questionId, reply) {
    const body = Array.isArray(reply) ? { outcome: "answered", answers: reply } : reply;
    await this.call("session/answer_question", { sessionId, questionId, reply: body });
  }

  command(sessionId, line) {
    return this.call("session/command", { sessionId, line });
  }

  files(sessionId, { query, limit } = {}) {
    return this.call("session/files", { sessionId, query, limit });
  }

  readEvents(sessionId, { fromSeq, limit } = {}) {
    return this.call("session/events", { sessionId, fromSeq, limit });
  }

  readLog(sessionId, { fromSeq, limit } = {}) {
    return this.call("session/log", { sessionId, fromSeq, limit });
  }

  async shutdown() {
    await this.call("shutdown", {});
  }
}

/** `params` without its undefined fields (the protocol omits absent ones). */
function withoutUndefined(params) {
  if (params === null || typeof params !== "object" || Array.isArray(params)) return params;
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined));
}

// -- transports ------------------------------------------------------------------
//
// A transport is { attach(sink) -> { send(text): Promise, close(), release(): Promise } }:
// it hands every message to sink.message(text) and calls sink.end(reason,
// error?) once when the stream ends.

/** `dsh serve --stdio` as a child process, newline-delimited JSON. */
async function spawnTransport({ dsh = "dsh", args = [], cwd, env, stderr = "inherit" } = {}) {
  const { spawn } = await import("node:child_process");
  const path = await import("node:path");
  // A path with a slash is from our working directory, not from `cwd`.
  const command = dsh.includes(path.sep) ? path.resolve(dsh) : dsh;
  const child = spawn(command, ["serve", "--stdio", ...args], { cwd, env, stdio: ["pipe", "pipe", stderr] });
  await new Promise((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (e) => reject(new DshError("SPAWN_FAILED", `cannot start ${dsh}: ${e.message}`)));
  });
  const exited = new Promise((resolve) => child.once("close", (code, signal) => resolve(signal ?? code)));
  child.stdin.on("error", () => {}); // EPIPE once dsh is gone: send() reports it
  return {
    attach(sink) {
      const decoder = new TextDecoder("utf-8", { fatal: true });
      let chunks = [];
      child.stdout.on("data", (data) => {
        let start = 0;
        for (let at = data.indexOf(0x0a); at !== -1; at = data.indexOf(0x0a, start)) {
          chunks.push(data.subarray(start, at));
          const line = Buffer.concat(chunks);
          chunks = [];
          start = at + 1;
          let text;
          try {
            text = decoder.decode(line);
          } catch {
            sink.end("", new DshError("PROTOCOL_ERROR", "dsh sent a line that is not UTF-8"));
            child.stdin.end();
            return;
          }
          if (text.trim() !== "") sink.message(text);
        }
        if (start < data.length) chunks.push(data.subarray(start));
      });
      exited.then((status) => sink.end(`dsh serve --stdio exited with status ${status}`));
      return {
        send(text) {
          return new Promise((resolve, reject) => {
            if (!child.stdin.writable) {
              reject(new DshError("CONNECTION_CLOSED", "dsh's stdin is closed"));
              return;
            }
            child.stdin.write(`${text}\n`, (error) =>
              error ? reject(new DshError("CONNECTION_CLOSED", `cannot write to dsh: ${error.message}`)) : resolve(),
            );
          });
        },
        // End of input ends `dsh serve --stdio`: its sessions are closed,
        // their logs flushed.
        close() {
          child.stdin.end();
        },
        async release() {
          child.stdin.end();
          let timer;
          const late = new Promise((resolve) => (timer = setTimeout(() => resolve(true), CLOSE_TIMEOUT_MS)));
          if (await Promise.race([exited.then(() => false), late])) child.kill("SIGKILL");
          clearTimeout(timer);
          await exited;
        },
      };
    },
  };
}

/** A WebSocket to `dsh serve`'s /api/ws; the token goes as `?token=`. */
async function webSocketTransport(url, token, { WebSocket: Impl = globalThis.WebSocket, timeoutMs = 10_000 } = {}) {
  if (typeof Impl !== "function") {
    throw new DshError(
      "CONNECT_FAILED",
      "this platform has no WebSocket (Node 20: run with --experimental-websocket; Node 22 and browsers have one), or pass options.WebSocket",
    );
  }
  let target;
  try {
    target = webSocketUrl(url);
  } catch (e) {
    throw new DshError("CONNECT_FAILED", `not a WebSocket or HTTP URL: ${url}`);
  }
  target.searchParams.set("token", token);
  const socket = new Impl(target.href);
  const closed = new Promise((resolve) => socket.addEventListener("close", (e) => resolve(e), { once: true }));
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new DshError("HANDSHAKE_FAILED", `no handshake answer from ${target.host} in ${timeoutMs} ms`));
    }, timeoutMs);
    socket.addEventListener("open", () => (clearTimeout(timer), resolve()), { once: true });
    socket.addEventListener(
      "error",
      () => {
        clearTimeout(timer);
        refusal(target).then(reject);
      },
      { once: true },
    );
  });
  return {
    attach(sink) {
      socket.addEventListener("message", (e) => {
        if (typeof e.data === "string") sink.message(e.data);
        else {
          socket.close(1003, "dsh sends text");
          sink.end("", new DshError("PROTOCOL_ERROR", "the server sent a binary message"));
        }
      });
      closed.then((e) => sink.end(`the WebSocket closed (${e.code}${e.reason ? `: ${e.reason}` : ""})`));
      return {
        send(text) {
          if (socket.readyState !== 1) return Promise.reject(new DshError("CONNECTION_CLOSED", "the WebSocket is not open"));
          socket.send(text);
          return Promise.resolve();
        },
        close() {
          if (socket.readyState <= 1) socket.close(1000);
        },
        async release() {
          let timer;
          const late = new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
          await Promise.race([closed, late]);
          clearTimeout(timer);
        },
      };
    },
  };
}

/** The ws:// URL for `url`: an http(s) URL without a path means its /api/ws. */
function webSocketUrl(url) {
  const target = new URL(url);
  if (target.protocol === "http:" || target.protocol === "https:") {
    if (target.pathname === "/" || target.pathname === "") target.pathname = "/api/ws";
    target.protocol = target.protocol === "https:" ? "wss:" : "ws:";
  } else if (target.protocol !== "ws:" && target.protocol !== "wss:") {
    throw new TypeError(`unsupported scheme ${target.protocol}`);
  }
  return target;
}

/**
 * Why a WebSocket handshake failed: the WebSocket API does not tell the
 * HTTP status, so the same address is asked again over plain HTTP (the
 * token check answers before anything else: 401, 403 for an origin).
 */
async function refusal(target) {
  const http = new URL(target.href);
  http.protocol = target.protocol === "wss:" ? "https:" : "http:";
  let status;
  try {
    status = (await fetch(http, { redirect: "manual" })).status;
  } catch (e) {
    return new DshError("CONNECT_FAILED", `cannot connect to ${target.host}: ${e.cause?.message ?? e.message}`);
  }
  if (status === 401) return new DshError("UNAUTHORIZED", "the server answered the upgrade with HTTP 401 (a missing or wrong token)", { status });
  if (status === 403) return new DshError("FORBIDDEN", "the server answered the upgrade with HTTP 403 (an origin it refuses)", { status });
  return new DshError("HANDSHAKE_FAILED", `the WebSocket handshake with ${target.host} failed (HTTP ${status} without the upgrade)`, { status });
}
