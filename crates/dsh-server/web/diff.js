// Line diffs of a file change (`tool_finished.diff`: oldText → newText),
// shown unified or side by side. Myers' O(ND) algorithm after the common
// head and tail are cut; past MAX_D edits the middle is shown replaced
// whole (a diff that big is read as "rewritten" anyway).

import { h } from "./dom.js";

const MAX_D = 1500;
const CONTEXT = 3;

function lines(text) {
  if (text === undefined || text === null || text === "") return [];
  const l = String(text).split("\n");
  if (l[l.length - 1] === "") l.pop();
  return l;
}

/**
 * The operations turning `oldText` into `newText`: `{t: " " | "-" | "+",
 * a, b, text}` with 1-based line numbers in the old (`a`) and new (`b`)
 * file (0 where the line is not in that side).
 */
export function diffLines(oldText, newText) {
  const a = lines(oldText);
  const b = lines(newText);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const A = a.slice(pre, a.length - suf);
  const B = b.slice(pre, b.length - suf);
  const mid = myers(A, B) || [...A.map((text) => ({ t: "-", text })), ...B.map((text) => ({ t: "+", text }))];
  const ops = [];
  let x = 0;
  let y = 0;
  const push = (t, text) => {
    if (t !== "+") x++;
    if (t !== "-") y++;
    ops.push({ t, a: t === "+" ? 0 : x, b: t === "-" ? 0 : y, text });
  };
  for (let k = 0; k < pre; k++) push(" ", a[k]);
  for (const o of mid) push(o.t, o.text);
  for (let k = a.length - suf; k < a.length; k++) push(" ", a[k]);
  return ops;
}

function myers(a, b) {
  const n = a.length;
  const m = b.length;
  if (n + m === 0) return [];
  const limit = Math.min(n + m, MAX_D);
  const off = limit + 1;
  const v = new Int32Array(2 * limit + 3);
  const trace = [];
  for (let d = 0; d <= limit; d++) {
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace, d);
    }
    trace.push(v.slice(off - d, off + d + 1));
  }
  return null;
}

function backtrack(a, b, trace, D) {
  const out = [];
  let x = a.length;
  let y = b.length;
  for (let d = D; d > 0; d--) {
    const prev = trace[d - 1];
    const at = (k) => prev[k + d - 1];
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const pk = down ? k + 1 : k - 1;
    const px = at(pk);
    const py = px - pk;
    // The move of step d ends at (sx, sy); a diagonal snake leads on to (x, y).
    const sx = down ? px : px + 1;
    while (x > sx) {
      out.push({ t: " ", text: a[x - 1] });
      x--;
      y--;
    }
    if (down) out.push({ t: "+", text: b[py] });
    else out.push({ t: "-", text: a[px] });
    x = px;
    y = py;
  }
  while (x > 0 && y > 0) {
    out.push({ t: " ", text: a[x - 1] });
    x--;
    y--;
  }
  return out.reverse();
}

/** Added and removed line counts of `ops`. */
export function stat(ops) {
  let add = 0;
  let del = 0;
  for (const o of ops) {
    if (o.t === "+") add++;
    else if (o.t === "-") del++;
  }
  return { add, del };
}

/** The hunks of `ops`: runs of changes with CONTEXT lines around them. */
export function hunks(ops) {
  const out = [];
  let cur = null;
  let lastChange = -Infinity;
  for (let i = 0; i < ops.length; i++) {
    if (ops[i].t === " ") continue;
    const start = Math.max(0, i - CONTEXT);
    if (cur && start <= lastChange + CONTEXT + 1) {
      cur.end = i + 1;
    } else {
      if (cur) out.push(cur);
      cur = { start, end: i + 1 };
    }
    lastChange = i;
  }
  if (cur) out.push(cur);
  for (const hk of out) hk.end = Math.min(ops.length, hk.end + CONTEXT);
  return out.map((hk) => ops.slice(hk.start, hk.end));
}

function header(hunk) {
  const first = (side) => {
    const o = hunk.find((x) => x[side] > 0);
    return o ? o[side] : 0;
  };
  const len = (t) => hunk.filter((o) => o.t === " " || o.t === t).length;
  return `@@ -${first("a")},${len("-")} +${first("b")},${len("+")} @@`;
}

const CLS = { " ": "ctx", "-": "del", "+": "add" };

/** The diff as unified rows. */
export function unified(ops) {
  const box = h("div", { class: "diff unified" });
  for (const hunk of hunks(ops)) {
    box.appendChild(h("div", { class: "dh" }, header(hunk)));
    for (const o of hunk) {
      box.appendChild(
        h("div", { class: "dl " + CLS[o.t] }, h("span", { class: "ln" }, o.a ? String(o.a) : ""), h("span", { class: "ln" }, o.b ? String(o.b) : ""), h("span", { class: "mk" }, o.t), h("span", { class: "tx" }, o.text)),
      );
    }
  }
  return box;
}

/** The diff as side-by-side rows (removed lines paired with added ones). */
export function sideBySide(ops) {
  const box = h("div", { class: "diff split" });
  const cell = (o, side) =>
    o
      ? [h("span", { class: "ln " + CLS[o.t] }, String(o[side])), h("span", { class: "tx " + CLS[o.t] }, o.text)]
      : [h("span", { class: "ln none" }), h("span", { class: "tx none" })];
  for (const hunk of hunks(ops)) {
    box.appendChild(h("div", { class: "dh" }, header(hunk)));
    let i = 0;
    while (i < hunk.length) {
      if (hunk[i].t === " ") {
        box.appendChild(h("div", { class: "row" }, cell(hunk[i], "a"), cell(hunk[i], "b")));
        i++;
        continue;
      }
      const dels = [];
      const adds = [];
      while (i < hunk.length && hunk[i].t === "-") dels.push(hunk[i++]);
      while (i < hunk.length && hunk[i].t === "+") adds.push(hunk[i++]);
      for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
        box.appendChild(h("div", { class: "row" }, cell(dels[k], "a"), cell(adds[k], "b")));
      }
    }
  }
  return box;
}
