#!/usr/bin/env python3
"""Qwen3's decode steps through the fused decode kernels of the
qwen3_decode tasks (issue 43), beside PyTorch's own ops and torch.compile,
side by side in one process on the H200.

Each decoder layer's decode step (q_len <= 8) runs three fused kernels and
SDPA: qwen3_decode_qkv (input RMSNorm, q/k/v projections, q/k norms,
rotary, the k/v cache write), attention (SDPA over the cache), qwen3_decode_o
(output projection + residual) and qwen3_decode_mlp (post-attention norm,
gate/up, SwiGLU, down + residual). Prefill and any call the kernels cannot
take go to the layer's own forward, counted with the reason. The kernels
are the tasks' CUDA programs, compiled by nvcc into shared objects and
called through their kv_launch (the task ABI), so what is timed here is
what `kevolve eval` judges.

  (a) greedy: 32 tokens from the same prompt with a static cache, stock
      against fused; at a first divergence, both sides' logits against a
      float32 model (a near tie or not);
  (b) decode: one step over a preallocated KV cache at each context and
      batch, captured in a CUDA graph and replayed (bench/qwen3_common.py),
      for stock PyTorch (SDPA), the fused kernels, torch.compile in its
      default mode and in max-autotune-no-cudagraphs (each captured the
      same way); the share of layer calls the kernels served.

Usage: python3 bench/qwen3_decode_fused.py RESULT.json --qkv SO --o SO --mlp SO
       [--model 0.6B|14B] [--layers-14b N] [--contexts 1024,8192]
       [--batches 1,8] [--compile default,max-autotune-no-cudagraphs]
       [--deadline SECONDS]"""
import argparse
import copy
import ctypes
import inspect
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("result")
ap.add_argument("--qkv", required=True)
ap.add_argument("--o", required=True)
ap.add_argument("--mlp", required=True)
ap.add_argument("--model", default="0.6B")
ap.add_argument("--layers-14b", type=int, default=8)
ap.add_argument("--contexts", default="1024")
ap.add_argument("--batches", default="1")
ap.add_argument("--compile", default="default,max-autotune-no-cudagraphs")
ap.add_argument("--deadline", type=float, default=400.0)
args = ap.parse_args()
T0 = time.time()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen3_common as common  # noqa: E402

KV_MAX_TENSORS, KV_MAX_SYMS, KV_ABI = 16, 8, 2


class LaunchArgs(ctypes.Structure):
    """include/kevolve/task.h's kv_launch_args."""
    _fields_ = [("abi_version", ctypes.c_uint32), ("num_tensors", ctypes.c_uint32),
                ("tensors", ctypes.c_void_p * KV_MAX_TENSORS), ("num_syms", ctypes.c_uint32),
                ("syms", ctypes.c_int64 * KV_MAX_SYMS), ("stream", ctypes.c_void_p),
                ("context", ctypes.c_void_p), ("device", ctypes.c_void_p),
                ("cl_kernel", ctypes.c_void_p), ("harness", ctypes.c_void_p)]


class Kernel:
    def __init__(self, path):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        self.lib.kv_launch.argtypes = [ctypes.POINTER(LaunchArgs)]
        self.lib.kv_launch.restype = ctypes.c_int
        self.path = path

    def __call__(self, tensors, syms):
        a = LaunchArgs()
        a.abi_version, a.num_tensors, a.num_syms = KV_ABI, len(tensors), len(syms)
        for i, t in enumerate(tensors):
            assert t.is_contiguous() and t.is_cuda, (self.path, i, t.shape, t.stride())
            a.tensors[i] = t.data_ptr()
        for i, s in enumerate(syms):
            a.syms[i] = int(s)
        a.stream = torch.cuda.current_stream().cuda_stream
        rc = self.lib.kv_launch(ctypes.byref(a))
        if rc:
            raise RuntimeError(f"{self.path}: kv_launch returned {rc}")


K = {"qkv": Kernel(args.qkv), "o": Kernel(args.o), "mlp": Kernel(args.mlp)}
STATS = {"served": 0, "fallback": 0, "reasons": {}}


def count(why):
    if why is None:
        STATS["served"] += 1
    else:
        STATS["fallback"] += 1
        STATS["reasons"][why] = STATS["reasons"].get(why, 0) + 1


def why_not(layer, x, past, pos_emb, **kw):
    if x.dim() != 3 or x.shape[1] > 8:
        return "prefill (q_len > 8)"
    if x.dtype != torch.bfloat16 or not x.is_cuda:
        return f"dtype {x.dtype} on {x.device}"
    if torch.is_grad_enabled():
        return "autograd"
    if past is None or pos_emb is None:
        return "no cache or no rotary rows"
    if kw.get("cache_position") is None and kw.get("position_ids") is None:
        return "no cache_position and no position_ids"
    cl = past.layers[layer.self_attn.layer_idx]
    if getattr(cl, "keys", None) is None or not cl.keys.is_contiguous():
        return "cache not allocated or not contiguous"
    return None


MEMO = {}


def start_rows(cache_position, b):
    """The cache row of each sequence's first new token, as the qkv kernel
    takes it (int32 [batch]): made once a step, not once a layer (every
    layer of a step gets the same cache_position tensor)."""
    held = MEMO.get("start")
    if held is None or held[0] is not cache_position or held[1] != cache_position._version or \
            held[2].shape[0] != b:
        rows = cache_position.reshape(-1)[:1] if cache_position.dim() == 1 else cache_position[:, 0]
        held = (cache_position, cache_position._version, rows.to(torch.int32).expand(b).contiguous())
        MEMO["start"] = held  # the same tensor changed in place is made again
    return held[2]


def fused_forward(layer, original, returns_tuple):
    at, mlp = layer.self_attn, layer.mlp
    nq, nkv, d = at.config.num_attention_heads, at.config.num_key_value_heads, at.head_dim

    def forward(hidden_states, attention_mask=None, position_ids=None, past_key_values=None,
                use_cache=False, cache_position=None, position_embeddings=None, **kw):
        why = why_not(layer, hidden_states, past_key_values, position_embeddings,
                      cache_position=cache_position, position_ids=position_ids)
        count(why)
        if why:
            return original(hidden_states, attention_mask=attention_mask, position_ids=position_ids,
                            past_key_values=past_key_values, use_cache=use_cache,
                            cache_position=cache_position, position_embeddings=position_embeddings, **kw)
        b, q_len, hid = hidden_states.shape
        cl = past_key_values.layers[at.layer_idx]
        keys, values = cl.keys, cl.values
        cos, sin = position_embeddings
        cos = cos.expand(b, q_len, d).contiguous()
        sin = sin.expand(b, q_len, d).contiguous()
        start = start_rows(cache_position if cache_position is not None else position_ids, b)
        x = hidden_states.contiguous()
        qt = torch.empty(b, q_len, nq, d, device=x.device, dtype=x.dtype)
        length = keys.shape[2]
        K["qkv"]([x, layer.input_layernorm.weight, at.q_proj.weight, at.k_proj.weight, at.v_proj.weight,
                  at.q_norm.weight, at.k_norm.weight, cos, sin, start, qt, keys, values],
                 [b, q_len, hid, nq, nkv, d, length, length - q_len + 1])
        if hasattr(cl, "cumulative_length"):  # what the cache's update() counts (transformers 5)
            cl.cumulative_length += q_len
        mask = attention_mask
        if mask is not None and mask.dim() == 4:
            mask = mask[:, :, :, :length]
        attn = F.scaled_dot_product_attention(qt.transpose(1, 2), keys, values, attn_mask=mask,
                                              enable_gqa=True)
        attn = attn.transpose(1, 2).reshape(b * q_len, nq * d).contiguous()
        h2 = torch.empty_like(x)
        K["o"]([attn, at.o_proj.weight, x, h2], [b * q_len, nq * d, hid])
        inter = mlp.gate_proj.weight.shape[0]
        act = torch.empty(b * q_len, inter, device=x.device, dtype=x.dtype)
        out = torch.empty_like(x)
        K["mlp"]([h2, layer.post_attention_layernorm.weight, mlp.gate_proj.weight, mlp.up_proj.weight,
                  mlp.down_proj.weight, act, out], [b * q_len, hid, inter])
        return (out,) if returns_tuple else out

    return forward


class Fused:
    """MODEL's decoder layers served by the fused kernels for the block."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        for layer in self.model.model.layers:
            ann = inspect.signature(type(layer).forward).return_annotation
            layer.forward = fused_forward(layer, layer.forward, "tuple" in str(ann).lower())
        return self

    def __exit__(self, *exc):
        for layer in self.model.model.layers:
            del layer.forward


def greedy(model, cfg, n_new=32):
    torch.manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (1, 32), device="cuda")
    kw = dict(max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False, cache_implementation="static",
              disable_compile=True)
    with torch.no_grad():
        stock = model.generate(ids, **kw)
        STATS.update(served=0, fallback=0, reasons={})
        with Fused(model):
            fused = model.generate(ids, **kw)
    a, b = stock[0, 32:], fused[0, 32:]
    rec = {"tokens": int(a.numel()), "identical": bool(torch.equal(a, b)),
           "calls": copy.deepcopy(STATS)}
    if not rec["identical"]:
        t = int((a != b).nonzero()[0])
        prefix = stock[:, :32 + t]
        with torch.no_grad():
            logits = {"pytorch": model(prefix).logits[0, -1]}
        ref = copy.deepcopy(model).float()
        rec["divergence"] = common.divergence(ref, prefix, t, {"pytorch": int(a[t]), "fused": int(b[t])},
                                              {"pytorch": logits["pytorch"]})
        del ref
    return rec


def main():
    cfg = common.config(args.model, layers_14b=args.layers_14b)
    model = common.build(cfg, "cuda")
    result = {"about": {"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                        "device": torch.cuda.get_device_name(), "model": args.model,
                        "layers": cfg.num_hidden_layers,
                        "kernels": {k: v.path for k, v in K.items()}}}
    print(f"Qwen3-{args.model}: {cfg.num_hidden_layers} layers", flush=True)
    result["greedy"] = g = greedy(model, cfg)
    print(f"  greedy: identical {g['identical']} "
          f"{'' if g['identical'] else json.dumps(g['divergence'])} calls {json.dumps(g['calls'])}", flush=True)
    rows = []
    shapes = [(c, b) for c in map(int, args.contexts.split(",")) for b in map(int, args.batches.split(","))]
    for ctx, batch in shapes:
        row = {"context": ctx, "batch": batch}
        row["pytorch_ms"] = common.decode_step_ms(model, cfg, batch, ctx, "cuda")
        STATS.update(served=0, fallback=0, reasons={})
        with Fused(model):
            row["fused_ms"] = common.decode_step_ms(model, cfg, batch, ctx, "cuda")
        row["fused_calls"] = copy.deepcopy(STATS)
        rows.append(row)
        print(f"  ctx {ctx:5d} batch {batch}: pytorch {row['pytorch_ms']:.3f} ms  fused {row['fused_ms']:.3f} ms "
              f"calls {json.dumps(row['fused_calls'])}", flush=True)
    for mode in [m for m in args.compile.split(",") if m]:
        compiled = torch.compile(model, mode=mode)
        for row in rows:
            if time.time() - T0 > args.deadline:
                row[f"compile_{mode}_ms"] = None
                print(f"  torch.compile {mode}: skipped (deadline)", flush=True)
                continue
            t = time.time()
            row[f"compile_{mode}_ms"] = common.decode_step_ms(compiled, cfg, row["batch"], row["context"], "cuda")
            print(f"  ctx {row['context']:5d} batch {row['batch']}: torch.compile {mode} "
                  f"{row[f'compile_{mode}_ms']:.3f} ms (with its compile: {time.time() - t:.0f} s)", flush=True)
        del compiled
        torch._dynamo.reset()
    result["decode"] = rows
    json.dump(result, open(args.result, "w"), indent=2)


main()
