# Test evaluator: reports a failure with the program's text as its reason
# code (artifacts.reason), the external evaluators' protocol.
printf '{"error": "the program failed", "metrics": {"correct": 0}, "artifacts": {"reason": "%s"}}\n' "$(cat "$1")"
