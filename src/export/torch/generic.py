"""A library exported by kevolve (kevolve export --torch) as a PyTorch
operator over the task's own tensors.

    import sys; sys.path.insert(0, "EXPORT_DIR/torch")
    import kevolve_TASK as kx
    y = kx.op(x, w)                     # or torch.ops.kevolve.TASK(x, w)
    print(kx.SCHEMA)                    # e.g. rmsnorm(Tensor x, Tensor w) -> Tensor

The operator takes the task's inputs and in-out tensors in the task's
order (manifest.json's "signature"); an in-out tensor is written in place.
Every symbol's value comes from the arguments' shapes (a symbol two shapes
disagree on is an error that names both); the outputs are allocated and
returned: one tensor, a tuple of them, or None. The tensors must be dense
(contiguous), of the task's dtypes, on the export's device. The operator is
built on first use with torch.utils.cpp_extension and linked to the
exported library (EXPORT_DIR/lib). It has a fake implementation, so
torch.compile can trace it, and it launches on the current stream, so a
CUDA graph can capture it.

EXPORT_DIR/torch/kevolve_qwen3.py puts the rmsnorm, swiglu and rope
exports into a transformers Qwen3 model (patch_qwen3).
"""
import importlib.util
import json
import os
import threading

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFEST = json.load(open(os.path.join(ROOT, "manifest.json")))
TASK = MANIFEST["task"]
ENTRY = MANIFEST["entry"]
DEVICE = MANIFEST["torch_device"]
SCENARIOS = MANIFEST["scenarios"]
SYMS = MANIFEST["signature"]["syms"]
TENSORS = MANIFEST["signature"]["tensors"]
DERIVED = MANIFEST["signature"].get("derived", {})  # symbols in no input's shape
ARGS = [t for t in TENSORS if t["role"] != "out"]
OUTS = [t for t in TENSORS if t["role"] == "out"]
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32}


SCHEMA = MANIFEST["signature"]["schema"]  # as spec.h gives it to op.cpp
_lock = threading.Lock()
_ext = None


def _load():
    """The compiled operator (built once, into EXPORT_DIR/torch/build)."""
    global _ext
    with _lock:
        if _ext is None:
            spec = importlib.util.spec_from_file_location(
                "kevolve_build", os.path.join(ROOT, "torch", "kevolve_build.py"))
            build = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(build)
            _ext = build.build(HERE, ROOT, ENTRY, DEVICE == "cuda", [])
            _register_fake()
    return _ext


def _arguments(args, kwargs):
    """The operator's arguments in the task's order, however they were passed."""
    args = list(args) + [kwargs[t["name"]] for t in ARGS[len(args):]]
    if len(args) != len(ARGS):
        raise TypeError(f"{SCHEMA}: {len(args)} arguments")
    return args


def symbols(*args, **kwargs):
    """Each symbol's value from the arguments' shapes: {name: value} (the
    operator's own rule, for its fake implementation and its users)."""
    values = {}
    for t, x in zip(ARGS, _arguments(args, kwargs)):
        if x.dim() != len(t["shape"]):
            raise ValueError(f"kevolve.{TASK}: {t['name']} must be {len(t['shape'])}-D, not "
                             f"{tuple(x.shape)}")
        for d, s in enumerate(t["shape"]):
            values.setdefault(SYMS[s], x.shape[d])
    return _derive(values)


def _derive(values):
    """VALUES with the symbols no input's shape holds, from the others by
    the task's rules (manifest.json's signature.derived: C expressions over
    s[0 ..], arithmetic only, evaluated as op.cpp evaluates them)."""
    s = [values.get(n) for n in SYMS]
    for name, rule in DERIVED.items():
        if not set(rule) <= set("s[]0123456789+-*/() "):
            raise ValueError(f"kevolve.{TASK}: symbol {name}'s rule {rule!r} is not arithmetic")
        values[name] = int(eval(rule.replace("/", "//"), {"__builtins__": {}}, {"s": s}))
    return values


def unsupported(*args, **kwargs):
    """Why the operator cannot take these arguments (a dtype, a layout, a
    device, shapes that disagree), or None."""
    args = _arguments(args, kwargs)
    values = {}
    for t, x in zip(ARGS, args):
        if x.dtype != DTYPES[t["dtype"]]:
            return f"{t['name']} of dtype {x.dtype}"
        if x.device.type != DEVICE or x.device != args[0].device:
            return f"{t['name']} on {x.device}"
        if x.dim() != len(t["shape"]):
            return f"{t['name']} of rank {x.dim()}"
        if not x.is_contiguous():
            return f"{t['name']} not contiguous"
        for d, s in enumerate(t["shape"]):
            if values.setdefault(SYMS[s], x.shape[d]) != x.shape[d]:
                return f"{SYMS[s]} {values[SYMS[s]]} and {x.shape[d]}"
    return None


def _register_fake():
    def fake(*args, **kwargs):
        s = symbols(*args, **kwargs)
        like = _arguments(args, kwargs)[0]
        outs = [like.new_empty([s[SYMS[i]] for i in t["shape"]], dtype=DTYPES[t["dtype"]])
                for t in OUTS]
        return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)

    try:
        torch.library.register_fake(f"kevolve::{TASK}")(fake)
    except RuntimeError:  # registered already (a second load)
        pass


def op(*args, **kwargs):
    """The exported kernels on the task's inputs and in-out tensors: the
    outputs (one tensor, a tuple, or None)."""
    if _ext is None:  # loaded before any tracing: torch.compile sees the operator only
        _load()
    return getattr(torch.ops.kevolve, TASK)(*args, **kwargs)


def scenario(**syms):
    """The manifest's scenario a call of these symbols goes to (the
    library's rule)."""
    return SCENARIOS[_load().scenario([int(syms[s]) for s in SYMS])]
