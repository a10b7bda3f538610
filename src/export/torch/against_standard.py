"""kevolve export --against-standard: the exported operator against PyTorch's
scaled_dot_product_attention (cuDNN and flash), side by side in this one
process, on every scenario of the export's manifest, and checked against a
float32 reference there and on the task's held-out shapes.

    python3 against_standard.py EXPORT_DIR RESULT.json

Times each kernel the way bench/gqa_sdpa.py does: warm-up, then a CUDA
graph that calls it on input sets rotated so that they outsize the L2,
replayed, timed with events, the median of several rounds. Writes, per
scenario, evolved_us, cudnn_us, flash_us, standard_us (the faster of the
two), standard_backend, use ("evolved" unless the standard kernel was
faster) and the largest error against the reference over what the task's
tolerance allows (err_ratio); and "_about": the device and the versions.

A prefill (more than one query) is timed again as transformers calls it
(evolved_model_us, cudnn_model_us, flash_model_us): q, k and v as views of
(batch, seq, heads, head_dim) storage (a prefill's k and v from its own
projections; a chunked prefill's from a cache, dense), which the operator
copies into its dense layout and SDPA takes as they are, and the output
turned back to (batch, seq, heads, head_dim) as transformers wants it. For
those, use follows the model's times: the package never picks the evolved
kernel where its copies make it slower than SDPA in the model.
Exits 1 when the operator is wrong anywhere."""
import json
import math
import os
import sys

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError as err:
    sys.exit(f"--against-standard needs PyTorch in {sys.executable} (--python names another "
             f"interpreter): {err}")

ROOT = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(ROOT, "torch"))
MANIFEST = json.load(open(os.path.join(ROOT, "manifest.json")))
kx = __import__(f"kevolve_{MANIFEST['task']}")

L2_BYTES = 60 << 20
REPLAYS, ROUNDS = 20, 5
# The task's bf16 tolerance (gqa_attention: atol 1e-5, rtol 1e-2, and 2^-5
# of the scale sum p|v| / sum p that rounding p to bf16 errs by).
ATOL, RTOL, STOL = 1e-5, 1e-2, 1.0 / 32


def shapes(entry):
    s = entry["syms"]
    return s["B"], s["HQ"], s["HKV"], s["SQ"], s["L"], s["D"]


def make_sets(b, hq, hkv, sq, l, d):
    per = 2 * (b * hq * sq * d * 2) + 2 * (b * hkv * l * d * 2)
    n = max(2, min(48, (2 * L2_BYTES) // per + 1))
    return [(torch.randn(b, hq, sq, d, device="cuda", dtype=torch.bfloat16),
             torch.randn(b, hkv, l, d, device="cuda", dtype=torch.bfloat16),
             torch.randn(b, hkv, l, d, device="cuda", dtype=torch.bfloat16)) for _ in range(n)]


def timed(fn, sets):
    """Median microseconds of one call in a replayed CUDA graph over SETS."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for s in sets[:3]:
            fn(*s)
    torch.cuda.current_stream().wait_stream(side)
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
    return sorted(times)[len(times) // 2]


def model_layout(sets, sq, l):
    """SETS as transformers hands a prefill to attention: q (and k, v when
    they come from the same projections, SQ == L) as (batch, heads, seq,
    head_dim) views of (batch, seq, heads, head_dim) storage."""
    def strided(t):
        return t.transpose(1, 2).contiguous().transpose(1, 2)
    return [(strided(q), strided(k) if sq == l else k, strided(v) if sq == l else v)
            for q, k, v in sets]


def in_model(fn):
    """FN called as the package's attention() calls it in a model: inputs
    made dense, the output turned to (batch, seq, heads, head_dim)."""
    def run(q, k, v):
        return fn(q.contiguous(), k.contiguous(), v.contiguous()).transpose(1, 2).contiguous()
    return run


def sdpa_in_model(backend, sq, l):
    f = sdpa(backend, sq, l)

    def run(q, k, v):
        return f(q, k, v).transpose(1, 2).contiguous()
    return run


def sdpa(backend, sq, l):
    from torch.nn.attention.bias import causal_lower_right

    kw = {"enable_gqa": True}
    if sq == l and sq > 1:
        kw["is_causal"] = True
    elif sq > 1:
        kw["attn_mask"] = causal_lower_right(sq, l)

    def run(q, k, v):
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v, **kw)
    return run


def err_ratio(q, k, v, o):
    """The largest |o - ref| over atol + rtol |ref| + stol * scale, with the
    reference and the scale in float32 from bf16 inputs (one batch row at a
    time for memory)."""
    worst = 0.0
    hq, hkv, sq, l = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    g = hq // hkv
    for bi in range(q.shape[0]):
        qf = q[bi].float()
        kf = k[bi].float().repeat_interleave(g, 0)
        vf = v[bi].float().repeat_interleave(g, 0)
        s = qf @ kf.transpose(1, 2) / math.sqrt(q.shape[-1])
        pos = torch.arange(sq, device=q.device)[:, None] + (l - sq)
        s = s.masked_fill(torch.arange(l, device=q.device)[None, :] > pos, float("-inf"))
        p = torch.softmax(s, -1)
        ref = p @ vf
        scale = p @ vf.abs()
        tol = ATOL + RTOL * ref.abs() + STOL * scale
        worst = max(worst, float(((o[bi].float() - ref).abs() / tol).max()))
    return worst


def main():
    if MANIFEST.get("torch_device") != "cuda" or not torch.cuda.is_available():
        print(f"--against-standard times the library against PyTorch's CUDA kernels: it needs a "
              f"CUDA export (this one is {MANIFEST['backend']}) and a GPU PyTorch can use "
              f"(torch.cuda.is_available(): {torch.cuda.is_available()})", file=sys.stderr)
        return 2
    out = {"_about": {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "cudnn": torch.backends.cudnn.version()}}
    wrong = []
    for e in MANIFEST["scenarios"] + MANIFEST.get("held_out", []):
        b, hq, hkv, sq, l, d = shapes(e)
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16)
                   for h, n in ((hq, sq), (hkv, l), (hkv, l)))
        ratio = err_ratio(q, k, v, kx.attention_op(q, k, v))
        rec = {"err_ratio": ratio}
        if ratio > 1:
            wrong.append(f"{e['name']}: {ratio:.2f} of the tolerance")
        if e in MANIFEST["scenarios"]:
            sets = make_sets(b, hq, hkv, sq, l, d)
            rec["evolved_us"] = timed(kx.attention_op, sets)
            for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                                  ("flash", SDPBackend.FLASH_ATTENTION)):
                try:
                    rec[f"{name}_us"] = timed(sdpa(backend, sq, l), sets)
                except RuntimeError as err:  # a backend that cannot take the shape
                    rec[f"{name}_us"] = None
                    rec[f"{name}_error"] = str(err).splitlines()[0][:200]
            std = [(rec[f"{n}_us"], n) for n in ("cudnn", "flash") if rec.get(f"{n}_us")]
            if std:
                rec["standard_us"], rec["standard_backend"] = min(std)
            rec["use"] = ("standard" if std and rec["standard_us"] < rec["evolved_us"]
                          else "evolved")
            if sq > 1:  # a prefill: as the model calls it, copies and all
                msets = model_layout(sets, sq, l)
                rec["evolved_model_us"] = timed(in_model(kx.attention_op), msets)
                mstd = []
                for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                                      ("flash", SDPBackend.FLASH_ATTENTION)):
                    if rec.get(f"{name}_us"):
                        rec[f"{name}_model_us"] = timed(sdpa_in_model(backend, sq, l), msets)
                        mstd.append((rec[f"{name}_model_us"], name))
                if mstd:
                    best_us, best = min(mstd)
                    if best_us < rec["evolved_model_us"]:
                        rec["use"], rec["standard_backend"] = "standard", best
                        rec["standard_us"] = rec[f"{best}_us"]
                del msets
            del sets
            torch.cuda.empty_cache()
        out[e["name"]] = rec
        print(f"{e['name']:28s} err {ratio:5.2f} of tol  " +
              ("  ".join(f"{n} {rec[n + '_us']:9.2f} us" for n in ("evolved", "cudnn", "flash")
                         if rec.get(n + "_us")) if "evolved_us" in rec else "(held out)") +
              ("  in the model: " + "  ".join(f"{n} {rec[n + '_model_us']:9.2f} us"
                                             for n in ("evolved", "cudnn", "flash")
                                             if rec.get(n + "_model_us"))
               if "evolved_model_us" in rec else "") +
              (f"  -> {rec['use']}" if "use" in rec else ""), flush=True)
    json.dump(out, open(sys.argv[2], "w"), indent=2)
    if wrong:
        print("the exported operator is wrong at: " + "; ".join(wrong), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
