// Hopper (sm_90a) building blocks shared by the gqa_attention seeds that use
// the tensor memory accelerator (TMA), mbarriers and warpgroup MMA (wgmma),
// as raw PTX: no CUTLASS. Provided by the harness outside the mutable text
// (include as <gqa_attention/cuda/gqa_hopper.cuh>); needs the sm_90a target
// the harness compiles for on Hopper.
//
// Shared-memory tiles use the 128-byte swizzle that TMA's SWIZZLE_128B
// writes and wgmma's descriptors read: a tile of R rows x 128 head-dim
// columns (bf16) is stored as two blocks of R rows x 64 columns (128 bytes a
// row), each 1024-byte atom of 8 rows with 16-byte chunk c of row r at chunk
// c ^ (r & 7). Blocks must start at 1024-byte boundaries.
//
//   gqa_mbar_*          mbarrier init, expect_tx, arrive, wait on a phase parity
//   gqa_tma_load_3d     cp.async.bulk.tensor.3d global -> shared, completing on an mbarrier
//   gqa_tmap_bf16_3d    host: a tensor map (cuTensorMapEncodeTiled through the runtime)
//   gqa_desc_kmajor     wgmma descriptor of a K-major operand (rows of 128 bytes)
//   gqa_desc_mnmajor    wgmma descriptor of an MN-major operand (B transposed)
//   gqa_wgmma_*         fence, commit, wait; m64nNk16 bf16 -> fp32 products
//   gqa_setmaxnreg_*    register reallocation between warpgroups
//   gqa_bar_sync        named barrier among a subset of the block's warps
#ifndef GQA_HOPPER_CUH
#define GQA_HOPPER_CUH

#include "gqa_common.cuh"

#include <cuda.h> // CUtensorMap and its enums (types only: no libcuda link)

// ---- mbarriers ----
__device__ __forceinline__ void gqa_mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Makes initialised mbarriers visible to the async proxy (TMA) and the block.
__device__ __forceinline__ void gqa_mbar_fence_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Arrives (count 1) and adds BYTES to the transaction count the phase waits for.
__device__ __forceinline__ void gqa_mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void gqa_mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Waits until the phase of parity PARITY has completed (the k-th completion
// of a barrier has parity k & 1).
__device__ __forceinline__ void gqa_mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

// ---- TMA ----
// Box of MAP at coordinates (c0 innermost, c1, c2) -> shared DST; completes
// on mbarrier BAR (whose expect_tx must count its bytes). Out-of-bounds
// elements arrive as zeros.
__device__ __forceinline__ void gqa_tma_load_3d(unsigned dst, const CUtensorMap *map, int c0, int c1,
                                                int c2, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

__device__ __forceinline__ void gqa_tma_prefetch_map(const CUtensorMap *map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

typedef CUresult (*gqa_encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                        const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                        const cuuint32_t *, CUtensorMapInterleave,
                                        CUtensorMapSwizzle, CUtensorMapL2promotion,
                                        CUtensorMapFloatOOBfill);

// The driver's cuTensorMapEncodeTiled through the runtime (no libcuda link),
// looked up once; NULL when the driver has none.
static inline gqa_encode_tiled_fn gqa_encode_tiled(void)
{
    static gqa_encode_tiled_fn fn;
    static int tried;
    if (!tried) {
        tried = 1;
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                             &q) == cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (gqa_encode_tiled_fn)p;
    }
    return fn;
}

// MAP for a bf16 tensor of D2 x D1 x D0 elements (D0 contiguous, rows of D0
// elements, D0 * 2 bytes a multiple of 16), boxes of B1 rows x B0 elements
// (B0 * 2 <= 128) swizzled by 128 bytes. Returns 0 or a cudaError_t.
static inline int gqa_tmap_bf16_3d(CUtensorMap *map, const void *base, uint64_t d0, uint64_t d1,
                                   uint64_t d2, uint32_t b0, uint32_t b1)
{
    gqa_encode_tiled_fn enc = gqa_encode_tiled();
    if (!enc) return (int)cudaErrorNotSupported;
    const cuuint64_t dims[3] = {d0, d1, d2};
    const cuuint64_t strides[2] = {d0 * 2, d0 * d1 * 2}; // bytes, dimensions 1 and 2
    const cuuint32_t box[3] = {b0, b1, 1}, estr[3] = {1, 1, 1};
    CUresult r = enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void *>(base), dims,
                     strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? 0 : (int)cudaErrorInvalidValue;
}

// ---- wgmma ----
__device__ __forceinline__ uint64_t gqa_desc_enc(uint64_t x) { return (x & 0x3FFFF) >> 4; }

// Descriptor of a K-major operand at shared address ADDR: rows of 128
// bytes (64 bf16 of the K dimension), 128-byte swizzle, 8-row atoms of 1024
// bytes. A step of 16 along K within the block adds 32 bytes to ADDR.
__device__ __forceinline__ uint64_t gqa_desc_kmajor(unsigned addr)
{
    return gqa_desc_enc(addr) | (gqa_desc_enc(16) << 16) | (gqa_desc_enc(1024) << 32) |
           (1ull << 62);
}

// Descriptor of an MN-major operand (B of P V: V stored [keys][dims]) at
// ADDR: 128-byte swizzled rows of 64 MN elements, BLOCK_BYTES between the
// blocks of 64 MN elements, 1024 bytes between groups of 8 K rows. A step
// of 16 along K adds 16 rows (2048 bytes) to ADDR.
__device__ __forceinline__ uint64_t gqa_desc_mnmajor(unsigned addr, unsigned block_bytes)
{
    return gqa_desc_enc(addr) | (gqa_desc_enc(block_bytes) << 16) | (gqa_desc_enc(1024) << 32) |
           (1ull << 62);
}

__device__ __forceinline__ void gqa_wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void gqa_wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most N committed wgmma groups of this warp are pending.
template <int N> __device__ __forceinline__ void gqa_wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accesses of an accumulator across a wgmma
// fence or wait (the asm above does not name them).
__device__ __forceinline__ void gqa_reg_fence(float &x) { asm volatile("" : "+f"(x)::"memory"); }

// Accumulator layout of an m64nN product (each warp w of the warpgroup owns
// rows 16w .. 16w+15; lane g = lane / 4, t = lane % 4): d[4j + 0, 1] =
// D[16w + g][8j + 2t, +1], d[4j + 2, 3] = D[16w + g + 8][8j + 2t, +1].
// d[32] (+)= A (64x16, K-major, shared, descriptor da) * B (16x64, K-major: B^T
// stored [64][16], shared, descriptor db); scale_d = 0 overwrites d.
__device__ __forceinline__ void gqa_wgmma_m64n64_ss(float *d, uint64_t da, uint64_t db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
          "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
          "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(scale_d));
}

// d[64] (+)= A (64x16, K-major, shared, descriptor da) * B (16x128, K-major: B^T
// stored [128][16], shared, descriptor db); scale_d = 0 overwrites d.
__device__ __forceinline__ void gqa_wgmma_m64n128_ss(float *d, uint64_t da, uint64_t db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
          "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
          "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
          "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
          "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),
          "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
          "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(scale_d));
}

// d[64] (+)= A (64x16 from registers: a[4] in the mma.sync A layout of each
// warp's 16 rows) * B (16x128, MN-major: stored [16][128], shared, descriptor db,
// transposed by the instruction); scale_d = 0 overwrites d.
__device__ __forceinline__ void gqa_wgmma_m64n128_rs_t(float *d, const unsigned *a, uint64_t db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
          "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
          "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
          "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
          "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),
          "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
          "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// ---- warpgroups ----
template <int N> __device__ __forceinline__ void gqa_setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N> __device__ __forceinline__ void gqa_setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// Barrier ID (1..15) among the N threads (a multiple of 32) that reach it.
__device__ __forceinline__ void gqa_bar_sync(int id, int n)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}

#endif
