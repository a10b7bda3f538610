#!/usr/bin/env python3
"""PyTorch's side of bench/gqa_h200.sh: times scaled_dot_product_attention
(enable_gqa=True, bf16, head_dim 128) with the cuDNN and the flash backends
on every gqa_attention scenario, the way the harness times ours: warm-up,
CUDA-graph replay over input sets rotated so they outsize the L2, events,
the median of several rounds. Also measures the copy bandwidth (a large
device-to-device copy, bytes read plus written) and the bf16 matmul rate,
for the roofline floors. Writes one JSON object to argv[1].

Layout as the task: q [B, HQ, SQ, D], k and v [B, HKV, L, D]. Causal is
aligned to the bottom right (query row i sits at position L - SQ + i):
decode needs no mask, prefill uses is_causal, chunked prefill uses
torch.nn.attention.bias.causal_lower_right."""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SCENARIOS = []  # (name, B, HQ, HKV, SQ, L)
for hq in (16, 40):
    for b, l in ((1, 128), (1, 1024), (1, 8192), (1, 32768), (8, 8192), (32, 4096)):
        SCENARIOS.append((f"decode_{hq}x8_b{b}_l{l}", b, hq, 8, 1, l))
for hq in (16, 40):
    for s in (512, 2048, 8192):
        SCENARIOS.append((f"prefill_{hq}x8_s{s}", 1, hq, 8, s, s))
    SCENARIOS.append((f"chunked_{hq}x8_q512_l8192", 1, hq, 8, 512, 8192))

L2_BYTES = 50 << 20
REPLAYS = 20
ROUNDS = 5


def timed_graph(fn, sets):
    """Median microseconds of one call, replaying a graph that calls FN on
    every input set in turn (so consecutive calls read different memory)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for s in sets[:3]:  # warm-up (and backend selection) outside capture
            fn(*s)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for s in sets:
            fn(*s)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(ROUNDS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(REPLAYS):
            g.replay()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / (REPLAYS * len(sets)))
    times.sort()
    return times[len(times) // 2]


def backend_times(fn, sets):
    """FN (an SDPA call) timed with cuDNN's and flash's backends: {"cudnn":
    us, "flash": us}, None and the error's first line for a backend that
    refuses the shape or mask."""
    row = {}
    for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                           ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                row[label] = timed_graph(fn, sets)
        except Exception as e:  # a backend that refuses the shape or mask
            row[label] = None
            row[label + "_error"] = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
    return row


def make_sets(b, hq, hkv, sq, l, d=128):
    per = 2 * (b * hq * sq * d * 2) + 2 * (b * hkv * l * d * 2)
    n = max(2, min(64, (2 * L2_BYTES) // per + 1))
    out = []
    for _ in range(n):
        q = torch.randn(b, hq, sq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hkv, l, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hkv, l, d, device="cuda", dtype=torch.bfloat16)
        out.append((q, k, v))
    return out


def attention(sq, l):
    if sq == 1:
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    if sq == l:
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                              enable_gqa=True)
    from torch.nn.attention.bias import causal_lower_right
    mask = causal_lower_right(sq, l)
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                          enable_gqa=True)


def copy_gbps():
    # 4-byte elements: a byte-typed copy ran at 2.77 TB/s on the H200
    # (2026-11-29), under what cuDNN's own decode reads; vectorised copies
    # reach about 4.3 TB/s (shared/FIELD-NOTES.md).
    n = 512 << 20
    a = torch.empty(n, dtype=torch.float32, device="cuda")
    b = torch.empty_like(a)
    us = timed_graph(lambda x, y: y.copy_(x), [(a, b)])
    return 2 * n * 4 / (us * 1e-6) / 1e9


def read_gbps():
    """Read-only bandwidth: a float32 sum over 2 GB of bf16, the access pattern
    of decode (K and V read once, almost nothing written). The copy rate
    above counts reads and writes and came out below what cuDNN's decode
    reads (2.7 against 3.4-4.3 TB/s, H200, 2026-11-30), so it is no floor."""
    n = 1 << 30
    a = torch.ones(n, dtype=torch.bfloat16, device="cuda")
    us = timed_graph(lambda x: x.sum(dtype=torch.float32), [(a,)])
    return n * 2 / (us * 1e-6) / 1e9


def matmul_tflops():
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    us = timed_graph(lambda x, y, z: torch.matmul(x, y, out=z), [(a, b, c)])
    return 2 * n ** 3 / (us * 1e-6) / 1e12


def main():
    out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "gpu": torch.cuda.get_device_name(), "scenarios": {}}
    out["copy_gbps"] = copy_gbps()
    try:  # new in this version of the script: a failure must not lose the rest
        out["read_gbps"] = read_gbps()
    except Exception as e:  # noqa: BLE001
        print(f"read bandwidth not measured: {e}", file=sys.stderr)
    out["matmul_tflops"] = matmul_tflops()
    print(f"copy {out['copy_gbps']:.0f} GB/s, bf16 matmul {out['matmul_tflops']:.0f} TFLOP/s",
          flush=True)
    for name, b, hq, hkv, sq, l in SCENARIOS:
        sets = make_sets(b, hq, hkv, sq, l)
        row = backend_times(attention(sq, l), sets)
        out["scenarios"][name] = row
        print(f"{name:28s} cudnn {row['cudnn'] or 'n/a'} flash {row['flash'] or 'n/a'}", flush=True)
        del sets
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
