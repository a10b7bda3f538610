#!/usr/bin/env python3
"""Prints the source of a run's best seed: its initial program (iteration
0, not a migrant's copy) with the highest fitness among those judged
correct (bench/hand_sweep.sh, bench/pipeline_h200.sh judge it again beside
the run's best).

Usage: best_seed_source.py RUN_DB > FILE
"""
import sqlite3
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
row = con.execute("select source from programs where iteration = 0 and status = 'ok' and "
                  "is_migrant = 0 order by fitness desc limit 1").fetchone()
if not row:
    sys.exit(f"{sys.argv[1]}: no seed was judged correct")
sys.stdout.write(row[0])
