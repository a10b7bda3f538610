#!/bin/bash
# The build enforces the layering of docs/architecture.md:
#   cli -> (search, mutate, eval, web) -> (store, llm, config) -> util
# with engine between cli and the middle row; the kernel harness one module
# per process and trust domain,
#   kernel (the worker) -> judge -> backend -> runner -> util
# on the public task header; and the tasks on the public task header only.
# For every module, a probe compiled with that module's own flags (from the
# build's compile_commands.json) includes a header of every other module:
# it must compile where the arrows allow it and fail, for want of the
# header, where they do not. An upward include therefore cannot build.
# Then the libraries' symbols: every symbol a module's library needs from
# kevolve's own is defined by a module it may use, never by one above it
# or beside it; so the dependencies point one way and, above all, the
# runner (the process that holds a candidate's code) links nothing of the
# judge, the backends or the worker: a probe that calls the judge, linked
# with the runner's library and util's, does not link.
. "$(dirname "$0")/lib.sh"

: "${KV_BUILD_DIR:?KV_BUILD_DIR must name the build folder}"
[ -f "$KV_BUILD_DIR/compile_commands.json" ] || fail "no compile_commands.json in $KV_BUILD_DIR"

python3 - "$KV_BUILD_DIR/compile_commands.json" "$KV_SOURCE_DIR" "$WORK" <<'PY' || fail "the build does not enforce the layering"
import json, os, shlex, subprocess, sys

db, src, work = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
# What each module may include (besides itself and the public headers of
# include/kevolve/), as shared/DESIGN.md draws it.
allowed = {
    "util": [],
    "config": ["util"],
    "store": ["util"],
    "llm": ["config", "util"],
    "search": ["config", "store", "util"],
    "mutate": ["config", "llm", "store", "util"],
    "eval": ["config", "store", "util"],
    "web": ["config", "store", "util"],
    "runner": ["util"],
    "backend": ["runner", "util"],
    "judge": ["backend", "runner", "util"],
    "kernel": ["backend", "judge", "runner", "util"],
    "engine": ["config", "eval", "llm", "mutate", "search", "store", "util"],
    "export": ["backend", "judge", "kernel", "runner", "store", "util"],
    "cli": ["backend", "config", "engine", "eval", "export", "judge", "kernel", "llm", "mutate",
            "runner", "search", "store", "util", "web"],
    "tasks": [],
}
# One header per module, the face its users include.
probe_header = {
    "util": "util/buf.h", "config": "config/config.h", "store": "store/store.h",
    "llm": "llm/client.h", "search": "search/database.h", "mutate": "mutate/mutator.h",
    "eval": "eval/evaluator.h", "web": "web/web.h", "kernel": "kernel/harness.h",
    "runner": "runner/runner.h", "backend": "backend/backend.h", "judge": "judge/judge.h",
    "engine": "engine/manifest.h", "cli": "cli/cli.h", "export": "export/export.h",
}

entries = json.load(open(db))
def module_of(path):
    rel = os.path.relpath(os.path.realpath(path), src)
    parts = rel.split(os.sep)
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[0] == "tasks":
        return "tasks"
    return None

# The flags each module compiles with: those of one of its own files.
flags = {}
for e in entries:
    m = module_of(os.path.join(e["directory"], e["file"]))
    if m in allowed and m not in flags and not e["file"].endswith("web_assets.c"):
        flags[m] = e
missing = set(allowed) - set(flags)
assert not missing, f"no compile command for modules {sorted(missing)}"

def compile_probe(entry, include):
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out, skip = [], 0
    for i, a in enumerate(args):
        if skip:
            skip -= 1
            continue
        if a in ("-o", "-MT", "-MF", "-c"):
            skip = 1
            continue
        if a in ("-MD", "-MMD"):
            continue
        out.append(a)
    probe = os.path.join(work, "probe.c")
    with open(probe, "w") as f:
        f.write(f'#include "{include}"\nint kv_probe;\n')
    r = subprocess.run(out + ["-fsyntax-only", probe], cwd=entry["directory"],
                       capture_output=True, text=True)
    return r.returncode, r.stderr

problems = []
for m, entry in sorted(flags.items()):
    for n, header in sorted(probe_header.items()):
        if n == m:
            continue
        rc, err = compile_probe(entry, header)
        if n in allowed[m]:
            if rc != 0:
                problems.append(f"{m} may include {header} but cannot: {err.strip()[:300]}")
        elif rc == 0:
            problems.append(f"{m} can include {header}: an include against the arrows builds")
        elif header not in err or "No such file" not in err:
            problems.append(f"{m} including {header} failed for another reason: {err.strip()[:300]}")
# The tasks see the public task header.
rc, err = compile_probe(flags["tasks"], "kevolve/task.h")
if rc != 0:
    problems.append(f"a task cannot include kevolve/task.h: {err.strip()[:300]}")
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY

# The libraries' symbols: what each module's library leaves undefined and
# kevolve defines must come from a module it may use.
python3 - "$KV_BUILD_DIR" "$WORK" <<'PY' || fail "a module's library needs symbols against the arrows"
import glob, os, subprocess, sys

build, work = sys.argv[1], sys.argv[2]
uses = {"util": [], "runner": ["util"], "backend": ["runner", "util"],
        "judge": ["backend", "runner", "util"], "kernel": ["backend", "judge", "runner", "util"]}
libs = {}
for m in uses:
    found = glob.glob(os.path.join(build, "**", f"libkv_{m}.a"), recursive=True)
    assert found, f"no libkv_{m}.a under {build}"
    libs[m] = found[0]

def symbols(lib, defined):
    flag = "--defined-only" if defined else "--undefined-only"
    out = subprocess.run(["nm", "-g", flag, lib], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and (defined or parts[0] == "U"):
            names.add(parts[-1])
    return names

defined = {m: symbols(lib, True) for m, lib in libs.items()}
problems = []
for m, lib in libs.items():
    for name in sorted(symbols(lib, False) - defined[m]):
        owners = [o for o, names in defined.items() if name in names]
        for o in owners:
            if o not in uses[m]:
                problems.append(f"libkv_{m} needs {name}, which libkv_{o} defines: against the arrows")
# The runner cannot link the judge: a call of the judge's entry, linked with
# the runner's library and util's only, leaves it undefined.
probe = os.path.join(work, "runner_probe.c")
with open(probe, "w") as f:
    f.write("void kv_judge_main(void *ctx);\nint main(void) { kv_judge_main(0); return 0; }\n")
r = subprocess.run(["cc", probe, libs["runner"], libs["util"], "-o", os.path.join(work, "probe")],
                   capture_output=True, text=True)
if r.returncode == 0 or "kv_judge_main" not in r.stderr:
    problems.append("a probe that calls the judge links with the runner's library: " + r.stderr[:300])
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY

# Backends are rows of one table (src/backend/backend.c): the rest of the code
# asks what a backend can do (kv_backend_has), never which one it is. Only
# the table, the backends' own folders and the config's early check of a
# name may compare a backend's name.
cd "$KV_SOURCE_DIR"
which=$(grep -rnE 'KV_BACKEND_[A-Z]|backend->kind|strcmp\([^;]*"(cpu|opencl|cuda)"' src --include='*.c' --include='*.h' |
    grep -vE '^src/backend/(backend\.c|cpu/|opencl/|cuda/)|^src/config/config\.c:' || true)
[ -z "$which" ] || fail "code outside the backend table asks which backend it is: $which"
echo "ok"
