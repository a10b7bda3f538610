"""Weights a decode step reads soon, asked of the GPU's L2 cache before the
kernels that read them start (kevolve_qwen3.patch_qwen3's l2_prefetch).

At one token a layer's kernels leave the memory idle for most of their
time: each kernel's launch, its chains of small reductions, the
attention's merge. A branch of the step on a stream of its own asks L2 for
the weights of the kernels that come next (cp.async.bulk.prefetch.L2:
kevolve_l2_prefetch.cu), so that they find them there. The branch is
forked from the step's stream and joined back to it, which CUDA graph
capture records as a branch of the captured step.

The kernel is built on first use with nvcc into this folder's build/ (a
shared library without PyTorch's headers, called through ctypes). It needs
compute capability 9.0 (Hopper) or later."""
import ctypes
import os
import shutil
import subprocess

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "kevolve_l2_prefetch.cu")
MAX_SPANS = 16  # kevolve_l2_prefetch.cu's KVX_L2_SPANS


def _nvcc():
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    try:
        from torch.utils.cpp_extension import CUDA_HOME

        homes.append(CUDA_HOME)
    except ImportError:
        pass
    for home in homes:
        if home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
            return os.path.join(home, "bin", "nvcc")
    return shutil.which("nvcc")


def build(device):
    """The prefetch library for DEVICE's architecture, built once: (the
    ctypes library, None), or (None, why it cannot be had)."""
    device = torch.device(device)
    if device.type != "cuda":
        return None, f"device {device.type} (the prefetch is a CUDA kernel)"
    major, minor = torch.cuda.get_device_capability(device)
    if major < 9:
        return None, f"compute capability {major}.{minor} (cp.async.bulk.prefetch needs 9.0)"
    arch = f"sm_{major}{minor}{'a' if major == 9 else ''}"
    out = os.path.join(HERE, "build", f"libkevolve_l2_prefetch_{arch}.so")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(SOURCE):
        nvcc = _nvcc()
        if not nvcc:
            return None, "nvcc not found (set CUDA_HOME)"
        os.makedirs(os.path.dirname(out), exist_ok=True)
        tmp = f"{out}.{os.getpid()}"
        cmd = [nvcc, "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-gencode",
               f"arch=compute_{arch[3:]},code={arch}", "-o", tmp, "-x", "cu", SOURCE]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            return None, f"nvcc failed: {done.stderr.strip()[-400:]}"
        os.replace(tmp, out)
    lib = ctypes.CDLL(out)
    lib.kvx_l2_prefetch.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_longlong),
                                    ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    lib.kvx_l2_prefetch.restype = ctypes.c_int
    # No spans: this library's own CUDA runtime set up outside any capture.
    rc = lib.kvx_l2_prefetch(None, None, 0, 1, device.index or 0, None)
    if rc:
        return None, f"kvx_l2_prefetch: CUDA error {rc}"
    return lib, None


class Prefetcher:
    """Forks (fork) and joins (join) the prefetch branch of a step on
    DEVICE; a fork whose bytes and those read beside them exceed FRACTION
    of the L2 is skipped (the weights would be evicted before their
    kernel reads them)."""

    def __init__(self, device, fraction=0.75):
        self.device = torch.device(device)
        self.lib, self.why = build(self.device)
        if self.lib is None:
            return
        props = torch.cuda.get_device_properties(self.device)
        self.budget = fraction * props.L2_cache_size
        self.blocks = props.multi_processor_count
        self.stream = torch.cuda.Stream(self.device, priority=-1)
        self.pending = False

    def fork(self, tensors, beside=0):
        """Asks L2 for TENSORS on the side stream, after the work enqueued
        so far on the current one; BESIDE: the bytes other kernels read
        before these are read. Returns None, or why it was skipped."""
        tensors = [t for t in tensors if t is not None]
        size = sum(t.numel() * t.element_size() for t in tensors)
        if size + beside > self.budget:
            return "over the L2 budget"
        if len(tensors) > MAX_SPANS:
            return f"more than {MAX_SPANS} tensors"
        self.join()
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        n = len(tensors)
        base = (ctypes.c_void_p * n)(*[t.data_ptr() for t in tensors])
        size_of = (ctypes.c_longlong * n)(*[t.numel() * t.element_size() for t in tensors])
        rc = self.lib.kvx_l2_prefetch(base, size_of, n, self.blocks, self.device.index or 0,
                                      ctypes.c_void_p(self.stream.cuda_stream))
        if rc:
            raise RuntimeError(f"kvx_l2_prefetch: CUDA error {rc}")
        self.pending = True
        return None

    def join(self):
        """The current stream waits for the branch (it is done as soon as
        its requests are out)."""
        if self.pending:
            torch.cuda.current_stream(self.device).wait_stream(self.stream)
            self.pending = False
