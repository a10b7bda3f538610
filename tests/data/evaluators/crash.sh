# Test evaluator: always fails with exit status 3 and a message on stderr.
echo "some noise" >&2
echo "boom: the kernel exploded" >&2
exit 3
