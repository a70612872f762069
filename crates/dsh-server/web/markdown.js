// A small, safe markdown renderer. It builds DOM nodes with
// createElement and text nodes only: model text is never parsed as HTML,
// raw HTML in the source stays visible text, links are http(s) only
// (rel=noopener noreferrer, new tab) and images are never loaded (an
// image becomes a link). Covered: paragraphs (a newline is a line
// break), ATX headings, rules, block quotes, nested lists (task items
// too), fenced code with a tiny keyword highlighter, pipe tables, code
// spans, strong/emphasis/strike, links and autolinks.
//
// renderInto(el, text) re-renders incrementally: the text is cut into
// chunks at blank lines outside fences, and only chunks that changed are
// rebuilt, so a streamed answer costs its last paragraph per update.

const MAX_DEPTH = 24;
const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
const TABLE_RULE = /^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$/;
const BLANK = /^\s*$/;

/**
 * Renders `text` into `el`, reusing the nodes of chunks whose source did
 * not change since the last call on the same element.
 */
export function renderInto(el, text) {
  const chunks = splitChunks(text);
  const prev = el._mdChunks || [];
  let same = 0;
  while (same < chunks.length && same < prev.length && chunks[same] === prev[same]) same++;
  while (el.childNodes.length > same) el.removeChild(el.lastChild);
  for (let i = same; i < chunks.length; i++) {
    const div = document.createElement("div");
    div.className = "md-chunk";
    blocks(chunks[i].split("\n"), div, 0);
    el.appendChild(div);
  }
  el._mdChunks = chunks;
}

/** `text` rendered as a fresh fragment (no caching). */
export function render(text) {
  const frag = document.createDocumentFragment();
  blocks(String(text).split("\n"), frag, 0);
  return frag;
}

/** Cuts `text` at blank lines that are not inside a fenced block. */
export function splitChunks(text) {
  const lines = String(text).split("\n");
  const chunks = [];
  let cur = [];
  let fence = null;
  for (const line of lines) {
    if (fence) {
      cur.push(line);
      if (closesFence(line, fence)) fence = null;
      continue;
    }
    const f = FENCE.exec(line);
    if (f) fence = f[1];
    if (!fence && BLANK.test(line)) {
      if (cur.length) chunks.push(cur.join("\n"));
      cur = [];
      continue;
    }
    cur.push(line);
  }
  if (cur.length) chunks.push(cur.join("\n"));
  return chunks;
}

function closesFence(line, fence) {
  const t = line.trim();
  return t.length >= fence.length && t[0] === fence[0] && /^(`+|~+)$/.test(t);
}

function el(tag, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

/** Parses block-level `lines` into `out`. */
function blocks(lines, out, depth) {
  if (depth > MAX_DEPTH) {
    const p = el("p");
    p.textContent = lines.join("\n");
    out.appendChild(p);
    return;
  }
  let i = 0;
  const n = lines.length;
  while (i < n) {
    const line = lines[i];
    if (BLANK.test(line)) {
      i++;
      continue;
    }
    const f = FENCE.exec(line);
    if (f) {
      const body = [];
      i++;
      while (i < n && !closesFence(lines[i], f[1])) body.push(lines[i++]);
      i++;
      out.appendChild(codeBlock(body.join("\n"), f[2]));
      continue;
    }
    const hd = HEADING.exec(line);
    if (hd) {
      const e = el("h" + hd[1].length);
      inline(hd[2] || "", e, depth);
      out.appendChild(e);
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.appendChild(el("hr"));
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < n && QUOTE.test(lines[i])) inner.push(lines[i++].replace(QUOTE, ""));
      const q = el("blockquote");
      blocks(inner, q, depth + 1);
      out.appendChild(q);
      continue;
    }
    if (ITEM.test(line)) {
      i = list(lines, i, out, depth);
      continue;
    }
    if (line.includes("|") && i + 1 < n && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      i = table(lines, i, out, depth);
      continue;
    }
    const para = [line.trim()];
    i++;
    while (i < n && !BLANK.test(lines[i]) && !startsBlock(lines[i])) para.push(lines[i++].trim());
    const p = el("p");
    inline(para.join("\n"), p, depth);
    out.appendChild(p);
  }
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || QUOTE.test(line) || RULE.test(line) || /^ {0,3}([-*+]|\d{1,9}[.)])[ \t]+\S/.test(line);
}

/** A list starting at `lines[i]`; returns the index after it. */
function list(lines, i, out, depth) {
  const first = ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const listEl = el(ordered ? "ol" : "ul");
  if (ordered) {
    const start = parseInt(first[2], 10);
    if (start !== 1) listEl.setAttribute("start", String(start));
  }
  const n = lines.length;
  while (i < n) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const contentCol = indent + m[2].length + 1;
    const body = [m[3] || ""];
    i++;
    while (i < n) {
      const l = lines[i];
      if (BLANK.test(l)) {
        // A blank line inside a fenced block of the item is kept.
        if (i + 1 < n && leading(lines[i + 1]) >= contentCol) {
          body.push("");
          i++;
          continue;
        }
        break;
      }
      const lead = leading(l);
      if (lead > indent) {
        body.push(l.slice(Math.min(lead, contentCol)));
        i++;
      } else if (!startsBlock(l) && !ITEM.test(l)) {
        body.push(l.trim());
        i++;
      } else {
        break;
      }
    }
    const li = el("li");
    const task = /^\[([ xX])\][ \t]+/.exec(body[0]);
    if (task) {
      body[0] = body[0].slice(task[0].length);
      li.className = "task";
      const box = el("span", "box");
      box.textContent = task[1] === " " ? "\u2610 " : "\u2611 ";
      li.appendChild(box);
    }
    const holder = document.createDocumentFragment();
    blocks(body, holder, depth + 1);
    // A tight item (one paragraph, maybe a nested list) shows no <p>.
    if (holder.firstChild && holder.firstChild.nodeName === "P") {
      const p = holder.firstChild;
      holder.removeChild(p);
      while (p.firstChild) li.appendChild(p.firstChild);
    }
    li.appendChild(holder);
    listEl.appendChild(li);
  }
  out.appendChild(listEl);
  return i;
}

function leading(line) {
  return line.length - line.trimStart().length;
}

function cells(line) {
  let t = line.trim();
  if (t.startsWith("|")) t = t.slice(1);
  if (t.endsWith("|") && !t.endsWith("\\|")) t = t.slice(0, -1);
  const out = [];
  let cur = "";
  for (let i = 0; i < t.length; i++) {
    if (t[i] === "\\" && t[i + 1] === "|") {
      cur += "|";
      i++;
    } else if (t[i] === "|") {
      out.push(cur.trim());
      cur = "";
    } else {
      cur += t[i];
    }
  }
  out.push(cur.trim());
  return out;
}

/** A pipe table at `lines[i]` (header, rule, rows); returns the index after. */
function table(lines, i, out, depth) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : ""));
  const wrap = el("div", "table-wrap");
  const t = el("table");
  const thead = el("thead");
  const tr = el("tr");
  head.forEach((c, k) => {
    const th = el("th", align[k] ? "al-" + align[k] : "");
    inline(c, th, depth);
    tr.appendChild(th);
  });
  thead.appendChild(tr);
  t.appendChild(thead);
  const tbody = el("tbody");
  i += 2;
  while (i < lines.length && lines[i].includes("|") && !BLANK.test(lines[i])) {
    const row = el("tr");
    cells(lines[i]).forEach((c, k) => {
      const td = el("td", align[k] ? "al-" + align[k] : "");
      inline(c, td, depth);
      row.appendChild(td);
    });
    tbody.appendChild(row);
    i++;
  }
  t.appendChild(tbody);
  wrap.appendChild(t);
  out.appendChild(wrap);
  return i;
}

/** A fenced block: `<pre><code>` highlighted when it names a language. */
export function codeBlock(code, lang) {
  const pre = el("pre", "code");
  const c = el("code");
  if (lang) {
    pre.dataset.lang = lang;
    c.appendChild(highlight(code, lang));
  } else {
    c.textContent = code;
  }
  pre.appendChild(c);
  return pre;
}

// ---- inline -------------------------------------------------------------
//
// Linear in the input: unmatched delimiters and backtick runs are
// remembered as hopeless (no closer after one point means none after any
// later point), brackets are matched once up front, and URLs are matched
// with sticky expressions in place (no slicing per position).

const PUNCT = /[!-/:-@[-`{-~]/;
const SAFE_URL = /^https?:\/\/[^\s<>"]+$/i;
const BARE_URL = /https?:\/\/[^\s<>"'`]*[^\s<>"'`.,;:!?)\]}]/iy;
const AUTOLINK = /<(https?:\/\/[^\s<>]+)>/iy;
const DESTINATION = /\(\s*<?([^\s<>()]*(?:\([^\s<>()]*\)[^\s<>()]*)*)>?(?:\s+"[^"\n]*")?\s*\)/y;

/** A link element for `url` when it is http(s); null otherwise. */
export function safeLink(url) {
  if (!SAFE_URL.test(url)) return null;
  const a = el("a");
  a.href = url;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

/** At `i` of `src`, the sticky expression's match, or null. */
function stick(re, src, i) {
  re.lastIndex = i;
  return re.exec(src);
}

/** Parses inline markdown in `src` into `out`. */
export function inline(src, out, depth = 0) {
  let buf = "";
  const flush = () => {
    if (buf) out.appendChild(document.createTextNode(buf));
    buf = "";
  };
  if (depth > MAX_DEPTH) {
    out.appendChild(document.createTextNode(src));
    return;
  }
  const st = { hopeless: new Set(), brackets: null };
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    if (c === "\\" && i + 1 < n && PUNCT.test(src[i + 1])) {
      buf += src[i + 1];
      i += 2;
      continue;
    }
    if (c === "\n") {
      flush();
      out.appendChild(el("br"));
      i++;
      continue;
    }
    if (c === "`") {
      let run = 1;
      while (src[i + run] === "`") run++;
      const close = st.hopeless.has("`" + run) ? -1 : findRun(src, i + run, run);
      if (close < 0) {
        st.hopeless.add("`" + run);
        buf += src.slice(i, i + run);
        i += run;
        continue;
      }
      flush();
      let body = src.slice(i + run, close).replace(/\n/g, " ");
      if (body.length > 2 && body[0] === " " && body[body.length - 1] === " ") body = body.slice(1, -1);
      const code = el("code");
      code.textContent = body;
      out.appendChild(code);
      i = close + run;
      continue;
    }
    if ((c === "*" || c === "_" || c === "~") && !st.hopeless.has(c + (src[i + 1] === c ? "2" : "1"))) {
      const got = emphasis(src, i, out, flush, depth, st);
      if (got > i) {
        i = got;
        continue;
      }
    }
    if (c === "[" || (c === "!" && src[i + 1] === "[")) {
      const got = link(src, i, out, flush, depth, st);
      if (got > i) {
        i = got;
        continue;
      }
    }
    if (c === "<") {
      const m = stick(AUTOLINK, src, i);
      const a = m && safeLink(m[1]);
      if (a) {
        flush();
        a.textContent = m[1];
        out.appendChild(a);
        i += m[0].length;
        continue;
      }
    }
    if ((c === "h" || c === "H") && (i === 0 || /[\s(\[*_~]/.test(src[i - 1]))) {
      const m = stick(BARE_URL, src, i);
      const a = m && safeLink(m[0]);
      if (a) {
        flush();
        a.textContent = m[0];
        out.appendChild(a);
        i += m[0].length;
        continue;
      }
    }
    buf += c;
    i++;
  }
  flush();
}

/** The index of a backtick run of exactly `run` at or after `from`, or -1. */
function findRun(src, from, run) {
  const ticks = "`".repeat(run);
  let j = src.indexOf(ticks, from);
  while (j >= 0) {
    let k = j;
    while (src[k] === "`") k++;
    if (k - j === run) return j;
    j = src.indexOf(ticks, k);
  }
  return -1;
}

const WORD = /[\p{L}\p{N}]/u;

/** Emphasis at `i`; returns the index after it, or `i` when none. */
function emphasis(src, i, out, flush, depth, st) {
  const c = src[i];
  const len = src[i + 1] === c ? 2 : 1;
  if (c === "~" && len !== 2) return i;
  const delim = c.repeat(len);
  const after = src[i + len];
  if (after === undefined || /\s/.test(after)) return i;
  if (c === "_" && i > 0 && WORD.test(src[i - 1])) return i;
  let j = i + len;
  for (;;) {
    j = src.indexOf(delim, j + 1);
    if (j < 0) {
      st.hopeless.add(c + len);
      return i;
    }
    if (/\s/.test(src[j - 1])) continue;
    if (len === 1 && (src[j + 1] === c || src[j - 1] === c)) continue;
    if (c === "_" && j + len < src.length && WORD.test(src[j + len])) continue;
    break;
  }
  flush();
  const e = el(c === "~" ? "del" : len === 2 ? "strong" : "em");
  inline(src.slice(i + len, j), e, depth + 1);
  out.appendChild(e);
  return j + len;
}

/** Every `[` of `src` that has a matching `]`, mapped to it (one pass). */
function matchBrackets(src) {
  const match = new Map();
  const open = [];
  for (let k = 0; k < src.length; k++) {
    const ch = src[k];
    if (ch === "\\") k++;
    else if (ch === "[") open.push(k);
    else if (ch === "]" && open.length) match.set(open.pop(), k);
  }
  return match;
}

/** `[text](url)` or `![alt](url)` at `i`; returns the index after, or `i`. */
function link(src, i, out, flush, depth, st) {
  const image = src[i] === "!";
  const open = image ? i + 1 : i;
  if (!st.brackets) st.brackets = matchBrackets(src);
  const close = st.brackets.get(open);
  if (close === undefined || src[close + 1] !== "(") return i;
  const m = stick(DESTINATION, src, close + 1);
  if (!m) return i;
  const a = safeLink(m[1]);
  if (!a) return i;
  flush();
  const text = src.slice(open + 1, close);
  if (image) {
    a.className = "image-link";
    a.textContent = text ? `image: ${text}` : "image";
  } else {
    inline(text, a, depth + 1);
  }
  out.appendChild(a);
  return close + 1 + m[0].length;
}

// ---- highlighting --------------------------------------------------------

const KEYWORDS = new Set(
  (
    "fn let mut pub use mod impl struct enum trait match if else for while loop return break continue const static " +
    "async await def class import from as in not and or is None True False null true false undefined function var " +
    "new this self Self super crate typeof instanceof try catch finally throw throws package func go defer chan map " +
    "interface type select switch case default then fi do done elif esac local export int char void unsigned long " +
    "double float bool string where with yield lambda pass raise except dyn ref move unsafe extern public private " +
    "protected final abstract extends implements namespace template typename struct union sizeof nil end begin " +
    "require module unless until elsif when of delete echo exit"
  ).split(" "),
);
const HASH_COMMENTS = new Set(["sh", "bash", "zsh", "shell", "console", "python", "py", "ruby", "rb", "toml", "yaml", "yml", "perl", "r", "makefile", "make", "dockerfile", "nix", "conf", "ini", "elixir", "ex"]);
const DASH_COMMENTS = new Set(["sql", "lua", "haskell", "hs", "ada"]);
const MAX_HIGHLIGHT = 200000;

/** `code` as text nodes and class-named spans (`kw`, `str`, `com`, `num`). */
export function highlight(code, lang) {
  const frag = document.createDocumentFragment();
  const l = String(lang).toLowerCase();
  if (code.length > MAX_HIGHLIGHT || l === "text" || l === "txt" || l === "plain") {
    frag.appendChild(document.createTextNode(code));
    return frag;
  }
  const comment = HASH_COMMENTS.has(l) ? "#[^\\n]*" : DASH_COMMENTS.has(l) ? "--[^\\n]*" : "\\/\\/[^\\n]*|\\/\\*[\\s\\S]*?(?:\\*\\/|$)";
  const strings = l === "rust" || l === "rs" ? `"(?:\\\\.|[^"\\\\])*"|'(?:\\\\.|[^'\\\\\\n]){1,2}'` : `"(?:\\\\.|[^"\\\\\\n])*"|'(?:\\\\.|[^'\\\\\\n])*'|\`(?:\\\\.|[^\`\\\\])*\``;
  const re = new RegExp(`(${comment})|(${strings})|(\\b\\d[\\w.]*)|([A-Za-z_$][\\w$]*)`, "g");
  let last = 0;
  let buf = "";
  const span = (cls, text) => {
    if (buf) frag.appendChild(document.createTextNode(buf));
    buf = "";
    const s = document.createElement("span");
    s.className = cls;
    s.textContent = text;
    frag.appendChild(s);
  };
  for (let m = re.exec(code); m; m = re.exec(code)) {
    buf += code.slice(last, m.index);
    last = re.lastIndex;
    if (m[1]) span("com", m[0]);
    else if (m[2]) span("str", m[0]);
    else if (m[3]) span("num", m[0]);
    else if (KEYWORDS.has(m[4])) span("kw", m[0]);
    else buf += m[0];
  }
  buf += code.slice(last);
  if (buf) frag.appendChild(document.createTextNode(buf));
  return frag;
}
