#!/usr/bin/env python3
"""What the judge's small steps cost on this machine, each the median of
several rounds of N: a stream synchronisation with nothing queued, a
16-byte copy from the GPU, a tiny kernel launched and waited for, a 2 ms
sleep (how late it wakes), and reading /proc/self/status. The device
machine runs under gVisor, where every system call and every driver call
crosses a sandbox: the judge's checks make many of them."""
import os
import statistics
import time

import torch

N = 500


def per_call(fn, rounds=5):
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(N):
            fn()
        out.append((time.perf_counter() - t) / N)
    return statistics.median(out)


x = torch.zeros(4, device="cuda")
torch.cuda.synchronize()
rows = [
    ("synchronize, nothing queued", per_call(torch.cuda.synchronize)),
    ("16-byte copy to the host", per_call(lambda: x.cpu())),
    ("tiny kernel, then synchronize", per_call(lambda: (x.add_(1), torch.cuda.synchronize()))),
    ("sleep(0.002)", per_call(lambda: time.sleep(0.002), rounds=3)),
    ("read /proc/self/status", per_call(lambda: open("/proc/self/status").read())),
    ("getpid", per_call(os.getpid)),
]
for name, s in rows:
    print(f"{name:32s} {s * 1e6:9.1f} us")
