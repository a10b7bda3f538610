// Weights a decode step reads soon, asked of the L2 cache before the
// kernels that read them start (kevolve_qwen3's l2_prefetch): at one token
// a layer's kernels leave the memory idle for most of their time (launch,
// the chains of small reductions, the attention's merge), and a read that
// finds its weights in L2 streams them at the L2's rate. The kernel only
// issues cp.async.bulk.prefetch.L2 (a hint: nothing is read into a
// register, nothing written), so it is done as soon as the requests are
// out; it runs beside the step's kernels, on a stream of its own.
//
// Built by kevolve_qwen3 with nvcc as a shared library (no PyTorch
// headers) and called through ctypes on the side stream, which CUDA graph
// capture records as a branch of the step.
#include <cuda_runtime.h>
#include <stdint.h>

#define KVX_L2_SPANS 16
#define KVX_L2_CHUNK 16384 // bytes a request (a multiple of 16)

struct kvx_l2_spans {
    const char *base[KVX_L2_SPANS];
    long long bytes[KVX_L2_SPANS];
    int count;
};

__global__ void kvx_l2_prefetch_kernel(kvx_l2_spans s)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const long long threads = (long long)gridDim.x * blockDim.x;
    long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x, skew = 0;
    for (int k = 0; k < s.count; k++) {
        const long long chunks = (s.bytes[k] + KVX_L2_CHUNK - 1) / KVX_L2_CHUNK;
        // Each span starts at another thread, so small spans spread too.
        for (long long c = (first + threads - skew % threads) % threads; c < chunks; c += threads) {
            const long long off = c * KVX_L2_CHUNK;
            const long long left = s.bytes[k] - off;
            const unsigned n = (unsigned)(left < KVX_L2_CHUNK ? left : KVX_L2_CHUNK);
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(s.base[k] + off), "r"(n)
                         : "memory");
        }
        skew += chunks;
    }
#else
    (void)s;
#endif
}

// Asks L2 for COUNT spans (BASE[i], BYTES[i]) on STREAM of device DEV, in
// BLOCKS blocks of one warp. Each span is trimmed to its 16-byte-aligned
// interior (what the instruction takes). DEV is set here because this
// library's CUDA runtime is its own (nvcc links it statically): PyTorch's
// current device is not this runtime's. Returns 0, or a cudaError_t:
// cudaErrorInvalidValue for more than KVX_L2_SPANS spans,
// cudaErrorNotSupported below compute capability 9.0.
extern "C" int kvx_l2_prefetch(const void *const *base, const long long *bytes, int count,
                               int blocks, int dev, void *stream)
{
    if (count < 0 || count > KVX_L2_SPANS || blocks < 1) return (int)cudaErrorInvalidValue;
    int major = 0;
    cudaError_t e = cudaSetDevice(dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e != cudaSuccess) return (int)e;
    if (major < 9) return (int)cudaErrorNotSupported;
    kvx_l2_spans s = {};
    for (int i = 0; i < count; i++) {
        const uintptr_t a = (uintptr_t)base[i], lo = (a + 15) & ~(uintptr_t)15;
        const uintptr_t hi = (a + (uintptr_t)(bytes[i] > 0 ? bytes[i] : 0)) & ~(uintptr_t)15;
        if (hi <= lo) continue;
        s.base[s.count] = (const char *)lo;
        s.bytes[s.count++] = (long long)(hi - lo);
    }
    if (!s.count) return 0;
    kvx_l2_prefetch_kernel<<<blocks, 32, 0, (cudaStream_t)stream>>>(s);
    return (int)cudaGetLastError();
}
