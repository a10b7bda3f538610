#!/bin/bash
# Inside a module the files depend on each other one way too: among the
# files of each module listed below, neither the includes nor the calls go
# round in a circle, and no error leaves through setjmp/longjmp. A file and
# its header are one unit (breed.c with breed.h). Unit A depends on unit B
# when A's file or header includes B's header (the include graph), or when
# A's object calls a function or reads a variable that B's object defines
# (the link graph, read with nm from the build's objects: it also sees a
# header that declares the functions of another file). A cycle in either
# graph fails the test, named unit by unit.
. "$(dirname "$0")/lib.sh"

# The modules that keep the promise.
MODULES="engine"

: "${KV_BUILD_DIR:?KV_BUILD_DIR must name the build folder}"
[ -f "$KV_BUILD_DIR/compile_commands.json" ] || fail "no compile_commands.json in $KV_BUILD_DIR"

# shellcheck disable=SC2086 # one argument per module
python3 - "$KV_BUILD_DIR/compile_commands.json" "$KV_SOURCE_DIR" $MODULES <<'PY' || fail "a module's files depend on each other in a loop"
import json, os, re, shlex, subprocess, sys

db, src, modules = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3:]
entries = json.load(open(db))


def unit(path):
    return os.path.splitext(os.path.basename(path))[0]


def find_cycle(graph):
    """A list of units that go round (the first repeated at the end), or None."""
    state, path = {}, []

    def visit(n):
        state[n] = "open"
        path.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == "open":
                return path[path.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        state[n] = "done"
        path.pop()
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


problems = []
for mod in modules:
    before = len(problems)
    folder = os.path.join(src, "src", mod)
    files = sorted(f for f in os.listdir(folder) if f.endswith((".c", ".h")))
    units = {unit(f) for f in files}

    # The include graph.
    includes = {u: set() for u in units}
    pattern = re.compile(r'^\s*#\s*include\s*"' + re.escape(mod) + r'/([^"/]+)\.h"', re.M)
    for f in files:
        text = open(os.path.join(folder, f)).read()
        for target in pattern.findall(text):
            if target != unit(f):
                includes[unit(f)].add(target)
        if re.search(r"\b(sig)?(set|long)jmp\b|<setjmp\.h>", text):
            problems.append(f"src/{mod}/{f} uses setjmp/longjmp: errors return through every layer")
    cycle = find_cycle(includes)
    if cycle:
        problems.append(f"src/{mod}: an include loop: {' -> '.join(cycle)}")

    # The link graph, from the objects the build made of the module's files.
    objects = {}
    for e in entries:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if os.path.dirname(path) != folder:
            continue
        args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
        objects[unit(path)] = os.path.join(e["directory"], args[args.index("-o") + 1])
    sources = {unit(f) for f in files if f.endswith(".c")}
    if sources - set(objects):
        problems.append(f"src/{mod}: no compile command for {sorted(sources - set(objects))}")
    defined, wanted = {}, {u: set() for u in units}
    for u, obj in sorted(objects.items()):
        if not os.path.exists(obj):
            problems.append(f"src/{mod}: {obj} is not built")
            continue
        out = subprocess.run(["nm", "-g", "-P", obj], capture_output=True, text=True, check=True)
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            if parts[1] == "U":
                wanted[u].add(parts[0])
            elif parts[1] in "TDBRCGSVW":
                defined[parts[0]] = u
    calls = {u: {defined[s] for s in wanted[u] if defined.get(s, u) != u} for u in units}
    cycle = find_cycle(calls)
    if cycle:
        problems.append(f"src/{mod}: a call loop between its files: {' -> '.join(cycle)}")
    if len(problems) == before:
        print(f"src/{mod}: {len(units)} units, {sum(map(len, includes.values()))} includes and "
              f"{sum(map(len, calls.values()))} calls between them, no loop", file=sys.stderr)

for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
echo "ok"
