# Test evaluator: reports a failure of the program through an "error" key.
echo '{"metrics": {"combined_score": 0.0, "max_error": 0.5}, "error": "kernel did not compile"}'
