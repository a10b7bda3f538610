# Test evaluator: exits 0 but prints something that is not JSON.
echo "Traceback (most recent call last): this is not JSON"
