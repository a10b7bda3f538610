#!/usr/bin/env python3
"""The table of bench/hand_sweep.sh for one backend: the hand sweep's best,
the main job's children (per minute, seconds each held the judge, the share
that compiled and were correct, failures by reason) and best, and both
bests judged again.

Usage: hand_sweep_table.py RUN_DB BACKEND TASK SWEEP_BEST SWEEP_POINT SWEEP_S RUN_S
                           HAND_AGAIN RUN_AGAIN NPOINTS NSEEDS
"""
import sqlite3
import statistics
import sys


def main():
    (db, backend, task, best, point, sweep_s, run_s, hand_again, run_again, npoints,
     nseeds) = sys.argv[1:]
    best, run_s = float(best), float(run_s)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    # Children: what the mutators made (not the seeds, not migrants' copies).
    child = "iteration > 0 and is_migrant = 0"
    children = con.execute(f"select count(*) from programs where {child}").fetchone()[0]
    correct = con.execute(f"select count(*) from programs where {child} and status = 'ok' "
                          "and json_extract(metrics, '$.correct') = 1").fetchone()[0]
    by_status = con.execute(f"select status, coalesce(reason_code, ''), count(*) from programs "
                            f"where {child} group by 1, 2 order by 3 desc").fetchall()
    # The judge's seconds per child (the GPU lock's on cuda); a duplicate
    # takes a verdict already given and holds nothing.
    held = [float(v) if v is not None else 0.0 for (v,) in con.execute(
        f"select a.value from programs p left join artifacts a on a.program_id = p.id "
        f"and a.name = 'worker_seconds' where {child.replace('iteration', 'p.iteration')}")]
    screened = con.execute(f"select count(*) from programs where {child} "
                           "and json_extract(metrics, '$.screened_out') = 1").fetchone()[0]
    fits = con.execute("select iteration, fitness from programs where status = 'ok' and "
                       "fitness is not null and is_migrant = 0 order by iteration").fetchall()
    start = max((f for it, f in fits if it == 0), default=0)
    run_best = max((f for _, f in fits), default=0)
    reached = next((it for it, f in fits if it > 0 and f >= best), None)
    mix = dict(con.execute(f"select coalesce(mutator, '?'), count(*) from programs where {child} "
                           "group by 1").fetchall())
    h = [float(x) for x in hand_again.split()]
    r = [float(x) for x in run_again.split()]
    print(f"\n== {backend}: {task}, speedup over the naive kernel (geometric mean) ==")
    print(f"hand sweep: {npoints} points of {nseeds} seed(s) in {sweep_s} s; best {best:.2f} "
          f"at {point}")
    print(f"main job:   {children} children in {run_s:.0f} s ({mix}); best of the seeds "
          f"{start:.2f}, best {run_best:.2f} ({run_best / best:.0%} of the sweep's); "
          + (f"reached the sweep's best at iteration {reached}" if reached is not None
             else "did not reach the sweep's best"))
    print(f"  children per minute {60 * children / run_s if run_s else 0:.1f}; judge-held seconds "
          f"per child, median {statistics.median(held) if held else 0:.1f}; compiled and correct "
          f"{correct} ({correct / children if children else 0:.0%}); screened out {screened}")
    print("  by status: " + ", ".join(f"{s}{' ' + c if c else ''} {n}" for s, c, n in by_status))
    if h and r:
        print(f"again, {len(h)} each, alternately: sweep's best median {statistics.median(h):.2f} "
              f"{[round(x, 2) for x in h]}; job's best median {statistics.median(r):.2f} "
              f"{[round(x, 2) for x in r]}")


if __name__ == "__main__":
    main()
