#!/usr/bin/env python3
"""gi's children in a run's store, by the kind of line each changed: for
every child of the gi mutator that a judge saw (duplicates and children
turned down aside), the line it deleted, against its parent, classed as
a clamp (a one-line if that sets a variable to a value without a call), a
skip on a bound (`continue` or `break` under a condition with '>' or
'>='), another skip, another one-line if, or any other statement; copies,
swaps and replaces apart. Prints how many of each were judged, correct and better
than their parent, as bench/NOTES.md's tables.

Usage: bench/gi_lines.py RUN.db [RUN.db ...] [--list]
  --list  also prints each child: its verdict, its change, the lines removed.
"""
import collections
import difflib
import re
import sqlite3
import sys

# As gi.c's is_clamp: a variable or a member set to a value, no call.
CLAMP = re.compile(r"^if \(.*\) [A-Za-z_][\w.]* *= [^;(=][^;(]*;")
BOUND = re.compile(r"(?<![->])>(?!>)")


def kind(op, removed):
    if op != "delete":
        return "not a deletion (" + op + ")"
    line = removed[0] if removed else ""
    if CLAMP.match(line):
        return "clamp"
    m = re.match(r"^if \((.*)\) *(continue|break);", line)
    if m:
        return ("skip on a bound, " if BOUND.search(m.group(1)) else "other skip, ") + m.group(2)
    if line.startswith("if (") or line.startswith("if("):
        return "another one-line if"
    return "any other statement"


def main():
    args = [a for a in sys.argv[1:] if a != "--list"]
    show = "--list" in sys.argv
    if not args:
        sys.exit(__doc__)
    table = collections.defaultdict(lambda: [0, 0, 0])
    for db in args:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows = con.execute(
            "select p.id, p.source, q.source, p.status, p.reason_code, p.change_summary,"
            " p.fitness, q.fitness from programs p join programs q on p.parent_id = q.id"
            " where p.mutator = 'gi' and p.duplicate_of is null and p.status != 'rejected'"
            " and coalesce(p.reason_code, '') not in ('same_code', 'no_change')").fetchall()
        for pid, src, psrc, status, reason, summary, fit, pfit in rows:
            diff = list(difflib.unified_diff(psrc.splitlines(), src.splitlines(), lineterm="", n=0))
            removed = [d[1:].strip() for d in diff if d.startswith("-") and not d.startswith("---")]
            m = re.match(r"gi: (\w+)", summary or "")
            k = kind(m.group(1) if m else "?", removed)
            ok = status == "ok"
            better = ok and fit is not None and pfit is not None and fit > pfit
            t = table[k]
            t[0] += 1
            t[1] += ok
            t[2] += better
            if show:
                print(f"{db} {pid:5d} {'ok ' if ok else 'BAD'} {'+' if better else ' '} "
                      f"{reason or '':26s} {summary or '':36s} {removed[:1]}")
    print("| changed line | judged | correct | beat the parent |")
    print("|---|---|---|---|")
    for k, (n, ok, better) in sorted(table.items()):
        print(f"| {k} | {n} | {ok} | {better} |")


if __name__ == "__main__":
    main()
