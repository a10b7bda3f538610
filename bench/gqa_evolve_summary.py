#!/usr/bin/env python3
"""Summary of a kevolve run's store (run.db) for bench/NOTES.md: every
program (parent, mutator, fitness, change, evaluation seconds), the lineage
of the best, rejection reasons, and the best's time and speedup on each
scenario. Writes OUT (JSON) and prints the short version.

Usage: gqa_evolve_summary.py RUN_DB OUT.json [--status STATUS.json]
                             [--task TASK] [--minutes M]
"""
import argparse
import json
import sqlite3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("out")
    ap.add_argument("--status", help="kevolve status --json output to include")
    ap.add_argument("--task", default="")
    ap.add_argument("--minutes", type=float, default=0.0)
    a = ap.parse_args()
    con = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    rows = con.execute("select id, parent_id, mutator, status, fitness, change_summary, metrics, "
                       "eval_seconds from programs order by id").fetchall()
    by_id = {r[0]: r for r in rows}
    ok = [r for r in rows if r[3] == "ok" and r[4] is not None]
    best = max(ok, key=lambda r: r[4]) if ok else None
    lineage = []
    p = best
    while p is not None:
        lineage.append({"id": p[0], "mutator": p[2], "fitness": p[4], "change": p[5]})
        p = by_id.get(p[1])
    reasons = {}
    for r in rows:
        if r[3] != "ok":
            reasons[r[3]] = reasons.get(r[3], 0) + 1
    # Why children scored zero: the harness's verdict (reason code and detail).
    rejected = {}
    for pid, name, value in con.execute("select program_id, name, value from artifacts where name "
                                        "in ('reason', 'reason_detail') order by program_id"):
        rejected.setdefault(pid, {})[name] = value
    summary = {"task": a.task, "minutes": a.minutes, "programs": len(rows), "ok": len(ok),
               "not_ok_by_status": reasons,
               "initial_fitness": rows[0][4] if rows else None,
               "best_id": best[0] if best else None, "best_fitness": best[4] if best else None,
               "best_lineage": lineage[::-1],
               "rejections": {str(k): v for k, v in rejected.items()},
               "programs_list": [{"id": r[0], "parent": r[1], "mutator": r[2], "status": r[3],
                                  "fitness": r[4], "change": r[5], "eval_seconds": r[7]}
                                 for r in rows]}
    if best:
        m = json.loads(best[6])
        summary["best_scenarios"] = {
            k[:-len("_median_us")]: {"us": v, "speedup": m.get(k[:-len("_median_us")] + "_speedup")}
            for k, v in m.items() if k.endswith("_median_us")}
    if a.status:
        try:
            summary["status"] = json.load(open(a.status))
        except (OSError, ValueError):
            pass
    json.dump(summary, open(a.out, "w"), indent=1)
    print(f"\nprograms {len(rows)}, ok {len(ok)}, initial {summary['initial_fitness']}, "
          f"best #{summary['best_id']} fitness {summary['best_fitness']}")
    print("lineage of the best:")
    for s in summary["best_lineage"]:
        fit = s["fitness"] if s["fitness"] is not None else "-"
        print(f"  #{s['id']:<4} {s['mutator'] or '':10s} {fit:<10} {s['change'] or ''}")
    codes = {}
    for v in rejected.values():
        codes[v.get("reason", "?")] = codes.get(v.get("reason", "?"), 0) + 1
    print("rejections by reason:", codes or "none")
    for pid, v in list(rejected.items())[:3]:
        print(f"  #{pid}: {v.get('reason')}: {(v.get('reason_detail') or '')[:300]}")
    if best:
        print(f"\n{'scenario':28s} {'us':>10s} {'speedup':>8s}")
        for k, v in summary["best_scenarios"].items():
            print(f"{k:28s} {v['us']:10.2f} {v['speedup'] or 0:8.2f}x")


if __name__ == "__main__":
    main()
