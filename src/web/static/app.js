// The kevolve dashboard: loads the run (the JSON API under /api/ from
// kevolve serve, polled every 2 s so a running evolution shows up live; or
// window.KV_DATA in a static report from kevolve report, keyed by the same
// requests), renders the overview (cards, run facts, tree, charts, grids,
// outcomes, summary) and routes #/program/ID to a program's page. The live
// state in the header says when the server cannot be reached, answers with
// an error, or serves another store than the one the page loaded.
"use strict";

const PAGE = 5000;
// Poll interval: 2 s, or ?poll=MS (at least 100) for tests.
const POLL_MS = Math.max(100, Number(new URLSearchParams(location.search).get("poll")) || 2000);
const COLS = ["id", "parent_id", "other_parent_id", "island", "iteration", "generation", "status",
              "fitness", "mutator", "is_migrant", "migrated_from", "reason"];

const state = {
  nodes: new Map(), // id -> node
  list: [],         // nodes in id order
  maxId: 0,
  summary: null,
  series: null,
  bestHistory: null,
  grids: [],
  bestId: 0,
  fitMin: 0,
  fitMax: 1,
  layoutDirty: true,
  stopped: false,   // the store was replaced: this page's data is of the old run
  loaded: false,    // the last full load (summary, series, grids) succeeded
};

function showError(msg) {
  const e = $("error");
  e.innerHTML = msg;
  e.hidden = !msg;
}

// The header's live state: STATE is live, static, replaced, gone, error or
// unreachable (data-state, for the eye and for tests).
function setLive(kind, text) {
  const l = $("live");
  l.dataset.state = kind;
  l.classList.toggle("stale", kind !== "live" && kind !== "static");
  l.textContent = text;
}

// Says what an API failure means, in the header and the error bar.
function reportFailure(e) {
  if (e.kind === "replaced") {
    state.stopped = true;
    setLive("replaced", "store replaced: a new run is in this file");
    showError(`The store ${esc(state.summary ? state.summary.store_path || "" : "")} was replaced ` +
              `(a new run, e.g. <code>kevolve run --force</code>): this page shows the previous run. ` +
              `<a href="" onclick="location.reload(); return false">Reload</a> to see the new one.`);
  } else if (e.kind === "http" && e.status === 410) {
    setLive("gone", "store deleted: not live");
    showError(esc(e.message));
  } else if (e.kind === "http") {
    setLive("error", `server error ${e.status}: ${e.message}`);
    showError(`The server answered ${e.status}: ${esc(e.message)}`);
  } else {
    setLive("unreachable", "server unreachable: retrying");
  }
}

// ---- data ------------------------------------------------------------------

function addRows(rows) {
  for (const r of rows) {
    const n = {};
    COLS.forEach((c, i) => { n[c] = r[i] === undefined ? null : r[i]; });
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

// Loads new programs and, when there are any (or the last full load
// failed), everything derived from them. Returns whether anything changed.
async function refresh(first) {
  const added = await loadPrograms();
  if (!first && !added && state.loaded) return false;
  state.loaded = false;
  updateFitRange();
  const [summary, series, history, objectives] = await Promise.all([
    api("/api/summary"), api("/api/series?buckets=200"), api("/api/best_history"),
    api("/api/objectives")]);
  const nIslands = Math.max(summary.num_islands || 0, summary.islands.length);
  const grids = await Promise.all([...Array(nIslands).keys()].map(k => api(`/api/grid?island=${k}`)));
  Object.assign(state, {summary, series, bestHistory: history, objectives, grids});
  renderOverview();
  state.loaded = true;
  return true;
}

// ---- overview ----------------------------------------------------------------

function card(key, value, id, cls = "") {
  return `<div class="card ${cls}"><div class="k">${esc(key)}</div><div class="v" id="card-${id}">${value}</div></div>`;
}

function renderCards() {
  const s = state.summary, f = s.facts || {};
  const best = s.best ? `<a href="#/program/${s.best.id}">${esc(fmt(s.best.fitness))}</a>` : "–";
  const planned = f.max_iterations ? " / " + esc(f.max_iterations) : "";
  const by = s.by_status;
  $("cards").innerHTML =
    card("programs", s.programs, "programs") +
    card("best score", best, "best") +
    card("iterations", `${s.max_iteration}${planned}`, "iterations") +
    card("ok", by.ok || 0, "ok", "st-ok") +
    card("failed", by.failed || 0, "failed", by.failed ? "st-failed" : "") +
    card("timed out", by.timeout || 0, "timeout", by.timeout ? "st-timeout" : "") +
    card("rejected", by.rejected || 0, "rejected", by.rejected ? "st-rejected" : "") +
    card("duplicates", by.duplicate || 0, "duplicate") +
    card("migrants", s.migrants, "migrants") +
    card("LLM calls", s.llm.calls, "llm-calls") +
    card("tokens", s.llm.prompt_tokens + s.llm.completion_tokens, "tokens") +
    card("cost", "$" + Number(s.llm.cost_usd).toFixed(2), "cost");
}

// The run facts a reader checks first: task, backend, device, initial
// programs, seed, version, store.
function renderFacts() {
  const s = state.summary, f = s.facts || {}, m = s.meta || {};
  const task = f.task ? `${esc(f.task)}${f.quick === true ? ` <span class="muted">(quick mode)</span>` : ""}` : `<span class="muted">none (an external evaluator)</span>`;
  const backend = f.backend ? esc(f.backend) + (f.backend_configured && f.backend_configured !== f.backend ? ` <span class="muted">(configured: ${esc(f.backend_configured)})</span>` : "") : "–";
  const inits = (f.initial_programs || []).map(p => `${link(p.id)} <span class="status-${esc(p.status)}">${esc(p.status)}</span>${p.fitness !== null ? " " + esc(fmt(p.fitness)) : ""}`).join(", ");
  const rows = [
    ["task", task, "fact-task"],
    ["backend", backend, "fact-backend"],
    ["device", f.device ? esc(f.device) : "–", "fact-device"],
    ["initial program", `${esc(f.initial_program || "–")}${inits ? " · " + inits : ""}`, "fact-initial"],
    ["seed", esc(f.random_seed || "–"), "sum-seed"],
    ["kevolve", esc(f.kevolve_version || "–"), "fact-version"],
    ["started", esc(f.created_at || "–"), "fact-started"],
    ["host", esc(f.host || "–"), "fact-host"],
    ["store", `<code>${esc(f.store || s.store_path || "–")}</code>`, "fact-store"],
    ["evaluator", `<code>${esc(f.evaluator || "–")}</code>`, "fact-evaluator"],
    ["config", `<code>${esc(f.config_path || m.config_path || "–")}</code>`, "fact-config"],
  ];
  $("facts").innerHTML = `<dl class="kv facts">` + rows.map(([k, v, id]) => `<dt>${esc(k)}</dt><dd id="${id}">${v}</dd>`).join("") + `</dl>`;
  const title = [f.task, f.backend, f.device].filter(Boolean).join(" · ");
  $("run-title").textContent = title || (m.config_path || "");
}

// Outcomes: failures by reason, children by mutator, the mutator
// statistics the search keeps.
function renderOutcomes() {
  const s = state.summary;
  let html = `<h3>Failures by reason</h3><table class="data" id="failures-table"><tr><th>status</th><th>reason</th><th class="num">count</th><th>programs</th></tr>` +
    (s.failure_reasons.length ? s.failure_reasons.map(r => `<tr data-status="${esc(r.status)}"><td>${statusBadge(r.status)}</td>` +
      `<td>${esc(r.reason || "(no reason given)")}</td><td class="num">${r.count}</td>` +
      `<td>${link(r.example_id)}${r.last_id !== r.example_id ? " … " + link(r.last_id) : ""}</td></tr>`).join("")
      : `<tr><td colspan="4" class="muted">none: no child failed, timed out or was rejected</td></tr>`) + `</table>`;
  const bm = s.by_mutator || [];
  html += `<h3>Children by mutator</h3><table class="data" id="mutators-table"><tr><th>mutator</th><th class="num">children</th>` +
    STATUSES.map(st => `<th class="num">${st}</th>`).join("") + `<th class="num">beat their parent</th><th class="num">best</th></tr>` +
    (bm.length ? bm.map(r => `<tr data-mutator="${esc(r.mutator)}"><td>${esc(r.mutator)}</td><td class="num">${r.children}</td>` +
      STATUSES.map(st => `<td class="num${r[st] && st !== "ok" ? " status-" + st : ""}">${r[st] || 0}</td>`).join("") +
      `<td class="num">${r.improved || 0} <span class="sub">(${pct((r.improved || 0) / Math.max(1, r.children))})</span></td>` +
      `<td class="num">${esc(fmt(r.best_fitness))}</td></tr>`).join("")
      : `<tr><td colspan="9" class="muted">no children yet</td></tr>`) + `</table>`;
  if (Array.isArray(s.mutators)) {
    const arms = [...s.mutators].sort((a, b) => b.draws - a.draws || String(a.arm).localeCompare(b.arm));
    const wmax = Math.max(1e-9, ...arms.map(r => r.weight || 0));
    html += `<h3>Mutator statistics <small class="muted">(the search's bandit: how often each arm was drawn, ` +
      `succeeded and failed, its mean reward and its weight now)</small></h3><table class="data" id="mutator-stats">` +
      `<tr><th>arm</th><th class="num">draws</th><th class="num">successes</th><th class="num">failures</th>` +
      `<th class="num">mean reward</th><th>weight</th></tr>` +
      (arms.length ? arms.map(r => `<tr data-arm="${esc(r.arm)}"><td>${esc(r.arm)}</td><td class="num">${r.draws}</td>` +
        `<td class="num">${r.successes}</td><td class="num">${r.failures}</td>` +
        `<td class="num">${r.draws ? esc(fmt(r.reward_sum / r.draws, 3)) : "–"}</td>` +
        `<td>${bar((r.weight || 0) / wmax, esc(fmt(r.weight, 3)))}</td></tr>`).join("")
        : `<tr><td colspan="6" class="muted">no draws yet</td></tr>`) + `</table>`;
  }
  $("outcomes").innerHTML = html;
}

// The tools a run used, from its manifest and its harness: nvcc only where
// CUDA ran (a cuda backend, or programs in CUDA), and the OpenCL
// implementation (PoCL, a vendor's) where OpenCL did.
function runTools(s) {
  const m = s.meta || {}, f = s.facts || {}, dev = f.device_info || {};
  const cuda = f.backend === "cuda" || f.language === "cuda";
  const tools = Object.keys(m).filter(k => /^(compiler|cuda|nvcc|python|gpu|driver)/.test(k))
    .filter(k => cuda || !/nvcc|^cuda/.test(k)).map(k => [k, m[k]]);
  if (f.backend === "opencl")
    tools.push(["opencl", [dev.platform || dev.version, dev.name].filter(Boolean).join(" · ") || "–"]);
  return tools;
}

function renderSummary() {
  const s = state.summary, m = s.meta || {};
  let html = `<div><h3>Islands</h3><table class="data" id="islands-table"><tr><th>island</th><th class="num">programs</th>` +
    STATUSES.map(st => `<th class="num">${st}</th>`).join("") + `<th class="num">best</th><th>best program</th></tr>` +
    s.islands.map(i => `<tr><td>${i.island}</td><td class="num">${i.programs}</td>` +
      STATUSES.map(st => `<td class="num${i[st] && st !== "ok" ? " status-" + st : ""}">${i[st] || 0}</td>`).join("") +
      `<td class="num">${esc(fmt(i.best_fitness))}</td><td>${i.best_id ? link(i.best_id) : "–"}</td></tr>`).join("") +
    `</table>`;
  html += `<h3>Language models</h3><table class="data"><tr><th>model</th><th class="num">calls</th>` +
    `<th class="num">prompt tokens</th><th class="num">completion tokens</th><th class="num">cost</th></tr>` +
    s.llm.by_model.map(r => `<tr><td>${esc(r.model || "?")}</td><td class="num">${r.calls}</td><td class="num">${r.prompt_tokens}</td>` +
      `<td class="num">${r.completion_tokens}</td><td class="num">$${Number(r.cost_usd).toFixed(4)}</td></tr>`).join("") +
    `<tr><td>all (${s.llm.errors} errors)</td><td class="num">${s.llm.calls}</td><td class="num">${s.llm.prompt_tokens}</td>` +
    `<td class="num">${s.llm.completion_tokens}</td><td class="num">$${Number(s.llm.cost_usd).toFixed(4)}</td></tr></table>` +
    `<h3>Tools</h3><dl class="kv" id="tools">` + runTools(s).map(([k, v]) => `<dt>${esc(k)}</dt><dd data-tool="${esc(k)}">${esc(v)}</dd>`).join("") + `</dl>`;
  // Each device of a kernel run: its evaluations, and whether it is still
  // in rotation (a device that failed its check is taken out, with why).
  const devs = s.devices || [];
  if (devs.length)
    html += `<h3>Devices</h3><table class="data" id="devices-table"><tr><th>device</th><th>name</th>` +
      `<th class="num">evaluations</th><th>state</th></tr>` +
      devs.map(d => `<tr data-device="${d.device}"><td>${esc(d.backend)} ${d.device}</td><td>${esc(d.name || "?")}</td>` +
        `<td class="num">${d.evaluations}</td><td class="${d.state === "in rotation" ? "" : "status-failed"}">${esc(d.state)}` +
        (d.reason ? `: ${esc(d.reason)}` : "") + `</td></tr>`).join("") + `</table>`;
  html += `</div>`;
  // A resume with --iterations raises the planned iterations after the
  // manifest's effective config was written: say so beside it.
  const f = s.facts || {}, planned = /^max_iterations: (\d+)/m.exec(m.config_effective || "");
  const effective = (m.config_effective || "") +
    (planned && f.max_iterations && planned[1] !== String(f.max_iterations)
      ? `\n# max_iterations is now ${f.max_iterations} (raised by kevolve resume --iterations)` : "");
  html += `<div><h3>Config</h3>` +
    `<details id="config-effective" open><summary>effective settings (what ran: <code>\${VAR}</code> expanded, defaults filled in)</summary><pre>${esc(effective || "(not recorded by this kevolve)")}</pre></details>` +
    `<details id="config-text"><summary>the file as written: ${esc(m.config_path || "config")}</summary><pre>${esc(m.config_text || "")}</pre></details></div>`;
  $("summary").innerHTML = html;
}

function renderOverview() {
  renderCards();
  renderFacts();
  renderTreeStats();
  drawTree();
  renderChart();
  renderSpeedupChart();
  renderPareto();
  renderGrids();
  renderOutcomes();
  renderSummary();
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
  if (state.stopped) return;
  try {
    const changed = await refresh(false);
    showError("");
    setLive("live", `live · ${state.list.length} programs · ` +
      (changed ? "updated " : "checked ") + new Date().toLocaleTimeString());
  } catch (e) {
    reportFailure(e);
  }
  if (!state.stopped) setTimeout(poll, POLL_MS);
}

async function main() {
  setupTree();
  window.addEventListener("hashchange", route);
  try {
    await refresh(true);
    if (STATIC) setLive("static", `static report · ${state.list.length} programs`);
    else setLive("live", `live · ${state.list.length} programs`);
  } catch (e) {
    reportFailure(e);
    if (e.kind !== "replaced") showError("cannot load the run: " + esc(e.message));
  }
  route();
  document.body.dataset.initialPrograms = String(state.list.length);
  document.body.dataset.ready = "1";
  if (!STATIC && !state.stopped) setTimeout(poll, POLL_MS);
}

main();
