// The PyTorch operator of a library exported by kevolve (kevolve export
// --torch) for any task of dense tensors: torch.ops.kevolve.<TASK> takes
// the task's inputs and in-out tensors in the task's order (an in-out
// tensor is written in place: Tensor(a!) in the schema), derives every
// symbol's value from their shapes, allocates the outputs and returns them
// (one Tensor, a tuple, or nothing). spec.h, written by the export from the
// task, holds the schema and the tensors (name, dtype, role, shape as
// symbol indices). Built by the package's __init__.py with
// torch.utils.cpp_extension and linked to the exported library
// (lib/libkevolve_<TASK>.so), whose entry point KVX_ENTRY it calls on the
// current stream (CUDA graphs capture it). One boxed kernel serves every
// task: it reads the arguments off the dispatcher's stack.
#include <ATen/core/stack.h>
#include <torch/extension.h>
#include <torch/library.h>
#ifdef KVX_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif
#include <kevolve/task.h>

#include "spec.h"

#include <string>
#include <vector>

#define KVX_CAT_(a, b) a##b
#define KVX_CAT(a, b) KVX_CAT_(a, b)

extern "C" int KVX_ENTRY(void *const *tensors, const int64_t *syms, const int64_t *const *strides,
                         void *stream);
extern "C" int KVX_CAT(KVX_ENTRY, _scenario)(const int64_t *syms);

static at::ScalarType scalar_of(kv_dtype d)
{
    switch (d) {
    case KV_F32: return at::kFloat;
    case KV_F16: return at::kHalf;
    case KV_BF16: return at::kBFloat16;
    default: return at::kInt;
    }
}

// Numbers in messages are formatted by std::to_string, never by an
// ostream: on the GPU machine (2026-12-04, torch 2.11.0+cu130, gcc 13.3) a
// refusal of disagreeing shapes segfaulted in this extension's
// basic_ostream::_M_insert<long> (why is not known; the same code ran on
// the CPU build of torch).
static std::string num(int64_t v) { return std::to_string(v); }

// "[2, 1024]": a tensor's sizes.
static std::string sizes_of(const at::Tensor &x)
{
    std::string s = "[";
    for (int64_t d = 0; d < x.dim(); d++) s += (d ? ", " : "") + num(x.size(d));
    return s + "]";
}

// "[tokens, hidden]": tensor I's shape in symbols.
static std::string dims(int i)
{
    std::string s = "[";
    for (int d = 0; d < kvx_tensors[i].rank; d++)
        s += std::string(d ? ", " : "") + kvx_sym_names[kvx_tensors[i].shape[d]];
    return s + "]";
}

static void kvx_call(const c10::OperatorHandle &, torch::jit::Stack *stack)
{
    int nargs = 0;
    for (int i = 0; i < KVX_NTENSORS; i++) nargs += kvx_tensors[i].role != KV_OUT;
    std::vector<at::Tensor> t(KVX_NTENSORS);
    auto args = torch::jit::last(stack, nargs);
    for (int i = 0, a = 0; i < KVX_NTENSORS; i++)
        if (kvx_tensors[i].role != KV_OUT) t[i] = args[a++].toTensor();
    torch::jit::drop(stack, nargs);

    int64_t syms[KVX_NSYMS];
    int from[KVX_NSYMS]; // the tensor whose shape gave the symbol
    for (int s = 0; s < KVX_NSYMS; s++) from[s] = -1;
    at::Device device(at::kCPU);
    bool first = true;
    for (int i = 0; i < KVX_NTENSORS; i++) {
        const kvx_tensor &ts = kvx_tensors[i];
        if (ts.role == KV_OUT) continue;
        const at::Tensor &x = t[i];
        TORCH_CHECK(x.dim() == ts.rank, "kevolve.", KVX_OP_NAME, ": ", ts.name, " must be ",
                    num(ts.rank), "-D ", dims(i), ", not of shape ", sizes_of(x));
        TORCH_CHECK(x.scalar_type() == scalar_of(ts.dtype), "kevolve.", KVX_OP_NAME, ": ", ts.name,
                    " must be ", scalar_of(ts.dtype), ", not ", x.scalar_type());
        TORCH_CHECK(x.is_contiguous(), "kevolve.", KVX_OP_NAME, ": ", ts.name,
                    " must be contiguous");
#ifdef KVX_CUDA
        TORCH_CHECK(x.is_cuda(), "kevolve.", KVX_OP_NAME, ": ", ts.name, " must be on a CUDA device");
#else
        TORCH_CHECK(x.is_cpu(), "kevolve.", KVX_OP_NAME, ": ", ts.name, " must be on the CPU");
#endif
        if (first) device = x.device();
        first = false;
        TORCH_CHECK(x.device() == device, "kevolve.", KVX_OP_NAME,
                    ": the tensors must be on one device");
        for (int d = 0; d < ts.rank; d++) {
            int s = ts.shape[d];
            if (from[s] < 0) {
                syms[s] = x.size(d);
                from[s] = i;
            } else {
                TORCH_CHECK(syms[s] == x.size(d), "kevolve.", KVX_OP_NAME, ": ", ts.name, " ",
                            dims(i), " has ", kvx_sym_names[s], " = ", num(x.size(d)), " but ",
                            kvx_tensors[from[s]].name, " ", dims(from[s]), " has ",
                            kvx_sym_names[s], " = ", num(syms[s]));
            }
        }
    }
    KVX_DERIVE(syms); // the symbols no input's shape holds
#ifdef KVX_CUDA
    c10::cuda::CUDAGuard guard(device);
    void *stream = at::cuda::getCurrentCUDAStream().stream();
#else
    void *stream = nullptr;
#endif
    bool empty = false;
    for (int s = 0; s < KVX_NSYMS; s++) empty = empty || syms[s] == 0;
    void *ptrs[KVX_NTENSORS];
    for (int i = 0; i < KVX_NTENSORS; i++) {
        const kvx_tensor &ts = kvx_tensors[i];
        if (ts.role == KV_OUT) {
            std::vector<int64_t> shape;
            for (int d = 0; d < ts.rank; d++) shape.push_back(syms[ts.shape[d]]);
            t[i] = at::empty(shape, at::TensorOptions().dtype(scalar_of(ts.dtype)).device(device));
        }
        ptrs[i] = t[i].data_ptr();
    }
    if (!empty) { // nothing to compute (a kernel may not launch an empty grid)
        int rc = KVX_ENTRY(ptrs, syms, nullptr, stream);
        TORCH_CHECK(rc == 0, "kevolve.", KVX_OP_NAME, ": the exported kernel failed (", num(rc), ")");
    }
    for (int i = 0; i < KVX_NTENSORS; i++)
        if (kvx_tensors[i].role == KV_OUT) torch::jit::push(stack, t[i]);
}

// The scenario of the exported library's table a call of these symbols
// goes to (its dispatcher's rule).
static int64_t kvx_scenario(const std::vector<int64_t> &s)
{
    TORCH_CHECK(s.size() == KVX_NSYMS, "kevolve: ", num(KVX_NSYMS), " symbols expected");
    return KVX_CAT(KVX_ENTRY, _scenario)(s.data());
}

TORCH_LIBRARY_FRAGMENT(kevolve, m)
{
    m.def(KVX_SCHEMA);
}

#ifdef KVX_CUDA
TORCH_LIBRARY_IMPL(kevolve, CUDA, m)
#else
TORCH_LIBRARY_IMPL(kevolve, CPU, m)
#endif
{
    m.impl(KVX_OP_NAME, torch::CppFunction::makeFromBoxedFunction<&kvx_call>());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("scenario", &kvx_scenario, "the scenario index a call of these symbols goes to");
}
