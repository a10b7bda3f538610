#!/usr/bin/env python3
# Test evaluator that behaves as the kernel harness does with compiled
# artifacts (contract 4): the "artifact" of a tiny program (tests/data/tiny)
# is its text without comments; its hash goes into artifacts.artifact_hash,
# and the verdict is cached in $KEVOLVE_RUN_DIR/artifact_cache.json. A
# program whose artifact was judged already gets that verdict again, with
# artifacts.duplicate_of_artifact = the hash.
import hashlib
import json
import os
import re
import sys

src = open(sys.argv[1]).read()
artifact = "\n".join(line.split("#")[0].rstrip() for line in src.splitlines())
h = hashlib.sha256(artifact.encode()).hexdigest()[:16]
cache_path = os.path.join(os.environ["KEVOLVE_RUN_DIR"], "artifact_cache.json")
cache = json.load(open(cache_path)) if os.path.exists(cache_path) else {}
if h in cache:
    out = cache[h]
    out["artifacts"]["duplicate_of_artifact"] = h
else:
    vals = {k: int(v) for k, v in re.findall(r"^([ABC]) = (\d+)", src, re.M)}
    a, b, c = vals.get("A", 0), vals.get("B", 0), vals.get("C", 0)
    out = {"metrics": {"combined_score": 30 - abs(a - 7) - abs(b - 2) - abs(c - 5)},
           "artifacts": {"artifact_hash": h}}
    cache[h] = out
    json.dump(cache, open(cache_path, "w"))
print(json.dumps(out))
