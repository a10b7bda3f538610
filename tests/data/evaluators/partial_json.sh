# Test evaluator: prints JSON cut off in the middle, as a crash mid-write would.
printf '{"metrics": {"combined_score": 1.0, "other"'
