#!/usr/bin/env python3
"""What a PyTorch user of a kevolve export (kevolve export --torch) relies
on, checked on the CPU (a C export of a gqa_attention task):

  - the operator agrees with float32 attention at shapes of every kind,
    most of them no scenario's (decode, causal prefill, chunked prefill);
  - the package's scenario for a shape is the library's own choice, of the
    call's kind;
  - torch.compile traces it whole (fullgraph);
  - transformers' attention: calls the library cannot take (float32) go
    to SDPA and are counted with their reason; a small Qwen3 generates the
    same greedy tokens with attn_implementation="kevolve" as with "sdpa",
    every attention call served by the evolved kernels.

Usage: python3 export_torch_check.py EXPORT_DIR   (exits 1 naming what failed)"""
import json
import os
import sys

import torch
import torch.nn.functional as F

ROOT = sys.argv[1]
sys.path.insert(0, os.path.join(ROOT, "torch"))
MANIFEST = json.load(open(os.path.join(ROOT, "manifest.json")))
kx = __import__(f"kevolve_{MANIFEST['task']}")
D = MANIFEST["scenarios"][0]["syms"]["D"]
problems = []


def check(what, ok):
    if not ok:
        problems.append(what)


def reference(q, k, v):
    """float32 attention, queries aligned to the bottom right of the keys."""
    g = q.shape[1] // k.shape[1]
    qf, kf, vf = q.float(), k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1)
    s = qf @ kf.transpose(-1, -2) / D**0.5
    sq, l = q.shape[2], k.shape[2]
    pos = torch.arange(sq)[:, None] + (l - sq)
    s = s.masked_fill(torch.arange(l)[None, :] > pos, float("-inf"))
    return torch.softmax(s, -1) @ vf


torch.manual_seed(0)
for b, hq, hkv, sq, l in [(1, 16, 8, 1, 300), (2, 40, 8, 1, 77), (1, 16, 8, 50, 50),
                          (1, 40, 8, 9, 123), (3, 16, 8, 1, 1)]:
    q = torch.randn(b, hq, sq, D, dtype=torch.bfloat16)
    k = torch.randn(b, hkv, l, D, dtype=torch.bfloat16)
    v = torch.randn(b, hkv, l, D, dtype=torch.bfloat16)
    ref = reference(q, k, v)
    err = float((kx.attention_op(q, k, v).float() - ref).abs().max())
    check(f"operator at {(b, hq, hkv, sq, l)}: max error {err} over 0.02", err <= 0.02)
    kind = "decode" if sq == 1 else "prefill"
    got = kx.scenario(b, hq, hkv, sq, l, D)
    check(f"scenario of {(b, hq, hkv, sq, l)} is {got['name']} ({got['kind']}), not a {kind}",
          got["kind"] == kind)
    err = float((kx.gqa(q, k, v).float() - ref).abs().max())
    check(f"gqa at {(b, hq, hkv, sq, l)}: max error {err}", err <= 0.02)

q = torch.randn(1, 16, 1, D, dtype=torch.bfloat16)
k = torch.randn(1, 8, 64, D, dtype=torch.bfloat16)
compiled = torch.compile(lambda q, k, v: kx.gqa(q, k, v) * 2, fullgraph=True)
err = float((compiled(q, k, k) - 2 * kx.attention_op(q, k, k)).abs().max())
check(f"torch.compile(fullgraph) of gqa differs by {err}", err == 0)

try:
    from transformers import Qwen3Config, Qwen3ForCausalLM
except ImportError:
    print("(no transformers: its half skipped)")
    Qwen3ForCausalLM = None
if Qwen3ForCausalLM is not None:
    kx.register()

    class Module:  # what transformers' attention reads of a layer
        training = False
        is_causal = True
        num_key_value_groups = 2

    kx.stats(reset=True)
    qf = torch.randn(1, 16, 4, D)
    kf = torch.randn(1, 8, 4, D)
    out, _ = kx.attention(Module(), qf, kf, kf, None, scaling=D**-0.5)
    s = kx.stats(reset=True)
    check(f"a float32 call was not sent to SDPA with its reason: {s}",
          s["fallback"] == 1 and "dtype torch.float32" in s["reasons"] and s["evolved"] == 0)
    check(f"the fallback's output has the wrong shape {tuple(out.shape)}",
          tuple(out.shape) == (1, 4, 16, D))
    kx.attention(Module(), qf, kf, kf, None, scaling=D**-0.5)  # the same kind again: its route kept
    s = kx.stats(reset=True)
    check(f"a second float32 call of the same kind was not counted as sent to SDPA: {s}",
          s["fallback"] == 1 and s["reasons"].get("dtype torch.float32") == 1)
    # A chunked prefill SDPA takes: the queries end where the keys end (the
    # causal mask aligned to the bottom right, which mask() leaves to None).
    qc, kc, vc = torch.randn(1, 16, 3, D), torch.randn(1, 8, 5, D), torch.randn(1, 8, 5, D)
    out, _ = kx.attention(Module(), qc, kc, vc, None, scaling=D**-0.5)
    allowed = torch.ones(3, 5, dtype=torch.bool).tril(2)
    ref = torch.nn.functional.scaled_dot_product_attention(
        qc, kc.repeat_interleave(2, 1), vc.repeat_interleave(2, 1), attn_mask=allowed).transpose(1, 2)
    check(f"a chunked float32 call sent to SDPA is not causal from the bottom right: "
          f"{float((out - ref).abs().max())}", torch.allclose(out, ref, atol=1e-5))
    # A causal prefill the manifest gives the standard kernel: SDPA exactly
    # as transformers calls it (no forced backend), counted as standard.
    import transformers.integrations.sdpa_attention as tsdpa

    qp, kp = torch.randn(1, 16, 6, D, dtype=torch.bfloat16), torch.randn(1, 8, 6, D, dtype=torch.bfloat16)
    entry = kx.scenario(1, 16, 8, 6, 6, D)
    saved, stock, seen = dict(entry), tsdpa.sdpa_attention_forward, []
    entry.update(use="standard", standard_backend="cudnn")
    tsdpa.sdpa_attention_forward = lambda *a, **kw: seen.append(1) or stock(*a, **kw)
    try:
        kx.stats(reset=True)
        kx.attention(Module(), qp, kp, kp, None, scaling=D**-0.5)
        s = kx.stats(reset=True)
    finally:
        tsdpa.sdpa_attention_forward = stock
        entry.clear()
        entry.update(saved)
    check(f"a causal prefill given the standard kernel was not SDPA as transformers calls it: "
          f"{s}, {len(seen)} call(s)", seen == [1] and s["standard"] == 1 and s["evolved"] == 0)
    kx.stats(reset=True)

    cfg = Qwen3Config(vocab_size=2048, hidden_size=1024, intermediate_size=1024,
                      num_hidden_layers=2, num_attention_heads=16, num_key_value_heads=8,
                      head_dim=D, max_position_embeddings=4096, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 40))
    tokens = {}
    for impl in ("sdpa", "kevolve"):
        model.set_attn_implementation(impl)
        kx.stats(reset=True)
        with torch.no_grad():
            tokens[impl] = model.generate(ids, max_new_tokens=12, min_new_tokens=12,
                                          do_sample=False)
    s = kx.stats()
    check(f"greedy tokens differ: sdpa {tokens['sdpa'][0, 40:].tolist()} kevolve "
          f"{tokens['kevolve'][0, 40:].tolist()}", torch.equal(tokens["sdpa"], tokens["kevolve"]))
    check(f"not every attention call was served by the evolved kernels: {s}",
          s["evolved"] > 0 and s["evolved_share"] == 1.0)

for p in problems:
    print("FAIL:", p, file=sys.stderr)
print("ok" if not problems else f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
