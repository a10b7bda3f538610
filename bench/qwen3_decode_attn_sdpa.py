#!/usr/bin/env python3
"""Issue 43, item 3: kevolve's export of qwen3_decode_attn against what a
user calls instead, SDPA's cuDNN and flash backends, on every scenario of
the export's manifest, side by side in one process and timed the same way
(bench/gqa_sdpa.py's timed_graph: a CUDA graph over input sets rotated to
outsize the L2, the median of rounds).

The export takes q as the decode blocks make it, [B, T, HQ, D], and the
full static cache [B, HKV, L, D] with each sequence's free rows (0 here:
the step's T tokens are the cache's last rows). SDPA gets what stock
transformers hands it: q.transpose(1, 2) (a view), the same cache, no mask
for one token and causal_lower_right for T > 1. Each row also gives the
largest difference between the export's output and cuDNN's (bf16: a few
units of 2^-8 are rounding).

Usage: python3 bench/qwen3_decode_attn_sdpa.py ATTN_EXPORT_DIR RESULT.json"""
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(sys.argv[1], "torch"))
import gqa_sdpa  # noqa: E402
import kevolve_qwen3_decode_attn as ka  # noqa: E402


def sets_for(s):
    b, t, hq, hkv, d, length = (s[k] for k in ("batch", "q_len", "q_heads", "kv_heads", "head_dim",
                                                  "cache_len"))
    per = 2 * (2 * b * t * hq * d) + 2 * (2 * b * hkv * length * d)
    n = max(2, min(64, (2 * gqa_sdpa.L2_BYTES) // per + 1))
    free = torch.zeros(b, dtype=torch.int32, device="cuda")
    return [(torch.randn(b, t, hq, d, device="cuda", dtype=torch.bfloat16),
             torch.randn(b, hkv, length, d, device="cuda", dtype=torch.bfloat16),
             torch.randn(b, hkv, length, d, device="cuda", dtype=torch.bfloat16), free) for _ in range(n)]


def sdpa(t, length):
    if t == 1:
        return lambda q, k, v, free: F.scaled_dot_product_attention(q.transpose(1, 2), k, v, enable_gqa=True)
    from torch.nn.attention.bias import causal_lower_right

    mask = causal_lower_right(t, length)
    return lambda q, k, v, free: F.scaled_dot_product_attention(q.transpose(1, 2), k, v, attn_mask=mask,
                                                                enable_gqa=True)


def main():
    out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "gpu": torch.cuda.get_device_name(), "scenarios": {}}
    print("| scenario | kevolve us | cuDNN us | flash us | cuDNN / kevolve | max diff |")
    for sc in ka.SCENARIOS:
        s = sc["syms"]
        sets = sets_for(s)
        fn = sdpa(s["q_len"], s["cache_len"])
        row = {"kevolve": gqa_sdpa.timed_graph(ka.op, sets), **gqa_sdpa.backend_times(fn, sets)}
        if row["cudnn"]:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                ref = fn(*sets[0]).transpose(1, 2)
            row["max_diff"] = float((ka.op(*sets[0]).float() - ref.float()).abs().max())
        out["scenarios"][sc["name"]] = row
        ratio = f"x{row['cudnn'] / row['kevolve']:.2f}" if row.get("cudnn") else "-"
        cells = " | ".join(f"{row[k]:.2f}" if row.get(k) else "n/a" for k in ("kevolve", "cudnn", "flash"))
        print(f"| {sc['name']} | {cells} | {ratio} | {row.get('max_diff', float('nan')):.4f} |", flush=True)
        del sets
        torch.cuda.empty_cache()
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
