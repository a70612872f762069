// The composer: Enter sends (Shift+Enter for a new line), `/` completes
// chat commands, `@` completes file paths (from `session/files`), the
// stop button aborts the running turn.

import { h, clear } from "./dom.js";

const MAX_OPTIONS = 50;

/** The message box at the foot of the page. */
export class Composer {
  /**
   * `hooks`: `submit(text)` → Promise<boolean> (true: sent, clear the
   * box), `stop()`, `commands()` → [{name, description, hint?}], `files(query)`
   * → Promise<string[] | null>: workspace paths containing the query
   * (null: the server cannot list files).
   */
  constructor({ form, input, stop, send, completions, hooks }) {
    this.form = form;
    this.input = input;
    this.stopBtn = stop;
    this.sendBtn = send;
    this.box = completions;
    this.hooks = hooks;
    this.options = [];
    this.selected = 0;
    this.request = 0;
    this.timer = 0;
    if (!(window.CSS && CSS.supports && CSS.supports("field-sizing", "content"))) {
      input.addEventListener("input", () => {
        input.style.height = "auto";
        input.style.height = Math.min(input.scrollHeight, window.innerHeight * 0.4) + "px";
      });
    }
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.submit();
    });
    input.addEventListener("keydown", (ev) => this.key(ev));
    input.addEventListener("input", () => this.update());
    input.addEventListener("click", () => this.update());
    // Leaving the box closes the list (later: a click on an option lands first).
    input.addEventListener("blur", () =>
      setTimeout(() => {
        if (document.activeElement !== input) this.hide();
      }, 150),
    );
    stop.addEventListener("click", () => hooks.stop());
  }

  /** A turn runs: Send steers it and Stop shows. */
  setRunning(running) {
    this.stopBtn.hidden = !running;
    this.sendBtn.textContent = running ? "Steer" : "Send";
    this.input.placeholder = running
      ? "Steer the running turn \u2014 Enter sends"
      : "Message dsh \u2014 Enter sends, Shift+Enter new line, / commands, @ files";
  }

  setEnabled(on) {
    this.input.disabled = !on;
    this.sendBtn.disabled = !on;
  }

  async submit() {
    const text = this.input.value;
    if (!text.trim()) return;
    this.hide();
    this.sendBtn.disabled = true;
    try {
      if (await this.hooks.submit(text)) {
        this.input.value = "";
        this.input.dispatchEvent(new Event("input"));
      }
    } finally {
      this.sendBtn.disabled = this.input.disabled;
      this.input.focus();
    }
  }

  key(ev) {
    if (!this.box.hidden && this.options.length) {
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        ev.preventDefault();
        const n = this.options.length;
        this.select((this.selected + (ev.key === "ArrowDown" ? 1 : n - 1)) % n);
        return;
      }
      if (ev.key === "Tab" || (ev.key === "Enter" && !ev.shiftKey)) {
        ev.preventDefault();
        this.accept(this.selected);
        return;
      }
      if (ev.key === "Escape") {
        ev.preventDefault();
        this.hide();
        return;
      }
    }
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      this.submit();
    }
  }

  /** Looks at the text before the caret and offers completions. */
  update() {
    const before = this.input.value.slice(0, this.input.selectionStart);
    const slash = /^\/(\S*)$/.exec(before);
    if (slash) {
      const word = slash[1].toLowerCase();
      const opts = this.hooks
        .commands()
        .filter((c) => c.name.startsWith(word))
        .map((c) => ({ label: "/" + c.name, hint: (c.hint ? `[${c.hint}] \u2014 ` : "") + c.description, start: 0, end: before.length, insert: "/" + c.name + " " }));
      this.show(opts);
      return;
    }
    const at = /(^|\s)@([^\s@]*)$/.exec(before);
    if (at) {
      const query = at[2];
      const start = before.length - query.length - 1;
      clearTimeout(this.timer);
      const req = ++this.request;
      this.timer = setTimeout(async () => {
        let paths;
        try {
          paths = await this.hooks.files(query);
        } catch {
          paths = [];
        }
        if (req !== this.request) return;
        if (paths === null) {
          this.show([{ label: "File completion is not available", hint: "the server has no session/files method", disabled: true }]);
          return;
        }
        this.show(
          paths.slice(0, MAX_OPTIONS).map((p) => ({ label: "@" + p, hint: "", start, end: before.length, insert: "@" + p + " " })),
        );
      }, 80);
      return;
    }
    this.request++;
    this.hide();
  }

  show(opts) {
    this.options = opts;
    clear(this.box);
    if (!opts.length) {
      this.hide();
      return;
    }
    opts.forEach((o, i) => {
      const row = h("div", { class: "opt" + (o.disabled ? " disabled" : ""), role: "option", id: "opt-" + i }, h("span", { class: "opt-label" }, o.label), o.hint ? h("span", { class: "opt-hint" }, o.hint) : null);
      row.addEventListener("mousedown", (ev) => {
        ev.preventDefault();
        this.accept(i);
      });
      this.box.appendChild(row);
    });
    this.box.hidden = false;
    this.select(0);
  }

  select(i) {
    this.selected = i;
    [...this.box.children].forEach((c, k) => c.setAttribute("aria-selected", String(k === i)));
    const el = this.box.children[i];
    if (el) el.scrollIntoView({ block: "nearest" });
    this.input.setAttribute("aria-activedescendant", "opt-" + i);
  }

  accept(i) {
    const o = this.options[i];
    if (!o || o.disabled) {
      this.hide();
      return;
    }
    const v = this.input.value;
    this.input.value = v.slice(0, o.start) + o.insert + v.slice(o.end);
    const caret = o.start + o.insert.length;
    this.input.setSelectionRange(caret, caret);
    this.hide();
    this.input.focus();
  }

  hide() {
    this.box.hidden = true;
    this.options = [];
    this.input.removeAttribute("aria-activedescendant");
  }
}
