#!/bin/bash
# The README's config reference (docs/config-reference.md) is the key table's
# own rendering: regenerate it with `kevolve config-keys > docs/config-reference.md`.
. "$(dirname "$0")/lib.sh"

"$KV" config-keys >"$WORK/keys.md"
diff -u "$KV_SOURCE_DIR/docs/config-reference.md" "$WORK/keys.md" >&2 ||
    fail "docs/config-reference.md is out of date: run kevolve config-keys > docs/config-reference.md"
grep -q "docs/config-reference.md" "$KV_SOURCE_DIR/README.md" || fail "README does not link the reference"
echo "ok"
