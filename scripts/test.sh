#!/bin/sh
# The whole test suite: installs what is missing, builds kevolve twice (plain,
# and with AddressSanitizer + UndefinedBehaviorSanitizer), runs every unit and
# integration test in both, and checks the formatting.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
status=0

echo "== format check (clang-format)"
# kevolve's own C (examples and test kernels keep their authors' style).
if ! (cd "$root" && git ls-files 'src/*.[ch]' 'include/*.h' 'tests/unit/*.[ch]' 'bench/*.[ch]' |
    xargs clang-format --dry-run --Werror); then
    echo "formatting differs from .clang-format (run clang-format -i on the files above)" >&2
    status=1
fi

echo "== build and test: plain"
"$root/scripts/build.sh" "$root/build"
ctest --test-dir "$root/build" --output-on-failure -j 2 || status=1

echo "== build and test: AddressSanitizer + UndefinedBehaviorSanitizer"
"$root/scripts/build.sh" "$root/build-asan" -DKV_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j 2 || status=1

[ $status -eq 0 ] && echo "kevolve: all tests passed" || echo "kevolve: TESTS FAILED" >&2
exit $status
