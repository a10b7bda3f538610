// The kevolve dashboard: the evolution tree (canvas), best/median score per
// island (SVG), each island's MAP-Elites grid, the run summary and a page
// per program. Data comes from the JSON API under /api/ (kevolve serve,
// polled every 2 s so a running evolution shows up live) or, in a static
// report (kevolve report), from window.KV_DATA, keyed by the same requests.
"use strict";

const STATIC = window.KV_DATA || null;
const PAGE = 5000;
// Poll interval: 2 s, or ?poll=MS (at least 100) for tests.
const POLL_MS = Math.max(100, Number(new URLSearchParams(location.search).get("poll")) || 2000);
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf"];
const COLS = ["id", "parent_id", "other_parent_id", "island", "iteration", "generation", "status",
              "fitness", "mutator", "is_migrant", "migrated_from"];

const state = {
  nodes: new Map(), // id -> node
  list: [],         // nodes in id order
  maxId: 0,
  summary: null,
  series: null,
  grids: [],
  bestId: 0,
  fitMin: 0,
  fitMax: 1,
  layoutDirty: true,
};

// ---- helpers ---------------------------------------------------------------

function $(id) { return document.getElementById(id); }

function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;",
                                              '"': "&quot;", "'": "&#39;"}[c]));
}

function fmt(v, digits = 4) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "number") {
    if (Number.isInteger(v)) return String(v);
    return String(Number(v.toPrecision(digits)));
  }
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function islandColor(i) { return PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length]; }

// Score in [0, 1] across the run's OK programs.
function norm(f) {
  if (f === null || state.fitMax <= state.fitMin) return 0.5;
  return Math.max(0, Math.min(1, (f - state.fitMin) / (state.fitMax - state.fitMin)));
}

// A heat colour (dark blue -> yellow) for t in [0, 1].
function heat(t) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const x = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

async function api(path) {
  if (STATIC) {
    if (path in STATIC) return STATIC[path];
    throw new Error("not included in this static report (" + path + "); use kevolve serve");
  }
  const r = await fetch(path, {cache: "no-store"});
  const body = await r.json().catch(() => ({error: r.statusText}));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function showError(msg) {
  const e = $("error");
  e.textContent = msg;
  e.hidden = !msg;
}

// ---- data ------------------------------------------------------------------

function addRows(rows) {
  for (const r of rows) {
    const n = {};
    COLS.forEach((c, i) => { n[c] = r[i]; });
    n.children = [];
    state.nodes.set(n.id, n);
    state.list.push(n);
    if (n.id > state.maxId) state.maxId = n.id;
    const p = state.nodes.get(n.parent_id);
    if (p) p.children.push(n);
  }
  if (rows.length) state.layoutDirty = true;
}

async function loadPrograms() {
  let added = 0;
  for (;;) {
    const page = await api(`/api/programs?since=${state.maxId}&limit=${PAGE}`);
    addRows(page.programs);
    added += page.programs.length;
    if (!page.more) break;
  }
  return added;
}

function updateFitRange() {
  let lo = Infinity, hi = -Infinity, best = null;
  for (const n of state.list) {
    if (n.status !== "ok" || n.fitness === null) continue;
    if (n.fitness < lo) lo = n.fitness;
    if (n.fitness > hi) hi = n.fitness;
    if (!best || n.fitness > best.fitness) best = n;
  }
  state.fitMin = lo === Infinity ? 0 : lo;
  state.fitMax = hi === -Infinity ? 1 : hi;
  state.bestId = best ? best.id : 0;
}

async function refresh(first) {
  const added = await loadPrograms();
  if (!first && !added) return false;
  updateFitRange();
  const [summary, series] = await Promise.all([api("/api/summary"), api("/api/series?buckets=200")]);
  state.summary = summary;
  state.series = series;
  const nIslands = Math.max(summary.num_islands || 0, summary.islands.length);
  state.grids = await Promise.all([...Array(nIslands).keys()].map(k => api(`/api/grid?island=${k}`)));
  renderOverview();
  return true;
}

// ---- tree ------------------------------------------------------------------

const view = {scale: 1, tx: 20, ty: 20, fitted: false};
const SPACE_X = 14, SPACE_Y = 46;

// Tidy layout: leaves take consecutive columns in depth-first order, a
// parent sits above the middle of its children, rows are generations.
function layout() {
  const roots = state.list.filter(n => !state.nodes.has(n.parent_id));
  let col = 0;
  for (const root of roots) {
    const stack = [[root, 0]];
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [n, i] = top;
      if (i < n.children.length) {
        top[1]++;
        stack.push([n.children[i], 0]);
        continue;
      }
      stack.pop();
      if (n.children.length === 0) n.x = col++;
      else n.x = (n.children[0].x + n.children[n.children.length - 1].x) / 2;
    }
    // Rows are depth in the tree (the generation, except that a migrant,
    // which keeps its original's generation, sits below its original).
    const down = [root];
    root.y = 0;
    while (down.length) {
      const n = down.pop();
      for (const c of n.children) { c.y = n.y + 1; down.push(c); }
    }
    col += 1;
  }
  state.cols = col;
  state.layoutDirty = false;
}

function fitView() {
  const c = $("tree");
  const maxGen = state.list.reduce((m, n) => Math.max(m, n.y || 0), 0);
  const w = Math.max(1, state.cols) * SPACE_X, h = (maxGen + 1) * SPACE_Y;
  view.scale = Math.min((c.clientWidth - 40) / w, (c.clientHeight - 40) / h, 2);
  view.tx = 20;
  view.ty = 20;
}

function nodeRadius(n) {
  if ($("tree-size").value !== "score" || n.status !== "ok") return 4;
  return 2.5 + 5 * norm(n.fitness);
}

function screenPos(n) {
  return [view.tx + n.x * SPACE_X * view.scale, view.ty + n.y * SPACE_Y * view.scale];
}

function drawTree() {
  const c = $("tree");
  const dpr = window.devicePixelRatio || 1;
  const w = c.clientWidth, h = c.clientHeight;
  if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
  }
  if (state.layoutDirty) layout();
  if (!view.fitted && state.list.length) { fitView(); view.fitted = true; }
  const g = c.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const visible = (x, y) => x > -20 && x < w + 20 && y > -20 && y < h + 20;
  // Edges: parent to child (solid), second parent (dotted), migration (dashed).
  g.lineWidth = 1;
  g.strokeStyle = "rgba(90,100,115,.35)";
  g.beginPath();
  for (const n of state.list) {
    const p = state.nodes.get(n.parent_id);
    if (!p || n.is_migrant) continue;
    const [x1, y1] = screenPos(p), [x2, y2] = screenPos(n);
    if (!visible(x1, y1) && !visible(x2, y2)) continue;
    g.moveTo(x1, y1);
    g.lineTo(x2, y2);
  }
  g.stroke();
  g.setLineDash([4, 3]);
  g.strokeStyle = "rgba(40,40,40,.55)";
  g.beginPath();
  for (const n of state.list) {
    const from = n.is_migrant ? state.nodes.get(n.migrated_from || n.parent_id)
                              : state.nodes.get(n.other_parent_id);
    if (!from) continue;
    const [x1, y1] = screenPos(from), [x2, y2] = screenPos(n);
    g.moveTo(x1, y1);
    g.lineTo(x2, y2);
  }
  g.stroke();
  g.setLineDash([]);
  // Nodes.
  const k = Math.max(0.6, Math.min(1.6, Math.sqrt(view.scale)));
  for (const n of state.list) {
    const [x, y] = screenPos(n);
    if (!visible(x, y)) continue;
    const r = nodeRadius(n) * k, col = islandColor(n.island);
    if (n.status === "failed" || n.status === "timeout") {
      g.strokeStyle = "#c62828";
      g.lineWidth = 1.5;
      g.beginPath();
      g.moveTo(x - r, y - r); g.lineTo(x + r, y + r);
      g.moveTo(x + r, y - r); g.lineTo(x - r, y + r);
      g.stroke();
    } else if (n.status === "rejected" || n.status === "duplicate") {
      g.strokeStyle = col;
      g.lineWidth = 1.2;
      g.beginPath();
      g.arc(x, y, r, 0, 2 * Math.PI);
      g.stroke();
    } else if (n.is_migrant) {
      g.fillStyle = col;
      g.strokeStyle = "#111";
      g.lineWidth = 1;
      g.beginPath();
      g.moveTo(x, y - r - 1); g.lineTo(x + r + 1, y); g.lineTo(x, y + r + 1); g.lineTo(x - r - 1, y);
      g.closePath();
      g.fill();
      g.stroke();
    } else {
      g.fillStyle = col;
      g.beginPath();
      g.arc(x, y, r, 0, 2 * Math.PI);
      g.fill();
    }
    if (n.id === state.bestId) {
      g.strokeStyle = "#d4a017";
      g.lineWidth = 2.5;
      g.beginPath();
      g.arc(x, y, r + 4, 0, 2 * Math.PI);
      g.stroke();
    }
  }
}

function nodeAt(mx, my) {
  let best = null, bd = 100;
  for (const n of state.list) {
    const [x, y] = screenPos(n);
    const d = (x - mx) ** 2 + (y - my) ** 2;
    if (d < bd) { bd = d; best = n; }
  }
  return best;
}

function setupTree() {
  const c = $("tree"), tip = $("tree-tip");
  let drag = null, moved = false;
  c.addEventListener("mousedown", e => { drag = [e.clientX, e.clientY]; moved = false; });
  window.addEventListener("mouseup", () => { drag = null; c.style.cursor = "grab"; });
  c.addEventListener("mousemove", e => {
    const rect = c.getBoundingClientRect();
    const mx = e.clientX - rect.left, my = e.clientY - rect.top;
    if (drag) {
      view.tx += e.clientX - drag[0];
      view.ty += e.clientY - drag[1];
      if (Math.abs(e.clientX - drag[0]) + Math.abs(e.clientY - drag[1]) > 0) moved = true;
      drag = [e.clientX, e.clientY];
      c.style.cursor = "grabbing";
      tip.hidden = true;
      drawTree();
      return;
    }
    const n = nodeAt(mx, my);
    if (!n) { tip.hidden = true; return; }
    tip.hidden = false;
    tip.style.left = (mx + 14) + "px";
    tip.style.top = (my + 10) + "px";
    tip.textContent = `program ${n.id} (${n.status})\nscore ${fmt(n.fitness)}\n` +
      `island ${n.island}, iteration ${n.iteration}, generation ${n.generation}\n` +
      `${n.mutator || ""}${n.is_migrant ? "\nmigrant from " + n.migrated_from : ""}`;
  });
  c.addEventListener("mouseleave", () => { tip.hidden = true; });
  c.addEventListener("click", e => {
    if (moved) return;
    const rect = c.getBoundingClientRect();
    const n = nodeAt(e.clientX - rect.left, e.clientY - rect.top);
    if (n) location.hash = `#/program/${n.id}`;
  });
  c.addEventListener("wheel", e => {
    e.preventDefault();
    const rect = c.getBoundingClientRect();
    const mx = e.clientX - rect.left, my = e.clientY - rect.top;
    const f = Math.exp(-e.deltaY * 0.0015);
    view.tx = mx - (mx - view.tx) * f;
    view.ty = my - (my - view.ty) * f;
    view.scale *= f;
    drawTree();
  }, {passive: false});
  $("tree-fit").addEventListener("click", () => { fitView(); drawTree(); });
  $("tree-size").addEventListener("change", drawTree);
  window.addEventListener("resize", drawTree);
}

function renderTreeStats() {
  const counts = {ok: 0, failed: 0, timeout: 0, rejected: 0, duplicate: 0};
  let edges = 0, migrants = 0;
  for (const n of state.list) {
    counts[n.status] = (counts[n.status] || 0) + 1;
    if (state.nodes.has(n.parent_id)) edges++;
    if (n.is_migrant) migrants++;
  }
  const s = $("tree-stats");
  s.dataset.nodes = state.list.length;
  s.dataset.edges = edges;
  s.dataset.migrants = migrants;
  s.dataset.best = state.bestId;
  s.textContent = `${state.list.length} programs · ${edges} edges · ${migrants} migrants · ` +
    `${counts.failed + counts.timeout} failed · ${counts.rejected} rejected · best #${state.bestId}`;
  const islands = [...new Set(state.list.map(n => n.island))].sort((a, b) => a - b);
  $("tree-legend").innerHTML = islands.map(i =>
    `<span><i style="background:${islandColor(i)}"></i>island ${i}</span>`).join("");
}

// ---- score chart -----------------------------------------------------------

function renderChart() {
  const series = state.series;
  const W = 560, H = 260, L = 48, R = 12, T = 10, B = 30;
  let lo = Infinity, hi = -Infinity;
  for (const s of series.islands) for (const p of s.points) {
    lo = Math.min(lo, p.median, p.best);
    hi = Math.max(hi, p.best);
  }
  if (lo === Infinity) { lo = 0; hi = 1; }
  if (hi === lo) { hi += 1; lo -= 1; }
  const maxIt = Math.max(1, series.max_iteration);
  const X = it => L + (W - L - R) * (it / maxIt), Y = v => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
  let svg = `<svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="score over iterations">`;
  for (let i = 0; i <= 4; i++) {
    const v = lo + (hi - lo) * i / 4, y = Y(v);
    svg += `<line x1="${L}" x2="${W - R}" y1="${y}" y2="${y}" stroke="#eceff2"/>` +
           `<text x="${L - 4}" y="${y + 4}" text-anchor="end">${esc(fmt(v, 3))}</text>`;
  }
  for (let i = 0; i <= 4; i++) {
    const it = Math.round(maxIt * i / 4);
    svg += `<text x="${X(it)}" y="${H - 12}" text-anchor="middle">${it}</text>`;
  }
  svg += `<text x="${(L + W) / 2}" y="${H - 1}" text-anchor="middle">iteration</text>`;
  for (const s of series.islands) {
    const col = islandColor(s.island);
    const best = s.points.map(p => `${X(p.iteration).toFixed(1)},${Y(p.best).toFixed(1)}`).join(" ");
    const med = s.points.map(p => `${X(p.iteration).toFixed(1)},${Y(p.median).toFixed(1)}`).join(" ");
    svg += `<polyline class="best" data-island="${s.island}" points="${best}" fill="none" stroke="${col}" stroke-width="2"/>`;
    svg += `<polyline class="median" data-island="${s.island}" points="${med}" fill="none" stroke="${col}" stroke-width="1.2" stroke-dasharray="4 3"/>`;
  }
  svg += "</svg>";
  $("chart").innerHTML = svg;
  let rows = `<tr><th>island</th><th class="num">best</th><th class="num">latest median</th>` +
             `<th class="num">scored programs</th></tr>`;
  for (const s of series.islands) {
    const last = s.points[s.points.length - 1];
    const n = s.points.reduce((a, p) => a + p.n, 0);
    rows += `<tr class="series-row" data-island="${s.island}"><td><i style="color:${islandColor(s.island)}">■</i> ${s.island}</td>` +
            `<td class="num best" id="chart-best-${s.island}">${last ? esc(fmt(last.best)) : "–"}</td>` +
            `<td class="num median">${last ? esc(fmt(last.median)) : "–"}</td><td class="num">${n}</td></tr>`;
  }
  $("chart-table").innerHTML = rows + `<tr><td colspan="4" class="muted">solid: best so far; dashed: median of the programs scored in each bucket of ${series.bucket_width} iteration(s)</td></tr>`;
}

// ---- MAP-Elites grids --------------------------------------------------------

function renderGrids() {
  let lo = Infinity, hi = -Infinity;
  for (const g of state.grids) for (const c of g.cells) { lo = Math.min(lo, c.fitness); hi = Math.max(hi, c.fitness); }
  const t = f => (hi > lo ? (f - lo) / (hi - lo) : 1);
  const dims = state.grids.length ? state.grids[0].dimensions : [];
  $("grid-dims").textContent = dims.length ? `x: ${dims[0]}${dims[1] ? ", y: " + dims[1] : ""}` : "";
  let html = "";
  for (const g of state.grids) {
    const [nx, ny] = g.bins;
    const at = new Map(g.cells.map(c => [`${c.x},${c.y}`, c]));
    let cells = "";
    for (let y = ny - 1; y >= 0; y--) {
      for (let x = 0; x < nx; x++) {
        const c = at.get(`${x},${y}`);
        if (!c) { cells += `<div title="(${x}, ${y}) empty"></div>`; continue; }
        const v = t(c.fitness);
        cells += `<div class="full" data-id="${c.id}" data-x="${x}" data-y="${y}" data-fitness="${c.fitness}" ` +
                 `style="background:${heat(v)};color:${v > 0.55 ? "#000" : "#fff"}" ` +
                 `title="(${x}, ${y}) best: program ${c.id}, score ${fmt(c.fitness)}; ${c.count} placed here">${esc(fmt(c.fitness, 3))}</div>`;
      }
    }
    html += `<div class="grid-box" data-island="${g.island}"><h3>island ${g.island} <small class="muted">` +
            `${g.cells.length} of ${nx * ny} cells</small></h3>` +
            `<div class="heat" style="grid-template-columns:repeat(${nx}, 26px)">${cells}</div>` +
            `<div class="axis">${esc(dims[0] || "")} →${dims[1] ? "  ↑ " + esc(dims[1]) : ""}</div></div>`;
  }
  $("grids").innerHTML = html || `<p class="muted">no placed programs yet</p>`;
  for (const d of $("grids").querySelectorAll("div.full"))
    d.addEventListener("click", () => { location.hash = `#/program/${d.dataset.id}`; });
}

// ---- summary ---------------------------------------------------------------

function card(key, value, id) {
  return `<div class="card"><div class="k">${esc(key)}</div><div class="v" id="card-${id}">${value}</div></div>`;
}

function renderSummary() {
  const s = state.summary, m = s.meta || {};
  $("run-title").textContent = `${m.config_path || ""} · seed ${m.random_seed || "?"}`;
  const best = s.best ? `<a href="#/program/${s.best.id}">${esc(fmt(s.best.fitness))}</a>` : "–";
  const failed = (s.by_status.failed || 0) + (s.by_status.timeout || 0);
  $("cards").innerHTML =
    card("programs", s.programs, "programs") +
    card("best score", best, "best") +
    card("iterations", `${s.max_iteration}${m.max_iterations ? " / " + esc(m.max_iterations) : ""}`, "iterations") +
    card("ok", s.by_status.ok, "ok") +
    card("failed / timeout", failed, "failed") +
    card("rejected", s.by_status.rejected, "rejected") +
    card("duplicates", s.by_status.duplicate, "duplicate") +
    card("migrants", s.migrants, "migrants") +
    card("LLM calls", s.llm.calls, "llm-calls") +
    card("tokens", s.llm.prompt_tokens + s.llm.completion_tokens, "tokens") +
    card("cost", "$" + Number(s.llm.cost_usd).toFixed(2), "cost");
  const hw = Object.keys(m).filter(k => /^(host|gpu|driver|compiler|cuda|nvcc|python|kevolve_version|created_at)/.test(k));
  let html = `<div><h3>Run</h3><dl class="kv">` +
    `<dt>store</dt><dd>${esc(m.config_dir || "")}</dd><dt>seed</dt><dd id="sum-seed">${esc(m.random_seed || "–")}</dd>` +
    hw.map(k => `<dt>${esc(k)}</dt><dd>${esc(m[k])}</dd>`).join("") + `</dl>`;
  html += `<h3>Islands</h3><table class="data" id="islands-table"><tr><th>island</th><th class="num">programs</th>` +
    `<th class="num">ok</th><th class="num">best</th><th>best program</th></tr>` +
    s.islands.map(i => `<tr><td>${i.island}</td><td class="num">${i.programs}</td><td class="num">${i.ok}</td>` +
      `<td class="num">${esc(fmt(i.best_fitness))}</td><td>${i.best_id ? `<a href="#/program/${i.best_id}">#${i.best_id}</a>` : "–"}</td></tr>`).join("") +
    `</table>`;
  html += `<h3>Language models</h3><table class="data"><tr><th>model</th><th class="num">calls</th>` +
    `<th class="num">prompt tokens</th><th class="num">completion tokens</th><th class="num">cost</th></tr>` +
    s.llm.by_model.map(r => `<tr><td>${esc(r.model || "?")}</td><td class="num">${r.calls}</td><td class="num">${r.prompt_tokens}</td>` +
      `<td class="num">${r.completion_tokens}</td><td class="num">$${Number(r.cost_usd).toFixed(4)}</td></tr>`).join("") +
    `<tr><td>all (${s.llm.errors} errors)</td><td class="num">${s.llm.calls}</td><td class="num">${s.llm.prompt_tokens}</td>` +
    `<td class="num">${s.llm.completion_tokens}</td><td class="num">$${Number(s.llm.cost_usd).toFixed(4)}</td></tr></table></div>`;
  html += `<div><h3>Failures by reason</h3><table class="data" id="failures-table"><tr><th>status</th><th>reason</th><th class="num">count</th></tr>` +
    (s.failure_reasons.length ? s.failure_reasons.map(r => `<tr><td class="status-${esc(r.status)}">${esc(r.status)}</td>` +
      `<td>${esc(r.reason || "(no reason given)")}</td><td class="num">${r.count}</td></tr>`).join("")
      : `<tr><td colspan="3" class="muted">none</td></tr>`) + `</table>`;
  html += `<h3>Config</h3><details open><summary>${esc(m.config_path || "config")}</summary><pre>${esc(m.config_text || "")}</pre></details></div>`;
  $("summary").innerHTML = html;
}

function renderOverview() {
  renderSummary();
  renderTreeStats();
  drawTree();
  renderChart();
  renderGrids();
}

// ---- program page ----------------------------------------------------------

// Line diff of A against B (LCS after trimming the common head and tail).
function diffLines(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < x.length - head && tail < y.length - head &&
         x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++;
  const xm = x.slice(head, x.length - tail), ym = y.slice(head, y.length - tail);
  const out = x.slice(0, head).map(l => [" ", l]);
  if (xm.length * ym.length > 4e6) {
    xm.forEach(l => out.push(["-", l]));
    ym.forEach(l => out.push(["+", l]));
  } else {
    const n = xm.length, m = ym.length;
    const L = Array.from({length: n + 1}, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        L[i][j] = xm[i] === ym[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xm[i] === ym[j]) { out.push([" ", xm[i]]); i++; j++; }
      else if (i < n && (j === m || L[i + 1][j] >= L[i][j + 1])) { out.push(["-", xm[i]]); i++; }
      else { out.push(["+", ym[j]]); j++; }
    }
  }
  x.slice(x.length - tail).forEach(l => out.push([" ", l]));
  return out;
}

function renderDiff(parentSrc, src) {
  const d = diffLines(parentSrc, src);
  const keep = new Set();
  d.forEach(([op], i) => { if (op !== " ") for (let k = i - 3; k <= i + 3; k++) keep.add(k); });
  let html = "", gap = false, adds = 0, dels = 0;
  d.forEach(([op, line], i) => {
    if (op === "+") adds++;
    if (op === "-") dels++;
    if (!keep.has(i)) { if (!gap) html += `<span class="ctx">…</span>`; gap = true; return; }
    gap = false;
    const cls = op === "+" ? "add" : op === "-" ? "del" : "ctx";
    html += `<span class="${cls}">${op} ${esc(line)}</span>`;
  });
  return {html, adds, dels};
}

function kvList(obj) {
  return `<dl class="kv">` + Object.entries(obj).map(([k, v]) =>
    `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("") + `</dl>`;
}

function scenarioTable(scenarios) {
  const pref = ["name", "median_us", "speedup", "roofline_fraction"];
  const keys = [...pref.filter(k => scenarios.some(s => k in s)),
                ...[...new Set(scenarios.flatMap(s => Object.keys(s)))].filter(k => !pref.includes(k))];
  const head = {median_us: "time (µs)", speedup: "speedup", roofline_fraction: "% of roofline"};
  const cell = (k, v) => {
    if (k === "roofline_fraction" && typeof v === "number") return (100 * v).toFixed(1) + "%";
    if (k === "speedup" && typeof v === "number") return fmt(v) + "×";
    return esc(fmt(v));
  };
  return `<table class="data" id="scenarios"><tr>${keys.map(k => `<th${k === "name" ? "" : ' class="num"'}>${esc(head[k] || k)}</th>`).join("")}</tr>` +
    scenarios.map(s => `<tr>${keys.map(k => `<td${k === "name" ? "" : ' class="num"'} data-key="${esc(k)}">${cell(k, s[k])}</td>`).join("")}</tr>`).join("") +
    `</table>`;
}

function link(id) { return id ? `<a href="#/program/${id}">#${id}</a>` : "–"; }

async function renderProgram(id) {
  const el = $("program");
  el.innerHTML = `<p class="muted">loading program ${id}…</p>`;
  let d;
  try {
    d = await api(`/api/programs/${id}`);
  } catch (e) {
    el.innerHTML = `<div class="panel"><h2>Program ${esc(id)}</h2><p class="error">${esc(e.message)}</p></div>`;
    return;
  }
  const p = d.program;
  const node = state.nodes.get(p.id);
  const children = node ? node.children.map(c => link(c.id)).join(" ") : "";
  const metrics = Object.assign({}, p.metrics || {});
  const scenarios = Array.isArray(metrics.scenarios) ? metrics.scenarios : null;
  delete metrics.scenarios;
  let html = `<div class="panel" id="program-head" data-id="${p.id}"><h2>Program ${p.id} ` +
    `<span class="status-${esc(p.status)}">${esc(p.status)}</span></h2>` +
    kvList({
      "score": `<span id="program-fitness">${esc(fmt(p.fitness))}</span>`,
      "island": p.island, "iteration": p.iteration, "generation": p.generation,
      "mutator": esc(p.mutator || "–"),
      "parent": link(p.parent_id) + (p.other_parent_id ? " and " + link(p.other_parent_id) : ""),
      "children": children || "–",
      "migrant": p.is_migrant ? "yes, a copy of " + link(p.migrated_from) : "no",
      "status reason": esc(p.status_reason || "–"),
      "change": esc(p.change_summary || "–"),
      "evaluation time": p.eval_seconds === null ? "–" : fmt(p.eval_seconds) + " s",
      "features": esc(p.features ? JSON.stringify(p.features) : "–"),
      "code hash": esc(p.code_hash),
    }) + `</div>`;
  html += `<div class="panel"><h3>Metrics</h3><table class="data" id="metrics">` +
    Object.entries(metrics).map(([k, v]) => `<tr><td>${esc(k)}</td><td class="num" data-key="${esc(k)}">${esc(fmt(v, 6))}</td></tr>`).join("") +
    `</table>` + (scenarios ? `<h3>Scenarios</h3>` + scenarioTable(scenarios) : "") + `</div>`;
  if (p.stages && p.stages.length)
    html += `<div class="panel"><h3>Evaluation stages</h3><pre>${esc(JSON.stringify(p.stages, null, 2))}</pre></div>`;
  if (p.artifacts && Object.keys(p.artifacts).length)
    html += `<div class="panel"><h3>Artifacts</h3>` + Object.entries(p.artifacts).map(([k, v]) =>
      `<details open><summary>${esc(k)}</summary><pre>${esc(typeof v === "string" ? v : JSON.stringify(v, null, 2))}</pre></details>`).join("") + `</div>`;
  if (d.parent_source !== null && p.source !== null) {
    const df = renderDiff(d.parent_source, p.source);
    html += `<div class="panel"><h3>Diff against parent ${link(p.parent_id)} <small class="muted" id="diff-stats">+${df.adds} −${df.dels}</small></h3>` +
            `<pre class="diff">${df.html}</pre></div>`;
  }
  html += `<div class="panel"><h3>Source</h3><pre class="src">${(p.source || "").split("\n").map(l => `<span class="l">${esc(l)}</span>`).join("")}</pre></div>`;
  html += `<div class="panel"><h3>Language-model calls (${d.llm_calls.length})</h3>` +
    (d.llm_calls.length ? d.llm_calls.map(c => `<details><summary>${esc(c.model || "?")} · ${esc(c.outcome || "")} · ` +
      `${c.prompt_tokens || 0}+${c.completion_tokens || 0} tokens · $${Number(c.cost_usd || 0).toFixed(4)} · ${fmt(c.latency_s)} s</summary>` +
      `<h3>System prompt</h3><pre>${esc(c.system_prompt || "")}</pre><h3>Prompt</h3><pre>${esc(c.user_prompt || "")}</pre>` +
      `<h3>Reply</h3><pre>${esc(c.reply || "")}</pre>${c.error ? `<p class="error">${esc(c.error)}</p>` : ""}</details>`).join("")
      : `<p class="muted">none: made by a built-in mutator (${esc(p.mutator || "?")})</p>`) + `</div>`;
  el.innerHTML = html;
}

// ---- routing and polling -----------------------------------------------------

function route() {
  const m = location.hash.match(/^#\/program\/(\d+)/);
  $("overview").hidden = !!m;
  $("program-page").hidden = !m;
  if (m) { window.scrollTo(0, 0); renderProgram(m[1]); }
  else drawTree();
}

async function poll() {
  try {
    const changed = await refresh(false);
    showError("");
    const l = $("live");
    l.classList.remove("stale");
    l.textContent = `live · ${state.list.length} programs · ` +
      (changed ? "updated " : "checked ") + new Date().toLocaleTimeString();
  } catch (e) {
    $("live").classList.add("stale");
    $("live").textContent = "server unreachable: retrying";
  }
  setTimeout(poll, POLL_MS);
}

async function main() {
  setupTree();
  window.addEventListener("hashchange", route);
  try {
    await refresh(true);
    $("live").textContent = STATIC ? `static report · ${state.list.length} programs`
                                   : `live · ${state.list.length} programs`;
  } catch (e) {
    showError("cannot load the run: " + e.message);
  }
  route();
  document.body.dataset.initialPrograms = String(state.list.length);
  document.body.dataset.ready = "1";
  if (!STATIC) setTimeout(poll, POLL_MS);
}

main();
