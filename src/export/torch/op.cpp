// The PyTorch operator of a library exported by kevolve (kevolve export
// --torch): torch.ops.kevolve.<TASK>(q, k, v) -> o for grouped-query
// attention, q [B, HQ, SQ, D], k and v [B, HKV, L, D], bf16, dense;
// queries aligned to the bottom right of the keys (decode SQ = 1, prefill
// SQ = L, chunked prefill SQ < L). Built by the package's __init__.py with
// torch.utils.cpp_extension and linked to the exported library
// (lib/libkevolve_<TASK>.so), whose entry point KVX_ENTRY it calls on the
// current stream. The checks of dtype, layout and device are the package's
// too (shapes it cannot take go to SDPA there); here they guard the call.
#include <torch/extension.h>
#include <torch/library.h>

#include <string>
#ifdef KVX_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#define KVX_CAT_(a, b) a##b
#define KVX_CAT(a, b) KVX_CAT_(a, b)
#define KVX_STR_(a) #a
#define KVX_STR(a) KVX_STR_(a)

extern "C" int KVX_ENTRY(void *const *tensors, const int64_t *syms, const int64_t *const *strides,
                         void *stream);
extern "C" int KVX_CAT(KVX_ENTRY, _scenario)(const int64_t *syms);

static at::Tensor kvx_attention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v)
{
    TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "kevolve: q, k, v must be 4-D");
    TORCH_CHECK(q.scalar_type() == at::kBFloat16 && k.scalar_type() == at::kBFloat16 &&
                    v.scalar_type() == at::kBFloat16,
                "kevolve: q, k, v must be bf16");
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous(),
                "kevolve: q, k, v must be contiguous");
    TORCH_CHECK(k.sizes() == v.sizes() && k.size(0) == q.size(0) && k.size(3) == q.size(3) &&
                    q.size(1) % k.size(1) == 0 && q.size(2) <= k.size(2),
                "kevolve: shapes q [B, HQ, SQ, D], k and v [B, HKV, L, D] with HQ a multiple of "
                "HKV and SQ <= L");
#ifdef KVX_CUDA
    TORCH_CHECK(q.is_cuda() && k.device() == q.device() && v.device() == q.device(),
                "kevolve: q, k, v must be on one CUDA device");
    c10::cuda::CUDAGuard guard(q.device());
    void *stream = at::cuda::getCurrentCUDAStream().stream();
#else
    TORCH_CHECK(q.is_cpu() && k.is_cpu() && v.is_cpu(), "kevolve: q, k, v must be on the CPU");
    void *stream = nullptr;
#endif
    at::Tensor o = at::empty_like(q);
    int64_t syms[6] = {q.size(0), q.size(1), k.size(1), q.size(2), k.size(2), q.size(3)};
    void *t[4] = {q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()};
    int rc = KVX_ENTRY(t, syms, nullptr, stream);
    TORCH_CHECK(rc == 0, "kevolve: the exported kernel failed (", std::to_string(rc), ")");
    return o;
}

// The scenario of the exported library's table a call of this shape goes
// to (its dispatcher's rule), so that Python can follow the table of which
// kernel to call.
static int64_t kvx_scenario(int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t l, int64_t d)
{
    int64_t syms[6] = {b, hq, hkv, sq, l, d};
    return KVX_CAT(KVX_ENTRY, _scenario)(syms);
}

TORCH_LIBRARY_FRAGMENT(kevolve, m)
{
    m.def(KVX_STR(KVX_OP) "(Tensor q, Tensor k, Tensor v) -> Tensor");
}

#ifdef KVX_CUDA
TORCH_LIBRARY_IMPL(kevolve, CUDA, m)
#else
TORCH_LIBRARY_IMPL(kevolve, CPU, m)
#endif
{
    m.impl(KVX_STR(KVX_OP), kvx_attention);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("scenario", &kvx_scenario, "the scenario index a call of this shape goes to");
}
