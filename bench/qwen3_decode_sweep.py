#!/usr/bin/env python3
"""A hand-picked sweep of the qwen3_decode seeds' tune axes as the first
generation of an evolution (issue 43): bench/qwen3_decode_h200.sh's
evolve part with SWEEP=1 starts each block's run from these variants of
its fast seed instead of examples/qwen3_decode's seeds, so every point
below is judged once (the run's initial programs, none screened) before
the built-in mutators go on from the best; the export then picks the
fastest per scenario among all of them.

The points are the configurations the 2026-12-06 profile pointed at
(bench/NOTES.md, "qwen3-decode-profile"): more, smaller blocks with every
load of a row in flight at once (the o child `NR 1 UNROLL 8 WARPS 1 KS 8
PDL 1` beat its seed 1.6x), programmatic dependent launch, and for the
attention attn_cluster.cu (2026-12-07: the chunks of a group merged
through distributed shared memory) beside the bests of attn_mma.cu and
attn_pipe.cu.

Usage: qwen3_decode_sweep.py config BLOCK OUTDIR   writes OUTDIR/variants/*.cu
                                                   and OUTDIR/BLOCK_sweep.yaml,
                                                   prints the config's path
       qwen3_decode_sweep.py table RUN_DIR         each judged program's axes
                                                   and times a scenario (us)"""
import json
import os
import re
import sqlite3
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each block's fast seed; a point's SEED names another.
SEEDS = {"attn": "attn_cluster.cu", "qkv": "qkv_cluster.cu", "o": "o_fused.cu", "mlp": "mlp_fused.cu",
         "post": "post_grid.cu"}
# Qwen3-0.6B's down projection (3,072 columns, 384 chunks of 8) in one
# round of loads: each of 8 warps takes a row pair's chunks c and c + 256.
ONE_PASS_DOWN = {"DOWN_NR": 2, "DOWN_UNROLL": 2, "DOWN_WARPS": 8, "DOWN_KS": 8}
POINTS = {
    # attn_cluster.cu (a group's chunks merged in one cluster) at its seed
    # and the axes that move its fixed costs, then the bests of 2026-12-06
    # (attn_mma's MIN_GROUPS 1 at 32,768 rows, attn_pipe's at 1,024).
    # SPAN first (2026-12-07: a group's rows over several clusters, so the
    # chunks fill the multiprocessors; CLUSTER 8 alone used 64 of 132).
    "attn": [{"SPAN": 16}, {}, {"SPAN": 16, "MIN_GROUPS": 1},
             {"SPAN": 16, "WARPS": 4, "MIN_GROUPS": 1}, {"SPAN": 4},
             {"SPAN": 16, "PDL": 1, "PREFETCH": 1}, {"PDL": 1, "PREFETCH": 1}, {"CLUSTER": 4},
             {"MIN_GROUPS": 1}, {"GROUPS": 2, "PIPE": 0}, {"WARPS": 4},
             {"SEED": "attn_mma.cu", "MIN_GROUPS": 1},
             {"SEED": "attn_pipe.cu", "STAGES": 3, "MIN_GROUPS": 1}],
    # XREG (the one-token path) is on in the seeds: each block's best
    # points of 2026-12-06 first (0.6B's and 14B's), then RING (the weights
    # through shared memory, decode_ring.cuh) at the 14B shapes' sizes: a
    # warp a group of rows (qkv: WARPS x NR >= the 16 rows of a block of a
    # cluster of 8), each ring within its block's share of shared memory.
    "qkv": [{"WARPS": 8, "PDL": 1}, {"CLUSTER": 4, "WARPS": 8, "PDL": 1}, {},
            {"WARPS": 8, "PDL": 1, "RING": 8}, {"WARPS": 8, "RING": 16}, {"NR": 4, "RING": 8},
            {"CLUSTER": 4, "NR": 4, "WARPS": 8, "PDL": 1, "RING": 8}, {"WARPS": 8, "PDL": 1, "RING": 4},
            {"WARPS": 8, "PDL": 1, "XREG": 0}],
    "o": [{"NR": 2, "UNROLL": 4, "WARPS": 8, "KS": 4, "PDL": 1},
          {"NR": 1, "UNROLL": 8, "WARPS": 1, "KS": 8, "PDL": 1},
          {"NR": 2, "WARPS": 8, "KS": 4, "PDL": 1, "RING": 8}, {"NR": 2, "RING": 8},
          {"NR": 4, "KS": 2, "RING": 8}, {"NR": 2, "KS": 2, "PDL": 1, "RING": 16},
          {"NR": 1, "UNROLL": 8, "WARPS": 4, "KS": 4, "PDL": 1}, {}],
    # The two-kernel bests first (2026-12-07, m06b_t1 10.03 us on the H200),
    # then GRID 1 (2026-12-08: both as one kernel apart by a grid-wide
    # barrier; 15.55 us on an H100 at its best point, the one below).
    "mlp": [{"NR": 1, "WARPS": 8, "PDL": 1}, {"PDL": 1, "XREG": 0},
            {"NR": 1, "WARPS": 8, "PDL": 1, "RING": 8, "DOWN_RING": 8},
            {"GRID": 1, "NR": 1, "WARPS": 8, "PDL": 1, "DOWN_NR": 1, "DOWN_KS": 8, "DOWN_UNROLL": 2},
            {"NR": 1, "WARPS": 4, "PDL": 1}, {"NR": 2, "RING": 8, "DOWN_RING": 8},
            {"NR": 1, "WARPS": 8, "RING": 16, "DOWN_RING": 16},
            # m14b_t1's best of 2026-12-07 (193 us), a tune child no sweep listed
            {"NR": 2, "WARPS": 8, "DOWN_UNROLL": 2, "RING": 16, "DOWN_RING": 16},
            {"NR": 1, "PDL": 1, "RING": 16, "DOWN_WARPS": 8, "DOWN_KS": 4, "DOWN_RING": 8},
            {"NR": 2, "WARPS": 8, "PDL": 1, "RING": 4, "DOWN_RING": 4},
            {"WARPS": 8, "PDL": 1, **ONE_PASS_DOWN}],
    # post_grid.cu (2026-12-08: o and the MLP as one kernel, three stages
    # apart by grid barriers): its best point on an H100 (20.92 us at
    # p06b_t1, PREFETCH 0), then fewer blocks a multiprocessor (OCC: fewer
    # arrivals at each barrier), the seed point, and for 14B's wide rows
    # fewer warps a row and more rows a warp.
    "post": [{"PREFETCH": 0}, {"OCC": 1, "WARPS": 16, "PREFETCH": 0}, {"OCC": 1, "PREFETCH": 0},
             {"OCC": 2, "PREFETCH": 0}, {"OCC": 1, "WARPS": 16, "O_KS": 4, "DOWN_KS": 4, "PREFETCH": 0},
             {}, {"WARPS": 4, "O_KS": 4, "DOWN_KS": 4, "DOWN_NR": 2},
             {"NR": 2, "O_NR": 2, "O_KS": 2, "O_UNROLL": 4, "DOWN_NR": 2, "DOWN_KS": 2,
              "DOWN_UNROLL": 4}],
}
AXIS = re.compile(r"^#define ([A-Z_]+) +(-?[0-9]+)( +// kevolve: tune ([-0-9 ]+))$", re.M)


def variant(seed_text, point):
    """SEED_TEXT with POINT's axes set; each value must be one its tune
    comment lists (else the mutators could not reach it either)."""
    seen = set()

    def sub(m):
        name = m.group(1)
        if name not in point:
            return m.group(0)
        seen.add(name)
        value = point[name]
        if str(value) not in m.group(4).split():
            sys.exit(f"{name}={value}: not among the axis's values ({m.group(4).strip()})")
        return f"#define {name} {value}{m.group(3)}"

    out = AXIS.sub(sub, seed_text)
    missing = set(point) - seen
    if missing:
        sys.exit(f"no tune axis {sorted(missing)} in the seed")
    return out


def write_config(block, outdir):
    vdir = os.path.join(outdir, "variants")
    os.makedirs(vdir, exist_ok=True)
    paths = []
    for i, point in enumerate(POINTS[block]):
        point = dict(point)
        seed = point.pop("SEED", SEEDS[block])
        text = open(os.path.join(ROOT, "tasks", "qwen3_decode", "cuda", seed)).read()
        p = os.path.join(vdir, f"{block}_{i:02d}_{seed[:-3]}.cu")
        with open(p, "w") as f:
            f.write(variant(text, point))
        paths.append(p)
    example = open(os.path.join(ROOT, "examples", "qwen3_decode", f"{block}_cuda.yaml")).read()
    listed = re.compile(r"^initial_programs:\n(?:  - .*\n)+", re.M)
    if not listed.search(example):
        sys.exit(f"{block}_cuda.yaml: no initial_programs list to replace")
    programs = "initial_programs:\n" + "".join(f"  - {p}\n" for p in paths)
    cfg = os.path.join(outdir, f"{block}_sweep.yaml")
    with open(cfg, "w") as f:
        f.write(listed.sub(lambda _: programs, example, count=1))
    print(cfg)


def table(run_dir):
    db = sqlite3.connect(f"file:{os.path.join(run_dir, 'run.db')}?mode=ro", uri=True)
    rows = db.execute("SELECT id, mutator, source, metrics FROM programs ORDER BY id").fetchall()
    progs, scen = [], []
    for pid, mutator, source, metrics in rows:
        m = json.loads(metrics) if metrics else {}
        times = {k[:-len("_median_us")]: v for k, v in m.items() if k.endswith("_median_us")}
        if not times:
            continue
        axes = " ".join(f"{a}{v}" for a, v, _, _ in AXIS.findall(source or ""))
        progs.append((pid, mutator, axes, times))
        scen += [s for s in times if s not in scen]
    print("| id | from | axes | " + " | ".join(scen) + " |")
    best = {s: min(t[s] for *_, t in progs if s in t) for s in scen}
    for pid, mutator, axes, times in progs:
        cells = [("**%.2f**" if times.get(s) == best[s] else "%.2f") % times[s] if s in times else "-"
                 for s in scen]
        print(f"| {pid} | {mutator} | {axes} | " + " | ".join(cells) + " |")
    # The initial programs that failed, with why (a seed's bug shows here).
    for pid, axes, status, why in db.execute(
            "SELECT id, source, status, status_reason FROM programs WHERE parent_id IS NULL "
            "AND status != 'ok' ORDER BY id").fetchall():
        axes = " ".join(f"{a}{v}" for a, v, _, _ in AXIS.findall(axes or ""))
        print(f"failed {pid} ({axes}): {status}: {(why or '')[:300]}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "config":
        write_config(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
