#!/usr/bin/env python3
"""The exported operator with its per-shape choice (kx.gqa: the evolved
kernel, or SDPA where the manifest says the standard one was faster)
against SDPA with cuDNN and with flash forced, side by side in one process
on every scenario of the export's manifest, timed as kevolve export
--against-standard times (its torch/against_standard.py: warm-up, a CUDA
graph over input sets that outsize the L2, replayed, the median of five
rounds). The graph hides the Python dispatch, which eager callers pay on
top. Also checks kx.gqa against a float32 reference on every scenario.

Usage: python3 bench/export_choice.py EXPORT_DIR RESULT.json
Prints one row per scenario and exits 1 when the choice is slower than the
faster standard kernel by more than 3% anywhere, or wrong anywhere."""
import importlib.util
import json
import os
import sys

EXPORT, RESULT = os.path.abspath(sys.argv[1]), sys.argv[2]
sys.argv = [sys.argv[0], EXPORT, os.devnull]  # what against_standard reads at import
spec = importlib.util.spec_from_file_location(
    "against_standard", os.path.join(EXPORT, "torch", "against_standard.py"))
std = importlib.util.module_from_spec(spec)
spec.loader.exec_module(std)
torch, kx = std.torch, std.kx

rows, bad = {}, []
print(f"{'scenario':28s} {'use':>8s} {'gqa_us':>9s} {'cudnn_us':>9s} {'flash_us':>9s} "
      f"{'best/gqa':>8s} {'err/tol':>7s}")
for e in std.MANIFEST["scenarios"]:
    b, hq, hkv, sq, l, d = std.shapes(e)
    sets = std.make_sets(b, hq, hkv, sq, l, d)
    q, k, v = sets[0]
    row = {"use": e.get("use"), "err_ratio": std.err_ratio(q, k, v, kx.gqa(q, k, v))}
    row["gqa_us"] = std.timed(kx.gqa, sets)
    for name, backend in (("cudnn", std.SDPBackend.CUDNN_ATTENTION),
                          ("flash", std.SDPBackend.FLASH_ATTENTION)):
        try:
            row[f"{name}_us"] = std.timed(std.sdpa(backend, sq, l), sets)
        except RuntimeError as err:  # a backend that cannot take the shape
            row[f"{name}_us"] = None
            row[f"{name}_error"] = str(err).splitlines()[0][:200]
    best = min(x for x in (row["cudnn_us"], row["flash_us"]) if x)
    row["best_standard_over_gqa"] = best / row["gqa_us"]
    if row["err_ratio"] > 1:
        bad.append(f"{e['name']}: {row['err_ratio']:.2f} of the tolerance")
    if row["best_standard_over_gqa"] < 0.97:
        bad.append(f"{e['name']}: {row['best_standard_over_gqa']:.3f} of the faster standard kernel")
    rows[e["name"]] = row
    f = lambda x: f"{x:9.1f}" if x else "        -"
    print(f"{e['name']:28s} {str(row['use']):>8s} {f(row['gqa_us'])} {f(row['cudnn_us'])} "
          f"{f(row['flash_us'])} {row['best_standard_over_gqa']:8.3f} {row['err_ratio']:7.3f}",
          flush=True)
    del sets
    torch.cuda.empty_cache()

json.dump({"_about": {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "cudnn": torch.backends.cudnn.version()}, "scenarios": rows},
          open(RESULT, "w"), indent=2)
for line in bad:
    print("NOT MET:", line, file=sys.stderr)
sys.exit(1 if bad else 0)
