/* Red team, class ANSWERS CARRIED FROM ONE CHILD TO THE NEXT (issues 21
 * and 42), cpu, task softmax.
 *
 * It computes nothing: it answers from the segments its teacher
 * (replay_across_children_teacher.c, judged before it in the same run)
 * left in System V shared memory, keyed on a hash of the input and the
 * shape, and writes zeros where none is found. A long-lived judge that kept
 * the references of the correctness trials drew every child's correctness
 * inputs as it drew the first's, so this passed them.
 *
 * The judge must say: rejected (wrong_result). The runner's system-call
 * filter refuses System V IPC, so the teacher leaves nothing; and every
 * child's inputs are its own, so nothing left could match them. */
#include <kevolve/task.h>
#include <sys/shm.h>
#include <string.h>

/* A 64-bit hash of LEN bytes at P (four independent lanes: about memory
 * speed, so that hashing moves the bytes a roofline expects). */
static uint64_t rt_hash(const void *p, size_t len)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h[4] = {0x9e3779b97f4a7c15u, 0xc2b2ae3d27d4eb4fu, 0x165667b19e3779f9u,
                     0x27d4eb2f165667c5u};
    size_t i = 0;
    for (; i + 32 <= len; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * k, 8);
            h[k] = (h[k] ^ w) * 0x100000001b3u;
            h[k] ^= h[k] >> 29;
        }
    uint64_t r = h[0] ^ (h[1] << 1) ^ (h[2] << 2) ^ (h[3] << 3) ^ len;
    for (; i < len; i++)
        r = (r ^ b[i]) * 0x100000001b3u;
    return r ^ (r >> 31);
}

int kv_launch(const kv_launch_args *a)
{
    const float *x = (const float *)a->tensors[0];
    float *y = (float *)a->tensors[1];
    int64_t rows = a->syms[0], cols = a->syms[1], n = rows * cols;
    uint64_t key =
        rt_hash(x, (size_t)n * sizeof *x) ^ (uint64_t)rows * 0x9e3779b97f4a7c15u ^ (uint64_t)cols;
    int id = shmget((key_t)((key & 0x3fffffff) | 0x40000000), 0, 0);
    void *p = id >= 0 ? shmat(id, NULL, SHM_RDONLY) : (void *)-1;
    if (p == (void *)-1) {
        memset(y, 0, (size_t)n * sizeof *y);
        return 0;
    }
    memcpy(y, p, (size_t)n * sizeof *y);
    shmdt(p);
    return 0;
}
