# Test evaluator: writes about 60 KB of noise to stderr, then its metrics.
i=0
while [ $i -lt 2000 ]; do
    echo "line $i of noise noise noise" >&2
    i=$((i + 1))
done
echo '{"combined_score": 1}'
