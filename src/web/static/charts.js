// The kevolve dashboard, charts (SVG): best so far and the rolling median
// score per island over the whole iteration range; the best program's
// speedup per scenario over time (kernel tasks); the Pareto front of two
// objectives (runs with objectives); each island's MAP-Elites grid. Axes have round ticks (niceTicks). Uses state (app.js).
"use strict";

const CH = {W: 560, H: 260, L: 50, R: 14, T: 12, B: 32};

// Axes, grid lines and scales for iterations 0..MAXIT (x) and LO..HI (y).
function chartFrame(maxIt, lo, hi, yLabel, yFmt) {
  const {W, H, L, R, T, B} = CH;
  const xt = niceTicks(0, Math.max(1, maxIt), 6, {exact: true, integer: true});
  const yt = niceTicks(lo, hi, 5);
  const X = it => L + (W - L - R) * (it / xt.hi);
  const Y = v => T + (H - T - B) * (1 - (v - yt.lo) / (yt.hi - yt.lo));
  let svg = "";
  for (const v of yt.ticks) {
    const y = Y(v).toFixed(1);
    svg += `<line x1="${L}" x2="${W - R}" y1="${y}" y2="${y}" stroke="#eceff2"/>` +
           `<text class="ytick" x="${L - 5}" y="${+y + 4}" text-anchor="end">${esc(yFmt ? yFmt(v, yt.digits) : v.toFixed(yt.digits))}</text>`;
  }
  for (const it of xt.ticks) {
    const x = X(it).toFixed(1);
    svg += `<line x1="${x}" x2="${x}" y1="${H - B}" y2="${H - B + 4}" stroke="#9aa3ad"/>` +
           `<text class="xtick" x="${x}" y="${H - B + 16}" text-anchor="middle">${it}</text>`;
  }
  svg += `<line x1="${L}" x2="${X(xt.hi)}" y1="${H - B}" y2="${H - B}" stroke="#9aa3ad"/>` +
         `<text x="${(L + W) / 2}" y="${H - 2}" text-anchor="middle">iteration (0 to ${xt.hi})</text>` +
         `<text x="12" y="${(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 12 ${(T + H - B) / 2})">${esc(yLabel)}</text>`;
  return {svg, X, Y, xt, yt};
}

// A step line through POINTS [[iteration, value], ...] held to iteration END.
function stepPoints(points, X, Y, end) {
  const out = [];
  points.forEach(([it, v], i) => {
    if (i > 0) out.push(`${X(it).toFixed(1)},${Y(points[i - 1][1]).toFixed(1)}`);
    out.push(`${X(it).toFixed(1)},${Y(v).toFixed(1)}`);
  });
  if (points.length) out.push(`${X(end).toFixed(1)},${Y(points[points.length - 1][1]).toFixed(1)}`);
  return out.join(" ");
}

function renderChart() {
  const series = state.series;
  const maxIt = Math.max(series.max_iteration, state.summary ? state.summary.max_iteration : 0);
  let lo = Infinity, hi = -Infinity;
  for (const s of series.islands) {
    for (const p of s.points) { lo = Math.min(lo, p.median, p.best); hi = Math.max(hi, p.best, p.median); }
  }
  if (lo === Infinity) { lo = 0; hi = 1; }
  const f = chartFrame(maxIt, lo, hi, "score");
  let svg = `<svg viewBox="0 0 ${CH.W} ${CH.H}" width="100%" role="img" aria-label="score over iterations">` + f.svg;
  for (const s of series.islands) {
    const col = islandColor(s.island);
    const rises = s.rises.map(([it, v]) => [it, v]);
    const med = s.points.map(p => `${f.X(p.iteration).toFixed(1)},${f.Y(p.median).toFixed(1)}`).join(" ");
    svg += `<polyline class="median" data-island="${s.island}" points="${med}" fill="none" stroke="${col}" stroke-width="1.2" stroke-dasharray="4 3" opacity=".8"/>`;
    svg += `<polyline class="best" data-island="${s.island}" data-first="${rises.length ? rises[0][0] : ""}" points="${stepPoints(rises, f.X, f.Y, maxIt)}" fill="none" stroke="${col}" stroke-width="2"/>`;
    for (const [it, v, id] of s.rises)
      svg += `<circle class="rise" data-island="${s.island}" data-id="${id}" cx="${f.X(it).toFixed(1)}" cy="${f.Y(v).toFixed(1)}" r="3" fill="${col}"><title>island ${s.island}: new best ${fmt(v)} (program ${id}, iteration ${it})</title></circle>`;
  }
  svg += "</svg>";
  $("chart").innerHTML = svg;
  $("chart").dataset.maxIteration = f.xt.hi;
  for (const c of $("chart").querySelectorAll("circle.rise"))
    c.addEventListener("click", () => { location.hash = `#/program/${c.dataset.id}`; });
  let rows = `<tr><th>island</th><th class="num">best</th><th class="num">rolling median</th>` +
             `<th class="num">scored programs</th><th class="num">first scored at</th></tr>`;
  for (const s of series.islands) {
    const last = s.points[s.points.length - 1];
    rows += `<tr class="series-row" data-island="${s.island}"><td><i style="color:${islandColor(s.island)}">■</i> ${s.island}</td>` +
            `<td class="num best" id="chart-best-${s.island}">${last ? esc(fmt(last.best)) : "–"}</td>` +
            `<td class="num median">${last ? esc(fmt(last.median)) : "–"}</td><td class="num">${s.scored}</td>` +
            `<td class="num">${s.rises.length ? "iteration " + s.rises[0][0] : "none yet"}</td></tr>`;
  }
  $("chart-table").innerHTML = rows;
  $("chart-caption").innerHTML =
    `Solid: best score so far of each island (dots: a new best; click for its program). ` +
    `Dashed: <span id="median-window" data-window="${series.median_window}">rolling median of the island's last ${series.median_window} scored programs</span>, ` +
    `taken every ${series.bucket_width} iteration${series.bucket_width > 1 ? "s" : ""}. ` +
    `Failed, timed-out, rejected and duplicate children have no score and are not in the lines (see Outcomes).`;
}

// The best program's speedup per scenario over the run (kernel tasks):
// one step line per scenario from each new best program, the combined
// score (their weighted geometric mean) in black, the baseline at 1.
function renderSpeedupChart() {
  const h = state.bestHistory;
  const panel = $("speedup-panel");
  const pts = h ? h.points.filter(p => p.scenarios && p.scenarios.length) : [];
  if (!pts.length) { panel.hidden = true; return; }
  panel.hidden = false;
  const maxIt = Math.max(h.max_iteration, state.summary ? state.summary.max_iteration : 0);
  const names = [...new Set(pts.flatMap(p => p.scenarios.map(s => s.name)))];
  let lo = 1, hi = 1;
  for (const p of pts) {
    lo = Math.min(lo, p.fitness); hi = Math.max(hi, p.fitness);
    for (const s of p.scenarios) if (typeof s.speedup === "number") { lo = Math.min(lo, s.speedup); hi = Math.max(hi, s.speedup); }
  }
  const f = chartFrame(maxIt, Math.min(lo, 1), Math.max(hi, 1), "speedup over baseline (×)");
  let svg = `<svg viewBox="0 0 ${CH.W} ${CH.H}" width="100%" role="img" aria-label="speedup per scenario over iterations">` + f.svg;
  svg += `<line x1="${CH.L}" x2="${CH.W - CH.R}" y1="${f.Y(1).toFixed(1)}" y2="${f.Y(1).toFixed(1)}" stroke="#555" stroke-dasharray="2 3"/>` +
         `<text x="${CH.W - CH.R}" y="${(f.Y(1) - 3).toFixed(1)}" text-anchor="end">baseline 1×</text>`;
  names.forEach((name, k) => {
    const line = pts.map(p => {
      const s = p.scenarios.find(q => q.name === name);
      return s && typeof s.speedup === "number" ? [p.iteration, s.speedup] : null;
    }).filter(Boolean);
    svg += `<polyline class="scen" data-scenario="${esc(name)}" points="${stepPoints(line, f.X, f.Y, maxIt)}" fill="none" stroke="${PALETTE[k % PALETTE.length]}" stroke-width="1.5"/>`;
  });
  svg += `<polyline class="combined" points="${stepPoints(pts.map(p => [p.iteration, p.fitness]), f.X, f.Y, maxIt)}" fill="none" stroke="#111" stroke-width="2.2"/>`;
  svg += "</svg>";
  $("speedup-chart").innerHTML = svg;
  // Beside the speedups, what they are made of: the best program's time
  // per call and its fraction of the roofline.
  const last = pts[pts.length - 1];
  $("speedup-table").innerHTML = `<caption class="muted">the best program, #${last.id}; at the start: #${pts[0].id}</caption>` +
    `<tr><th>scenario</th><th class="num">time</th><th class="num">roofline</th><th class="num">speedup</th><th class="num">at the start</th></tr>` +
    names.map((name, k) => {
      const now = last.scenarios.find(q => q.name === name), then = pts[0].scenarios.find(q => q.name === name);
      return `<tr data-scenario="${esc(name)}"><td><i style="color:${PALETTE[k % PALETTE.length]}">■</i> ${esc(name)}</td>` +
             `<td class="num" data-key="median_us" data-value="${now && typeof now.median_us === "number" ? now.median_us : ""}">${now ? fmtTime(now.median_us) : "–"}</td>` +
             `<td class="num" data-key="roofline_fraction" data-value="${now && typeof now.roofline_fraction === "number" ? now.roofline_fraction : ""}">${now ? pct(now.roofline_fraction) : "–"}</td>` +
             `<td class="num" data-key="speedup">${now ? esc(fmt(now.speedup, 3)) + "×" : "–"}</td><td class="num">${then ? esc(fmt(then.speedup, 3)) + "×" : "–"}</td></tr>`;
    }).join("") +
    `<tr><td><i style="color:#111">■</i> combined score</td><td></td><td></td><td class="num">${esc(fmt(last.fitness, 3))}</td><td class="num">${esc(fmt(pts[0].fitness, 3))}</td></tr>`;
}

// ---- Pareto front ------------------------------------------------------------

// The programs with values of objectives I and J of O (/api/objectives):
// [{id, x, y, front, screened}], front when no other is at least as good on
// both and better on one (the directions O.maximise says). A program the
// screen stopped (O.screened) was measured on a few scenarios only: drawn,
// marked, never on the front and never beating one that is.
function paretoPoints(o, i, j) {
  const screened = new Set(o.screened || []);
  const pts = o.programs.filter(r => typeof r[1 + i] === "number" && typeof r[1 + j] === "number")
    .map(r => ({id: r[0], x: r[1 + i], y: r[1 + j], screened: screened.has(r[0])}));
  const sx = o.maximise[i] ? 1 : -1, sy = o.maximise[j] ? 1 : -1;
  const beats = (a, b) => sx * a.x >= sx * b.x && sy * a.y >= sy * b.y && (sx * a.x > sx * b.x || sy * a.y > sy * b.y);
  const whole = pts.filter(p => !p.screened);
  for (const p of pts) p.front = !p.screened && !whole.some(q => q !== p && beats(q, p));
  return pts;
}

// The front of the two objectives the selects name: every program a dot,
// the front's in black, joined in the order of the first.
function renderPareto() {
  const o = state.objectives, panel = $("pareto-panel");
  if (!o || (o.objectives || []).length < 2) { panel.hidden = true; return; }
  panel.hidden = false;
  for (const [id, def] of [["pareto-x", 0], ["pareto-y", 1]]) {
    const sel = $(id), keep = sel.value;
    if (sel.options.length !== o.names.length) {
      sel.innerHTML = o.names.map((n, k) => `<option value="${k}">${esc(n)}${o.maximise[k] ? " ↑" : " ↓"}</option>`).join("");
      sel.value = String(def);
      sel.onchange = renderPareto;
    } else if (keep !== "") sel.value = keep;
  }
  const i = +$("pareto-x").value, j = +$("pareto-y").value;
  const pts = paretoPoints(o, i, j);
  if (!pts.length) {
    $("pareto-chart").innerHTML = `<p class="muted">no program has both ${esc(o.names[i])} and ${esc(o.names[j])} yet</p>`;
    $("pareto-caption").textContent = "";
    return;
  }
  const {W, H, L, R, T, B} = CH;
  const xt = niceTicks(Math.min(...pts.map(p => p.x)), Math.max(...pts.map(p => p.x)), 6);
  const yt = niceTicks(Math.min(...pts.map(p => p.y)), Math.max(...pts.map(p => p.y)), 5);
  const X = v => L + (W - L - R) * ((v - xt.lo) / (xt.hi - xt.lo || 1));
  const Y = v => T + (H - T - B) * (1 - (v - yt.lo) / (yt.hi - yt.lo || 1));
  let svg = `<svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="Pareto front">`;
  for (const v of yt.ticks)
    svg += `<line x1="${L}" x2="${W - R}" y1="${Y(v).toFixed(1)}" y2="${Y(v).toFixed(1)}" stroke="#eceff2"/>` +
           `<text class="ytick" x="${L - 5}" y="${(Y(v) + 4).toFixed(1)}" text-anchor="end">${esc(v.toFixed(yt.digits))}</text>`;
  for (const v of xt.ticks)
    svg += `<text class="xtick" x="${X(v).toFixed(1)}" y="${H - B + 16}" text-anchor="middle">${esc(v.toFixed(xt.digits))}</text>`;
  svg += `<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#9aa3ad"/>` +
         `<text x="${(L + W) / 2}" y="${H - 2}" text-anchor="middle">${esc(o.names[i])}</text>` +
         `<text x="12" y="${(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 12 ${(T + H - B) / 2})">${esc(o.names[j])}</text>`;
  const front = pts.filter(p => p.front).sort((a, b) => a.x - b.x);
  svg += `<polyline class="front-line" points="${front.map(p => `${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(" ")}" fill="none" stroke="#111" stroke-width="1.2"/>`;
  for (const p of pts) {
    const cls = p.front ? "front" : p.screened ? "screened" : "pt";
    const look = p.front ? `r="4.5" fill="#111"` : p.screened ? `r="3" fill="none" stroke="#9aa3ad"` : `r="3" fill="#9aa3ad"`;
    svg += `<a href="#/program/${p.id}"><circle class="${cls}" data-id="${p.id}" cx="${X(p.x).toFixed(1)}" cy="${Y(p.y).toFixed(1)}" ${look}><title>#${p.id}: ${esc(o.names[i])} ${esc(fmt(p.x, 4))}, ${esc(o.names[j])} ${esc(fmt(p.y, 4))}${p.screened ? " (screened out after a few scenarios: not on the front)" : ""}</title></circle></a>`;
  }
  const nscreened = pts.filter(p => p.screened).length;
  $("pareto-chart").innerHTML = svg + "</svg>";
  $("pareto-caption").textContent = `${front.length} of ${pts.length} programs on the front of ${o.names[i]} and ${o.names[j]}` +
    (nscreened ? `; ${nscreened} screened out after a few scenarios (hollow: not measured whole, not on the front)` : "") +
    ` (the run weighs ${o.objectives.join(", ")}; kevolve best --pareto lists its front over all of them)`;
}

// ---- MAP-Elites grids --------------------------------------------------------

// Axis K of grid G: {name, bins, edge(i) (the lower edge of bin i, null when
// the values are not known), label(i)}. The search scales each dimension by
// the range it has seen and cuts it into equal bins (search/features.c).
function gridAxis(g, k) {
  const a = (g.axes || [])[k] || {}, n = g.bins[k];
  const r = Array.isArray(a.range) ? a.range : null;
  const w = r ? (r[1] - r[0]) / Math.max(1, a.bins || n) : 0;
  const edge = i => (r ? r[0] + i * w : null);
  // One value seen so far: every program is in bin 0.
  const flat = r && !(r[1] > r[0]);
  // A range narrow for its size (18901 to 18940) reads the same at every
  // edge in five characters: then the edges after the first say how far
  // from it they are ("+4.88").
  const short = [...Array(n).keys()].map(i => fmtShort(edge(i)));
  const repeats = short.some((l, i) => i > 0 && l === short[i - 1]);
  const label = i => (repeats && i > 0 ? "+" + fmtShort(i * w) : short[i]);
  return {name: (g.dimensions || [])[k] || "", bins: n, range: r, edge,
          label: i => (!r ? `#${i}` : flat ? (i ? "" : fmtShort(r[0])) : label(i)),
          span: i => (!r ? `bin ${i}` : flat ? `${fmt(r[0], 4)}, every value seen`
                                             : `${fmt(edge(i), 4)} to ${fmt(edge(i + 1), 4)}`)};
}

function renderGrids() {
  let lo = Infinity, hi = -Infinity;
  for (const g of state.grids) for (const c of g.cells) { lo = Math.min(lo, c.fitness); hi = Math.max(hi, c.fitness); }
  const t = f => (hi > lo ? (f - lo) / (hi - lo) : 1);
  const dims = state.grids.length ? state.grids[0].dimensions : [];
  $("grid-dims").textContent = dims.length ? `x: ${dims[0]}${dims[1] ? ", y: " + dims[1] : ""}` : "";
  let html = "";
  for (const g of state.grids) {
    const [nx, ny] = g.bins;
    const ax = gridAxis(g, 0), ay = gridAxis(g, 1), twoD = !!ay.name;
    const at = new Map(g.cells.map(c => [`${c.x},${c.y}`, c]));
    let cells = "";
    for (let y = ny - 1; y >= 0; y--) {
      if (twoD) cells += `<span class="ytick" data-y="${y}" data-value="${ay.edge(y) ?? ""}" title="${esc(ay.name)}: ${esc(ay.span(y))}">${esc(ay.label(y))}</span>`;
      for (let x = 0; x < nx; x++) {
        const c = at.get(`${x},${y}`);
        const where = `${ax.name}: ${ax.span(x)}${twoD ? `; ${ay.name}: ${ay.span(y)}` : ""}`;
        if (!c) { cells += `<div title="${esc(where)}: empty"></div>`; continue; }
        const v = t(c.fitness);
        cells += `<div class="full" data-id="${c.id}" data-x="${x}" data-y="${y}" data-fitness="${c.fitness}" ` +
                 `style="background:${heat(v)};color:${v > 0.55 ? "#000" : "#fff"}" ` +
                 `title="${esc(where)}: program ${c.id}, score ${esc(fmt(c.fitness))}; ${c.count} placed here">${esc(fmtShort(c.fitness))}</div>`;
      }
    }
    if (twoD) cells += `<span class="corner"></span>`;
    for (let x = 0; x < nx; x++)
      cells += `<span class="xtick" data-x="${x}" data-value="${ax.edge(x) ?? ""}" title="${esc(ax.name)}: ${esc(ax.span(x))}">${esc(ax.label(x))}</span>`;
    const range = a => (a.range ? `${fmt(a.range[0], 4)} to ${fmt(a.range[1], 4)} in ${a.bins} bins` : `${a.bins} bins; values not stored`);
    html += `<div class="grid-box" data-island="${g.island}"><h3>island ${g.island} <small class="muted">` +
            `${g.cells.length} of ${nx * ny} cells</small></h3>` +
            `<div class="heat" style="grid-template-columns:${twoD ? "auto " : ""}repeat(${nx}, 34px)">${cells}</div>` +
            `<div class="axis">→ ${esc(ax.name)} (${esc(range(ax))})${twoD ? `<br>↑ ${esc(ay.name)} (${esc(range(ay))})` : ""}</div></div>`;
  }
  $("grids").innerHTML = html || `<p class="muted">no placed programs yet</p>`;
  for (const d of $("grids").querySelectorAll("div.full"))
    d.addEventListener("click", () => { location.hash = `#/program/${d.dataset.id}`; });
}
