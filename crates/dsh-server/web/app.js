// dsh web: the browser app. One WebSocket (JSON-RPC, rpc.js) to the
// server; one session shown at a time (its id in the address's hash, so
// a reload shows it again); the session's events from sequence 0 on load
// and from the last one seen plus one after a reconnect.

import { $, h, clear, when, count } from "./dom.js";
import { Rpc } from "./rpc.js";
import { Conversation } from "./view.js";
import { Composer } from "./composer.js";

const PERMISSIONS = ["read-only", "workspace-write", "danger-full-access"];
/** Time spent showing queued live events before the page gets to paint. */
const FRAME_BUDGET_MS = 12;
/** The same while replaying history (nothing to watch stream yet). */
const REPLAY_BUDGET_MS = 80;

const ui = {
  app: $("app"),
  sessions: $("sessions"),
  search: $("search"),
  newSession: $("new-session"),
  toggleSidebar: $("toggle-sidebar"),
  title: $("session-title"),
  cwd: $("session-cwd"),
  model: $("model"),
  permission: $("permission"),
  plan: $("plan-mode"),
  meter: $("meter"),
  conn: $("conn"),
  scroller: $("scroller"),
  log: $("log"),
  empty: $("empty"),
  banner: $("banner"),
};

/** The session shown: its key (the id to call it by), status, facts. */
let current = null;
let lastSeq = -1;
let historyUntil = Infinity;
let selecting = 0;
let stickToBottom = true;
let filesSupported = true;
let listed = { open: [], saved: [] };

const queue = [];
let queueHead = 0;
let scheduled = false;

const conv = new Conversation({
  log: ui.log,
  approvals: $("approvals"),
  todos: $("todos"),
  hooks: {
    answer: (approvalId, decision) => call("session/answer", { approvalId, decision }),
    answerQuestion: (questionId, reply) => call("session/answer_question", { questionId, reply }),
    state: applyState,
  },
});

const composer = new Composer({
  form: $("composer"),
  input: $("input"),
  stop: $("stop"),
  send: $("send"),
  completions: $("completions"),
  hooks: {
    submit,
    stop: () => current && call("session/abort", { reason: "stopped in the browser" }).catch(noteError("Stop failed")),
    commands,
    files,
  },
});

const rpc = new Rpc({
  onopen: connected,
  onclose: (was) => {
    setConn(was ? "reconnecting\u2026" : "connecting\u2026", "down");
    if (!was) checkAuth();
  },
  onnotify: notified,
});

/** Calls `method` on the session shown. */
function call(method, params = {}) {
  if (!current) return Promise.reject(new Error("no session"));
  return rpc.call(method, { sessionId: current.key, ...params });
}

function noteError(title) {
  return (e) => {
    conv.localNote(title, e && e.message ? e.message : String(e), "error");
    schedule();
  };
}

function setConn(text, kind) {
  ui.conn.textContent = text;
  ui.conn.className = "conn " + kind;
}

async function checkAuth() {
  try {
    const r = await fetch("/api/sessions", { credentials: "same-origin" });
    if (r.status === 401) {
      ui.banner.textContent = "Not signed in: open the \u201copen:\u201d link that `dsh web` printed (it carries the token).";
      ui.banner.hidden = false;
    }
  } catch {
    // The server is down; the socket keeps trying.
  }
}

// ---- connection -------------------------------------------------------------

async function connected() {
  setConn("connected", "up");
  ui.banner.hidden = true;
  refreshList();
  if (current) {
    try {
      const r = await rpc.call("session/subscribe", { sessionId: current.key, fromSeq: lastSeq + 1 });
      historyUntil = Math.min(historyUntil, r.nextSeq);
    } catch (e) {
      // The server restarted: open the session again from its log.
      select(current.key);
    }
    return;
  }
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (wanted) select(wanted);
  else showEmpty(true);
}

function notified(method, params) {
  if (!current || params.sessionId !== current.key) return;
  if (method === "session.event") {
    queue.push(params.event);
    schedule();
  } else if (method === "session.lost") {
    conv.localNote("Some events were not received", `Events ${params.from} to ${params.to - 1} were dropped before this page read them; the session's log has them.`, "warn");
    lastSeq = Math.max(lastSeq, params.to - 1);
    schedule();
  }
}

// ---- the event pump: events shown in slices, markdown once a frame ----------

function schedule() {
  if (scheduled) return;
  scheduled = true;
  const run = () => {
    if (!scheduled) return;
    scheduled = false;
    pump();
  };
  requestAnimationFrame(run);
  // Hidden tabs get no frames; the timer keeps them current.
  setTimeout(run, 60);
}

function atBottom() {
  const s = ui.scroller;
  return s.scrollHeight - s.scrollTop - s.clientHeight < 48;
}

function pump() {
  // While the history replays the page sticks to its end without asking
  // where it is (a layout each slice).
  const stick = stickToBottom || atBottom();
  const t0 = performance.now();
  const budget = queueHead < queue.length && queue[queueHead].seq < historyUntil ? REPLAY_BUDGET_MS : FRAME_BUDGET_MS;
  while (queueHead < queue.length && performance.now() - t0 < budget) {
    const e = queue[queueHead++];
    if (e.seq <= lastSeq) continue;
    lastSeq = e.seq;
    conv.push(e, e.seq >= historyUntil);
    if (e.type === "title_changed" || e.type === "turn_ended") refreshListSoon();
  }
  if (queueHead >= queue.length) {
    queue.length = 0;
    queueHead = 0;
  }
  conv.render();
  if (stick) ui.scroller.scrollTop = ui.scroller.scrollHeight;
  if (queueHead < queue.length) schedule();
  else stickToBottom = false;
}

// ---- the session shown --------------------------------------------------------

/** Shows session `id` (open, or saved: then opened from its log). */
async function select(id) {
  const mine = ++selecting;
  if (current && current.key !== id) rpc.call("session/unsubscribe", { sessionId: current.key }).catch(() => {});
  let res;
  try {
    res = await rpc.call("session/load", { sessionId: id });
  } catch (e) {
    if (mine !== selecting) return;
    current = null;
    conv.reset();
    showEmpty(true, `Cannot open session ${id}: ${e.message}`);
    history.replaceState(null, "", location.pathname);
    return;
  }
  if (mine !== selecting) return;
  current = { key: res.sessionId, status: res.info.status, title: res.info.title || "", info: res.info, commands: customCommands(res) };
  lastSeq = -1;
  historyUntil = Infinity;
  queue.length = 0;
  queueHead = 0;
  stickToBottom = true;
  conv.reset();
  showEmpty(false);
  showModels(res.info.models || []);
  applyState({
    model: res.info.model,
    permission: res.info.permission,
    planMode: res.info.planMode,
    status: res.info.status,
    title: res.info.title || "",
    cwd: res.info.cwd,
    context: res.info.context,
    closed: false,
  });
  if (decodeURIComponent(location.hash.slice(1)) !== res.sessionId) {
    history.replaceState(null, "", "#" + encodeURIComponent(res.sessionId));
  }
  markActive();
  try {
    const r = await rpc.call("session/subscribe", { sessionId: res.sessionId, fromSeq: 0 });
    if (mine === selecting) historyUntil = r.nextSeq;
  } catch (e) {
    noteError("Cannot follow the session")(e);
  }
  ui.app.classList.remove("show-sidebar");
}

async function newSession() {
  try {
    const res = await rpc.call("session/create", {});
    await select(res.sessionId);
    refreshList();
    return true;
  } catch (e) {
    showEmpty(true, `Cannot start a session: ${e.message}`);
    return false;
  }
}

function showEmpty(on, message) {
  ui.empty.hidden = !on;
  if (message) $("empty-message").textContent = message;
  composer.setEnabled(true);
  if (on) {
    ui.title.textContent = "dsh";
    ui.cwd.textContent = "";
    document.title = "dsh";
    composer.setRunning(false);
    for (const c of [ui.model, ui.permission, ui.plan]) c.disabled = true;
  }
}

/** Session facts from its events or an info answer, into the header. */
function applyState(s) {
  if (!current) return;
  if (s.model !== undefined) {
    current.model = s.model;
    if (![...ui.model.options].some((o) => o.value === s.model)) ui.model.appendChild(h("option", { value: s.model }, s.model));
    ui.model.value = s.model;
    ui.model.disabled = false;
  }
  if (s.permission !== undefined) {
    ui.permission.value = s.permission;
    ui.permission.disabled = false;
  }
  if (s.planMode !== undefined) {
    ui.plan.checked = !!s.planMode;
    ui.plan.disabled = false;
  }
  if (s.status !== undefined) {
    current.status = s.status;
    composer.setRunning(s.status === "running");
    ui.app.classList.toggle("running", s.status === "running");
  }
  if (s.title !== undefined) {
    if (s.title) current.title = s.title;
    showTitle();
  }
  if (s.cwd) ui.cwd.textContent = s.cwd;
  if (s.context) {
    const [tokens, window_] = s.context;
    ui.meter.textContent = `context ${count(tokens)} / ${count(window_)}`;
    ui.meter.title = `${tokens} of ${window_} tokens (${Math.round((tokens / window_) * 100)}%)`;
  }
  if (s.closed) {
    composer.setEnabled(false);
    composer.setRunning(false);
  }
}

/** The header's title: the session's title, else its first prompt. */
function showTitle() {
  if (!current) return;
  const saved = listed.saved.find((x) => x.sessionId === current.key || x.sessionId === current.info.id);
  const t = current.title || (saved && saved.firstPrompt) || "New session";
  ui.title.textContent = t;
  document.title = `${t} \u2014 dsh`;
}

// ---- header controls ------------------------------------------------------------

for (const m of PERMISSIONS) ui.permission.appendChild(h("option", { value: m }, m));

ui.model.addEventListener("change", () => {
  const model = ui.model.value;
  call("session/set_model", { model }).catch((e) => {
    ui.model.value = current.model;
    noteError("Model not changed")(e);
  });
});

ui.permission.addEventListener("change", () => {
  call("session/set_permission", { mode: ui.permission.value }).catch(noteError("Permission not changed"));
});

ui.plan.addEventListener("change", () => {
  call("session/set_plan_mode", { on: ui.plan.checked }).catch((e) => {
    ui.plan.checked = !ui.plan.checked;
    noteError("Plan mode not changed")(e);
  });
});

ui.newSession.addEventListener("click", () => newSession());
ui.toggleSidebar.addEventListener("click", () => ui.app.classList.toggle("show-sidebar"));

/** The model picker's choices: the models the session may switch to (its `info.models`); the current model is added by `applyState`. */
function showModels(models) {
  clear(ui.model);
  for (const n of new Set(models.filter((m) => typeof m === "string" && m))) ui.model.appendChild(h("option", { value: n }, n));
}

/** The chat commands `session/command` runs: the built-in ones (`initialize`'s `commands`: `{name, description, hint?}`, in `/help` order), then the session's custom ones (its `commands`, with `scope`). */
function commands() {
  const list = rpc.info && rpc.info.commands;
  const builtIn = Array.isArray(list) ? list : [];
  return current && current.commands ? builtIn.concat(current.commands) : builtIn;
}

/** A session result's custom commands, their description marked with where they come from (`(project) …`). */
function customCommands(res) {
  const list = Array.isArray(res.commands) ? res.commands : [];
  return list.map((c) => ({ ...c, description: c.scope ? `(${c.scope}) ${c.description}` : c.description }));
}

/** Looks at the session's custom commands again (`session/info`), for a `/name` that is not known: its file may be new. */
async function refreshCommands() {
  if (!current) return;
  try {
    const res = await call("session/info", { sessionId: current.key });
    if (current && res.sessionId === current.key) current.commands = customCommands(res);
  } catch {
    // The list stays as it was; the line goes to the model as a message.
  }
}

// ---- composer -------------------------------------------------------------------

async function submit(text) {
  if (!current && !(await newSession())) return false;
  const line = text.trim();
  if (line.startsWith("/") && !isCommand(line)) await refreshCommands();
  if (line.startsWith("/") && isCommand(line)) {
    try {
      const r = await call("session/command", { line });
      conv.localNote(line, r.text, r.failed ? "error" : "cmd");
      if (r.exit) {
        current = null;
        conv.reset();
        showEmpty(true);
        history.replaceState(null, "", location.pathname);
      }
    } catch (e) {
      noteError(line)(e);
    }
    schedule();
    return true;
  }
  const steer = current.status === "running";
  try {
    await call(steer ? "session/steer" : "session/prompt", { text });
    return true;
  } catch (e) {
    if (e.dshCode === "TURN_RUNNING") {
      try {
        await call("session/steer", { text });
        return true;
      } catch (e2) {
        noteError("Not sent")(e2);
        return false;
      }
    }
    noteError("Not sent")(e);
    return false;
  }
}

function isCommand(line) {
  const known = commands();
  if (!known.length) return true;
  const name = line.slice(1).split(/\s/, 1)[0];
  return known.some((c) => c.name === name);
}

/** Workspace paths containing `query`, for `@` completion; null when the server has no `session/files`. */
async function files(query) {
  if (!current || !filesSupported) return current ? null : [];
  try {
    const r = await call("session/files", { query, limit: 50 });
    return Array.isArray(r) ? r : r.paths || [];
  } catch (e) {
    if (e.code === -32601) {
      filesSupported = false;
      return null;
    }
    return [];
  }
}

// ---- the sessions sidebar ------------------------------------------------------------

let listTimer = 0;
function refreshListSoon() {
  clearTimeout(listTimer);
  listTimer = setTimeout(refreshList, 400);
}

async function refreshList() {
  try {
    listed = await rpc.call("session/list", {});
  } catch {
    return;
  }
  renderList();
}

function renderList() {
  const q = ui.search.value.trim().toLowerCase();
  const rows = [];
  const seen = new Set();
  for (const o of listed.open) {
    const saved = listed.saved.find((s) => s.sessionId === o.info.id || s.sessionId === o.sessionId);
    seen.add(o.sessionId);
    seen.add(o.info.id);
    rows.push({
      id: o.sessionId,
      open: true,
      running: o.info.status === "running",
      title: o.info.title || (saved && (saved.title || saved.firstPrompt)) || "New session",
      time: saved ? saved.createdMs : 0,
      turns: saved ? saved.turns : null,
      tokens: o.info.inputTokens + o.info.outputTokens,
    });
  }
  for (const s of listed.saved) {
    if (seen.has(s.sessionId)) continue;
    rows.push({ id: s.sessionId, open: false, running: false, title: s.title || s.firstPrompt || "Empty session", time: s.createdMs, turns: s.turns, tokens: s.tokens });
  }
  clear(ui.sessions);
  let shown = 0;
  for (const r of rows) {
    if (q && !(r.title.toLowerCase().includes(q) || r.id.toLowerCase().includes(q))) continue;
    shown++;
    const meta = [r.time ? when(r.time) : null, r.turns !== null ? `${r.turns} turn${r.turns === 1 ? "" : "s"}` : null, r.tokens ? `${count(r.tokens)} tok` : null].filter(Boolean).join(" \u00b7 ");
    const btn = h(
      "button",
      { type: "button", class: "sess" + (r.open ? " open" : "") + (r.running ? " running" : ""), "data-id": r.id, title: r.id },
      h("span", { class: "sess-title" }, r.title),
      h("span", { class: "sess-meta" }, r.open ? h("span", { class: "dot", "aria-label": r.running ? "running" : "open" }) : null, meta),
    );
    btn.addEventListener("click", () => {
      if (!current || (r.id !== current.key && r.id !== current.info.id)) select(r.id);
    });
    ui.sessions.appendChild(btn);
  }
  if (!shown) ui.sessions.appendChild(h("div", { class: "sess-none" }, q ? "No session matches." : "No sessions yet."));
  markActive();
  showTitle();
}

function markActive() {
  for (const b of ui.sessions.querySelectorAll(".sess")) {
    const on = !!current && (b.dataset.id === current.key || (current.info && b.dataset.id === current.info.id));
    b.classList.toggle("active", on);
    if (on) b.setAttribute("aria-current", "true");
    else b.removeAttribute("aria-current");
  }
}

ui.search.addEventListener("input", renderList);
window.addEventListener("hashchange", () => {
  const id = decodeURIComponent(location.hash.slice(1));
  if (id && (!current || id !== current.key)) select(id);
});
window.addEventListener("focus", refreshListSoon);

// Tests and people at the console can see how far the page got.
window.dshWeb = {
  get session() {
    return current && current.key;
  },
  get lastSeq() {
    return lastSeq;
  },
  rpcOpen: () => rpc.open,
  /** Drops the WebSocket (it reconnects and resumes after the last event seen). */
  dropConnection: () => rpc.ws && rpc.ws.close(),
};
