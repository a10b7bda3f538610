# Test evaluator (run as `python3 artifacts.py PROGRAM`): metrics plus
# artifacts of several kinds, one of them large; a warning on stderr.
import json
import sys

print("warning: this is only a test", file=sys.stderr)
print(json.dumps({
    "metrics": {"combined_score": 1.0},
    "artifacts": {"note": "hello", "big": "x" * 5000, "table": {"a": [1, 2]}},
}))
