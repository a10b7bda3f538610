#!/usr/bin/env python3
"""Qwen3-0.6B with its RMSNorm, SwiGLU and rotary embedding served by kevolve
exports (issue 22), against PyTorch's own ops, side by side in one process.
The model is built from Qwen3-0.6B's published configuration with random
bf16 weights (nothing is downloaded); attention is SDPA throughout. The
exports (kevolve export --torch of the rmsnorm, swiglu and rope tasks, any
subset) are put in with kevolve_qwen3.patch_qwen3, each alone and all
together, and taken out again (restore) between configurations.

  (a) greedy: 64 tokens from the same prompt ids, PyTorch's ops against all
      the exports, which must be identical; at a first divergence, the
      logits of both against a float32 model say whether it is a near tie;
  (b) decode: one step at context 1,024 and 8,192, batch 1 and 8, over a
      preallocated KV cache, captured in a CUDA graph and replayed: time
      per token with each configuration, and the share of each op's calls
      the exports served (counted at capture).

Usage: python3 bench/qwen3_ops_model.py RESULT.json [--rmsnorm DIR] [--swiglu DIR]
       [--rope DIR] [--contexts 1024,8192] [--batches 1,8] [--tiny]
       (--tiny: a small model on the CPU, no graphs: a check of this script
       off a GPU)."""
import argparse
import json
import os
import sys

import torch

ap = argparse.ArgumentParser()
ap.add_argument("result")
for op in ("rmsnorm", "swiglu", "rope"):
    ap.add_argument(f"--{op}", help=f"the folder of a kevolve export --torch of the {op} task")
ap.add_argument("--contexts", default="1024,8192")
ap.add_argument("--batches", default="1,8")
ap.add_argument("--tiny", action="store_true")
args = ap.parse_args()

EXPORTS = {op: getattr(args, op) for op in ("rmsnorm", "swiglu", "rope") if getattr(args, op)}
if not EXPORTS:
    sys.exit("qwen3_ops_model.py: give at least one of --rmsnorm, --swiglu, --rope")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(next(iter(EXPORTS.values())), "torch"))
import kevolve_qwen3 as kq  # noqa: E402
import qwen3_common as common  # noqa: E402

DEV = "cpu" if args.tiny else "cuda"
# PyTorch's ops, each export alone, and all of them together.
CONFIGS = {"pytorch": []}
CONFIGS.update({op: [op] for op in EXPORTS})
if len(EXPORTS) > 1:
    CONFIGS["all"] = list(EXPORTS)


class Using:
    """MODEL with the exports of OPS in it for the block, and their calls counted."""

    def __init__(self, model, ops):
        self.model, self.ops, self.patch = model, ops, None

    def __enter__(self):
        if self.ops:
            self.patch = kq.patch_qwen3(self.model, [EXPORTS[op] for op in self.ops])
        kq.stats(reset=True)
        return self

    def __exit__(self, *exc):
        self.calls = kq.stats(reset=True)
        if self.patch:
            self.patch.restore()


def shares(calls, ops):
    return {op: calls[op]["served_share"] for op in ops}


def greedy(model, cfg, n_new):
    torch.manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (1, 32), device=DEV)
    out = {}
    for name in ("pytorch", "kevolve"):
        with Using(model, list(EXPORTS) if name == "kevolve" else []) as u, torch.no_grad():
            out[name] = model.generate(ids, max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False)
        if name == "kevolve":
            calls = u.calls
    a, b = out["pytorch"][0, 32:], out["kevolve"][0, 32:]
    rec = {"tokens": int(a.numel()), "identical": bool(torch.equal(a, b)),
           "served": shares(calls, EXPORTS), "calls": calls}
    if not rec["identical"]:
        t = int((a != b).nonzero()[0])
        prefix = out["pytorch"][:, :32 + t]
        logits = {}
        for name in ("pytorch", "kevolve"):
            with Using(model, list(EXPORTS) if name == "kevolve" else []), torch.no_grad():
                logits[name] = model(prefix).logits[0, -1]
        ref = common.float_reference(model)  # no patch in it: restored above
        rec["divergence"] = common.divergence(ref, prefix, t, {"pytorch": int(a[t]), "kevolve": int(b[t])},
                                              logits)
        del ref
    return rec


def decode(model, cfg, contexts, batches):
    rows = []
    for ctx in contexts:
        for batch in batches:
            row = {"context": ctx, "batch": batch}
            for name, ops in CONFIGS.items():
                with Using(model, ops) as u:
                    row[name + "_ms"] = common.decode_step_ms(model, cfg, batch, ctx, DEV, graph=DEV == "cuda")
                if ops:
                    row[name + "_served"] = shares(u.calls, ops)
                    row[name + "_speedup"] = row["pytorch_ms"] / row[name + "_ms"]
            rows.append(row)
            cells = "  ".join(f"{n} {row[n + '_ms']:7.3f}" + (f" x{row[n + '_speedup']:.3f}" if n != "pytorch" else "")
                              for n in CONFIGS)
            served = {n: row[n + "_served"] for n in CONFIGS if n != "pytorch"}
            print(f"  ctx {ctx:5d} batch {batch:2d} (ms a token): {cells}  served {json.dumps(served)}",
                  flush=True)
    return rows


cfg = common.config("0.6B", args.tiny)
model = common.build(cfg, DEV)
print(f"Qwen3-0.6B{' (tiny)' if args.tiny else ''}: {cfg.num_hidden_layers} layers; exports: "
      + ", ".join(f"{op} {d}" for op, d in EXPORTS.items()), flush=True)
result = {"about": {"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                    "device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
                    "exports": {op: json.load(open(os.path.join(d, "manifest.json"))).get("run")
                                for op, d in EXPORTS.items()}}}
result["greedy"] = greedy(model, cfg, 16 if args.tiny else 64)
g = result["greedy"]
print(f"  greedy: identical {g['identical']}"
      f"{'' if g['identical'] else ', ' + json.dumps(g['divergence'])}  served {json.dumps(g['served'])}",
      flush=True)
result["decode"] = decode(model, cfg, (128, 512) if args.tiny else [int(c) for c in args.contexts.split(",")],
                          (1, 2) if args.tiny else [int(b) for b in args.batches.split(",")])
json.dump(result, open(args.result, "w"), indent=2)
