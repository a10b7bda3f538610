// qwen3_decode_attn's naive start (the task's baseline on CUDA): the plain
// kernel of attn_generic.cuh, a warp per (sequence, token, q head) walking
// every row it may see with an online softmax.
#include <kevolve/task.h>
#include <qwen3_decode/cuda/attn_generic.cuh>

// EVOLVE-BLOCK-START
#define THREADS 256

extern "C" int kv_launch(const kv_launch_args *a)
{
    return qd_attn::launch_generic(a, THREADS);
}
// EVOLVE-BLOCK-END
