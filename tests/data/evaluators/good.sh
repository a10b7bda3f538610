# Test evaluator (run as `sh good.sh PROGRAM`): reports the number written
# as VALUE=<number> in the program as its combined_score.
prog="$1"
value=$(sed -n 's/.*VALUE=\([-0-9.eE]*\).*/\1/p' "$prog" | head -n 1)
echo "evaluating $prog" >&2
echo "{\"metrics\": {\"combined_score\": $value, \"value\": $value}}"
