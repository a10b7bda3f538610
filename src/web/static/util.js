// The kevolve dashboard, shared helpers: DOM and formatting, colours, the
// "nice numbers" of chart axes, the status glyphs, and the API client that
// tells a server error, a deleted or replaced store and an unreachable
// server apart. Loaded first; the other scripts use these globals.
"use strict";

const STATIC = window.KV_DATA || null;
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf"];
const STATUSES = ["ok", "failed", "timeout", "rejected", "duplicate"];
const STATUS_COLOR = {ok: "#2e7d32", failed: "#c62828", timeout: "#e07000", rejected: "#8e24aa",
                      duplicate: "#8a94a0"};

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

// A number in at most five characters, sign included ("0.12", "-3.45",
// "1.2k", "87M", "4e-3"): what fits a grid cell or an axis tick.
function fmtShort(v) {
  if (typeof v !== "number" || !isFinite(v)) return "–";
  const sign = v < 0 ? "-" : "", a = Math.abs(v);
  if (a === 0) return "0";
  if (a < 0.01) {
    let e = Math.floor(Math.log10(a)), m = Math.round(a / 10 ** e);
    if (m === 10) { m = 1; e++; }
    return `${sign}${m}e${e}`;
  }
  if (a < 1) return sign + String(Number(a.toPrecision(2)));
  if (a < 999.5) return sign + String(Number(a.toPrecision(3)));
  for (const [unit, s] of [[1e3, "k"], [1e6, "M"], [1e9, "G"], [1e12, "T"]]) {
    const x = a / unit;
    if (x < 999.5) return sign + (x < 9.95 ? String(Number(x.toPrecision(2))) : String(Math.round(x))) + s;
  }
  return sign + a.toExponential(0).replace("+", "");
}

// A time in microseconds, in the unit that reads best.
function fmtTime(us) {
  if (typeof us !== "number" || !isFinite(us)) return "–";
  if (us < 1000) return `${Number(us.toPrecision(3))} µs`;
  if (us < 1e6) return `${Number((us / 1000).toPrecision(3))} ms`;
  return `${Number((us / 1e6).toPrecision(3))} s`;
}

function pct(f, digits = 2) {
  if (typeof f !== "number" || !isFinite(f)) return "–";
  return `${Number((100 * f).toPrecision(digits))}%`;
}

function islandColor(i) { return PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length]; }

// A heat colour (dark blue -> yellow) for t in [0, 1].
function heat(t) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const x = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// A "nice" number near X (Heckbert, Graphics Gems): 1, 2 or 5 times a power
// of ten, rounded when ROUND, else the next one up.
function niceNum(x, round) {
  const e = Math.floor(Math.log10(x)), f = x / 10 ** e;
  let n;
  if (round) n = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  else n = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return n * 10 ** e;
}

// Round ticks over [lo, hi]: {lo, hi, step, ticks, digits}, the range
// widened to whole steps (unless EXACT, which keeps lo and hi and the
// ticks inside them). INTEGER: steps of at least 1.
function niceTicks(lo, hi, count = 5, {exact = false, integer = false} = {}) {
  if (!(hi > lo)) { hi = lo + (integer ? 1 : Math.abs(lo) * 0.1 || 1); }
  let step = niceNum(niceNum(hi - lo, false) / Math.max(1, count - 1), true);
  if (integer) step = Math.max(1, Math.round(step));
  const a = exact ? lo : Math.floor(lo / step + 1e-9) * step;
  const b = exact ? hi : Math.ceil(hi / step - 1e-9) * step;
  const ticks = [];
  for (let v = Math.ceil(a / step - 1e-9) * step; v <= b + step * 1e-9; v += step)
    ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return {lo: a, hi: b, step, ticks, digits};
}

// The glyph of a status, as inline SVG (the tree draws the same shapes), in
// the status's colour or COLOR.
function statusGlyph(status, color) {
  const c = color || STATUS_COLOR[status] || "#555";
  const shapes = {
    ok: `<circle cx="6" cy="6" r="4.5" fill="${c}"/>`,
    failed: `<path d="M2 2L10 10M10 2L2 10" stroke="${c}" stroke-width="2"/>`,
    timeout: `<path d="M2.5 1.5h7L2.5 10.5h7z" fill="none" stroke="${c}" stroke-width="1.6"/>`,
    rejected: `<rect x="1.8" y="1.8" width="8.4" height="8.4" fill="none" stroke="${c}" stroke-width="1.6"/>`,
    duplicate: `<circle cx="6" cy="6" r="4.3" fill="none" stroke="${c}" stroke-width="1.4"/>`,
  };
  return `<svg class="glyph" width="12" height="12" viewBox="0 0 12 12">${shapes[status] || shapes.ok}</svg>`;
}

function statusBadge(status, reason) {
  return `<span class="badge badge-${esc(status)}" data-status="${esc(status)}">${statusGlyph(status, "#fff")} ` +
         `${esc(status)}${reason ? ` · ${esc(reason)}` : ""}</span>`;
}

function link(id) { return id ? `<a href="#/program/${id}">#${id}</a>` : "–"; }

// An API failure: KIND is "network" (no answer), "http" (an answer with an
// error status: STATUS, and STORE "gone" for a deleted store) or
// "replaced" (the server now serves another store than the page loaded).
class ApiError extends Error {
  constructor(kind, message, status = 0, store = null) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.store = store;
  }
}

// The identity of the store the page was loaded from (the server's
// X-Kevolve-Store header): a different one means the file was replaced.
let storeToken = null;

async function api(path) {
  if (STATIC) {
    if (path in STATIC) return STATIC[path];
    throw new ApiError("http", "not included in this static report (" + path + "); use kevolve serve", 404);
  }
  let r;
  try {
    r = await fetch(path, {cache: "no-store"});
  } catch (e) {
    throw new ApiError("network", "server unreachable");
  }
  const body = await r.json().catch(() => null);
  if (!r.ok) {
    const msg = body && body.error ? body.error : `${r.status} ${r.statusText}`;
    throw new ApiError("http", msg, r.status, body && body.store);
  }
  const token = r.headers.get("X-Kevolve-Store");
  if (token) {
    if (storeToken === null) storeToken = token;
    else if (token !== storeToken)
      throw new ApiError("replaced", "the store was replaced (a new run is in this file)");
  }
  if (body === null) throw new ApiError("http", `${path}: the answer is not JSON`, r.status);
  return body;
}
