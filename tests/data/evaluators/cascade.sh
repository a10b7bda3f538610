# Test evaluator for cascades: `sh cascade.sh PROGRAM --stage N`. Stage 1
# reports VALUE (bare metrics); stage 2 reports VALUE+1 and marks that it
# ran, or fails with exit 3 when the program contains FAIL2.
prog="$1"
stage=0
if [ "$2" = "--stage" ]; then stage="$3"; fi
value=$(sed -n 's/.*VALUE=\([-0-9.eE]*\).*/\1/p' "$prog" | head -n 1)
case "$stage" in
1)
    echo "{\"combined_score\": $value, \"stage1\": 1, \"seen_stage\": $KEVOLVE_STAGE}"
    ;;
2)
    if grep -q FAIL2 "$prog"; then
        echo "stage two exploded" >&2
        exit 3
    fi
    plus=$(awk "BEGIN { print $value + 1 }")
    echo "{\"metrics\": {\"combined_score\": $plus, \"stage2\": 2, \"seen_stage\": $KEVOLVE_STAGE}}"
    ;;
*)
    echo "unexpected stage argument: $*" >&2
    exit 2
    ;;
esac
