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
      attn_implementation "kevolve");
  (d) --profile CTXxB,...: at those decode shapes, each GPU kernel of the
      captured step (kevolve's and every torch.compile mode's), its
      microseconds and launches a step, the largest first (torch.profiler
      over the same graph's replays; with PDL a kernel's time includes its
      wait for the one before).

--post DIR (an export of qwen3_decode_post: o and the MLP as one block)
adds a second kevolve row, the qkv export, POST and the attn export in
the model instead of o and mlp, with its own greedy check.

--model 0.6B,14B measures both models in turn in this one process (item
5: one bench in one call), the first freed before the second is built;
RESULT holds each under its name beside "about".

Optional exports: --ops (rmsnorm, swiglu, rope: they serve what the
decode blocks leave, the final norm and prefill) and --gqa (an export of
a gqa_attention task). Every row of a table is measured in this process.
--tiny: a two-layer model on the export's device (the CPU included), a
check of the script, not a measurement.

Usage: python3 bench/qwen3_decode_model.py RESULT.json --decode QKV O MLP [ATTN] [--post DIR]
       [--ops DIR ...] [--gqa DIR] [--model 0.6B|14B|0.6B,14B] [--layers-14b N]
       [--contexts 1024,8192,32768] [--batches 1,8] [--shapes 8192x8,32768x1]
       [--compile default,max-autotune-no-cudagraphs] [--prefill 512,2048,8192]
       [--greedy 32] [--profile 1024x1,8192x1] [--deadline SECONDS] [--tiny]"""
import argparse
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
ap.add_argument("--post", help="an export of qwen3_decode_post: a second kevolve row with it")
ap.add_argument("--ops", nargs="*", default=[])
ap.add_argument("--gqa")
ap.add_argument("--model", default="0.6B")
ap.add_argument("--layers-14b", type=int, default=40)
ap.add_argument("--contexts", default="1024,8192,32768")
ap.add_argument("--batches", default="1,8")
ap.add_argument("--shapes", default="", help="CTXxBATCH,...: these decode shapes, in this order, "
                "instead of every context with every batch")
ap.add_argument("--compile", default="default,max-autotune-no-cudagraphs")
ap.add_argument("--prefill", default="512,2048,8192")
ap.add_argument("--greedy", type=int, default=32)
ap.add_argument("--profile", default="", help="CTXxBATCH,...: the kernels of those decode steps")
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
# qkv, post and attn (where given) in place of qkv, o, mlp and attn
POST_EXPORTS = [args.decode[0], args.post] + list(args.decode[3:]) + list(args.ops) if args.post else None
DEV = kq.load(args.decode[0]).DEVICE
GQA = kq.load(args.gqa) if args.gqa else None
DEVICE_NAME = torch.cuda.get_device_name() if DEV == "cuda" else DEV
MODELS = [m for m in args.model.split(",") if m]
if not MODELS or any(m not in ("0.6B", "14B") for m in MODELS):
    ap.error(f"--model takes 0.6B, 14B or both (0.6B,14B), not {args.model!r}")
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

    def __init__(self, model, exports=None):
        self.model = model
        self.exports = exports or EXPORTS

    def __enter__(self):
        self.patch = kq.patch_qwen3(self.model, self.exports)
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


PROFILE = {tuple(int(v) for v in s.split("x")) for s in args.profile.split(",") if s}


def kernel_profile(replay, steps=10):
    """The kernels of REPLAY (one captured step): [{kernel, us, launches}]
    a step, the most time first."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            replay()
        torch.cuda.synchronize()
    rows = [{"kernel": a.key, "us": a.self_device_time_total / steps, "launches": a.count / steps}
            for a in prof.key_averages() if a.device_type == DeviceType.CUDA and a.self_device_time_total > 0]
    return sorted(rows, key=lambda r: -r["us"])


def print_profile(label, rows, top=14):
    total = sum(r["us"] for r in rows)
    print(f"    kernels of {label}: {total:.1f} us a step in {sum(r['launches'] for r in rows):.0f} launches",
          flush=True)
    for r in rows[:top]:
        print(f"      {r['us']:8.1f} us {r['launches']:5.0f}x  {r['kernel'][:100]}", flush=True)


def step_ms(model, cfg, batch, ctx, layer=common.FixedLayer, profile_as=None, row=None):
    """A decode step's ms (a CUDA graph's replays; on the CPU a few eager
    steps); at a --profile shape, its kernels into ROW[PROFILE_AS]."""
    after = None
    if profile_as and DEV == "cuda" and (ctx, batch) in PROFILE:
        def after(replay):
            row[profile_as] = kernel_profile(replay)
            print_profile(f"{profile_as[len('profile_'):]} at ctx {ctx} batch {batch}", row[profile_as])
    return common.decode_step_ms(model, cfg, batch, ctx, DEV, layer=layer, after=after)


def greedy(model, cfg, exports=None):
    torch.manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (1, 32), device=DEV)
    n = args.greedy
    kw = dict(max_new_tokens=n, min_new_tokens=n, do_sample=False, cache_implementation="static",
              disable_compile=True, output_logits=True, return_dict_in_generate=True)
    with torch.no_grad():
        stock = model.generate(ids, **kw)
        with Patched(model, exports) as p:
            fused = model.generate(ids, **kw)
            calls = p.served()
    a, b = stock.sequences[0, 32:], fused.sequences[0, 32:]
    rec = {"tokens": int(a.numel()), "identical": bool(torch.equal(a, b)), "calls": calls}
    if not rec["identical"]:
        t = int((a != b).nonzero()[0])
        prefix = stock.sequences[:, :32 + t]
        # Each side's logits as its generation made them: after the first
        # token, the patched model's come from its decode blocks (a forward
        # of the prefix would be a prefill, which goes to PyTorch).
        logits = {"pytorch": stock.logits[t][0], "kevolve": fused.logits[t][0]}
        ref = common.float_reference(model)
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


def measure(name, result, save):
    """Model NAME's rows into RESULT (SAVE() writes the whole file)."""
    cfg = common.config(name, tiny=args.tiny, layers_14b=args.layers_14b)
    model = common.build(cfg, DEV)
    result.update(model="tiny " + name if args.tiny else name, layers=cfg.num_hidden_layers)
    print(f"Qwen3-{result['model']}: {cfg.num_hidden_layers} layers on {DEVICE_NAME}", flush=True)
    result["greedy"] = g = greedy(model, cfg)
    print(f"  greedy: identical {g['identical']} "
          f"{'' if g['identical'] else json.dumps(g['divergence'])} calls {json.dumps(g['calls'])}", flush=True)
    if POST_EXPORTS:
        result["greedy_post"] = g = greedy(model, cfg, POST_EXPORTS)
        print(f"  greedy with post: identical {g['identical']} "
              f"{'' if g['identical'] else json.dumps(g['divergence'])} calls {json.dumps(g['calls'])}",
              flush=True)
    rows = []
    shapes = ([tuple(map(int, s.split("x"))) for s in args.shapes.split(",")] if args.shapes else
              [(c, b) for c in map(int, args.contexts.split(",")) for b in map(int, args.batches.split(","))])
    for ctx, batch in shapes:
        if late():
            print(f"  ctx {ctx} batch {batch}: skipped (deadline)", flush=True)
            continue
        row = {"context": ctx, "batch": batch}
        row["pytorch_ms"] = step_ms(model, cfg, batch, ctx)
        with Patched(model) as p:
            row["kevolve_ms"] = step_ms(model, cfg, batch, ctx, layer=RoomLayer, profile_as="profile_kevolve",
                                        row=row)
            row["kevolve_calls"] = p.served()
        if POST_EXPORTS:
            with Patched(model, POST_EXPORTS) as p:
                row["kevolve_post_ms"] = step_ms(model, cfg, batch, ctx, layer=RoomLayer,
                                                 profile_as="profile_kevolve_post", row=row)
                row["kevolve_post_calls"] = p.served()
        rows.append(row)
        calls = row["kevolve_calls"]
        share = calls.get("decode", {}).get("served_share")
        attn = calls.get("decode_attention", {}).get("served_share")
        print(f"  ctx {ctx:5d} batch {batch}: pytorch {row['pytorch_ms']:.3f} ms  kevolve {row['kevolve_ms']:.3f} ms"
              f"  decode calls served {share}, their attention {attn}"
              + (f"  kevolve with post {row['kevolve_post_ms']:.3f} ms" if POST_EXPORTS else ""), flush=True)
    result["decode"] = rows
    result["prefill"] = prefill(model, cfg, [int(s) for s in args.prefill.split(",") if s])
    save()
    for mode in [m for m in args.compile.split(",") if m]:
        compiled = torch.compile(model, mode=mode)
        for row in rows:
            if late():
                row[f"compile_{mode}_ms"] = None
                print(f"  torch.compile {mode} ctx {row['context']} batch {row['batch']}: skipped (deadline)",
                      flush=True)
                continue
            t = time.time()
            row[f"compile_{mode}_ms"] = step_ms(compiled, cfg, row["batch"], row["context"],
                                                profile_as=f"profile_compile_{mode}", row=row)
            print(f"  ctx {row['context']:5d} batch {row['batch']}: torch.compile {mode} "
                  f"{row[f'compile_{mode}_ms']:.3f} ms (with its compile: {time.time() - t:.0f} s)", flush=True)
            save()
        del compiled
        torch._dynamo.reset()
    modes = [m for m in args.compile.split(",") if m]
    post = " kevolve with post | post vs the faster compile |" if POST_EXPORTS else ""
    print("\n| ctx | batch | pytorch | " + "".join(f"compile {m} | " for m in modes) +
          "kevolve | kevolve vs the faster compile |" + post)
    for row in rows:
        comp = [row.get(f"compile_{m}_ms") for m in modes]
        best = min([c for c in comp if c], default=None)
        cells = "".join(f"{c:.3f} | " if c else "- | " for c in comp)
        vs = f"x{best / row['kevolve_ms']:.2f}" if best else "-"
        pc = ""
        if POST_EXPORTS:
            pm = row["kevolve_post_ms"]
            pc = f" {pm:.3f} | " + (f"x{best / pm:.2f} |" if best else "- |")
        print(f"| {row['context']} | {row['batch']} | {row['pytorch_ms']:.3f} | {cells}"
              f"{row['kevolve_ms']:.3f} | {vs} |{pc}")
    save()
    del model
    if DEV == "cuda":
        torch.cuda.empty_cache()  # the next model's room


def main():
    """Each model of --model in turn, in this process: {"about", NAME: rows}."""
    result = {"about": {"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                        "device": DEVICE_NAME, "exports": EXPORTS + ([args.gqa] if args.gqa else []),
                        "post_exports": POST_EXPORTS}}

    def save():
        json.dump(result, open(args.result, "w"), indent=2)

    for i, name in enumerate(MODELS):
        if i:
            print(flush=True)
        result[name] = {}
        measure(name, result[name], save)


main()
