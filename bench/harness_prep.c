/* Benchmark: the kernel harness's host work to prepare one input set of a
 * big shape, the part of an evaluation that runs on the CPU whatever the
 * device: drawing every input tensor with kv_fill_random (the host image in
 * the tensor's dtype and its values as doubles) and computing the task's
 * double-precision reference once. The inputs are drawn twice: into fresh
 * memory (the first trial of a shape pays the page faults) and again into
 * the same, touched memory (every later trial); then the check of each
 * output against the reference. Prints one row per step
 * with its wall time and the time per element.
 *
 *   harness_prep [task (gqa_attention_decode)] [scenario (decode_16x8_b32_l4096)]
 *                [distribution 0 normal, 1 outliers, 2 small integers (0)]
 *                [fill threads (0: kv_fill_random's own choice)] */
#include "backend/check.h"
#include "backend/dtype.h"
#include "judge/tasks.h"
#include "util/clock.h"
#include "util/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *task_name = argc > 1 ? argv[1] : "gqa_attention_decode";
    const char *shape_name = argc > 2 ? argv[2] : "decode_16x8_b32_l4096";
    int dist = argc > 3 ? atoi(argv[3]) : 0;
    int threads = argc > 4 ? atoi(argv[4]) : 0;
    const kv_task *t = kv_task_find(task_name);
    if (!t || dist < 0 || dist >= KV_DIST_COUNT) {
        fprintf(stderr, "harness_prep: unknown task %s or distribution %d\n", task_name, dist);
        return 2;
    }
    const kv_shape *sh = NULL;
    for (int i = 0; i < t->num_scenarios && !sh; i++)
        if (strcmp(t->scenarios[i].name, shape_name) == 0) sh = &t->scenarios[i];
    if (!sh) {
        fprintf(stderr, "harness_prep: task %s has no scenario %s\n", task_name, shape_name);
        return 2;
    }
    void *img[KV_MAX_TENSORS] = {0};
    double *val[KV_MAX_TENSORS] = {0};
    size_t count[KV_MAX_TENSORS] = {0};
    for (int i = 0; i < t->num_tensors; i++) {
        count[i] = kv_tensor_count(t, i, sh->syms);
        img[i] = malloc(count[i] * kv_dtype_size(t->tensors[i].dtype) + 8);
        val[i] = malloc((count[i] + 1) * sizeof(double));
        if (!img[i] || !val[i]) {
            fprintf(stderr, "harness_prep: out of memory for tensor %s\n", t->tensors[i].name);
            return 1;
        }
    }
    printf("%s / %s, %s inputs, %ld online CPUs, fill threads %d (0: all)\n\n", task_name,
           shape_name, kv_dist_name((kv_dist)dist), sysconf(_SC_NPROCESSORS_ONLN), threads);
    printf("| step | elements | seconds | ns per element |\n|---|---|---|---|\n");
    kv_rng rng;
    kv_rng_seed(&rng, 42);
    double total = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < t->num_tensors; i++) {
            if (t->tensors[i].role != KV_IN) continue;
            double t0 = kv_now_s();
            kv_fill_random_threads(t->tensors[i].dtype, (kv_dist)dist, &rng, count[i], img[i],
                                   val[i], threads);
            double s = kv_now_s() - t0;
            if (pass == 1) total += s;
            printf("| kv_fill_random %s (%s), %s memory | %zu | %.3f | %.2f |\n",
                   t->tensors[i].name, kv_dtype_name(t->tensors[i].dtype),
                   pass ? "touched" : "fresh", count[i], s, s * 1e9 / (double)count[i]);
        }
    double t0 = kv_now_s();
    t->reference(sh->syms, val);
    double s = kv_now_s() - t0;
    total += s;
    size_t out = 0;
    for (int i = 0; i < t->num_tensors; i++)
        if (t->tensors[i].role == KV_OUT) out += count[i];
    printf("| reference | %zu outputs | %.3f | |\n", out, s);
    printf("| total, touched memory | | %.3f | |\n", total);
    /* The check of each output against the reference (its image rounded
     * from the reference's values), on one thread and on the fill's
     * choice of threads, and the comparison of two identical runs that
     * differ in their last element. */
    for (int i = 0; i < t->num_tensors; i++) {
        if (t->tensors[i].role != KV_OUT) continue;
        kv_dtype dt = t->tensors[i].dtype;
        for (size_t k = 0; k < count[i]; k++)
            kv_dtype_store(dt, img[i], k, val[i][k]);
        for (int th = 1; th >= 0; th--) {
            kv_check c;
            t0 = kv_now_s();
            kv_check_output_threads(dt, img[i], val[i], NULL, count[i], NULL, t->tol[dt], &c,
                                    th ? 1 : threads);
            s = kv_now_s() - t0;
            printf("| kv_check_output %s, %s | %zu | %.3f | %.2f |\n", t->tensors[i].name,
                   th ? "1 thread" : "fill's threads", count[i], s, s * 1e9 / (double)count[i]);
        }
        size_t es = kv_dtype_size(dt), first = 0;
        char *twin = malloc(count[i] * es + 8);
        if (!twin || !count[i]) {
            free(twin);
            continue;
        }
        memcpy(twin, img[i], count[i] * es);
        kv_dtype_store(dt, twin, count[i] - 1, val[i][count[i] - 1] + 1.0);
        int bitwise = 0;
        t0 = kv_now_s();
        kv_compare_runs(dt, img[i], twin, val[i], NULL, count[i], t->tol[dt], &bitwise, &first);
        s = kv_now_s() - t0;
        printf("| kv_compare_runs %s | %zu | %.3f | %.2f |\n", t->tensors[i].name, count[i], s,
               s * 1e9 / (double)count[i]);
        free(twin);
    }
    for (int i = 0; i < t->num_tensors; i++) {
        free(img[i]);
        free(val[i]);
    }
    return 0;
}
