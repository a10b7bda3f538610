#!/usr/bin/env python3
"""The table of bench/hand_sweep.sh for one backend: the hand sweep's best,
the main job's children (per minute, seconds each held the judge, the share
that compiled and were correct, failures by reason) and best, and both
bests judged again.

Usage: hand_sweep_table.py RUN_DB BACKEND TASK SWEEP_BEST SWEEP_POINT SWEEP_S RUN_S
                           HAND_AGAIN RUN_AGAIN NPOINTS NSEEDS [SEED_AGAIN]
"""
import os
import sqlite3
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import main_job_stats  # noqa: E402


def main():
    (db, backend, task, best, point, sweep_s, run_s, hand_again, run_again, npoints,
     nseeds) = sys.argv[1:12]
    seed_again = sys.argv[12] if len(sys.argv) > 12 else ""
    best, run_s = float(best), float(run_s)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    # Children: what the mutators made (not the seeds, not migrants' copies).
    child = "iteration > 0 and is_migrant = 0"
    children = con.execute(f"select count(*) from programs where {child}").fetchone()[0]
    by_status = con.execute(f"select status, coalesce(reason_code, ''), count(*) from programs "
                            f"where {child} group by 1, 2 order by 3 desc").fetchall()
    fits = con.execute("select iteration, fitness from programs where status = 'ok' and "
                       "fitness is not null and is_migrant = 0 order by iteration").fetchall()
    start = max((f for it, f in fits if it == 0), default=0)
    run_best = max((f for _, f in fits), default=0)
    reached = next((it for it, f in fits if it > 0 and f >= best), None)
    mix = dict(con.execute(f"select coalesce(mutator, '?'), count(*) from programs where {child} "
                           "group by 1").fetchall())
    h = [float(x) for x in hand_again.split()]
    r = [float(x) for x in run_again.split()]
    sd = [float(x) for x in seed_again.split()]
    print(f"\n== {backend}: {task}, speedup over the naive kernel (geometric mean) ==")
    print(f"hand sweep: {npoints} points of {nseeds} seed(s) in {sweep_s} s; best {best:.2f} "
          f"at {point}")
    print(f"main job:   {children} children in {run_s:.0f} s ({mix}); best of the seeds "
          f"{start:.2f}, best {run_best:.2f} ({run_best / best:.0%} of the sweep's); "
          + (f"reached the sweep's best at iteration {reached}" if reached is not None
             else "did not reach the sweep's best"))
    print("\n".join(main_job_stats.lines(main_job_stats.stats(db, run_s))))
    print("  by status: " + ", ".join(f"{s}{' ' + c if c else ''} {n}" for s, c, n in by_status))
    if h and r:
        print(f"again, {len(h)} each, alternately: sweep's best median {statistics.median(h):.2f} "
              f"{[round(x, 2) for x in h]}; job's best median {statistics.median(r):.2f} "
              f"{[round(x, 2) for x in r]}")
    if sd and r:
        print(f"again, alternately with them: the best seed's median {statistics.median(sd):.2f} "
              f"{[round(x, 2) for x in sd]}; the job's best over it "
              f"{statistics.median(r) / statistics.median(sd):.3f}x")


if __name__ == "__main__":
    main()
