// What a grid-wide barrier costs against a kernel boundary, with the
// barrier of the qwen3_decode seeds' one-kernel paths
// (tasks/qwen3_decode/cuda/decode_grid.cuh): an empty kernel that passes
// BARRIERS barriers, at grids of one to four blocks a multiprocessor, beside
// BARRIERS + 1 empty kernels one after the other (with programmatic
// dependent launch, as the seeds launch), each timed as the exports are
// (one CUDA graph of calls, replayed, events, the median of rounds).
// 2026-12-08: post_grid.cu (o and the MLP as one kernel, two barriers)
// took 20.9 us at Qwen3-0.6B's one token on an H100 where o and the MLP as
// three kernels take about 13.4; this says how much of that the barriers are.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -Itasks -Iinclude -o grid_barrier bench/grid_barrier.cu
//   ./grid_barrier          (prints a table: launch shape, us a call)
#include "gqa_bench.cuh" // CK, graph_median_us

#include <qwen3_decode/cuda/decode_grid.cuh>

__global__ void __launch_bounds__(256) passes(int barriers, qd::grid_bar *bar)
{
    qd::pdl_release();
    qd::pdl_wait();
    for (int i = 0; i < barriers; i++)
        qd::grid_sync(bar);
}

__global__ void __launch_bounds__(256) empty()
{
    qd::pdl_release();
    qd::pdl_wait();
}

// us a call of CALLS calls of LAUNCH captured in one graph.
template <typename F> static double timed(cudaStream_t s, int calls, F launch)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < calls; i++)
        launch();
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    double us = graph_median_us(ge, s, calls, 20);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    return us;
}

int main()
{
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    qd::grid_bar *bar = qd::grid_slot(s);
    if (!bar) return 2;
    const int calls = 50;
    printf("| launch | blocks | threads | us a call |\n|---|---|---|---|\n");
    for (int per_sm : {1, 2, 4})
        for (int threads : {256, 512}) {
            if (per_sm * threads > 2048) continue;
            const unsigned grid = (unsigned)(sms * per_sm);
            for (int barriers : {0, 1, 2}) {
                double us = timed(s, calls, [&] {
                    qd::launch_cfg c(dim3(grid), dim3(threads), 0, s, true);
                    CK(cudaLaunchKernelEx(&c.cfg, passes, barriers, bar));
                });
                printf("| one kernel, %d barrier%s | %u | %d | %.2f |\n", barriers,
                       barriers == 1 ? "" : "s", grid, threads, us);
            }
            for (int kernels : {2, 3}) {
                double us = timed(s, calls, [&] {
                    for (int k = 0; k < kernels; k++) {
                        qd::launch_cfg c(dim3(grid), dim3(threads), 0, s, true);
                        CK(cudaLaunchKernelEx(&c.cfg, empty));
                    }
                });
                printf("| %d empty kernels (PDL) | %u | %d | %.2f |\n", kernels, grid, threads, us);
            }
        }
    return 0;
}
