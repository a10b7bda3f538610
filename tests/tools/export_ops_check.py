#!/usr/bin/env python3
"""What a PyTorch user of kevolve's generic export (kevolve export --torch
of a task other than attention) relies on, checked on the CPU:

  - the operator agrees with a float32 reference at shapes of several
    sizes, most of them no scenario's (rmsnorm, rmsnorm_add, swiglu, rope);
  - arguments it cannot take are refused with a message naming them;
  - torch.compile traces it whole (fullgraph);
  - kevolve_qwen3.patch_qwen3 (where transformers is installed): a small
    random Qwen3 generates the same greedy tokens patched as not, every
    norm and MLP call (and rope call, given a rope export) served by the
    exports, a float32 call sent to PyTorch with its reason, and restore()
    gives PyTorch's ops back.

Usage: python3 export_ops_check.py EXPORT_DIR...   (exits 1 naming what failed)"""
import json
import os
import sys

import torch
import torch.nn.functional as F

problems = []


def check(what, ok):
    if not ok:
        problems.append(what)


def bf(*shape):
    return torch.randn(*shape, dtype=torch.bfloat16)


def norm(x, w):
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()


def rotate(x, cos, sin):
    d = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., d:], x[..., :d]), -1) * sin


def cases(task):
    """(arguments, float32 references of the outputs and in-out tensors) at several shapes."""
    if task in ("rmsnorm", "rmsnorm_add"):
        for t, h in [(1, 1024), (3, 1000), (7, 4097), (257, 128), (2, 5121), (64, 1)]:
            x, r, w = bf(t, h), bf(t, h), bf(h)
            if task == "rmsnorm":
                yield (x, w), [norm(x, w)]
            else:
                s = x.float() + r.float()
                yield (x, r, w), [norm(s, w), s]
    elif task == "swiglu":
        for t, i in [(1, 3072), (3, 1000), (7, 4097), (257, 96), (2, 1)]:
            gu = bf(t, 2, i)
            g, u = gu[:, 0].float(), gu[:, 1].float()
            yield (gu,), [F.silu(g) * u]
    elif task == "rope":
        for t, hq, hk, d, p in [(1, 16, 8, 128, 1), (5, 16, 8, 128, 40), (9, 40, 8, 128, 9), (3, 4, 2, 64, 7)]:
            q, k, cos, sin = bf(t, hq, d), bf(t, hk, d), bf(p, d), bf(p, d)
            pos = torch.randint(0, p, (t,), dtype=torch.int32)
            c, s = cos.float()[pos.long()][:, None], sin.float()[pos.long()][:, None]
            yield (q, k, cos, sin, pos), [rotate(q.float(), c, s), rotate(k.float(), c, s)]


def check_operator(kx):
    torch.manual_seed(0)
    inout = [i for i, t in enumerate(kx.ARGS) if t["role"] == "inout"]
    n = 0
    for args, refs in cases(kx.TASK):
        n += 1
        out = kx.op(*args)
        got = list(out) if isinstance(out, tuple) else [] if out is None else [out]
        got += [args[i] for i in inout]  # written in place
        check(f"{kx.TASK} at {[tuple(a.shape) for a in args]}: {len(got)} results, not {len(refs)}",
              len(got) == len(refs))
        for g, r in zip(got, refs):
            bad = float(((g.float() - r).abs() - (1e-2 + r.abs() / 64)).max())
            check(f"{kx.TASK} at {[tuple(a.shape) for a in args]}: off by {bad} over its tolerance", bad <= 0)
    check(f"no shapes checked for {kx.TASK}", n > 0)
    # A symbol two shapes disagree on, and another dtype: refused, named.
    args, _ = next(cases(kx.TASK))
    if len(kx.ARGS) > 1:
        a = list(args)
        a[1] = torch.cat([a[1], a[1]], -1)
        try:
            kx.op(*a)
            check(f"{kx.TASK} took disagreeing shapes", False)
        except RuntimeError as e:
            check(f"{kx.TASK}'s refusal of disagreeing shapes says {e}", " = " in str(e) and " but " in str(e))
    a = list(args)
    a[0] = a[0].float()
    try:
        kx.op(*a)
        check(f"{kx.TASK} took a float32 {kx.ARGS[0]['name']}", False)
    except RuntimeError as e:
        check(f"{kx.TASK}'s refusal of float32 says {e}", "must be" in str(e))
    check(f"{kx.TASK}: unsupported() of float32 is {kx.unsupported(*a)}", "dtype" in (kx.unsupported(*a) or ""))
    # torch.compile: the operator whole in the graph (in-place tensors on copies).
    flat = lambda o: list(o) if isinstance(o, tuple) else [] if o is None else [o]  # noqa: E731
    e_args, c_args = [x.clone() for x in args], [x.clone() for x in args]
    eager = flat(kx.op(*e_args)) + [e_args[i] for i in inout]
    compiled = torch.compile(lambda *xs: kx.op(*xs), fullgraph=True)(*c_args)
    compiled = flat(compiled) + [c_args[i] for i in inout]
    same = len(eager) == len(compiled) and all(torch.equal(a, b) for a, b in zip(eager, compiled))
    check(f"torch.compile(fullgraph) of {kx.TASK} differs from eager", same)


def check_qwen3(roots):
    try:
        from transformers import Qwen3Config, Qwen3ForCausalLM
    except ImportError:
        print("(no transformers: patch_qwen3 skipped)")
        return
    sys.path.insert(0, os.path.join(roots[0], "torch"))
    import kevolve_qwen3 as kq

    usable = [r for r in roots if json.load(open(os.path.join(r, "manifest.json")))["task"] in kq.OPS]
    cfg = Qwen3Config(vocab_size=2048, hidden_size=1024, intermediate_size=1024, num_hidden_layers=2,
                      num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                      max_position_embeddings=4096, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 40))

    def generate():
        with torch.no_grad():
            return model.generate(ids, max_new_tokens=12, min_new_tokens=12, do_sample=False)

    plain = generate()
    patch = kq.patch_qwen3(model, usable)
    kq.stats(reset=True)
    patched = generate()
    s = kq.stats(reset=True)
    check(f"greedy tokens differ: PyTorch {plain[0, 40:].tolist()} patched {patched[0, 40:].tolist()}",
          torch.equal(plain, patched))
    for op in patch.ops:
        check(f"not every {op} call was served by the export: {s[op]}",
              s[op]["served"] > 0 and s[op]["served_share"] == 1.0)
    with torch.no_grad():  # float32 goes to PyTorch, with its reason
        model.float()(ids[:, :4])
    s = kq.stats(reset=True)
    for op in patch.ops:
        check(f"float32 {op} calls were not sent to PyTorch with their reason: {s[op]}",
              s[op]["served"] == 0 and any("float32" in r for r in s[op]["reasons"]))
    patch.restore()
    with torch.no_grad():
        model.bfloat16()(ids[:, :4])
    s = kq.stats()
    check(f"calls reached the exports after restore(): {s}", s["served_share"] is None)


roots = sys.argv[1:]
for root in roots:
    sys.path.insert(0, os.path.join(root, "torch"))
    task = json.load(open(os.path.join(root, "manifest.json")))["task"]
    check_operator(__import__(f"kevolve_{task}"))
check_qwen3(roots)
for p in problems:
    print("FAIL:", p, file=sys.stderr)
print("ok" if not problems else f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
