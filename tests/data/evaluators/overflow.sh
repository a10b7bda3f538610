# Test evaluator: a score beyond a double's range, valid JSON all the same.
echo '{"metrics": {"combined_score": 1e999, "time_ms": 3}}'
