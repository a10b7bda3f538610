#!/usr/bin/env python3
"""The table of bench/qwen3_ops_all_h200.sh: for each task, each scenario's
microseconds per call for the naive start, the vec seed and the run's best
(as the run judged them: its store's per-scenario medians), beside PyTorch
eager and torch.compile (warm, and cold at decode sizes:
bench/qwen3_ops_torch.py's JSON) and the floor
(the bytes a call must move at the measured copy bandwidth), with the
best's share of the floor and its speed against torch.compile.

Usage: python3 bench/qwen3_ops_table.py TORCH.json TASK=RUN_DIR ...   (prints the table)"""
import json
import os
import sqlite3
import sys


def programs(run):
    """{"naive", "vec", "best"}: (id, fitness, {scenario: us}) from RUN's
    store; the best is the fittest of the programs timed on every scenario
    the run times (screening stops some children early)."""
    con = sqlite3.connect(f"file:{os.path.join(run, 'run.db')}?mode=ro", uri=True)
    rows = con.execute("select p.id, p.mutator, p.fitness, p.source, a.value from programs p "
                       "join artifacts a on a.program_id = p.id and a.name = 'scenarios' "
                       "where p.status = 'ok'").fetchall()
    out, recs = {}, []
    for pid, mutator, fitness, source, scen in rows:
        times = {s["name"]: s["median_us"] for s in json.loads(scen) if "median_us" in s}
        rec = (pid, fitness or 0.0, times)
        recs.append(rec)
        head = (source or "").lstrip("/* ").lower()
        if mutator == "initial" and head.startswith("naive"):
            out["naive"] = rec
        elif mutator == "initial" and head.startswith("vectorised"):
            out["vec"] = rec
    if recs:
        most = max(len(r[2]) for r in recs)
        out["best"] = max((r for r in recs if len(r[2]) == most), key=lambda r: r[1])
    return out


def main():
    torch = json.load(open(sys.argv[1]))
    gbps = torch["copy_gbps"]
    print(f"{torch['device']}, torch {torch['torch']}, copy {gbps:.0f} GB/s")
    for arg in sys.argv[2:]:
        task, run = arg.split("=", 1)
        try:
            progs = programs(run)
        except Exception as e:  # say why, go on with the next task
            print(f"\n{task}: no store ({e})")
            continue
        labels = [k for k in ("naive", "vec", "best") if k in progs]
        print(f"\n{task}: microseconds per call (best: program {progs.get('best', (None,))[0]}; "
              "floor: bytes at the copy bandwidth)")
        print(f"{'scenario':22} {'floor':>7} {'eager':>8} {'compile':>8} {'cold':>8} " +
              " ".join(f"{k:>8}" for k in labels) + "  of_floor vs_compile vs_cold")
        for r in torch["rows"]:
            if r["task"] != task:
                continue
            floor = r["bytes"] / gbps / 1e3
            mine = [progs[k][2].get(r["scenario"]) for k in labels]
            best = progs.get("best", (0, 0, {}))[2].get(r["scenario"])
            comp, cold = r.get("compile_us"), r.get("compile_cold_us")
            cells = " ".join(f"{m:8.2f}" if m else f"{'-':>8}" for m in mine)
            tail = (f"  {floor / best:8.0%} {comp / best:9.2f}x" if best and comp else "")
            tail += f" {cold / best:6.2f}x" if best and cold else ""
            print(f"{r['scenario']:22} {floor:7.2f} {r['eager_us']:8.2f} "
                  f"{comp if comp else float('nan'):8.2f} {cold if cold else float('nan'):8.2f} "
                  f"{cells}{tail}")


if __name__ == "__main__":
    main()
