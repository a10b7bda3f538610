#!/usr/bin/env python3
"""Qwen3 with kevolve's exports of the fused decode blocks (kevolve export
--torch of qwen3_decode_qkv, qwen3_decode_o and qwen3_decode_mlp, and of
qwen3_decode_attn where given: the attention over the cache; put in
the model by kevolve_qwen3.patch_qwen3: the few lines a user writes),
beside stock PyTorch and torch.compile, side by side in one process
(issue 43, item 5).

  (a) greedy: GREEDY tokens from one prompt with a static cache, stock
      against patched; at a first divergence, both sides' logits against a
      float32 model (a near tie or not); the calls the exports served;
  (b) decode: one step over a preallocated KV cache at each context and
      batch, captured in a CUDA graph and replayed (bench/qwen3_common.py),
      for stock PyTorch (SDPA), kevolve's exports, and torch.compile of the
      stock model in each mode of --compile (captured the same way); the
      share of decoder-layer calls the exports served;
  (c) prefill: one forward of each --prefill length, stock against the
      patched model (whose prefill goes to the layers' own forward, with
      the attention export of --gqa when given: transformers'
      attn_implementation "kevolve").

Optional exports: --ops (rmsnorm, swiglu, rope: they serve what the
decode blocks leave, the final norm and prefill) and --gqa (an export of
a gqa_attention task). Every row of a table is measured in this process.
--tiny: a two-layer model on the export's device (the CPU included), a
check of the script, not a measurement.

Usage: python3 bench/qwen3_decode_model.py RESULT.json --decode QKV O MLP [ATTN]
       [--ops DIR ...] [--gqa DIR] [--model 0.6B|14B] [--layers-14b N]
       [--contexts 1024,8192,32768] [--batches 1,8]
       [--compile default,max-autotune-no-cudagraphs] [--prefill 512,2048,8192]
       [--greedy 32] [--deadline SECONDS] [--tiny]"""
import argparse
import copy
import json
import os
import statistics
import sys
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("result")
ap.add_argument("--decode", nargs="+", required=True, metavar="DIR",
                help="the exports of qwen3_decode_qkv, _o and _mlp, and of _attn (optional)")
ap.add_argument("--ops", nargs="*", default=[])
ap.add_argument("--gqa")
ap.add_argument("--model", default="0.6B")
ap.add_argument("--layers-14b", type=int, default=40)
ap.add_argument("--contexts", default="1024,8192,32768")
ap.add_argument("--batches", default="1,8")
ap.add_argument("--compile", default="default,max-autotune-no-cudagraphs")
ap.add_argument("--prefill", default="512,2048,8192")
ap.add_argument("--greedy", type=int, default=32)
ap.add_argument("--deadline", type=float, default=500.0)
ap.add_argument("--tiny", action="store_true")
args = ap.parse_args()
if len(args.decode) not in (3, 4):
    ap.error("--decode takes the qkv, o and mlp exports, and the attn export optionally")
T0 = time.time()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(args.decode[0], "torch"))
import kevolve_qwen3 as kq  # noqa: E402
import qwen3_common as common  # noqa: E402

EXPORTS = list(args.decode) + list(args.ops)
DEV = kq.load(args.decode[0]).DEVICE
GQA = kq.load(args.gqa) if args.gqa else None
if GQA is not None:
    GQA.register("kevolve")


def late():
    return time.time() - T0 > args.deadline


class RoomLayer(common.FixedLayer):
    """FixedLayer (POS keys, room for one more) saying its room, as a
    static cache does: the decode blocks write the new row in place."""

    def __init__(self, batch, heads, pos, dim, dev):
        super().__init__(batch, heads, pos, dim, dev)
        self.max_cache_len = pos + 1


class Patched:
    """MODEL served by kevolve's exports inside the block."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.patch = kq.patch_qwen3(self.model, EXPORTS)
        if GQA is not None:
            self.model.set_attn_implementation("kevolve")
        kq.stats(reset=True)
        if GQA is not None:
            GQA.stats(reset=True)
        return self

    def served(self):
        s = kq.stats()
        out = {op: {k: s[op][k] for k in ("served", "fallback", "reasons", "served_share")}
               for op in kq.OPS if s[op]["served"] or s[op]["fallback"]}
        if GQA is not None:
            out["attention"] = GQA.stats()
        return out

    def __exit__(self, *exc):
        self.patch.restore()
        if GQA is not None:
            self.model.set_attn_implementation("sdpa")


def step_ms(model, cfg, batch, ctx, layer=common.FixedLayer):
    """A decode step's ms (a CUDA graph's replays; on the CPU a few eager steps)."""
    return common.decode_step_ms(model, cfg, batch, ctx, DEV, layer=layer)


def greedy(model, cfg):
    torch.manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (1, 32), device=DEV)
    n = args.greedy
    kw = dict(max_new_tokens=n, min_new_tokens=n, do_sample=False, cache_implementation="static",
              disable_compile=True)
    with torch.no_grad():
        stock = model.generate(ids, **kw)
        with Patched(model) as p:
            fused = model.generate(ids, **kw)
            calls = p.served()
    a, b = stock[0, 32:], fused[0, 32:]
    rec = {"tokens": int(a.numel()), "identical": bool(torch.equal(a, b)), "calls": calls}
    if not rec["identical"]:
        t = int((a != b).nonzero()[0])
        prefix = stock[:, :32 + t]
        with torch.no_grad():
            logits = {"pytorch": model(prefix).logits[0, -1]}
            with Patched(model):
                logits["kevolve"] = model(prefix).logits[0, -1]
        ref = copy.deepcopy(model).float()
        rec["divergence"] = common.divergence(ref, prefix, t, {"pytorch": int(a[t]), "kevolve": int(b[t])},
                                              logits)
        del ref
    return rec


def prefill_ms(model, ids):
    times = []
    with torch.no_grad():
        for i in range(2 if args.tiny else 5):
            t0 = common.clock(DEV)
            model(ids, use_cache=False)
            if i:
                times.append((common.clock(DEV) - t0) * 1e3)
    return statistics.median(times)


def prefill(model, cfg, lengths):
    rows = []
    for s in lengths:
        if late():
            print(f"  prefill {s}: skipped (deadline)", flush=True)
            continue
        ids = torch.randint(0, cfg.vocab_size, (1, s), device=DEV)
        row = {"tokens": s, "pytorch_ms": prefill_ms(model, ids)}
        with Patched(model) as p:
            row["kevolve_ms"] = prefill_ms(model, ids)
            row["kevolve_calls"] = p.served()
        row["speedup"] = row["pytorch_ms"] / row["kevolve_ms"]
        rows.append(row)
        print(f"  prefill {s:6d}: pytorch {row['pytorch_ms']:8.2f} ms  kevolve {row['kevolve_ms']:8.2f} ms "
              f"x{row['speedup']:.3f}", flush=True)
    return rows


def main():
    cfg = common.config(args.model, tiny=args.tiny, layers_14b=args.layers_14b)
    model = common.build(cfg, DEV)
    result = {"about": {"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                        "device": torch.cuda.get_device_name() if DEV == "cuda" else DEV,
                        "model": "tiny" if args.tiny else args.model, "layers": cfg.num_hidden_layers,
                        "exports": EXPORTS + ([args.gqa] if args.gqa else [])}}
    print(f"Qwen3-{result['about']['model']}: {cfg.num_hidden_layers} layers on {result['about']['device']}",
          flush=True)
    result["greedy"] = g = greedy(model, cfg)
    print(f"  greedy: identical {g['identical']} "
          f"{'' if g['identical'] else json.dumps(g['divergence'])} calls {json.dumps(g['calls'])}", flush=True)
    rows = []
    shapes = [(c, b) for c in map(int, args.contexts.split(",")) for b in map(int, args.batches.split(","))]
    for ctx, batch in shapes:
        if late():
            print(f"  ctx {ctx} batch {batch}: skipped (deadline)", flush=True)
            continue
        row = {"context": ctx, "batch": batch}
        row["pytorch_ms"] = step_ms(model, cfg, batch, ctx)
        with Patched(model) as p:
            row["kevolve_ms"] = step_ms(model, cfg, batch, ctx, layer=RoomLayer)
            row["kevolve_calls"] = p.served()
        rows.append(row)
        calls = row["kevolve_calls"]
        share = calls.get("decode", {}).get("served_share")
        attn = calls.get("decode_attention", {}).get("served_share")
        print(f"  ctx {ctx:5d} batch {batch}: pytorch {row['pytorch_ms']:.3f} ms  kevolve {row['kevolve_ms']:.3f} ms"
              f"  decode calls served {share}, their attention {attn}", flush=True)
    result["decode"] = rows
    result["prefill"] = prefill(model, cfg, [int(s) for s in args.prefill.split(",") if s])
    json.dump(result, open(args.result, "w"), indent=2)
    for mode in [m for m in args.compile.split(",") if m]:
        compiled = torch.compile(model, mode=mode)
        for row in rows:
            if late():
                row[f"compile_{mode}_ms"] = None
                print(f"  torch.compile {mode} ctx {row['context']} batch {row['batch']}: skipped (deadline)",
                      flush=True)
                continue
            t = time.time()
            row[f"compile_{mode}_ms"] = step_ms(compiled, cfg, row["batch"], row["context"])
            print(f"  ctx {row['context']:5d} batch {row['batch']}: torch.compile {mode} "
                  f"{row[f'compile_{mode}_ms']:.3f} ms (with its compile: {time.time() - t:.0f} s)", flush=True)
            json.dump(result, open(args.result, "w"), indent=2)
        del compiled
        torch._dynamo.reset()
    modes = [m for m in args.compile.split(",") if m]
    print("\n| ctx | batch | pytorch | " + "".join(f"compile {m} | " for m in modes) +
          "kevolve | kevolve vs the faster compile |")
    for row in rows:
        comp = [row.get(f"compile_{m}_ms") for m in modes]
        best = min([c for c in comp if c], default=None)
        cells = "".join(f"{c:.3f} | " if c else "- | " for c in comp)
        vs = f"x{best / row['kevolve_ms']:.2f}" if best else "-"
        print(f"| {row['context']} | {row['batch']} | {row['pytorch_ms']:.3f} | {cells}"
              f"{row['kevolve_ms']:.3f} | {vs} |")
    json.dump(result, open(args.result, "w"), indent=2)


main()
