# Test evaluator: crashes on its first run and succeeds afterwards. The
# program names a marker file as MARKER=<path>; the first run creates it.
marker=$(sed -n 's/.*MARKER=\(.*\)$/\1/p' "$1" | head -n 1)
if [ ! -e "$marker" ]; then
    : > "$marker"
    echo "first run crashes" >&2
    exit 1
fi
echo '{"combined_score": 0.75}'
