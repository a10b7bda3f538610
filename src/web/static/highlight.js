// The kevolve dashboard, source text: a small syntax highlighter for the
// languages kevolve evolves (C, CUDA, OpenCL; Python and shell by their
// comments and strings), a line diff (longest common subsequence) shown
// as hunks with both line numbers, and the changed part of a changed line
// marked within it. No libraries: the page downloads nothing.
"use strict";

const C_KEYWORDS = new Set((
  "auto break case char const continue default do double else enum extern float for goto if " +
  "inline int long register restrict return short signed sizeof static struct switch typedef " +
  "union unsigned void volatile while bool true false NULL nullptr size_t ptrdiff_t int8_t " +
  "int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t uint ushort uchar ulong half " +
  "float2 float4 int2 int4 uint2 uint4 template typename class namespace using constexpr " +
  "__global__ __device__ __host__ __shared__ __constant__ __restrict__ __forceinline__ " +
  "__launch_bounds__ __kernel kernel __global global __local local __private private " +
  "__constant constant __nv_bfloat16 __nv_bfloat162 __half __half2 dim3").split(" "));
const PY_KEYWORDS = new Set((
  "False None True and as assert async await break class continue def del elif else except " +
  "finally for from global if import in is lambda nonlocal not or pass raise return try while " +
  "with yield self").split(" "));

// The language family of a program: "py" (Python, shell: # comments) or
// "c" (C, CUDA, OpenCL, C++), from the run's language, else the source.
function langOf(language, source) {
  const l = String(language || "").toLowerCase();
  if (/^(python|py|shell|sh|bash)$/.test(l)) return "py";
  if (l) return "c";
  return /^\s*(def |import |from \S+ import )/m.test(source || "") ? "py" : "c";
}

// Tokens of every line of TEXT: an array (one per line) of [start, end,
// class] runs; text between runs is plain.
function tokenize(text, lang) {
  const lines = text.split("\n");
  const out = [];
  let inBlock = null; // the closing delimiter of a comment or string open across lines
  const kw = lang === "py" ? PY_KEYWORDS : C_KEYWORDS;
  const mark = (toks, a, b, cls, line) => {
    if (cls === "com" && /kevolve:\s*tune|EVOLVE-BLOCK/.test(line.slice(a, b))) cls = "com tune";
    toks.push([a, b, cls]);
  };
  for (const line of lines) {
    const toks = [];
    let i = 0;
    const n = line.length;
    if (inBlock) {
      const j = line.indexOf(inBlock);
      const end = j < 0 ? n : j + inBlock.length;
      mark(toks, 0, end, inBlock === "*/" ? "com" : "str", line);
      if (j >= 0) inBlock = null;
      i = end;
    }
    const pp = lang === "c" && i === 0 ? /^\s*#\s*\w*/.exec(line) : null;
    if (pp) { toks.push([0, pp[0].length, "pp"]); i = pp[0].length; }
    while (i < n) {
      const ch = line[i], two = line.substr(i, 2);
      if (lang === "c" && two === "//") { mark(toks, i, n, "com", line); break; }
      if (lang === "py" && ch === "#") { mark(toks, i, n, "com", line); break; }
      if (lang === "c" && two === "/*") {
        const j = line.indexOf("*/", i + 2);
        const end = j < 0 ? n : j + 2;
        mark(toks, i, end, "com", line);
        if (j < 0) inBlock = "*/";
        i = end;
        continue;
      }
      if (lang === "py" && (line.substr(i, 3) === '"""' || line.substr(i, 3) === "'''")) {
        const q = line.substr(i, 3), j = line.indexOf(q, i + 3);
        const end = j < 0 ? n : j + 3;
        toks.push([i, end, "str"]);
        if (j < 0) inBlock = q;
        i = end;
        continue;
      }
      if (ch === '"' || ch === "'") {
        let j = i + 1;
        while (j < n && line[j] !== ch) j += line[j] === "\\" ? 2 : 1;
        toks.push([i, Math.min(n, j + 1), "str"]);
        i = j + 1;
        continue;
      }
      const num = /^(0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfF]*/.exec(line.slice(i));
      if (num && !/[A-Za-z0-9_]/.test(line[i - 1] || "")) {
        toks.push([i, i + num[0].length, "num"]);
        i += num[0].length;
        continue;
      }
      const id = /^[A-Za-z_]\w*/.exec(line.slice(i));
      if (id) {
        const w = id[0], end = i + w.length;
        if (kw.has(w)) toks.push([i, end, "kw"]);
        else if (/^\s*\(/.test(line.slice(end))) toks.push([i, end, "fn"]);
        i = end;
        continue;
      }
      i++;
    }
    out.push(toks);
  }
  return out;
}

// LINE as HTML with its TOKENS, and the range MARK [a, b) (a changed part)
// wrapped in <mark>.
function renderLine(line, tokens, markRange) {
  const cuts = new Set([0, line.length]);
  for (const [a, b] of tokens) { cuts.add(a); cuts.add(b); }
  if (markRange) { cuts.add(markRange[0]); cuts.add(markRange[1]); }
  const pos = [...cuts].filter(x => x >= 0 && x <= line.length).sort((x, y) => x - y);
  let html = "";
  for (let k = 0; k + 1 < pos.length; k++) {
    const a = pos[k], b = pos[k + 1];
    if (a === b) continue;
    const t = tokens.find(([x, y]) => x <= a && b <= y);
    let piece = esc(line.slice(a, b));
    if (t) piece = `<span class="tk-${t[2].replace(" ", " tk-")}">${piece}</span>`;
    if (markRange && markRange[0] <= a && b <= markRange[1]) piece = `<mark>${piece}</mark>`;
    html += piece;
  }
  return html;
}

// Line diff of A against B (LCS after trimming the common head and tail):
// an array of [op, line, index in A or -1, index in B or -1], op " ", "-", "+".
function diffLines(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < x.length - head && tail < y.length - head &&
         x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++;
  const xm = x.slice(head, x.length - tail), ym = y.slice(head, y.length - tail);
  const out = [];
  for (let k = 0; k < head; k++) out.push([" ", x[k], k, k]);
  if (xm.length * ym.length > 4e6) {
    xm.forEach((l, k) => out.push(["-", l, head + k, -1]));
    ym.forEach((l, k) => out.push(["+", l, -1, head + k]));
  } else {
    const n = xm.length, m = ym.length;
    const L = Array.from({length: n + 1}, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        L[i][j] = xm[i] === ym[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xm[i] === ym[j]) { out.push([" ", xm[i], head + i, head + j]); i++; j++; }
      else if (i < n && (j === m || L[i + 1][j] >= L[i][j + 1])) { out.push(["-", xm[i], head + i, -1]); i++; }
      else { out.push(["+", ym[j], -1, head + j]); j++; }
    }
  }
  for (let k = tail; k > 0; k--) out.push([" ", x[x.length - k], x.length - k, y.length - k]);
  return out;
}

// The changed middle of two lines: [[a0, a1], [b0, b1]] after their common
// prefix and suffix.
function changedRange(a, b) {
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  return [[p, a.length - s], [p, b.length - s]];
}

// The diff of SRC against PARENT as HTML: hunks with CONTEXT lines around
// each change, both line numbers, syntax colours, the changed part of a
// replaced line marked. Returns {html, adds, dels, hunks}.
function renderDiff(parent, src, lang, context = 3) {
  const d = diffLines(parent, src);
  const ta = tokenize(parent, lang), tb = tokenize(src, lang);
  // Pair each run of deletions with the additions after it, line by line.
  const marks = new Map();
  for (let i = 0; i < d.length;) {
    if (d[i][0] !== "-") { i++; continue; }
    let j = i;
    while (j < d.length && d[j][0] === "-") j++;
    let k = j;
    while (k < d.length && d[k][0] === "+") k++;
    for (let t = 0; t < Math.min(j - i, k - j); t++) {
      const [ra, rb] = changedRange(d[i + t][1], d[j + t][1]);
      if (ra[1] - ra[0] < d[i + t][1].length || rb[1] - rb[0] < d[j + t][1].length) {
        marks.set(i + t, ra);
        marks.set(j + t, rb);
      }
    }
    i = k;
  }
  const keep = new Array(d.length).fill(false);
  let adds = 0, dels = 0;
  d.forEach(([op], i) => {
    if (op === " ") return;
    if (op === "+") adds++; else dels++;
    for (let k = Math.max(0, i - context); k <= Math.min(d.length - 1, i + context); k++) keep[k] = true;
  });
  let html = "", hunks = 0, skipped = 0;
  const row = (cls, na, nb, sign, body) =>
    `<tr class="${cls}"><td class="ln">${na}</td><td class="ln">${nb}</td><td class="sg">${sign}</td><td class="code">${body}</td></tr>`;
  const flushGap = () => {
    if (skipped) html += row("gap", "", "", "", `⋯ ${skipped} unchanged line${skipped > 1 ? "s" : ""}`);
    skipped = 0;
  };
  let inHunk = false;
  d.forEach(([op, line, ia, ib], i) => {
    if (!keep[i]) { skipped++; inHunk = false; return; }
    if (!inHunk) { flushGap(); hunks++; inHunk = true; }
    const m = marks.get(i) || null;
    if (op === " ") html += row("ctx", ia + 1, ib + 1, "", renderLine(line, tb[ib] || [], null));
    else if (op === "-") html += row("del", ia + 1, "", "−", renderLine(line, ta[ia] || [], m));
    else html += row("add", "", ib + 1, "+", renderLine(line, tb[ib] || [], m));
  });
  flushGap();
  return {html: `<table class="diff">${html}</table>`, adds, dels, hunks};
}

// SRC as numbered, highlighted lines.
function renderSource(src, lang) {
  const lines = src.split("\n"), toks = tokenize(src, lang);
  return `<pre class="src">${lines.map((l, i) => `<span class="l">${renderLine(l, toks[i], null)}</span>`).join("")}</pre>`;
}
