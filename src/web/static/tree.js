// The kevolve dashboard, the evolution tree (canvas, smooth at 10,000
// programs): one node per program, a parent above its children, one row
// per depth. Colour: island. Shape: status (filled circle ok, ✕ failed,
// hourglass timeout, square rejected, ring duplicate), ◇ migrant, gold
// ring the best program. Uses state (app.js).
"use strict";

const view = {scale: 1, tx: 20, ty: 20, fitted: false};
const SPACE_X = 14, SPACE_Y = 46;

// Score in [0, 1] across the run's OK programs.
function norm(f) {
  if (f === null || state.fitMax <= state.fitMin) return 0.5;
  return Math.max(0, Math.min(1, (f - state.fitMin) / (state.fitMax - state.fitMin)));
}

// Tidy layout: leaves take consecutive columns in depth-first order, a
// parent sits above the middle of its children, rows are depths.
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

// Draws node N's shape at (X, Y) with radius R.
function drawNode(g, n, x, y, r) {
  const col = islandColor(n.island);
  g.lineWidth = 1.6;
  switch (n.status) {
  case "failed":
    g.strokeStyle = STATUS_COLOR.failed;
    g.beginPath();
    g.moveTo(x - r, y - r); g.lineTo(x + r, y + r);
    g.moveTo(x + r, y - r); g.lineTo(x - r, y + r);
    g.stroke();
    return;
  case "timeout":
    g.strokeStyle = STATUS_COLOR.timeout;
    g.beginPath();
    g.moveTo(x - r, y - r); g.lineTo(x + r, y - r); g.lineTo(x - r, y + r); g.lineTo(x + r, y + r);
    g.closePath();
    g.stroke();
    return;
  case "rejected":
    g.strokeStyle = STATUS_COLOR.rejected;
    g.strokeRect(x - r, y - r, 2 * r, 2 * r);
    return;
  case "duplicate":
    g.strokeStyle = STATUS_COLOR.duplicate;
    g.lineWidth = 1.2;
    g.beginPath();
    g.arc(x, y, r, 0, 2 * Math.PI);
    g.stroke();
    return;
  }
  g.fillStyle = col;
  g.beginPath();
  if (n.is_migrant) {
    g.strokeStyle = "#111";
    g.lineWidth = 1;
    g.moveTo(x, y - r - 1); g.lineTo(x + r + 1, y); g.lineTo(x, y + r + 1); g.lineTo(x - r - 1, y);
    g.closePath();
    g.fill();
    g.stroke();
  } else {
    g.arc(x, y, r, 0, 2 * Math.PI);
    g.fill();
  }
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
  const k = Math.max(0.6, Math.min(1.6, Math.sqrt(view.scale)));
  for (const n of state.list) {
    const [x, y] = screenPos(n);
    if (!visible(x, y)) continue;
    const r = nodeRadius(n) * k;
    drawNode(g, n, x, y, r);
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
    tip.textContent = `program ${n.id}: ${n.status}${n.reason ? " (" + n.reason + ")" : ""}\n` +
      (n.status === "ok" ? `score ${fmt(n.fitness)}\n` : "") +
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

// The counts under the tree: programs, edges, migrants and each status,
// with the legend of shapes (the same numbers as data attributes).
function renderTreeStats() {
  const counts = Object.fromEntries(STATUSES.map(s => [s, 0]));
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
  for (const st of STATUSES) s.dataset[st] = counts[st];
  s.textContent = `${state.list.length} programs · ${edges} edges · ${migrants} migrants · best #${state.bestId}`;
  const islands = [...new Set(state.list.map(n => n.island))].sort((a, b) => a - b);
  $("tree-legend").innerHTML =
    islands.map(i => `<span><i style="background:${islandColor(i)}"></i>island ${i}</span>`).join("") +
    `<span class="sep"></span>` +
    STATUSES.map(st => `<span class="legend-status" id="legend-${st}" data-count="${counts[st]}">` +
      `${statusGlyph(st, st === "ok" ? "#666" : null)} ${st} <b>${counts[st]}</b></span>`).join("");
}
