# Test evaluator: sleeps SLEEP=<seconds> (from the program), then reports
# the sleep as bare metrics.
s=$(sed -n 's/.*SLEEP=\([0-9.]*\).*/\1/p' "$1" | head -n 1)
sleep "$s"
echo "{\"combined_score\": $s}"
