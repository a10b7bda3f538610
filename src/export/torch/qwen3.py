"""Qwen3's RMSNorm, MLP activation and rotary embedding served by kevolve
exports (kevolve export --torch of the rmsnorm, swiglu and rope tasks), in
a transformers (5.x) Qwen3 model.

    import sys; sys.path.insert(0, "ANY_EXPORT_DIR/torch")
    import kevolve_qwen3
    patch = kevolve_qwen3.patch_qwen3(model, ["RMSNORM_DIR", "SWIGLU_DIR", "ROPE_DIR"])
    model.generate(...)
    print(kevolve_qwen3.stats())   # calls served by the exports, and the fallbacks' reasons
    patch.restore()                # PyTorch's ops again

Any subset of the three exports will do:

  rmsnorm  every Qwen3RMSNorm (the layers' input and post-attention norms,
           the final norm, and the per-head q_norm and k_norm over
           head_dim): the input as rows [tokens, hidden], the weight.
  swiglu   every Qwen3MLP: its gate and up projections as one Linear (the
           two weights concatenated once, here: gate_proj and up_proj keep
           their weights as views of the fused matrix, so no memory is
           added; patch after loading the weights), the swiglu operator on
           its output viewed as [tokens, 2, inter], then down_proj.
  rope     apply_rotary_pos_emb (process-wide while a patch holds it: every
           Qwen3 model's attention calls it): q and k rotated in place in
           their (batch, seq, heads, head_dim) storage, cos and sin as rows
           [batch * seq, head_dim] and positions arange(batch * seq).

Or the three fused decode blocks (kevolve export --torch of the
qwen3_decode_qkv, qwen3_decode_o and qwen3_decode_mlp tasks, all three;
or qwen3_decode_qkv and qwen3_decode_post, which is o and mlp as one
block), and with them, optionally, the attention block (of
qwen3_decode_attn):

  decode   every Qwen3DecoderLayer's decode steps (1 to 8 new tokens a
           sequence, a cache with room for them: transformers'
           StaticCache or a layer that says its max_cache_len): the input
           norm, q/k/v, the q/k norms, rotary and the k/v cache write in
           one block, then the attention (PyTorch's SDPA over the cache,
           with the layer's mask), the output projection with the
           residual, and the MLP with its norm and residual; prefill and
           every call they cannot take go to the layer's own forward.
           The blocks take the cache rows from the count of rows the
           cache keeps (transformers 5's static cache, on the device),
           else from cache_position or position_ids (then no left
           padding). Combined with rmsnorm, swiglu
           or rope, those serve what the decode blocks leave (prefill, the
           final norm).
  attn     with the decode blocks: the attention of a decode step over the
           cache, q and o as the qkv and o blocks hold them, the rows
           written told on the device (one CUDA graph serves every step),
           where the step's mask is the plain causal one with no padding
           (transformers' mask function of the model's attention is
           watched while a patch holds it, process-wide: it says which
           masks are plain); any other mask goes to SDPA, counted
           ("decode_attention" in stats()).

A call an export cannot take (a dtype other than bf16, another device, a
layout or shape it does not support, an eps other than the task's 1e-6, an
activation other than SiLU, autograd) goes to PyTorch's own code, counted
in stats() with its reason and said once in the log: never silently wrong.
Counts are of calls as Python makes them: a CUDA graph replays what it
captured without counting.
"""
import importlib.util
import inspect
import json
import logging
import os
import sys
import weakref

import torch
import torch.nn.functional as F

log = logging.getLogger("kevolve")
OPS = ("rmsnorm", "swiglu", "rope", "decode", "decode_attention")
DECODE_TASKS = ("qwen3_decode_qkv", "qwen3_decode_o", "qwen3_decode_mlp")
POST_TASK = "qwen3_decode_post"  # o and mlp as one block: with qkv, instead of the two
ATTN_TASK = "qwen3_decode_attn"  # optional, with the blocks
MAX_DECODE_TOKENS = 8  # the decode blocks' q_len
EPS = 1e-6  # the rmsnorm task's
# Each op's tensors as its task has them (manifest.json's signature).
SIGNATURES = {
    "rmsnorm": [("x", "bf16", "in", [0, 1]), ("w", "bf16", "in", [1]), ("y", "bf16", "out", [0, 1])],
    "swiglu": [("gate_up", "bf16", "in", [0, 1, 2]), ("out", "bf16", "out", [0, 2])],
    "rope": [("q", "bf16", "inout", [0, 1, 3]), ("k", "bf16", "inout", [0, 2, 3]),
             ("cos", "bf16", "in", [4, 3]), ("sin", "bf16", "in", [4, 3]), ("pos", "i32", "in", [0])],
}
_stats = {op: {"served": 0, "fallback": 0, "reasons": {}} for op in OPS}
_said = set()
_rope = {"holders": 0, "original": None, "package": None}
# The masks transformers made while a patch with the attention block holds
# its mask function that are the plain causal one with no padding (by id,
# weakly: a mask is a tensor of its step).
_plain_masks = weakref.WeakValueDictionary()
_mask_watch = {"holders": 0, "impl": None, "original": None, "had_local": False}


def load(export_dir):
    """The generic PyTorch package of an export (EXPORT_DIR/torch/kevolve_TASK)."""
    manifest = json.load(open(os.path.join(export_dir, "manifest.json")))
    name = f"kevolve_{manifest['task']}"
    mod = sys.modules.get(name)
    if mod is not None:
        if os.path.realpath(mod.ROOT) != os.path.realpath(export_dir):
            raise ValueError(f"{name} is loaded already from {mod.ROOT}: one export of a task a process")
        return mod
    folder = os.path.join(export_dir, "torch", name)
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _which(pkg):
    """The op an export serves, by its tensors (a decode block by its task)."""
    if pkg.TASK in DECODE_TASKS or pkg.TASK in (POST_TASK, ATTN_TASK):
        return pkg.TASK
    sig = [(t["name"], t["dtype"], t["role"], t["shape"]) for t in pkg.TENSORS]
    for op, want in SIGNATURES.items():
        if sig == [(n, d, r, s) for n, d, r, s in want]:
            return op
    raise ValueError(f"patch_qwen3: the export of {pkg.TASK} ({pkg.SCHEMA}) is none of Qwen3's ops it "
                     f"serves (rmsnorm, swiglu, rope); rmsnorm_add is not used: Qwen3's decoder "
                     f"layer adds its residuals outside its norms")


def _fallback(op, why):
    s = _stats[op]
    s["fallback"] += 1
    s["reasons"][why] = s["reasons"].get(why, 0) + 1
    if (op, why) not in _said:
        _said.add((op, why))
        log.warning("kevolve: a %s call went to PyTorch (%s); counted in stats()", op, why)


def _grad(*tensors):
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _where(pkg, *tensors):
    """Why tensors are not the export's dtype or device, or None."""
    for t in tensors:
        if t.dtype != torch.bfloat16:
            return f"dtype {t.dtype}"
        if t.device.type != pkg.DEVICE or t.device != tensors[0].device:
            return f"device {t.device}"
    return "autograd" if _grad(*tensors) else None


class Patch:
    """What patch_qwen3 changed; restore() puts PyTorch's ops back."""

    def __init__(self):
        self.ops = []
        self._undo = []

    def _set(self, obj, name, value):
        had = name in obj.__dict__
        old = obj.__dict__.get(name)
        setattr(obj, name, value)
        self._undo.append(lambda: setattr(obj, name, old) if had else delattr(obj, name))

    def restore(self):
        for undo in reversed(self._undo):
            undo()
        self._undo = []


def _patch_norm(m, pkg, patch):
    original = m.forward

    def forward(hidden_states):
        w = m.weight
        why = _where(pkg, hidden_states, w)
        if not why and abs(m.variance_epsilon - EPS) > 1e-12:
            why = f"eps {m.variance_epsilon}"
        if not why and (w.dim() != 1 or hidden_states.shape[-1] != w.shape[0]):
            why = f"weight {tuple(w.shape)} for hidden {hidden_states.shape[-1]}"
        if why:
            _fallback("rmsnorm", why)
            return original(hidden_states)
        _stats["rmsnorm"]["served"] += 1
        x = hidden_states.reshape(-1, w.shape[0]).contiguous()
        return pkg.op(x, w.contiguous()).view(hidden_states.shape)

    patch._set(m, "forward", forward)


def _patch_mlp(m, pkg, patch):
    original = m.forward
    gate, up = m.gate_proj, m.up_proj
    act = getattr(m.config, "hidden_act", None)
    fusable = gate.bias is None and up.bias is None and gate.weight.shape == up.weight.shape
    if fusable:  # one [2 * inter, hidden] matrix, the two weights views of it
        with torch.no_grad():
            fused = torch.cat([gate.weight, up.weight], 0)
        inter = gate.weight.shape[0]
        m.register_buffer("kevolve_gate_up", fused, persistent=False)
        gate.weight = torch.nn.Parameter(fused[:inter], requires_grad=gate.weight.requires_grad)
        up.weight = torch.nn.Parameter(fused[inter:], requires_grad=up.weight.requires_grad)
        patch._undo.append(lambda: m._buffers.pop("kevolve_gate_up", None))

    def forward(x):
        why = None if fusable else "gate or up projection with a bias"
        if not why and act not in ("silu", "swish"):
            why = f"activation {act}"
        if not why:
            fused = m.kevolve_gate_up
            why = _where(pkg, x, fused) or ("autograd" if _grad(gate.weight, up.weight) else None)
        if why:
            _fallback("swiglu", why)
            return original(x)
        _stats["swiglu"]["served"] += 1
        inter = fused.shape[0] // 2
        gu = F.linear(x, fused).reshape(-1, 2, inter)
        return m.down_proj(pkg.op(gu).view(*x.shape[:-1], inter))

    patch._set(m, "forward", forward)


def _rope_unsupported(pkg, q, k, cos, sin, args, kwargs):
    if args or kwargs.get("position_ids") is not None or kwargs.get("unsqueeze_dim", 1) != 1:
        return "arguments other than q, k, cos, sin"
    if q.dim() != 4 or k.dim() != 4 or cos.dim() != 3 or sin.shape != cos.shape:
        return f"shapes q {tuple(q.shape)} k {tuple(k.shape)} cos {tuple(cos.shape)}"
    why = _where(pkg, q, k, cos, sin)
    if why:
        return why
    b, _, s, d = q.shape
    if (k.shape[0], k.shape[2], k.shape[3]) != (b, s, d) or cos.shape[1:] != (s, d) or \
            cos.shape[0] not in (1, b) or d % 2:
        return f"shapes q {tuple(q.shape)} k {tuple(k.shape)} cos {tuple(cos.shape)}"
    if not q.transpose(1, 2).is_contiguous() or not k.transpose(1, 2).is_contiguous():
        return "q or k not in (batch, seq, heads, head_dim) storage"
    return None


def _rope_apply(q, k, cos, sin, *args, **kwargs):
    """apply_rotary_pos_emb with the rope export: q and k rotated in place."""
    pkg = _rope["package"]
    why = _rope_unsupported(pkg, q, k, cos, sin, args, kwargs)
    if why:
        _fallback("rope", why)
        return _rope["original"](q, k, cos, sin, *args, **kwargs)
    _stats["rope"]["served"] += 1
    b, hq, s, d = q.shape
    rows = b * s
    c = cos.expand(b, s, d).reshape(rows, d).contiguous()
    n = sin.expand(b, s, d).reshape(rows, d).contiguous()
    pos = torch.arange(rows, dtype=torch.int32, device=q.device)
    pkg.op(q.transpose(1, 2).view(rows, hq, d), k.transpose(1, 2).view(rows, k.shape[1], d), c, n, pos)
    return q, k


def _patch_rope(mq, pkg, patch):
    if _rope["holders"] and _rope["package"] is not pkg:
        raise ValueError("patch_qwen3: another rope export holds apply_rotary_pos_emb")
    if not _rope["holders"]:
        _rope.update(original=mq.apply_rotary_pos_emb, package=pkg)
        mq.apply_rotary_pos_emb = _rope_apply
    _rope["holders"] += 1

    def release():
        _rope["holders"] -= 1
        if not _rope["holders"]:
            mq.apply_rotary_pos_emb = _rope["original"]
            _rope.update(original=None, package=None)

    patch._undo.append(release)


_memo = {}


def _start_rows(where, b):
    """The cache row of each sequence's first new token (int32 [b]) from
    the cache layer's count of rows written (transformers 5's static cache
    keeps it on the device), else cache_position or position_ids: made once
    a step where every layer gets the same tensor."""
    held = _memo.get("start")
    if held is None or held[0] is not where or held[1] != where._version or held[2].shape[0] != b:
        rows = where.reshape(-1)[:1] if where.dim() <= 1 else where[:, 0]
        held = (where, where._version, rows.to(torch.int32, copy=True).expand(b).contiguous())
        _memo["start"] = held  # the same tensor changed in place is made again
    return held[2]


def _layer_unsupported(layer):
    """Why LAYER's make (biases, activation, eps, window) keeps the blocks
    from it, or None: read once, when the layer is patched, not at every
    step of every layer."""
    at, mlp = layer.self_attn, layer.mlp
    if any(lin.bias is not None for lin in (at.q_proj, at.k_proj, at.v_proj, at.o_proj, mlp.gate_proj,
                                            mlp.up_proj, mlp.down_proj)):
        return "a projection with a bias"
    if getattr(mlp.config, "hidden_act", None) not in ("silu", "swish"):
        return f"activation {mlp.config.hidden_act}"
    for n in (layer.input_layernorm, layer.post_attention_layernorm, at.q_norm, at.k_norm):
        if abs(n.variance_epsilon - EPS) > 1e-12:
            return f"eps {n.variance_epsilon}"
    if getattr(at, "sliding_window", None):
        return "a sliding window"
    return None


def _decode_unsupported(layer, made, pkg, x, mask, past, pos_emb, where, kw):
    """Why this call cannot go to the blocks, or None; MADE is
    _layer_unsupported(layer)."""
    at, mlp = layer.self_attn, layer.mlp
    if x.dim() != 3 or x.shape[1] > MAX_DECODE_TOKENS:
        return f"prefill (q_len > {MAX_DECODE_TOKENS})" if x.dim() == 3 else f"input {tuple(x.shape)}"
    why = _where(pkg, x, at.q_proj.weight, mlp.down_proj.weight)
    if why:
        return why
    if kw.get("output_attentions"):
        return "output_attentions"
    if past is None or pos_emb is None or where is None:
        return "no cache, rotary rows or positions"
    if made:
        return made
    layers = getattr(past, "layers", None)
    cl = layers[at.layer_idx] if layers is not None and at.layer_idx < len(layers) else None
    keys = getattr(cl, "keys", None)
    if keys is None or getattr(cl, "is_sliding", False) or getattr(cl, "max_cache_len", None) is None:
        return "a cache without room for the new rows (a static cache takes them)"
    if keys.dtype != torch.bfloat16 or not keys.is_contiguous() or not cl.values.is_contiguous() or \
            keys.dim() != 4 or keys.shape[0] != x.shape[0]:
        return f"cache {tuple(keys.shape)} of {keys.dtype}"
    cos, _ = pos_emb
    if cos.dtype != torch.bfloat16 or cos.shape[-2:] != (x.shape[1], at.head_dim):
        return f"rotary rows {tuple(cos.shape)} of {cos.dtype}"
    if mask is not None and (mask.dim() != 4 or mask.shape[-1] > keys.shape[2]):
        return f"mask {tuple(mask.shape)}"
    return None


def _free_rows(start, length, q_len):
    """The cache rows past each sequence's new tokens not yet written
    (int32 [b], the attention block's free), from START (_start_rows):
    made once a step, as START is, not once a layer (a kernel each in a
    captured step)."""
    held = _memo.get("free")
    if held is None or held[0] is not start or held[1] != (start._version, length, q_len):
        held = (start, (start._version, length, q_len), (length - q_len - start).to(torch.int32))
        _memo["free"] = held
    return held[2]


def _attention_unsupported(ab, mask, keys, at):
    """Why the attention block cannot take this step, or None."""
    if ab is None:
        return "no attention export"
    if getattr(at, "scaling", None) is not None and abs(at.scaling - at.head_dim ** -0.5) > 1e-6:
        return f"scaling {at.scaling}"
    if mask is None:
        return None
    if _plain_masks.get(id(mask)) is not mask or mask.shape[-1] != keys.shape[2]:
        return "a mask other than the plain causal one (padding, a window, or made while tracing)"
    return None


def _watch_masks(model, patch):
    """Wraps transformers' mask function of MODEL's attention so that the
    masks it makes for a plain causal attention with no padding are known
    (_plain_masks); restored when the last patch that watches goes."""
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, causal_mask_function

    impl = model.config._attn_implementation
    w = _mask_watch
    if w["holders"] and w["impl"] != impl:
        raise ValueError(f"patch_qwen3: masks of {w['impl']} are watched already; one attention "
                         f"implementation a process with the attention block")
    if not w["holders"]:
        original = ALL_MASK_ATTENTION_FUNCTIONS[impl]
        had_local = impl in ALL_MASK_ATTENTION_FUNCTIONS._local_mapping

        def watched(*args, **kwargs):
            m = original(*args, **kwargs)
            pad = kwargs.get("attention_mask")
            plain = (kwargs.get("mask_function", causal_mask_function) is causal_mask_function and
                     not kwargs.get("kv_offset", 0) and kwargs.get("local_size") is None and
                     isinstance(m, torch.Tensor))
            if plain and pad is not None:  # no padding: read on the host, never while capturing
                plain = (not torch.compiler.is_compiling() and
                         not (pad.is_cuda and torch.cuda.is_current_stream_capturing()) and bool(pad.all()))
            if plain:
                _plain_masks[id(m)] = m
            return m

        ALL_MASK_ATTENTION_FUNCTIONS[impl] = watched
        w.update(impl=impl, original=original, had_local=had_local)
    w["holders"] += 1

    def release():
        w["holders"] -= 1
        if not w["holders"]:
            from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS as fns

            if w["had_local"]:
                fns[w["impl"]] = w["original"]
            else:
                del fns[w["impl"]]
            w.update(impl=None, original=None, had_local=False)

    patch._undo.append(release)


def _patch_decode(layer, pkgs, patch, returns_tuple):
    """LAYER's forward: decode steps through the blocks, the attention the attention
    block's where it can take the step, else SDPA's."""
    original = layer.forward
    at, mlp = layer.self_attn, layer.mlp
    qkv, o, mm = (pkgs.get(t) for t in DECODE_TASKS)
    post = pkgs.get(POST_TASK)
    ab = pkgs.get(ATTN_TASK)
    nq, nkv, d = at.config.num_attention_heads, at.config.num_key_value_heads, at.head_dim
    hid = at.q_proj.in_features
    made = _layer_unsupported(layer)

    def forward(hidden_states, attention_mask=None, position_ids=None, past_key_values=None,
                use_cache=False, cache_position=None, position_embeddings=None, **kw):
        where = cache_position if cache_position is not None else position_ids
        # transformers from 5.2x hands the cache as `cache` (past_key_values deprecated).
        past = past_key_values if past_key_values is not None else kw.get("cache")
        why = _decode_unsupported(layer, made, qkv, hidden_states, attention_mask, past,
                                  position_embeddings, where, kw)
        if why:
            _fallback("decode", why)
            if past_key_values is not None:  # else not named: 5.2x warns when both names come
                kw["past_key_values"] = past_key_values
            return original(hidden_states, attention_mask=attention_mask, position_ids=position_ids,
                            use_cache=use_cache, cache_position=cache_position,
                            position_embeddings=position_embeddings, **kw)
        _stats["decode"]["served"] += 1
        b, q_len, _ = hidden_states.shape
        cl = past.layers[at.layer_idx]
        keys, values = cl.keys, cl.values
        cos, sin = position_embeddings
        x = hidden_states.contiguous()
        # The rows the cache itself counts (left padding shifts position_ids, not them).
        written = getattr(cl, "cumulative_length", None)
        start = _start_rows(written if isinstance(written, torch.Tensor) else where, b)
        q = qkv.op(x, layer.input_layernorm.weight, at.q_proj.weight.view(nq, d, hid),
                   at.k_proj.weight.view(nkv, d, hid), at.v_proj.weight.view(nkv, d, hid),
                   at.q_norm.weight, at.k_norm.weight, cos.expand(b, q_len, d).contiguous(),
                   sin.expand(b, q_len, d).contiguous(), start, keys, values)
        if hasattr(cl, "cumulative_length"):  # what the cache's update() counts (transformers 5)
            cl.cumulative_length += q_len
        why_attn = _attention_unsupported(ab, attention_mask, keys, at)
        if not why_attn:
            _stats["decode_attention"]["served"] += 1
            attn = ab.op(q, keys, values, _free_rows(start, keys.shape[2], q_len)).view(b * q_len, nq * d)
        else:
            if ab is not None:
                _fallback("decode_attention", why_attn)
            # The keys PyTorch's attention would see: as many as the mask says.
            length = attention_mask.shape[-1] if attention_mask is not None else keys.shape[2]
            attn = F.scaled_dot_product_attention(
                q.transpose(1, 2), keys[:, :, :length], values[:, :, :length], attn_mask=attention_mask,
                is_causal=attention_mask is None and q_len > 1, scale=at.scaling, enable_gqa=True)
            attn = attn.transpose(1, 2).reshape(b * q_len, nq * d).contiguous()
        if post is not None:
            _, _, out = post.op(attn, at.o_proj.weight, x.view(b * q_len, hid),
                                layer.post_attention_layernorm.weight, mlp.gate_proj.weight,
                                mlp.up_proj.weight, mlp.down_proj.weight)
        else:
            h = o.op(attn, at.o_proj.weight, x.view(b * q_len, hid))
            _, out = mm.op(h, layer.post_attention_layernorm.weight, mlp.gate_proj.weight,
                           mlp.up_proj.weight, mlp.down_proj.weight)
        out = out.view(b, q_len, hid)
        return (out,) if returns_tuple else out

    patch._set(layer, "forward", forward)


def patch_qwen3(model, exports):
    """Serves MODEL's (a transformers Qwen3) RMSNorm, MLP activation and
    rotary embedding, and its decoder layers' decode steps, with the
    exports in EXPORTS (folders of kevolve export --torch of the rmsnorm,
    swiglu and rope tasks, any subset, and of the qwen3_decode blocks:
    qkv, o and mlp, or qkv and post, or none; with qwen3_decode_attn's or
    not). Returns a Patch
    (its ops; restore())."""
    from transformers.models.qwen3 import modeling_qwen3 as mq

    if isinstance(exports, (str, os.PathLike)):
        exports = [exports]
    pkgs = {}
    for folder in exports:
        pkg = load(folder)
        op = _which(pkg)
        if op in pkgs:
            raise ValueError(f"patch_qwen3: two exports of {op}")
        pkgs[op] = pkg
        pkg._load()  # built before any tracing or capture
    blocks = [t for t in DECODE_TASKS + (POST_TASK,) if t in pkgs]
    whole = (list(DECODE_TASKS), [DECODE_TASKS[0], POST_TASK])
    if blocks and blocks not in whole:
        raise ValueError(f"patch_qwen3: the decode blocks come as {', '.join(DECODE_TASKS)}, or as "
                         f"{DECODE_TASKS[0]} and {POST_TASK} (o and mlp as one block); "
                         f"given {', '.join(blocks)}")
    if ATTN_TASK in pkgs and not blocks:
        raise ValueError(f"patch_qwen3: the attention block ({ATTN_TASK}) serves the decode blocks' steps: "
                         f"give it with {', '.join(DECODE_TASKS)} (or {DECODE_TASKS[0]} and {POST_TASK})")
    patch = Patch()
    patch.ops = sorted(op for op in pkgs if op not in blocks and op != ATTN_TASK) + \
        (["decode"] if blocks else []) + (["decode_attention"] if ATTN_TASK in pkgs else [])
    found = {"rmsnorm": 0, "swiglu": 0, "decode": 0, "decode_attention": 0}
    if ATTN_TASK in pkgs:
        _watch_masks(model, patch)
    if blocks:
        ann = str(inspect.signature(mq.Qwen3DecoderLayer.forward).return_annotation).lower()
        for m in model.modules():
            if isinstance(m, mq.Qwen3DecoderLayer):
                _patch_decode(m, pkgs, patch, "tuple" in ann)
                found["decode"] += 1
                found["decode_attention"] += ATTN_TASK in pkgs
    for m in model.modules():
        if "rmsnorm" in pkgs and isinstance(m, mq.Qwen3RMSNorm):
            _patch_norm(m, pkgs["rmsnorm"], patch)
            found["rmsnorm"] += 1
        elif "swiglu" in pkgs and isinstance(m, mq.Qwen3MLP):
            _patch_mlp(m, pkgs["swiglu"], patch)
            found["swiglu"] += 1
    for op, n in found.items():
        if op in patch.ops and not n:
            patch.restore()
            raise ValueError(f"patch_qwen3: the model has no Qwen3 module for {op}")
    if "rope" in pkgs:
        _patch_rope(mq, pkgs["rope"], patch)
    return patch


def stats(reset=False):
    """Calls so far per op: served by the export, sent to PyTorch (with the
    reasons), the served share; and the share over all ops."""
    out = {}
    for op, s in _stats.items():
        total = s["served"] + s["fallback"]
        out[op] = dict(s, reasons=dict(s["reasons"]), served_share=s["served"] / total if total else None)
    served = sum(s["served"] for s in _stats.values())
    total = served + sum(s["fallback"] for s in _stats.values())
    out["served_share"] = served / total if total else None
    if reset:
        for s in _stats.values():
            s.update(served=0, fallback=0, reasons={})
    return out
