# Test evaluator: reports its environment, its arguments and the config
# sections it was handed (through $KEVOLVE_CONFIG_JSON) and its parent's
# metrics ($KEVOLVE_PARENT_METRICS) as artifacts.
import json
import os
import sys

config = None
path = os.environ.get("KEVOLVE_CONFIG_JSON")
if path:
    with open(path) as f:
        config = json.load(f)
parent = None
path = os.environ.get("KEVOLVE_PARENT_METRICS")
if path:
    with open(path) as f:
        parent = json.load(f)
print(json.dumps({
    "metrics": {"combined_score": 1.0},
    "artifacts": {"env": dict(os.environ), "argv": sys.argv[1:], "config": config,
                  "parent_metrics": parent},
}))
