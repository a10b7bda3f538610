// qwen3_decode_qkv's naive start: a thread per token and head. It finds
// its token's RMS, writes the head's projections (each a dot product read
// one element at a time, the normalised input recomputed on the fly) into
// the head's output row, then, for q and k, normalises that row and
// rotates each pair (i, i + D/2) in place. Rounded where PyTorch's bf16
// model rounds.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// EVOLVE-BLOCK-START
typedef __nv_bfloat16 bf;

__device__ float fl(bf v) { return __bfloat162float(v); }
__device__ float rb(float v) { return fl(__float2bfloat16(v)); }

struct qkv_naive_args {
    const bf *x, *ln, *wq, *wk, *wv, *qn, *kn, *cs, *sn;
    const int *start;
    bf *q, *kc, *vc;
    long long nb, q_len, hid, nq, nkv, d, len;
};

__global__ void qkv_naive(qkv_naive_args p)
{
    long long heads = p.nq + 2 * p.nkv;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.nb * p.q_len * heads) return;
    long long t = i / heads, head = i % heads, b = t / p.q_len, pos = p.start[b] + t % p.q_len;
    int kind = head < p.nq ? 0 : head < p.nq + p.nkv ? 1 : 2;
    long long hh = kind == 0 ? head : kind == 1 ? head - p.nq : head - p.nq - p.nkv;
    const bf *x = p.x + t * p.hid, *w = (kind == 0 ? p.wq : kind == 1 ? p.wk : p.wv) + hh * p.d * p.hid;
    bf *out = kind == 0 ? p.q + (t * p.nq + hh) * p.d
                        : (kind == 1 ? p.kc : p.vc) + ((b * p.nkv + hh) * p.len + pos) * p.d;
    float ss = 0.0f;
    for (long long k = 0; k < p.hid; k++)
        ss += fl(x[k]) * fl(x[k]);
    float rstd = rsqrtf(ss / (float)p.hid + 1e-6f);
    for (long long c = 0; c < p.d; c++) {
        float s = 0.0f;
        for (long long k = 0; k < p.hid; k++)
            s += fl(w[c * p.hid + k]) * rb(fl(p.ln[k]) * rb(fl(x[k]) * rstd));
        out[c] = __float2bfloat16(s);
    }
    if (kind == 2) return;
    const bf *nw = kind == 0 ? p.qn : p.kn;
    float hs = 0.0f;
    for (long long c = 0; c < p.d; c++)
        hs += fl(out[c]) * fl(out[c]);
    float hr = rsqrtf(hs / (float)p.d + 1e-6f);
    long long half = p.d / 2;
    const bf *co = p.cs + t * p.d, *si = p.sn + t * p.d;
    for (long long c = 0; c < half; c++) {
        float u = rb(fl(nw[c]) * rb(fl(out[c]) * hr)), v = rb(fl(nw[c + half]) * rb(fl(out[c + half]) * hr));
        out[c] = __float2bfloat16(rb(u * fl(co[c])) + rb(-v * fl(si[c])));
        out[c + half] = __float2bfloat16(rb(v * fl(co[c + half])) + rb(u * fl(si[c + half])));
    }
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    qkv_naive_args p = {(const bf *)a->tensors[0], (const bf *)a->tensors[1], (const bf *)a->tensors[2],
                        (const bf *)a->tensors[3], (const bf *)a->tensors[4], (const bf *)a->tensors[5],
                        (const bf *)a->tensors[6], (const bf *)a->tensors[7], (const bf *)a->tensors[8],
                        (const int *)a->tensors[9], (bf *)a->tensors[10],     (bf *)a->tensors[11],
                        (bf *)a->tensors[12],       a->syms[0],               a->syms[1],
                        a->syms[2],                 a->syms[3],               a->syms[4],
                        a->syms[5],                 a->syms[6]};
    long long n = p.nb * p.q_len * (p.nq + 2 * p.nkv);
    qkv_naive<<<(unsigned)((n + 63) / 64), 64, 0, (cudaStream_t)a->stream>>>(p);
    return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
