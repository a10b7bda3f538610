// The kevolve dashboard, a program's page (#/program/ID), in the order a
// kernel engineer reads it: what it is (status, score, lineage), the change
// against its parent, the harness's per-scenario results, why it failed,
// the compile log; then, folded away, the raw metrics, stages and
// artifacts, the whole source and the language-model calls behind it.
"use strict";

// The harness's per-scenario results of P: its rows in the store
// (p.scenarios), else artifacts.scenarios (older evaluators put them in
// metrics.scenarios), or null.
function scenariosOf(p) {
  if (Array.isArray(p.scenarios) && p.scenarios.length) return p.scenarios;
  const a = p.artifacts || {}, m = p.metrics || {};
  if (Array.isArray(a.scenarios)) return a.scenarios;
  if (Array.isArray(m.scenarios)) return m.scenarios;
  return null;
}

// A bar of fraction F (0..1, clipped) with TEXT beside it.
function bar(f, text, cls = "") {
  const w = typeof f === "number" && isFinite(f) ? Math.max(0, Math.min(1, f)) : 0;
  return `<span class="bar ${cls}"><span style="width:${(100 * w).toFixed(1)}%"></span></span> <span class="bar-text">${text}</span>`;
}

// The error column: the worst element's error as a fraction of what the
// tolerance allows there (tol_ratio, when the harness reports it), else
// the largest absolute and relative errors.
function errorCell(s) {
  if (typeof s.tol_ratio === "number") {
    const cls = s.tol_ratio > 1 ? "bad" : s.tol_ratio > 0.5 ? "warn" : "good";
    return bar(s.tol_ratio, `${esc(fmt(s.tol_ratio, 2))} of tolerance`, cls) +
           `<div class="sub">max abs ${esc(fmt(s.max_abs_err, 2))}, rel ${esc(fmt(s.max_rel_err, 2))}</div>`;
  }
  if (typeof s.max_abs_err !== "number") return "–";
  return `max abs ${esc(fmt(s.max_abs_err, 2))}<div class="sub">rel ${esc(fmt(s.max_rel_err, 2))}` +
         `${typeof s.rel_l2_err === "number" ? `, L2 ${esc(fmt(s.rel_l2_err, 2))}` : ""}</div>`;
}

function scenarioTable(scenarios) {
  const rows = scenarios.map(s => {
    const ok = s.correct === undefined || s.correct === 1 || s.correct === true;
    const sp = typeof s.speedup === "number" ? s.speedup : null;
    const spread = typeof s.iqr_us === "number" && typeof s.median_us === "number" && s.median_us > 0
      ? `${fmtTime(s.iqr_us)} <span class="sub">(${pct(s.iqr_us / s.median_us)})</span>` : "–";
    const roof = typeof s.roofline_fraction === "number"
      ? bar(s.roofline_fraction, pct(s.roofline_fraction), "roof") : "–";
    const tags = s.tags || s.kind, base = s.baseline_us ?? s.baseline_median_us;
    return `<tr class="${ok ? "" : "row-bad"}" data-scenario="${esc(s.name)}">` +
      `<td><b>${esc(s.name)}</b>${tags ? ` <span class="sub">${esc(tags)}</span>` : ""}` +
      `${s.screened ? ` <span class="sub">(screened)</span>` : ""}</td>` +
      `<td class="num" data-key="median_us">${fmtTime(s.median_us)}</td>` +
      `<td class="num" data-key="iqr_us">${spread}</td>` +
      `<td class="num" data-key="baseline_median_us">${fmtTime(base)}</td>` +
      `<td class="num speed ${sp === null ? "" : sp >= 1 ? "up" : "down"}" data-key="speedup">${sp === null ? "–" : esc(fmt(sp, 3)) + "×"}</td>` +
      `<td data-key="roofline_fraction">${roof}</td>` +
      `<td data-key="error">${errorCell(s)}</td>` +
      `<td class="num" data-key="correct">${ok ? "✓" : "✗"}</td></tr>`;
  }).join("");
  return `<table class="data scen" id="scenarios"><thead><tr><th>scenario</th><th class="num">time (median)</th>` +
    `<th class="num">spread (IQR)</th><th class="num">baseline</th><th class="num">speedup</th>` +
    `<th>of roofline</th><th>error against tolerance</th><th class="num">correct</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function heldOutTable(shapes) {
  return `<table class="data" id="held-out"><tr><th>shape</th><th>error against tolerance</th><th class="num">trials</th></tr>` +
    shapes.map(s => `<tr><td>${esc(s.name)}</td><td>${errorCell(s)}</td><td class="num">${esc(fmt(s.trials))}</td></tr>`).join("") +
    `</table>`;
}

function kvList(obj) {
  return `<dl class="kv">` + Object.entries(obj).map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("") + `</dl>`;
}

function pre(v) {
  return `<pre>${esc(typeof v === "string" ? v : JSON.stringify(v, null, 2))}</pre>`;
}

// The reason a program failed, from the store's status and the harness's
// verdict (artifacts.reason and reason_detail), or null when it did not.
function failureOf(p) {
  const a = p.artifacts || {};
  const rejected = a.verdict === "rejected";
  if (p.status === "ok" && !rejected) return null;
  return {
    status: p.status,
    reason: p.status_reason || a.reason_detail || a.reason || null,
    code: p.reason_code || a.reason || null,
    detail: a.reason_detail || null,
    phase: a.last_phase || null,
    verdictOnly: p.status === "ok" && rejected,
  };
}

// The mutator and the first line of its change summary (which often
// starts with the mutator's name already).
function madeBy(p) {
  const mut = p.mutator || "–", first = (p.change_summary || "").split("\n")[0];
  if (!first) return esc(mut);
  return first.startsWith(mut + ":") ? esc(first) : `${esc(mut)}: ${esc(first)}`;
}

async function renderProgram(id) {
  const el = $("program");
  el.innerHTML = `<p class="muted">loading program ${esc(id)}…</p>`;
  let d;
  try {
    d = await api(`/api/programs/${id}`);
  } catch (e) {
    el.innerHTML = `<div class="panel"><h2>Program ${esc(id)}</h2><p class="error">${esc(e.message)}</p></div>`;
    return;
  }
  const p = d.program, a = p.artifacts || {};
  const lang = langOf(state.summary && state.summary.facts && state.summary.facts.language, p.source);
  const node = state.nodes.get(p.id);
  const children = node ? node.children.map(c => link(c.id) + (c.status !== "ok" ? `<sup class="status-${c.status}">${c.status}</sup>` : "")).join(" ") : "";
  const fail = failureOf(p);
  const scenarios = scenariosOf(p);

  // 1. What it is.
  let html = `<div class="panel" id="program-head" data-id="${p.id}" data-status="${esc(p.status)}">` +
    `<h2>Program ${p.id} ${statusBadge(p.status, fail ? (fail.code || (fail.reason || "").split("\n")[0]) : "")}` +
    `${p.id === state.bestId ? ` <span class="badge badge-best">best</span>` : ""}</h2>` +
    kvList({
      "score": `<span id="program-fitness">${esc(fmt(p.fitness))}</span>` +
               (fail ? ` <span class="muted">(${fail.verdictOnly ? "stored as ok by an older kevolve, but the harness rejected it" : "no score: it " + (p.status === "timeout" ? "timed out" : p.status === "failed" ? "failed" : "was " + p.status)})</span>` : ""),
      "made by": madeBy(p),
      "lineage": `parent ${link(p.parent_id)}${p.other_parent_id ? " and " + link(p.other_parent_id) : ""}` +
                 ` · island ${p.island} · iteration ${p.iteration} · generation ${p.generation}` +
                 (p.is_migrant ? ` · migrant, a copy of ${link(p.migrated_from)}` : ""),
      "children": children || "–",
      ...(p.duplicate_of ? {"duplicate of": link(p.duplicate_of)} : {}),
      "evaluation": p.eval_seconds === null ? "–" : `${fmt(p.eval_seconds, 3)} s` +
                    (a.backend ? ` · ${esc(a.backend)}${a.device && a.device.name ? " on " + esc(a.device.name) : ""}` : ""),
    }) + `</div>`;

  // 2. The change.
  if (d.parent_source !== null && p.source !== null) {
    const df = renderDiff(d.parent_source, p.source, lang);
    html += `<div class="panel" id="program-change"><h3>Change against parent ${link(p.parent_id)} ` +
      `<small class="muted" id="diff-stats" data-adds="${df.adds}" data-dels="${df.dels}">+${df.adds} −${df.dels} in ${df.hunks} place${df.hunks === 1 ? "" : "s"}</small></h3>` +
      (p.change_summary ? `<p class="change-summary">${esc(p.change_summary)}</p>` : "") +
      (df.adds + df.dels ? df.html : `<p class="muted">the source is the same as its parent's</p>`) + `</div>`;
  } else {
    html += `<div class="panel" id="program-change"><h3>Change</h3><p class="muted">` +
      (p.parent_id ? `the parent's source is not in this report` : `an initial program: no parent; its source is below`) + `</p></div>`;
  }

  // 3. The per-scenario results.
  if (scenarios) {
    html += `<div class="panel" id="program-scenarios"><h3>Scenarios <small class="muted">` +
      `${a.task ? esc(a.task) + " · " : ""}speedup over the task's baseline timed side by side; combined score ` +
      `${esc(fmt(p.fitness, 4))} = their weighted geometric mean</small></h3>` + scenarioTable(scenarios) +
      (Array.isArray(a.held_out) && a.held_out.length
        ? `<details><summary>held-out shapes (correctness only): ${a.held_out.length}</summary>${heldOutTable(a.held_out)}</details>` : "") +
      `</div>`;
  }

  // 4. Why it failed.
  if (fail) {
    html += `<div class="panel failure" id="program-failure"><h3>Failure: ${esc(fail.status)}${fail.code ? " · " + esc(fail.code) : ""}</h3>` +
      (fail.reason ? `<pre class="reason">${esc(fail.reason)}</pre>` : `<p class="muted">no reason was recorded</p>`) +
      (fail.detail && fail.detail !== fail.reason ? `<h3>Detail</h3><pre>${esc(fail.detail)}</pre>` : "") +
      (fail.phase ? `<p class="muted">last phase of the harness: ${esc(fail.phase)}</p>` : "") + `</div>`;
  }

  // 5. The compile log.
  const logs = [];
  if (typeof a.compile_log === "string") logs.push(["candidate", a.compile_log]);
  if (a.build_logs && typeof a.build_logs === "object")
    for (const [k, v] of Object.entries(a.build_logs)) if (!logs.some(([n, t]) => t === v && v)) logs.push([k === "candidate" ? "candidate (build)" : k, v]);
  if (logs.length) {
    const nonEmpty = logs.filter(([, t]) => t && t.trim());
    html += `<div class="panel" id="program-compile"><h3>Compile log</h3>` +
      (nonEmpty.length ? nonEmpty.map(([k, t]) => `<details open><summary>${esc(k)}</summary>${pre(t)}</details>`).join("")
                       : `<p class="muted">no compiler messages${a.compile_cached ? " (the compile was cached)" : ""}</p>`) + `</div>`;
  }

  // 6. Raw data, folded.
  const metrics = Object.assign({}, p.metrics || {});
  delete metrics.scenarios;
  html += `<div class="panel" id="program-raw"><h3>Raw data</h3>` +
    `<details id="raw-metrics"><summary>metrics (${Object.keys(metrics).length})</summary><table class="data" id="metrics">` +
    Object.entries(metrics).map(([k, v]) => `<tr><td>${esc(k)}</td><td class="num" data-key="${esc(k)}">${esc(fmt(v, 6))}</td></tr>`).join("") +
    `</table></details>` +
    (p.features ? `<details><summary>features (MAP-Elites bins)</summary>${pre(p.features)}</details>` : "") +
    (p.stages && p.stages.length ? `<details><summary>evaluation stages (${p.stages.length})</summary>${pre(p.stages)}</details>` : "") +
    (Object.keys(a).length ? `<details id="raw-artifacts"><summary>artifacts (${Object.keys(a).length})</summary><div class="nested">` +
      Object.entries(a).map(([k, v]) => `<details class="artifact"><summary>${esc(k)}</summary>${pre(v)}</details>`).join("") +
      `</div></details>` : "") +
    `<details><summary>identity</summary>${kvList({"code hash": esc(p.code_hash), "created": p.created_at ? esc(new Date(p.created_at * 1000).toISOString()) : "–"})}</details>` +
    `</div>`;

  // 7. The source, folded.
  if (p.source !== null)
    html += `<div class="panel"><details id="program-source"${d.parent_source === null ? " open" : ""}><summary><b>Source</b> ` +
      `<span class="muted">(${p.source.split("\n").length} lines)</span></summary>${renderSource(p.source, lang)}</details></div>`;

  // 8. The language-model calls.
  html += `<div class="panel"><h3>Language-model calls (${d.llm_calls.length})</h3>` +
    (d.llm_calls.length ? d.llm_calls.map(c => `<details><summary>${esc(c.model || "?")} · ${esc(c.outcome || "")} · ` +
      `${c.prompt_tokens || 0}+${c.completion_tokens || 0} tokens · $${Number(c.cost_usd || 0).toFixed(4)} · ${fmt(c.latency_s)} s</summary>` +
      `<h3>System prompt</h3>${pre(c.system_prompt || "")}<h3>Prompt</h3>${pre(c.user_prompt || "")}` +
      `<h3>Reply</h3>${pre(c.reply || "")}${c.error ? `<p class="error">${esc(c.error)}</p>` : ""}</details>`).join("")
      : `<p class="muted">none: made by ${p.mutator === "initial" ? "the user (the initial program)" : "a built-in mutator (" + esc(p.mutator || "?") + ")"}</p>`) + `</div>`;
  el.innerHTML = html;
}
