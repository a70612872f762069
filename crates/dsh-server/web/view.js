// The conversation: a session's events turned into DOM, one event at a
// time (push), with markdown re-rendered once per frame for the blocks
// that changed (render). Nothing here re-renders what is already shown:
// a delta appends to its block, a tool card builds its body only when
// opened, so a session of thousands of calls stays cheap to show and to
// scroll (the items also use content-visibility: auto in the CSS).
//
// Every model- or tool-provided string goes in as text (textContent,
// text nodes) or through markdown.js, which builds nodes the same way.

import { h, clear, duration, count } from "./dom.js";
import { renderInto, render as renderMarkdown, inline } from "./markdown.js";
import { diffLines, stat, unified, sideBySide } from "./diff.js";

/** Longest tool output shown before a "show all" button. */
const OUTPUT_PREVIEW = 60000;

const DECISION_WORDS = {
  allow_once: "allowed once",
  allow_always: "always allowed",
  reject: "rejected",
  cancelled: "withdrawn",
};

/** The diff layout the person chose last (`unified` or `split`). */
function diffMode() {
  try {
    return localStorage.getItem("dsh.diffMode") === "split" ? "split" : "unified";
  } catch {
    return "unified";
  }
}

function setDiffMode(mode) {
  try {
    localStorage.setItem("dsh.diffMode", mode);
  } catch {
    // Private windows may refuse storage; the choice lasts the page.
  }
}

/** A session's conversation in `log`, its questions in `approvals`, its todo list in `todos`. */
export class Conversation {
  /**
   * `hooks`: `answer(approvalId, decision)` → Promise,
   * `answerQuestion(questionId, reply)` → Promise, `state(patch)` for
   * session facts (status, model, permission, planMode, title, context,
   * tokens, closed).
   */
  constructor({ log, approvals, todos, hooks }) {
    this.log = log;
    this.approvalsEl = approvals;
    this.todosEl = todos;
    this.hooks = hooks;
    this.reset();
  }

  /** Forgets everything shown (another session, or a replay from 0). */
  reset() {
    clear(this.log);
    clear(this.approvalsEl);
    clear(this.todosEl);
    this.todosEl.hidden = true;
    this.turn = null;
    this.msg = null;
    this.reasoning = null;
    this.tools = new Map();
    this.unfinished = new Set();
    this.asked = new Map();
    this.dirty = new Set();
    this.talked = false;
    this.tokens = { input: 0, output: 0 };
  }

  /** The section the next items go into (a turn, or the session's start). */
  section() {
    if (!this.turn) {
      this.turn = h("section", { class: "turn" });
      this.log.appendChild(this.turn);
    }
    return this.turn;
  }

  add(node) {
    this.section().appendChild(node);
    return node;
  }

  note(text, kind = "") {
    return this.add(h("div", { class: "item note " + kind }, text));
  }

  /** A note made here, not by an event (a command's reply, a failed call). */
  localNote(title, body, kind = "") {
    const n = this.add(h("div", { class: "item note local " + kind }, h("div", { class: "note-title" }, title)));
    if (body) n.appendChild(h("pre", { class: "note-body" }, body));
    return n;
  }

  endBlocks() {
    this.msg = null;
    this.reasoning = null;
  }

  /** Shows one event. `live`: it happened now (not part of a replay). */
  push(e, live) {
    switch (e.type) {
      case "session_started":
        this.hooks.state({ model: e.model, permission: e.permission, planMode: e.planMode, cwd: e.cwd, logId: e.sessionId });
        if (e.cleared) {
          this.turn = null;
          this.note("History cleared; a new log started.", "info");
        } else if (e.resumed) {
          this.note("Resumed from its log.", "info");
        }
        break;
      case "warning":
        this.note(e.message, "warn");
        break;
      case "user_message": {
        this.talked = true;
        this.endBlocks();
        if (!e.steering) this.turn = null;
        const src = e.source && e.source.kind && e.source.kind !== "user" ? e.source.kind : "";
        const who = e.steering ? "steer" : src || "you";
        this.add(h("div", { class: "item user" + (e.steering ? " steering" : ""), title: new Date(e.time).toLocaleString() }, h("div", { class: "who" }, who), h("div", { class: "utext" }, e.text)));
        break;
      }
      case "turn_started":
        this.section().dataset.turn = String(e.turn);
        break;
      case "reasoning_delta":
        if (!this.reasoning) {
          this.msg = null;
          const text = document.createTextNode("");
          const el = this.add(h("details", { class: "item reasoning" }, h("summary", null, "Reasoning"), h("div", { class: "rtext" }, text)));
          this.reasoning = { el, text };
        }
        this.reasoning.text.appendData(e.text);
        break;
      case "message_delta":
        this.reasoning = null;
        if (!this.msg) this.msg = this.newMessage();
        this.msg.text += e.text;
        this.dirty.add(this.msg);
        break;
      case "message_completed":
        if (this.msg) {
          this.msg.text = e.text;
          this.dirty.add(this.msg);
        } else if (e.text) {
          const m = this.newMessage();
          m.text = e.text;
          this.dirty.add(m);
        }
        this.endBlocks();
        break;
      case "tool_started":
        this.endBlocks();
        this.toolStarted(e, live);
        break;
      case "tool_running": {
        const t = this.tools.get(e.callId);
        if (t) this.setToolState(t, "running");
        break;
      }
      case "tool_finished":
        this.toolFinished(e, live);
        break;
      case "todos":
        this.showTodos(e.items || []);
        break;
      case "approval_asked":
        this.ask(e);
        break;
      case "approval_decided":
        this.decided(e);
        break;
      case "question_asked":
        this.askQuestions(e);
        break;
      case "question_answered":
        this.dropAsk(e.questionId);
        break;
      case "status":
        this.hooks.state({ status: e.status });
        break;
      case "usage":
        this.tokens.input += e.inputTokens || 0;
        this.tokens.output += e.outputTokens || 0;
        this.hooks.state({ tokens: { ...this.tokens } });
        break;
      case "context":
        this.hooks.state({ context: [e.tokens, e.window] });
        break;
      case "turn_ended":
        this.endBlocks();
        this.turnEnded(e);
        this.turn = null;
        break;
      case "error":
        this.note((e.code ? e.code + ": " : "") + e.message, "error");
        break;
      // Settings made as the session opened are in the header only.
      case "model_changed":
        this.hooks.state({ model: e.model });
        if (this.talked) this.note(`Model: ${e.model}`, "info");
        break;
      case "permission_changed":
        this.hooks.state({ permission: e.mode });
        if (this.talked) this.note(`Permission: ${e.mode}`, "info");
        break;
      case "plan_mode_changed":
        this.hooks.state({ planMode: e.on });
        if (this.talked) this.note(e.on ? "Plan mode on" : "Plan mode off", "info");
        break;
      case "compacted":
        this.endBlocks();
        this.note(`History compacted (${count(e.tokensAfter)} tokens in context now).`, "info");
        break;
      case "title_changed":
        this.hooks.state({ title: e.title });
        break;
      case "closed":
        this.endBlocks();
        this.note(`Session closed: ${e.reason}`, "warn");
        this.hooks.state({ closed: true, status: "closed" });
        for (const id of [...this.asked.keys()]) this.dropAsk(id);
        break;
      default:
        break;
    }
  }

  newMessage() {
    const body = h("div", { class: "md" });
    const el = this.add(h("div", { class: "item assistant" }, body));
    return { el, body, text: "" };
  }

  /** Re-renders the markdown of the blocks that changed since last time. */
  render() {
    for (const m of this.dirty) renderInto(m.body, m.text);
    this.dirty.clear();
  }

  // ---- tool cards -------------------------------------------------------

  toolStarted(e, live) {
    const status = h("span", { class: "st", "aria-hidden": "true" });
    const title = h("span", { class: "ttitle" });
    if (e.title && e.title !== e.name) inline(e.title, title);
    else title.textContent = argsPreview(e.arguments);
    const meta = h("span", { class: "tmeta" });
    const el = h("details", { class: "item tool pending", "data-call": e.callId }, h("summary", null, status, h("span", { class: "tname" }, e.name), title, meta));
    const body = h("div", { class: "tbody" });
    el.appendChild(body);
    const t = { el, body, meta, name: e.name, args: e.arguments, title: e.title, output: null, isError: false, diff: null, built: false, note: null, live };
    el.addEventListener("toggle", () => {
      if (el.open && !t.built) this.buildTool(t);
    });
    this.tools.set(e.callId, t);
    this.unfinished.add(t);
    this.add(el);
  }

  setToolState(t, state) {
    t.el.classList.remove("pending", "running", "done", "error", "ask");
    t.el.classList.add(state);
  }

  toolFinished(e, live) {
    let t = this.tools.get(e.callId);
    if (!t) {
      this.toolStarted({ callId: e.callId, name: e.name, arguments: "", title: e.name }, live);
      t = this.tools.get(e.callId);
    }
    this.unfinished.delete(t);
    t.output = e.output;
    t.isError = e.isError;
    t.diff = e.diff || null;
    this.setToolState(t, e.isError ? "error" : "done");
    if (e.isError) {
      t.meta.textContent = t.decision || "error";
    } else if (t.diff) {
      // A change made now is shown; one from history waits to be opened.
      if (live) {
        t.ops = diffLines(t.diff.oldText, t.diff.newText);
        const s = stat(t.ops);
        t.meta.textContent = `+${s.add} \u2212${s.del}`;
        if (!t.el.open) t.el.open = true;
      }
    } else {
      const lines = e.output ? e.output.split("\n").length : 0;
      t.meta.textContent = lines > 1 ? `${lines} lines` : "";
    }
    if (t.built) this.buildTool(t);
  }

  buildTool(t) {
    t.built = true;
    const b = clear(t.body);
    let args = null;
    try {
      args = t.args ? JSON.parse(t.args) : null;
    } catch {
      args = null;
    }
    if (t.name === "bash" && args && typeof args.command === "string") {
      b.appendChild(h("pre", { class: "cmd" }, "$ " + args.command));
    } else if (t.args) {
      const pretty = args !== null ? JSON.stringify(args, null, 2) : t.args;
      b.appendChild(h("details", { class: "args" }, h("summary", null, "Arguments"), h("pre", null, pretty)));
    }
    if (t.note) b.appendChild(h("div", { class: "tnote" }, t.note));
    if (t.diff) {
      t.ops = t.ops || diffLines(t.diff.oldText, t.diff.newText);
      b.appendChild(this.diffView(t.diff, t.ops));
    }
    if (t.output !== null) {
      const pre = h("pre", { class: "out" + (t.isError ? " error" : "") });
      if (t.output.length > OUTPUT_PREVIEW) {
        pre.textContent = t.output.slice(0, OUTPUT_PREVIEW);
        const more = h("button", { type: "button", class: "link" }, `Show all (${count(t.output.length)} characters)`);
        more.addEventListener("click", () => {
          pre.textContent = t.output;
          more.remove();
        });
        b.append(pre, more);
      } else {
        pre.textContent = t.output || "(no output)";
        b.appendChild(pre);
      }
    } else {
      b.appendChild(h("div", { class: "tnote" }, "running…"));
    }
  }

  diffView(diff, ops) {
    const s = stat(ops);
    const holder = h("div", { class: "diff-holder" });
    const show = (mode) => {
      clear(holder);
      holder.appendChild(mode === "split" ? sideBySide(ops) : unified(ops));
      uBtn.setAttribute("aria-pressed", String(mode !== "split"));
      sBtn.setAttribute("aria-pressed", String(mode === "split"));
    };
    const uBtn = h("button", { type: "button", class: "seg", onclick: () => (setDiffMode("unified"), show("unified")) }, "Unified");
    const sBtn = h("button", { type: "button", class: "seg", onclick: () => (setDiffMode("split"), show("split")) }, "Side by side");
    const head = h(
      "div",
      { class: "diff-head" },
      h("span", { class: "path" }, diff.path),
      diff.oldText === undefined || diff.oldText === null ? h("span", { class: "badge" }, "new file") : null,
      h("span", { class: "add" }, `+${s.add}`),
      h("span", { class: "del" }, `\u2212${s.del}`),
      h("span", { class: "segs" }, uBtn, sBtn),
    );
    show(diffMode());
    return h("div", { class: "diff-box" }, head, holder);
  }

  // ---- approvals ----------------------------------------------------------

  ask(e) {
    const t = this.tools.get(e.callId);
    if (t) this.setToolState(t, "ask");
    const plan = e.kind === "plan";
    const note = h("textarea", { class: "anote", rows: "2", placeholder: plan ? "Feedback: what should change in the plan?" : "Note for the model (optional, sent with a rejection)" });
    const buttons = [];
    const answer = async (decision) => {
      for (const b of buttons) b.disabled = true;
      try {
        await this.hooks.answer(e.approvalId, decision);
      } catch (err) {
        if (err && err.dshCode === "UNKNOWN_APPROVAL") this.dropAsk(e.approvalId);
        else {
          for (const b of buttons) b.disabled = false;
          card.appendChild(h("div", { class: "aerror" }, String(err && err.message)));
        }
      }
    };
    const reject = () => {
      const text = note.value.trim();
      answer(text ? { decision: "reject", note: text } : { decision: "reject" });
    };
    if (plan) {
      buttons.push(h("button", { type: "button", class: "primary", "data-decision": "allow_once", onclick: () => answer({ decision: "allow_once" }) }, "Approve plan"));
      buttons.push(h("button", { type: "button", "data-decision": "reject", onclick: reject }, "Keep planning"));
    } else {
      buttons.push(h("button", { type: "button", class: "primary", "data-decision": "allow_once", onclick: () => answer({ decision: "allow_once" }) }, "Allow once"));
      buttons.push(h("button", { type: "button", "data-decision": "allow_always", onclick: () => answer({ decision: "allow_always" }) }, "Always allow"));
      buttons.push(h("button", { type: "button", class: "danger", "data-decision": "reject", onclick: reject }, "Reject"));
    }
    let detail = null;
    if (e.detail) {
      detail = plan ? h("div", { class: "plan md" }, renderMarkdown(e.detail)) : h("pre", { class: "adetail" }, e.detail);
    }
    const card = h(
      "div",
      { class: "approval" + (plan ? " plan-review" : ""), role: "dialog", "aria-label": plan ? "Review the plan" : "Approve a tool call", "data-approval": e.approvalId },
      h("div", { class: "ahead" }, h("span", { class: "akind" }, plan ? "Plan review" : `Approval: ${e.tool}`), h("span", { class: "asummary" }, e.summary)),
      detail,
      e.justification ? h("div", { class: "why" }, h("span", { class: "label" }, "Why: "), e.justification) : null,
      note,
      h("div", { class: "abuttons" }, buttons),
    );
    this.asked.set(e.approvalId, { card, callId: e.callId });
    this.approvalsEl.appendChild(card);
  }

  decided(e) {
    const a = this.asked.get(e.approvalId);
    const d = e.decision || {};
    const words = (DECISION_WORDS[d.decision] || d.decision) + (d.note ? `: ${d.note}` : "");
    if (a) {
      const t = this.tools.get(a.callId);
      if (t) {
        t.note = `Approval: ${words}`;
        t.meta.textContent = words;
        if (d.decision === "reject" || d.decision === "cancelled") {
          t.decision = words;
          this.setToolState(t, "error");
        } else {
          this.setToolState(t, "pending");
        }
        if (t.built) this.buildTool(t);
      }
    }
    this.dropAsk(e.approvalId);
  }

  /**
   * The model's `ask_user` questions: a card with one group per question
   * (its options as radio buttons, or checkboxes when several may be
   * chosen, and a free-text field), Answer and Decline.
   */
  askQuestions(e) {
    const t = this.tools.get(e.callId);
    if (t) this.setToolState(t, "ask");
    const groups = (e.questions || []).map((q, qi) => {
      const kind = q.multiSelect ? "checkbox" : "radio";
      const options = (q.options || []).map((o, oi) =>
        h(
          "label",
          { class: "qoption" },
          h("input", { type: kind, name: `${e.questionId}-${qi}`, value: String(oi) }),
          h("span", { class: "qlabel" }, o.label),
          o.description ? h("span", { class: "qdesc" }, ` — ${o.description}`) : null,
        ),
      );
      const text = h("input", { type: "text", class: "qtext", placeholder: options.length ? "Or type an answer" : "Type an answer" });
      const box = h(
        "fieldset",
        { class: "question" },
        h("legend", {}, q.header ? `${q.header}: ${q.question}` : q.question),
        options,
        text,
      );
      const answer = () => {
        const selected = [...box.querySelectorAll("input:checked")].map((i) => Number(i.value));
        const out = {};
        if (selected.length) out.selected = selected;
        if (text.value.trim()) out.text = text.value;
        return out;
      };
      return { box, answer };
    });
    const buttons = [];
    const send = async (reply) => {
      for (const b of buttons) b.disabled = true;
      try {
        await this.hooks.answerQuestion(e.questionId, reply);
      } catch (err) {
        if (err && err.dshCode === "UNKNOWN_QUESTION") this.dropAsk(e.questionId);
        else {
          for (const b of buttons) b.disabled = false;
          card.appendChild(h("div", { class: "aerror" }, String(err && err.message)));
        }
      }
    };
    buttons.push(h("button", { type: "button", class: "primary", "data-decision": "answer", onclick: () => send({ outcome: "answered", answers: groups.map((g) => g.answer()) }) }, "Answer"));
    buttons.push(h("button", { type: "button", class: "danger", "data-decision": "decline", onclick: () => send({ outcome: "declined" }) }, "Decline"));
    const card = h(
      "div",
      { class: "approval questions", role: "dialog", "aria-label": "Questions from the model", "data-question": e.questionId },
      h("div", { class: "ahead" }, h("span", { class: "akind" }, "The model asks")),
      groups.map((g) => g.box),
      h("div", { class: "abuttons" }, buttons),
    );
    this.asked.set(e.questionId, { card, callId: e.callId });
    this.approvalsEl.appendChild(card);
  }

  dropAsk(id) {
    const a = this.asked.get(id);
    if (a) a.card.remove();
    this.asked.delete(id);
  }

  // ---- todos, turn end ----------------------------------------------------

  showTodos(items) {
    clear(this.todosEl);
    this.todosEl.hidden = items.length === 0;
    if (!items.length) return;
    const done = items.filter((i) => i.status === "completed").length;
    const list = h("ul", { class: "todo-list" });
    for (const it of items) {
      const mark = it.status === "completed" ? "\u2611" : it.status === "in_progress" ? "\u25b6" : "\u2610";
      list.appendChild(h("li", { class: "todo " + it.status }, h("span", { class: "mark", "aria-hidden": "true" }, mark), h("span", null, it.content)));
    }
    const open = this.todosEl.dataset.open !== "false";
    const det = h("details", { open }, h("summary", null, `Todo ${done}/${items.length}`), list);
    det.addEventListener("toggle", () => (this.todosEl.dataset.open = String(det.open)));
    this.todosEl.appendChild(det);
  }

  turnEnded(e) {
    const parts = [];
    const r = e.reason || {};
    const kind = r.kind || r.type || "completed";
    if (kind !== "completed") parts.push(kind === "error" && r.message ? `error: ${r.message}` : kind.replace(/_/g, " "));
    parts.push(duration(e.durationMs || 0));
    if (e.firstTokenMs !== undefined && e.firstTokenMs !== null) parts.push(`first token ${duration(e.firstTokenMs)}`);
    if (e.tokensPerSecond) parts.push(`${e.tokensPerSecond.toFixed(1)} tok/s`);
    if (e.cacheHitRate !== undefined && e.cacheHitRate !== null) parts.push(`cache ${Math.round(e.cacheHitRate * 100)}%`);
    if (e.outputTokens) parts.push(`${count(e.outputTokens)} tokens out`);
    this.add(h("div", { class: "item stats" + (kind !== "completed" ? " ended-" + kind : ""), "data-turn": String(e.turn) }, parts.join(" \u00b7 ")));
    // A call the turn's end left without a result did not run to its end.
    for (const t of this.unfinished) this.setToolState(t, "error");
    this.unfinished.clear();
  }
}


/** A call's arguments in one short line: its string values. */
function argsPreview(args) {
  let v;
  try {
    v = JSON.parse(args);
  } catch {
    return String(args || "").slice(0, 200);
  }
  if (v && typeof v === "object") {
    const parts = Object.values(v).filter((x) => typeof x === "string" || typeof x === "number");
    return parts.join(" \u00b7 ").slice(0, 200);
  }
  return String(v).slice(0, 200);
}
