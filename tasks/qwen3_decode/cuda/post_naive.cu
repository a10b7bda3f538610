// qwen3_decode_post's naive start: four kernels, a thread per value. The
// first is the output projection with the residual into mid; the second
// normalises each token into out, which serves as scratch until the last
// writes it; the third computes act = silu(g) * u; the fourth the down
// projection and the residual add. Rounded where PyTorch's bf16 model
// rounds.
#include <kevolve/task.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

// EVOLVE-BLOCK-START
typedef __nv_bfloat16 bf;

__device__ float rb(float v) { return __bfloat162float(__float2bfloat16(v)); }

__global__ void o_naive(const bf *attn, const bf *wo, const bf *res, bf *mid, long long tok,
                        long long inner, long long hid)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= tok * hid) return;
    long long t = i / hid, n = i % hid;
    float s = 0.0f;
    for (long long k = 0; k < inner; k++)
        s += __bfloat162float(wo[n * inner + k]) * __bfloat162float(attn[t * inner + k]);
    mid[i] = __float2bfloat16(__bfloat162float(res[i]) + rb(s));
}

// One thread per token: h[t] = bf16(ln * bf16(x / rms(x))), the normalised input.
__global__ void norm_naive(const bf *x, const bf *ln, bf *h, long long tok, long long hid)
{
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tok) return;
    float ss = 0.0f;
    for (long long i = 0; i < hid; i++) {
        float v = __bfloat162float(x[t * hid + i]);
        ss += v * v;
    }
    float rstd = rsqrtf(ss / (float)hid + 1e-6f);
    for (long long i = 0; i < hid; i++)
        h[t * hid + i] = __float2bfloat16(__bfloat162float(ln[i]) * rb(__bfloat162float(x[t * hid + i]) * rstd));
}

__global__ void act_naive(const bf *h, const bf *wg, const bf *wu, bf *act, long long tok, long long hid,
                          long long inter)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= tok * inter) return;
    long long t = i / inter, j = i % inter;
    float g = 0.0f, u = 0.0f;
    for (long long k = 0; k < hid; k++) {
        float hv = __bfloat162float(h[t * hid + k]);
        g += __bfloat162float(wg[j * hid + k]) * hv;
        u += __bfloat162float(wu[j * hid + k]) * hv;
    }
    g = rb(g);
    u = rb(u);
    act[i] = __float2bfloat16(rb(g / (1.0f + expf(-g))) * u);
}

__global__ void down_naive(const bf *act, const bf *wd, const bf *x, bf *out, long long tok, long long hid,
                           long long inter)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= tok * hid) return;
    long long t = i / hid, n = i % hid;
    float s = 0.0f;
    for (long long k = 0; k < inter; k++)
        s += __bfloat162float(wd[n * inter + k]) * __bfloat162float(act[t * inter + k]);
    out[i] = __float2bfloat16(__bfloat162float(x[i]) + rb(s));
}

extern "C" int kv_launch(const kv_launch_args *a)
{
    long long tok = a->syms[0], inner = a->syms[1], hid = a->syms[2], inter = a->syms[3];
    cudaStream_t s = (cudaStream_t)a->stream;
    bf *mid = (bf *)a->tensors[7], *act = (bf *)a->tensors[8], *out = (bf *)a->tensors[9];
    o_naive<<<(unsigned)((tok * hid + 255) / 256), 256, 0, s>>>(
        (const bf *)a->tensors[0], (const bf *)a->tensors[1], (const bf *)a->tensors[2], mid, tok,
        inner, hid);
    norm_naive<<<(unsigned)((tok + 63) / 64), 64, 0, s>>>(mid, (const bf *)a->tensors[3], out, tok, hid);
    act_naive<<<(unsigned)((tok * inter + 255) / 256), 256, 0, s>>>(
        out, (const bf *)a->tensors[4], (const bf *)a->tensors[5], act, tok, hid, inter);
    down_naive<<<(unsigned)((tok * hid + 255) / 256), 256, 0, s>>>(act, (const bf *)a->tensors[6], mid,
                                                                  out, tok, hid, inter);
    return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
