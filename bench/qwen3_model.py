#!/usr/bin/env python3
"""Qwen3 with its attention served by a kevolve export, against SDPA, side by
side in one process (issue 20.4). The models are built from Qwen3-0.6B's and
Qwen3-14B's published configurations with random bf16 weights (nothing is
downloaded; the 14B with fewer layers, --layers-14b), and run with
attn_implementation "sdpa" (PyTorch picks the kernel: what transformers
users get), "sdpa_cudnn" and "sdpa_fa" (the same with cuDNN or flash
forced, on the GPU), "kevolve" (the export's transformers attention,
EXPORT/torch) and, to bound what attention can give, "none" (an attention
that does no work: its time is everything but attention). Speedups are
given over "sdpa" and over the fastest standard kernel of the three.

  (a) greedy: 64 tokens from the same prompt ids with each implementation,
      which must be identical; at a first divergence, the logits of both
      against a float32 model say whether it is a near tie;
  (b) prefill: one forward of 512, 2048 and 8192 tokens (eager, CUDA events),
      every attention once a round, the median of 9 rounds;
  (c) decode: one step at context 1024, 8192 and 32768, batch 1, 8 and 32,
      over a preallocated KV cache (its keys and values random; the step
      writes its new token in place), captured in a CUDA graph and replayed
      (--decode graph: transformers then materializes the causal mask and
      repeats K and V for SDPA, as under torch.compile) or run eagerly
      (--decode eager: no mask, SDPA's own GQA): time per token, and
      attention's share of it (1 - none/sdpa);
  (d) the share of attention calls the evolved kernels served.

Usage: python3 bench/qwen3_model.py EXPORT_DIR RESULT.json [--layers-14b 8]
       [--models 0.6B,14B] [--decode graph|eager] [--parts greedy,prefill,decode]
       [--tiny] (--tiny: a small model on the CPU, no graphs: a check of this
       script off a GPU)."""
import argparse
import json
import math
import os
import statistics
import sys

import torch

ap = argparse.ArgumentParser()
ap.add_argument("export")
ap.add_argument("result")
ap.add_argument("--layers-14b", type=int, default=8)
ap.add_argument("--models", default="0.6B,14B")
ap.add_argument("--tiny", action="store_true")
ap.add_argument("--kv-budget-gb", type=float, default=64.0)
ap.add_argument("--decode", default="graph", choices=("graph", "eager"),
                help="decode steps captured in a CUDA graph (transformers then materializes the "
                     "causal mask: is_tracing) or run eagerly (no mask, SDPA's GQA)")
ap.add_argument("--parts", default="greedy,prefill,decode")
args = ap.parse_args()

sys.path.insert(0, os.path.join(args.export, "torch"))
MANIFEST = json.load(open(os.path.join(args.export, "manifest.json")))
kx = __import__(f"kevolve_{MANIFEST['task']}")

from transformers import AttentionInterface  # noqa: E402
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen3_common as common  # noqa: E402

DEV = "cpu" if args.tiny else "cuda"
kx.register("kevolve")


def no_attention(module, query, key, value, attention_mask, **kwargs):
    """Attention that does no work: what a token costs without it."""
    return query.new_zeros(query.shape[0], query.shape[2], query.shape[1], query.shape[3]), None


AttentionInterface.register("none", no_attention)
AttentionMaskInterface.register("none", sdpa_mask)


def forced(backend):
    """transformers' SDPA attention with PyTorch's choice of kernel forced to
    BACKEND: what a user gets who picks cuDNN or flash by hand."""
    from torch.nn.attention import sdpa_kernel
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def attention(*a, **kw):
        with sdpa_kernel([backend]):
            return sdpa_attention_forward(*a, **kw)
    return attention


# The standard kernels side by side: PyTorch's own choice (what transformers
# users get) and cuDNN and flash forced (GPU only).
STANDARD = ["sdpa"]
if not args.tiny:
    from torch.nn.attention import SDPBackend

    for name, backend in (("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("sdpa_fa", SDPBackend.FLASH_ATTENTION)):
        AttentionInterface.register(name, forced(backend))
        AttentionMaskInterface.register(name, sdpa_mask)
        STANDARD.append(name)
IMPLS = STANDARD + ["kevolve", "none"]


def summarize(row, unit):
    """Speedups of kevolve over SDPA as called by default and over the best
    standard kernel that ran, and attention's share of the default's time."""
    std = {i: row[i + "_ms"] for i in STANDARD if row.get(i + "_ms")}
    best = min(std, key=std.get)
    row["best_standard"] = best
    row["speedup"] = row["sdpa_ms"] / row["kevolve_ms"]
    row["speedup_vs_best_standard"] = std[best] / row["kevolve_ms"]
    row["attention_share"] = 1 - row["none_ms"] / row["sdpa_ms"]
    times = "  ".join(f"{i} {row[i + '_ms']:8.2f}" for i in STANDARD if row.get(i + "_ms"))
    return (f"{times}  kevolve {row['kevolve_ms']:8.2f} ms  x{row['speedup']:.3f} over sdpa,"
            f" x{row['speedup_vs_best_standard']:.3f} over {best}  attention"
            f" {100 * row['attention_share']:.0f}% of {unit}  evolved calls {row['evolved_share']}")


def config(name):
    return common.config(name, args.tiny, args.layers_14b)


def build(cfg):
    return common.build(cfg, DEV)


def use(model, impl):
    model.set_attn_implementation(impl)


def clock():
    return common.clock(DEV)


def greedy(model, cfg, n_new=64):
    torch.manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (1, 32), device=DEV)
    out = {}
    for impl in ("sdpa", "kevolve"):
        use(model, impl)
        kx.stats(reset=True)
        with torch.no_grad():
            out[impl] = model.generate(ids, max_new_tokens=n_new, do_sample=False, min_new_tokens=n_new)
        out[impl + "_stats"] = kx.stats()
    a, b = out["sdpa"][0, 32:], out["kevolve"][0, 32:]
    rec = {"tokens": int(a.numel()), "identical": bool(torch.equal(a, b)),
           "evolved_share": out["kevolve_stats"]["evolved_share"],
           "calls": out["kevolve_stats"]}
    if not rec["identical"]:
        t = int((a != b).nonzero()[0])
        prefix = out["sdpa"][:, :32 + t]
        ref = common.float_reference(model)
        ref.set_attn_implementation("sdpa")
        logits = {}
        with torch.no_grad():
            for impl in ("sdpa", "kevolve"):
                use(model, impl)
                logits[impl] = model(prefix).logits[0, -1]
        rec["divergence"] = common.divergence(ref, prefix, t, {"sdpa": int(a[t]), "kevolve": int(b[t])},
                                              logits)
        del ref
    return rec


def prefill(model, cfg, lengths):
    """Each length's prefill under every attention of IMPLS, timed in
    interleaved rounds (one forward of each a round, the median over the
    rounds): an eager prefill of a small model is bound by the host's
    launches, and drifts of a few percent between back-to-back blocks of
    one kind would read as differences between the kinds."""
    rows = []
    rounds = 2 if args.tiny else 9
    for s in lengths:
        ids = torch.randint(0, cfg.vocab_size, (1, s), device=DEV)
        row = {"tokens": s}
        times = {}
        with torch.no_grad():
            for impl in IMPLS:  # a warm-up each, and the backends that cannot take the call
                use(model, impl)
                try:
                    model(ids, use_cache=False)
                    times[impl] = []
                except RuntimeError as err:
                    row[impl + "_error"] = str(err).splitlines()[0][:200]
                    row[impl + "_ms"] = None
            kx.stats(reset=True)
            for _ in range(rounds):
                for impl in times:
                    use(model, impl)
                    t0 = clock()
                    model(ids, use_cache=False)
                    times[impl].append((clock() - t0) * 1e3)
        for impl, t in times.items():
            row[impl + "_ms"] = statistics.median(t)
        row["evolved_share"] = kx.stats()["evolved_share"]
        rows.append(row)
        print(f"  prefill {s:6d}: " + summarize(row, "it"), flush=True)
        del ids
    return rows


def decode_step_ms(model, cfg, batch, ctx, impl):
    use(model, impl)
    kx.stats(reset=True)
    ms = common.decode_step_ms(model, cfg, batch, ctx, DEV, graph=args.decode == "graph")
    return ms, kx.stats()["evolved_share"]  # the calls captured, replayed as they are


def decode(model, cfg, contexts, batches):
    rows = []
    for ctx in contexts:
        for batch in batches:
            kv_gb = (2 * cfg.num_hidden_layers * batch * cfg.num_key_value_heads * (ctx + 1) *
                     cfg.head_dim * 2) / 2**30
            row = {"context": ctx, "batch": batch, "kv_gb": kv_gb}
            if kv_gb > args.kv_budget_gb:
                row["skipped"] = f"its KV cache is {kv_gb:.0f} GB, over the {args.kv_budget_gb} GB budget"
                rows.append(row)
                print(f"  decode ctx {ctx} batch {batch}: skipped ({row['skipped']})", flush=True)
                continue
            for impl in IMPLS:
                try:
                    ms, share = decode_step_ms(model, cfg, batch, ctx, impl)
                except RuntimeError as err:  # a forced backend that cannot take the call
                    row[impl + "_error"] = str(err).splitlines()[0][:200]
                    row[impl + "_ms"] = None
                    torch.cuda.empty_cache()
                    continue
                row[impl + "_ms"] = ms
                if impl == "kevolve":
                    row["evolved_share"] = share
            for impl in IMPLS[:-1]:
                if row.get(impl + "_ms"):
                    row[impl + "_tokens_per_s"] = batch * 1e3 / row[impl + "_ms"]
            rows.append(row)
            print(f"  decode ctx {ctx:6d} batch {batch:3d} (ms a token): " + summarize(row, "a token"),
                  flush=True)
    return rows


result = {"about": {"torch": torch.__version__, "device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
                    "transformers": __import__("transformers").__version__,
                    "export": MANIFEST.get("run"), "task": MANIFEST["task"]}}
for name in args.models.split(","):
    cfg = config(name)
    model = build(cfg)
    print(f"Qwen3-{name}{' (tiny)' if args.tiny else ''}: {cfg.num_hidden_layers} layers, "
          f"{cfg.num_attention_heads}:{cfg.num_key_value_heads} heads", flush=True)
    rec = {"layers": cfg.num_hidden_layers, "heads": f"{cfg.num_attention_heads}:{cfg.num_key_value_heads}"}
    parts = args.parts.split(",")
    if "greedy" in parts:
        rec["greedy"] = greedy(model, cfg, 16 if args.tiny else 64)
        print(f"  greedy: identical {rec['greedy']['identical']}"
              f"{'' if rec['greedy']['identical'] else ', ' + json.dumps(rec['greedy']['divergence'])}"
              f"  evolved calls {rec['greedy']['evolved_share']}", flush=True)
    if "prefill" in parts:
        rec["prefill"] = prefill(model, cfg, (64, 128) if args.tiny else (512, 2048, 8192))
    if "decode" in parts:
        print(f"  decode steps: {args.decode}", flush=True)
        rec["decode_mode"] = args.decode
        rec["decode"] = decode(model, cfg, (128, 512) if args.tiny else (1024, 8192, 32768),
                               (1, 2) if args.tiny else (1, 8, 32))
    result[name] = rec
    del model
    if DEV == "cuda":
        torch.cuda.empty_cache()
json.dump(result, open(args.result, "w"), indent=2)
