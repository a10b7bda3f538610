"""A library exported by kevolve (kevolve export --torch), as a PyTorch
operator and an attention function for transformers.

    import sys; sys.path.insert(0, "EXPORT_DIR/torch")
    import kevolve_TASK as kx
    kx.register()                       # attn_implementation="kevolve"
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="kevolve")
    o = kx.attention_op(q, k, v)        # or torch.ops.kevolve.TASK(q, k, v)
    print(kx.stats())                   # calls served by the evolved kernels

The operator is grouped-query attention on bf16 tensors in transformers'
layout, q (batch, heads, queries, head_dim), k and v (batch, kv_heads, keys,
head_dim), queries aligned to the bottom right of the keys: decode against a
KV cache (one query), causal prefill (as many queries as keys) and chunked
prefill (queries offset into a longer key sequence). It is built on first
use with torch.utils.cpp_extension and linked to the exported library
(EXPORT_DIR/lib). It has a fake implementation, so torch.compile can trace
it, and it launches on the current stream, so a CUDA graph can capture it.

For each shape the export's manifest says which kernel to call: the
evolved one, or PyTorch's scaled_dot_product_attention where that was
measured faster (kevolve export --against-standard; in a model, a causal
prefill the manifest gives the standard kernel is SDPA exactly as
transformers calls it, each kind of call routed once). A call the library
cannot take (another head_dim, a mask other than the causal one, another
dtype or device, dropout, a sliding window, a scaling other than
1/sqrt(head_dim)) goes to SDPA, counted in stats() with its reason, and
said once in the log: never silently wrong.
"""
import importlib.util
import json
import logging
import math
import os
import threading

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MANIFEST = json.load(open(os.path.join(ROOT, "manifest.json")))
TASK = MANIFEST["task"]
ENTRY = MANIFEST["entry"]
CUDA = MANIFEST["torch_device"] == "cuda"
SCENARIOS = MANIFEST["scenarios"]
HEAD_DIM = SCENARIOS[0]["syms"]["D"]

log = logging.getLogger("kevolve")
_lock = threading.Lock()
_ext = None
_stats = {"evolved": 0, "standard": 0, "fallback": 0, "reasons": {}}
_said = set()


def _load():
    """The compiled operator (built once, into EXPORT_DIR/torch/build)."""
    global _ext
    with _lock:
        if _ext is None:
            spec = importlib.util.spec_from_file_location(
                "kevolve_build", os.path.join(ROOT, "torch", "kevolve_build.py"))
            build = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(build)
            _ext = build.build(HERE, ROOT, ENTRY, CUDA, [f"-DKVX_OP={TASK}"])
            _register_fake()
    return _ext


def _register_fake():
    try:
        @torch.library.register_fake(f"kevolve::{TASK}")
        def _fake(q, k, v):
            return torch.empty_like(q)
    except RuntimeError:  # registered already (a second load)
        pass


def attention_op(q, k, v):
    """The exported kernels on q, k, v (contiguous, bf16): o like q."""
    if _ext is None:  # loaded before any tracing: torch.compile sees the operator only
        _load()
    return getattr(torch.ops.kevolve, TASK)(q, k, v)


_scenarios_seen = {}


@torch.compiler.assume_constant_result
def _scenario_index(b, hq, hkv, sq, l, d):
    """The library's own rule, asked once per shape (torch.compile runs it
    while tracing and keeps the answer as a constant of the shape)."""
    key = (b, hq, hkv, sq, l, d)
    if key not in _scenarios_seen:
        _scenarios_seen[key] = _load().scenario(*key)
    return _scenarios_seen[key]


def scenario(b, hq, hkv, sq, l, d):
    """The manifest's scenario a call of this shape goes to (the library's
    rule; for torch.compile a constant of the shape)."""
    return SCENARIOS[_scenario_index(int(b), int(hq), int(hkv), int(sq), int(l), int(d))]


def _standard(q, k, v, backend):
    """PyTorch's SDPA, queries aligned to the bottom right of the keys."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sq, l = q.shape[2], k.shape[2]
    choice = {"cudnn": [SDPBackend.CUDNN_ATTENTION], "flash": [SDPBackend.FLASH_ATTENTION]}
    kwargs = {"enable_gqa": True}
    if sq == l and sq > 1:
        kwargs["is_causal"] = True
    elif sq > 1:
        from torch.nn.attention.bias import causal_lower_right

        kwargs["attn_mask"] = causal_lower_right(sq, l)
    if backend in choice:
        with sdpa_kernel(choice[backend]):
            return F.scaled_dot_product_attention(q, k, v, **kwargs)
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def gqa(q, k, v):
    """Attention as the manifest says for this shape: the evolved kernel, or
    the standard one where that was measured faster. Same layout as the
    operator."""
    s = scenario(q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3])
    if s.get("use") == "standard":
        _stats["standard"] += 1
        return _standard(q, k, v, s.get("standard_backend"))
    _stats["evolved"] += 1
    return attention_op(q.contiguous(), k.contiguous(), v.contiguous())


def _unsupported(module, query, key, value, attention_mask, scaling, dropout, sliding_window):
    """Why the library cannot take this call, or None."""
    if query.dtype != torch.bfloat16 or key.dtype != torch.bfloat16:
        return f"dtype {query.dtype}"
    if query.device.type != ("cuda" if CUDA else "cpu"):
        return f"device {query.device.type}"
    if query.shape[-1] != HEAD_DIM:
        return f"head_dim {query.shape[-1]}"
    if attention_mask is not None:
        return "a mask other than the causal one"
    if sliding_window is not None:
        return "a sliding window"
    if dropout and getattr(module, "training", False):
        return "dropout"
    if scaling is not None and abs(scaling - 1.0 / math.sqrt(HEAD_DIM)) > 1e-6:
        return f"scaling {scaling}"
    if query.shape[1] % key.shape[1] != 0 or query.shape[2] > key.shape[2]:
        return "heads or lengths out of the task's shape"
    return None


_routes = {}  # a call's kind (shapes, dtype, device, options) -> its route (_route)


def _route(module, query, key, value, attention_mask, scaling, dropout, sliding_window):
    """Where a transformers call goes: ("evolved",), ("standard", BACKEND)
    (the manifest's choice), or ("fallback", why the library cannot take
    it)."""
    why = _unsupported(module, query, key, value, attention_mask, scaling, dropout, sliding_window)
    if why:
        return ("fallback", why)
    s = scenario(query.shape[0], query.shape[1], key.shape[1], query.shape[2], key.shape[2],
                 query.shape[3])
    return ("standard", s.get("standard_backend")) if s.get("use") == "standard" else ("evolved",)


def _causal_bottom_right(query, key):
    """The boolean mask of queries aligned to the bottom right of the keys
    (what transformers' is_causal, aligned to the top left, is not)."""
    sq, l = query.shape[2], key.shape[2]
    return torch.ones(sq, l, dtype=torch.bool, device=query.device).tril(l - sq)[None, None]


def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
              sliding_window=None, **kwargs):
    """transformers' attention interface: query (batch, heads, queries,
    head_dim), key and value (batch, kv_heads, keys, head_dim); returns
    (batch, queries, heads, head_dim) and no weights.

    Each kind of call is routed once (a dictionary lookup after the
    first): an eager prefill is bound by the host's launches, so the
    choice must cost nothing there. Where the manifest says the standard
    kernel for a causal prefill (as many queries as keys), the call is
    SDPA exactly as transformers makes it (its own backend choice): a
    forced backend (cuDNN's, say) costs more on the host than it saves on
    the GPU at these sizes (bench/NOTES.md, "qwen3-l2-prefetch")."""
    training = bool(dropout) and getattr(module, "training", False)
    if torch.compiler.is_compiling():  # shapes may be symbolic: no cache
        route = _route(module, query, key, value, attention_mask, scaling, dropout, sliding_window)
    else:
        kind = (query.shape, key.shape, value.shape, query.dtype, key.dtype, query.device,
                attention_mask is None, scaling, sliding_window, training)
        route = _routes.get(kind)
        if route is None:
            route = _routes[kind] = _route(module, query, key, value, attention_mask, scaling, dropout,
                                           sliding_window)
    sq, l = query.shape[2], key.shape[2]
    if route[0] == "evolved":
        _stats["evolved"] += 1
        o = attention_op(query.contiguous(), key.contiguous(), value.contiguous())
        return o.transpose(1, 2).contiguous(), None
    if route[0] == "standard":
        _stats["standard"] += 1
        if sq == 1 or sq != l:  # decode, chunked prefill: the backend measured fastest, bottom-right causal
            return _standard(query, key, value, route[1]).transpose(1, 2).contiguous(), None
    else:
        why = route[1]
        _stats["fallback"] += 1
        _stats["reasons"][why] = _stats["reasons"].get(why, 0) + 1
        if why not in _said:
            _said.add(why)
            log.warning("kevolve: a call went to SDPA (%s); counted in stats()", why)
        if attention_mask is None and 1 < sq < l:  # mask() said causal, bottom right
            attention_mask = _causal_bottom_right(query, key)
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling,
                                  dropout=dropout, sliding_window=sliding_window, **kwargs)


def mask(batch_size, q_length, kv_length, q_offset=0, kv_offset=0, mask_function=None,
         attention_mask=None, **kwargs):
    """transformers' mask interface: None exactly when the mask is the causal
    one aligned to the bottom right with no padding (what the kernels
    compute), else SDPA's mask, which sends the call to SDPA."""
    from transformers.masking_utils import causal_mask_function, sdpa_mask

    plain = (mask_function is None or mask_function is causal_mask_function) and kv_offset == 0
    aligned = isinstance(q_offset, int) and q_offset + q_length == kv_length
    unpadded = attention_mask is None or (not torch.compiler.is_compiling() and
                                          bool(attention_mask[:, -kv_length:].all()))
    if plain and aligned and unpadded:
        return None
    kwargs.pop("allow_is_causal_skip", None)
    return sdpa_mask(batch_size=batch_size, q_length=q_length, kv_length=kv_length,
                     q_offset=q_offset, kv_offset=kv_offset, mask_function=mask_function,
                     attention_mask=attention_mask, allow_is_causal_skip=False, **kwargs)


def register(name="kevolve"):
    """Makes attn_implementation=NAME call this library in transformers."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    _load()
    AttentionInterface.register(name, attention)
    AttentionMaskInterface.register(name, mask)
    return name


def stats(reset=False):
    """Calls so far: served by the evolved kernels, by the standard kernel
    (the manifest's choice), and sent to SDPA (with the reasons)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in _stats.items()}
    total = out["evolved"] + out["standard"] + out["fallback"]
    out["evolved_share"] = out["evolved"] / total if total else None
    if reset:
        _stats.update({"evolved": 0, "standard": 0, "fallback": 0, "reasons": {}})
    return out
