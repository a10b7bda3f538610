#!/usr/bin/env python3
"""The tune axes of a kernel seed: lists them, writes a variant at a given
point, or draws points to check or time (tests/integration/test_gqa_seed_axes.sh,
bench/hand_sweep.sh).

Reads the `#define NAME VALUE  // kevolve: tune V1 V2 ... [when COND]` lines
of the gqa seeds (the `/* ... */` form too); conditions are ignored, so a
point may set an axis whose condition does not hold (every value of every
axis must still compile and be right).

  tune_axes.py list SEED                  one line per axis: NAME DEFAULT V1 V2 ...
  tune_axes.py set SEED OUT NAME=V ...    writes SEED with those values to OUT
  tune_axes.py last SEED                  the point with every axis at its last value
  tune_axes.py sample SEED N RNG_SEED     N points, one a line ("NAME=V ..."): the
                                          seed's own values, every axis at its
                                          first and at its last value, then random
"""
import random
import re
import sys

LINE = re.compile(
    r"^(#define\s+(\w+)\s+)(\S+)(\s*(?://|/\*)\s*kevolve:\s*tune\s+)(.*?)(\*/)?\s*$")


def axes(text):
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        values = m.group(5).split(" when ")[0].split()
        if values and values[0] in ("range", "pow2"):
            lo, hi = int(values[1]), int(values[2])
            if values[0] == "pow2":
                values = [str(1 << k) for k in range(0, 40) if lo <= 1 << k <= hi]
            else:
                step = int(values[3]) if len(values) > 3 else 1
                values = [str(v) for v in range(lo, hi + 1, step)]
        out.append((m.group(2), m.group(3), values))
    return out


def set_values(text, point):
    lines = text.splitlines(keepends=True)
    left = dict(point)
    for i, line in enumerate(lines):
        m = LINE.match(line.rstrip("\n"))
        if m and m.group(2) in left:
            v = left.pop(m.group(2))
            if v not in axes(line)[0][2]:
                sys.exit(f"{m.group(2)}={v}: not one of its values")
            lines[i] = line[:m.start(3)] + v + line[m.end(3):]
    if left:
        sys.exit(f"no axis named {', '.join(left)}")
    return "".join(lines)


def main():
    cmd, seed = sys.argv[1], sys.argv[2]
    text = open(seed).read()
    ax = axes(text)
    if cmd == "list":
        for name, default, values in ax:
            print(name, default, *values)
    elif cmd == "set":
        point = dict(kv.split("=", 1) for kv in sys.argv[4:])
        open(sys.argv[3], "w").write(set_values(text, point))
    elif cmd == "last":
        print(" ".join(f"{a}={v[-1]}" for a, _, v in ax))
    elif cmd in ("sample", "random"):
        n, rng = int(sys.argv[3]), random.Random(int(sys.argv[4]))
        points = [{a: d for a, d, _ in ax}]
        if cmd == "sample":
            points += [{a: v[0] for a, _, v in ax}, {a: v[-1] for a, _, v in ax}]
        seen = set()
        while len(points) < 3 * n + 3:
            points.append({a: rng.choice(v) for a, _, v in ax})
        for p in points:
            key = tuple(sorted(p.items()))
            if key in seen:
                continue
            seen.add(key)
            print(" ".join(f"{a}={v}" for a, v in p.items()))
            if len(seen) == n:
                break
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
