#!/usr/bin/env python3
"""The launches the ncu part of bench/qwen3_decode_h200.sh profiles with
Nsight Compute: each exported decode block of Qwen3-0.6B (or 14B) at batch 1 (qkv,
o, mlp: one token; attn over full caches of 1,024, 8,192 and 32,768 rows)
and, beside the attention, SDPA's cuDNN backend on the same tensors (what
a user calls instead). Each is called twice, in NVTX ranges NAME_0 and
NAME_1: the first builds and warms it, the second is the one profiled
(ncu flushes the caches before it).

Usage: python3 bench/qwen3_decode_ncu.py EXPORT_DIR [14B]  (lib_qkv, lib_attn,
       lib_o, lib_mlp under it; a block without its export is skipped;
       14B: Qwen3-14B's projections, hidden 5120, 40 q heads, 17,408)"""
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

E = sys.argv[1]
HID, NQ, NKV, D, INTER = (5120, 40, 8, 128, 17408) if sys.argv[2:] == ["14B"] else (1024, 16, 8, 128, 3072)
dev = "cuda"


def bf(*shape):
    return torch.randn(*shape, device=dev, dtype=torch.bfloat16) * 0.05


def load(block):
    d = os.path.join(E, f"lib_{block}")
    if not os.path.exists(os.path.join(d, "manifest.json")):
        print(f"{block}: no export at {d}")
        return None
    sys.path.insert(0, os.path.join(d, "torch"))
    return __import__(f"kevolve_qwen3_decode_{block}")


def twice(name, fn):
    for i in range(2):
        torch.cuda.nvtx.range_push(f"{name}_{i}")
        fn()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def main():
    qkv, attn, o, mlp = (load(b) for b in ("qkv", "attn", "o", "mlp"))
    ctx = 1024
    if qkv:
        kc, vc = bf(1, NKV, ctx, D), bf(1, NKV, ctx, D)
        args = (bf(1, 1, HID), bf(HID), bf(NQ, D, HID), bf(NKV, D, HID), bf(NKV, D, HID), bf(D), bf(D),
                bf(1, 1, D), bf(1, 1, D), torch.tensor([ctx - 1], device=dev, dtype=torch.int32), kc, vc)
        twice("qkv", lambda: qkv.op(*args))
    if o:
        a3 = (bf(1, NQ * D), bf(HID, NQ * D), bf(1, HID))
        twice("o", lambda: o.op(*a3))
    if mlp:
        a5 = (bf(1, HID), bf(HID), bf(INTER, HID), bf(INTER, HID), bf(HID, INTER))
        twice("mlp", lambda: mlp.op(*a5))
    for length in (1024, 8192, 32768):
        q, k, v = bf(1, 1, NQ, D), bf(1, NKV, length, D), bf(1, NKV, length, D)
        free = torch.zeros(1, device=dev, dtype=torch.int32)
        if attn:
            twice(f"attn_l{length}", lambda: attn.op(q, k, v, free))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            twice(f"cudnn_l{length}", lambda: F.scaled_dot_product_attention(q.transpose(1, 2), k, v,
                                                                              enable_gqa=True))


if __name__ == "__main__":
    main()
