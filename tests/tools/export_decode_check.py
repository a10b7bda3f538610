#!/usr/bin/env python3
"""What a PyTorch user of the three fused decode blocks (kevolve export
--torch of qwen3_decode_qkv, qwen3_decode_o and qwen3_decode_mlp) relies
on, checked on the export's device with a small random Qwen3
(transformers):

  - kevolve_qwen3.patch_qwen3 with the three exports serves every decode
    step of every decoder layer with a static cache, and the greedy tokens
    are the stock model's;
  - a prefill of more than 8 tokens, a cache without room for the new rows
    (transformers' DynamicCache) and a float32 model go to the layer's own
    forward, counted with their reasons;
  - patching with only some of the three is refused, naming them;
  - restore() gives the layers their own forward back;
  - with ATTN_EXPORT (qwen3_decode_attn) as well, the attention of every
    decode step of a static cache with the plain causal mask is the
    block's and the greedy tokens are still the stock model's; a step
    whose mask has padding goes to SDPA, counted with its reason; the
    block alone is refused; restore() gives transformers its mask
    function back;
  - with POST_EXPORT (qwen3_decode_post: o and mlp as one block) and the
    qkv export, every decode step is served and the greedy tokens are the
    stock model's; post beside o and mlp is refused, naming both ways.

Usage: python3 export_decode_check.py QKV_EXPORT O_EXPORT MLP_EXPORT [ATTN_EXPORT [POST_EXPORT]]
(exits 1 naming what failed)"""
import os
import sys

import torch

problems = []


def check(what, ok):
    if not ok:
        problems.append(what)


roots = sys.argv[1:4]
attn_root = sys.argv[4] if len(sys.argv) > 4 else None
post_root = sys.argv[5] if len(sys.argv) > 5 else None
sys.path.insert(0, os.path.join(roots[0], "torch"))
import kevolve_qwen3 as kq  # noqa: E402

try:
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from transformers.cache_utils import DynamicCache
except ImportError:
    print("(no transformers: the decode blocks' check skipped)")
    sys.exit(0)

device = kq.load(roots[0]).DEVICE
cfg = Qwen3Config(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=64, rms_norm_eps=1e-6,
                  max_position_embeddings=256, tie_word_embeddings=True, initializer_range=0.08)
torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)
with torch.device(device):
    model = Qwen3ForCausalLM(cfg).eval()
torch.set_default_dtype(torch.float32)
ids = torch.randint(0, cfg.vocab_size, (1, 12), device=device)
kw = dict(max_new_tokens=10, min_new_tokens=10, do_sample=False, cache_implementation="static",
          disable_compile=True, return_dict_in_generate=True, output_logits=True)


def same_or_near_tie(a, b):
    """None when generations A and B computed the same logits at every step
    up to their first different token (within 2% of their norm: bf16's
    roundings), and chose the same tokens or their first difference is a
    near tie (the token A chose beats B's by no more than the two sides'
    logits differ there). Else what differs."""
    ta, tb = a.sequences[0, 12:], b.sequences[0, 12:]
    differ = (ta != tb).nonzero()
    last = int(differ[0]) if len(differ) else len(ta) - 1
    for t in range(last + 1):
        la, lb = a.logits[t][0].float(), b.logits[t][0].float()
        rel = float((la - lb).norm() / la.norm())
        if rel > 0.02:
            return f"step {t}: the logits differ by {rel:.4f} of their norm"
    if not len(differ):
        return None
    margin = float(la[ta[last]] - la[tb[last]])
    apart = float((la - lb).abs().max())
    if margin <= apart:
        return None
    return (f"token {last}: {int(ta[last])} against {int(tb[last])}, {margin:.4f} apart where the "
            f"logits differ by {apart:.4f}")


try:
    kq.patch_qwen3(model, roots[:2])
    check("patching with two of the three decode blocks was accepted", False)
except ValueError as e:
    check(f"the refusal of two decode blocks names the third: {e}", "qwen3_decode_mlp" in str(e))

with torch.no_grad():
    stock = model.generate(ids, **kw)
    originals = [layer.forward for layer in model.model.layers]
    patch = kq.patch_qwen3(model, roots)
    check(f"patch.ops is {patch.ops}", patch.ops == ["decode"])
    kq.stats(reset=True)
    fused = model.generate(ids, **kw)
    s = kq.stats(reset=True)["decode"]
    differ = same_or_near_tie(stock, fused)
    check(f"greedy tokens differ beyond a near tie: {differ}", differ is None)
    print(f"greedy: {stock.sequences[0, 12:].tolist()} / {fused.sequences[0, 12:].tolist()}")
    layers = cfg.num_hidden_layers
    check(f"decode steps served: {s}", s["served"] == 9 * layers)
    check(f"the prefill was not sent to the layer with its reason: {s}",
          s["fallback"] == layers and list(s["reasons"]) == ["prefill (q_len > 8)"])
    model.generate(ids, max_new_tokens=3, do_sample=False, past_key_values=DynamicCache(config=cfg),
                   disable_compile=True)
    s = kq.stats(reset=True)["decode"]
    check(f"a DynamicCache's steps were served or not counted: {s}",
          s["served"] == 0 and any("room" in r for r in s["reasons"]))
    model.float()(ids[:, :4], past_key_values=DynamicCache(config=cfg), use_cache=True)
    s = kq.stats(reset=True)["decode"]
    check(f"float32 calls were not sent to PyTorch with their reason: {s}",
          s["served"] == 0 and any("float32" in r for r in s["reasons"]))
    model.bfloat16()
    patch.restore()
    check("restore() did not give the layers their forward back",
          all("forward" not in layer.__dict__ for layer in model.model.layers) and
          [layer.forward for layer in model.model.layers] == originals)
    # A layer made unlike the kernels (its norm's eps) is read when it is
    # patched: its steps go to PyTorch with the reason, the other layer's
    # to the blocks.
    norm = model.model.layers[0].input_layernorm
    norm.variance_epsilon = 1e-5
    patch = kq.patch_qwen3(model, roots)
    model.generate(ids, **dict(kw, max_new_tokens=3, min_new_tokens=3))
    s = kq.stats(reset=True)["decode"]
    check(f"a layer of another eps was served, or the other layer not: {s}",
          s["served"] == 2 and s["reasons"].get("eps 1e-05") == 2)
    patch.restore()
    norm.variance_epsilon = cfg.rms_norm_eps

if attn_root:
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    impl = model.config._attn_implementation
    before = ALL_MASK_ATTENTION_FUNCTIONS[impl]
    try:
        kq.patch_qwen3(model, [attn_root])
        check("the attention block alone was accepted", False)
    except ValueError as e:
        check(f"the refusal of the attention block alone names the decode blocks: {e}",
              "qwen3_decode_qkv" in str(e))
    with torch.no_grad():
        stock = model.generate(ids, **kw)
        patch = kq.patch_qwen3(model, roots + [attn_root])
        check(f"patch.ops is {patch.ops}", patch.ops == ["decode", "decode_attention"])
        kq.stats(reset=True)
        fused = model.generate(ids, **kw)
        s = kq.stats(reset=True)
        differ = same_or_near_tie(stock, fused)
        check(f"greedy tokens with the attention block differ beyond a near tie: {differ}", differ is None)
        layers = cfg.num_hidden_layers
        check(f"decode steps' attention served by the block: {s['decode_attention']}",
              s["decode_attention"]["served"] == 9 * layers and s["decode_attention"]["fallback"] == 0)
        pad = torch.ones_like(ids)
        pad[0, 0] = 0  # a padded first token: the mask is no longer the plain causal one
        padded = model.generate(ids, attention_mask=pad, **kw)
        s = kq.stats(reset=True)["decode_attention"]
        check(f"a padded step's attention was not sent to SDPA with its reason: {s}",
              s["served"] == 0 and s["fallback"] == 9 * layers and
              any("plain causal" in r for r in s["reasons"]))
        patch.restore()
        stock_padded = model.generate(ids, attention_mask=pad, **kw)
        differ = same_or_near_tie(stock_padded, padded)
        check(f"padded greedy tokens differ beyond a near tie: {differ}", differ is None)
    check("restore() did not give transformers its mask function back",
          ALL_MASK_ATTENTION_FUNCTIONS[impl] is before)

if post_root:
    try:
        kq.patch_qwen3(model, roots + [post_root])
        check("post beside o and mlp was accepted", False)
    except ValueError as e:
        check(f"the refusal of post beside o and mlp names both ways: {e}",
              "qwen3_decode_o, qwen3_decode_mlp" in str(e) and "qwen3_decode_post" in str(e))
    with torch.no_grad():
        stock = model.generate(ids, **kw)
        patch = kq.patch_qwen3(model, [roots[0], post_root])
        check(f"patch.ops with qkv and post is {patch.ops}", patch.ops == ["decode"])
        kq.stats(reset=True)
        fused = model.generate(ids, **kw)
        s = kq.stats(reset=True)["decode"]
        differ = same_or_near_tie(stock, fused)
        check(f"greedy tokens with qkv and post differ beyond a near tie: {differ}", differ is None)
        check(f"decode steps served by qkv and post: {s}", s["served"] == 9 * cfg.num_hidden_layers)
        patch.restore()

for p in problems:
    print("FAIL:", p, file=sys.stderr)
print("ok" if not problems else f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
