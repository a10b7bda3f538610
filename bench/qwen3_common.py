"""What bench/qwen3_model.py (attention) and bench/qwen3_ops_model.py
(rmsnorm, swiglu, rope) share: Qwen3's published configurations, a model
of them with random bf16 weights (nothing downloaded), a preallocated KV
cache for decode steps, a decode step's time (captured in a CUDA graph and
replayed, or eager), and what a greedy divergence was (a near tie or not)."""
import copy
import inspect
import statistics
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM
from transformers.cache_utils import Cache, CacheLayerMixin

# The cache's keyword: `cache` from transformers 5.2x (past_key_values
# deprecated there), past_key_values before.
CACHE_KW = "cache" if "cache" in inspect.signature(Qwen3ForCausalLM.forward).parameters else "past_key_values"


def config(name, tiny=False, layers_14b=8):
    if tiny:
        return Qwen3Config(vocab_size=4096, hidden_size=1024, intermediate_size=1024,
                           num_hidden_layers=2, num_attention_heads=16, num_key_value_heads=8,
                           head_dim=128, max_position_embeddings=4096, tie_word_embeddings=True)
    if name == "0.6B":  # Qwen/Qwen3-0.6B config.json
        return Qwen3Config(vocab_size=151936, hidden_size=1024, intermediate_size=3072,
                           num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                           head_dim=128, rms_norm_eps=1e-6, rope_theta=1000000.0,
                           max_position_embeddings=40960, tie_word_embeddings=True)
    return Qwen3Config(vocab_size=151936, hidden_size=5120, intermediate_size=17408,  # Qwen3-14B
                       num_hidden_layers=layers_14b, num_attention_heads=40,
                       num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-6,
                       rope_theta=1000000.0, max_position_embeddings=40960,
                       tie_word_embeddings=False)


def build(cfg, dev):
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(dev):
        model = Qwen3ForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    return model.eval()


def clock(dev):
    if dev == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


class FixedLayer(CacheLayerMixin):
    """A preallocated KV cache layer holding POS tokens (random keys and
    values), room for one more: a decode step writes its token at POS in
    place and attends to POS + 1 keys. Every replay of a captured step
    recomputes the same token, which is what a token costs at that context."""

    is_compileable = False
    is_sliding = False

    def __init__(self, batch, heads, pos, dim, dev):
        super().__init__()
        self.pos = pos
        self.keys = torch.randn(batch, heads, pos + 1, dim, device=dev, dtype=torch.bfloat16)
        self.values = torch.randn(batch, heads, pos + 1, dim, device=dev, dtype=torch.bfloat16)
        self.is_initialized = True

    def lazy_initialization(self, key_states, value_states):
        pass

    def update(self, key_states, value_states, *a, **kw):
        n = key_states.shape[-2]
        self.keys[:, :, self.pos:self.pos + n].copy_(key_states)
        self.values[:, :, self.pos:self.pos + n].copy_(value_states)
        return self.keys[:, :, :self.pos + n], self.values[:, :, :self.pos + n]

    def get_mask_sizes(self, query_length):
        return self.pos + query_length, 0

    def get_seq_length(self):
        return self.pos

    def get_max_length(self):
        return self.pos + 1


def decode_step_ms(model, cfg, batch, ctx, dev, graph=True, layer=FixedLayer, after=None):
    """One decode step at context CTX and batch BATCH over a cache of LAYER
    (FixedLayer or a subclass): milliseconds a token (the median of rounds of CUDA graph
    replays, or of eager steps; on the CPU a few eager steps). The Python
    of the step runs during the warm-up and the capture only. AFTER, where
    given, is called with the captured step's replay once it is timed (a
    profile of the same graph)."""
    layers = [layer(batch, cfg.num_key_value_heads, ctx, cfg.head_dim, dev)
              for _ in range(cfg.num_hidden_layers)]
    state = {"cache": Cache(layers=layers)}
    ids = torch.randint(0, cfg.vocab_size, (batch, 1), device=dev)
    pos = torch.full((batch, 1), ctx, device=dev, dtype=torch.long)

    def step():
        return model(input_ids=ids, position_ids=pos, use_cache=True, **{CACHE_KW: state["cache"]}).logits

    with torch.no_grad():
        if dev == "cpu":
            times = []
            for _ in range(3):
                t0 = clock(dev)
                step()
                times.append((clock(dev) - t0) * 1e3)
            return statistics.median(times[1:])
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                step()
        torch.cuda.current_stream().wait_stream(side)
        g = None
        if graph:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                step()
            g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(20 if g else 5):
                g.replay() if g else step()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) / (20 if g else 5))
        if after is not None and g is not None:
            after(g.replay)
        del g
    del layers
    state.clear()
    torch.cuda.empty_cache()
    return statistics.median(times)


def float_reference(model):
    """A float32 copy of MODEL for divergence(): on MODEL's device where it
    fits beside it with a tenth to spare, else in host memory (Qwen3-14B's
    40 layers: 59 GB in float32 beside 30 GB in bf16 on an 80 GB card),
    MODEL moved there for the copy and back (its buffers come along)."""
    need = sum(p.numel() for p in model.parameters()) * 4
    dev = next(model.parameters()).device
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    if dev.type != "cuda" or need * 1.1 < torch.cuda.mem_get_info(dev)[0]:
        return copy.deepcopy(model).float()
    model.to("cpu")
    try:
        return copy.deepcopy(model).float()
    finally:
        model.to(dev)


def divergence(reference, prefix, t, tokens, logits):
    """Where two greedy generations first differ (at T, TOKENS: {name:
    token}), against REFERENCE (a float32 model) on PREFIX: its margin
    between its top two and between the two tokens, and each side's
    LOGITS' ({name: logits}) largest error, to tell a near tie from a
    wrong answer."""
    with torch.no_grad():
        lf = reference(prefix.to(next(reference.parameters()).device)).logits[0, -1].float()
    top = torch.topk(lf, 2)
    (na, i), (nb, j) = tokens.items()
    rec = {"at": t, f"{na}_token": i, f"{nb}_token": j,
           "fp32_margin_top2": float(top.values[0] - top.values[1]),
           "fp32_gap_between_the_two": float(lf[i] - lf[j])}
    for name, lg in logits.items():
        rec[f"{name}_err_vs_fp32"] = float((lg.float() - lf.to(lg.device)).abs().max())
    return rec
