/* A user of a library exported by kevolve (tests/integration/test_export.sh):
 * compiled against the export's header and source as a user would, it calls
 * the entry point of a gqa_attention export for the cpu backend on random
 * bf16 inputs at shapes of every kind, most of them no scenario's, and
 * checks every output element against a float64 reference with the task's
 * tolerance (|o - ref| <= 1e-5 + 1e-2 |ref| + 2^-5 sum p|v| / sum p). It
 * also checks that a layout the kernels do not take is refused and that the
 * dispatcher sends a decode call to a decode scenario. Prints a line per
 * shape; exits 1 at the first failure.
 * Build: cc -DENTRY=kevolve_TASK -DHEADER='"kevolve_TASK.h"' -I DIR -I DIR/include
 *        export_user.c DIR/kevolve_TASK.c -lm -lpthread
 * With -DRMSNORM it also calls an rmsnorm export (kevolve_rmsnorm.h on the
 * include path, its library or source linked in) and checks it against
 * its float64 reference: two exports in one program must each compute
 * their own task, whatever the order they are linked in. */
#include HEADER
#ifdef RMSNORM
#include "kevolve_rmsnorm.h"
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

static uint64_t state = 88172645463325252ull;

static double uniform(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (double)(state >> 11) / 9007199254740992.0;
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t *random_bf16(size_t n)
{
    uint16_t *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = to_bf16((float)(4.0 * uniform() - 2.0));
    return x;
}

/* Checks the library at B, HQ, HKV, SQ, L (D = 128). Returns 0 or 1. */
static int check(const char *what, int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t l)
{
    const int64_t d = 128, syms[6] = {b, hq, hkv, sq, l, d};
    size_t nq = (size_t)(b * hq * sq * d), nk = (size_t)(b * hkv * l * d);
    uint16_t *q = random_bf16(nq), *k = random_bf16(nk), *v = random_bf16(nk);
    uint16_t *o = calloc(nq, sizeof *o);
    void *tensors[4] = {q, k, v, o};
    int rc = ENTRY(tensors, syms, NULL, NULL);
    if (rc != 0) {
        printf("%s: the entry point returned %d\n", what, rc);
        return 1;
    }
    double worst = 0, *p = malloc((size_t)l * sizeof *p);
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t h = 0; h < hq; h++)
            for (int64_t i = 0; i < sq; i++) {
                const uint16_t *qr = q + ((bi * hq + h) * sq + i) * d;
                int64_t kvh = h / (hq / hkv), last = l - sq + i;
                double m = -INFINITY, sum = 0;
                for (int64_t j = 0; j <= last; j++) {
                    const uint16_t *kr = k + ((bi * hkv + kvh) * l + j) * d;
                    double s = 0;
                    for (int64_t x = 0; x < d; x++)
                        s += from_bf16(qr[x]) * from_bf16(kr[x]);
                    p[j] = s / sqrt((double)d);
                    if (p[j] > m) m = p[j];
                }
                for (int64_t j = 0; j <= last; j++)
                    sum += (p[j] = exp(p[j] - m));
                for (int64_t x = 0; x < d; x++) {
                    double ref = 0, scale = 0;
                    for (int64_t j = 0; j <= last; j++) {
                        double vv = from_bf16(v[((bi * hkv + kvh) * l + j) * d + x]);
                        ref += p[j] * vv;
                        scale += p[j] * fabs(vv);
                    }
                    ref /= sum;
                    scale /= sum;
                    double got = from_bf16(o[((bi * hq + h) * sq + i) * d + x]);
                    double ratio = fabs(got - ref) / (1e-5 + 1e-2 * fabs(ref) + scale / 32);
                    if (!(ratio <= worst)) worst = ratio;
                }
            }
    int scen = CAT(ENTRY, _scenario)(syms);
    printf("%-34s scenario %-24s worst error %.3f of the tolerance\n", what,
           CAT(ENTRY, _scenario_name)(scen), worst);
    free(p);
    free(q);
    free(k);
    free(v);
    free(o);
    return !(worst <= 1.0);
}

#ifdef RMSNORM
/* Checks the rmsnorm export at TOKENS x HIDDEN: y = x / sqrt(mean(x^2) +
 * 1e-6) * w per row, within the task's bf16 tolerance (1e-5 + 2^-6 |y|).
 * Returns 0 or 1. */
static int check_rmsnorm(int64_t tokens, int64_t hidden)
{
    const int64_t syms[2] = {tokens, hidden};
    size_t n = (size_t)(tokens * hidden);
    uint16_t *x = random_bf16(n), *w = random_bf16((size_t)hidden), *y = calloc(n, sizeof *y);
    void *tensors[3] = {x, w, y};
    int rc = kevolve_rmsnorm(tensors, syms, NULL, NULL);
    double worst = 0;
    for (int64_t t = 0; t < tokens && rc == 0; t++) {
        double ms = 0;
        for (int64_t c = 0; c < hidden; c++)
            ms += from_bf16(x[t * hidden + c]) * from_bf16(x[t * hidden + c]);
        double inv = 1 / sqrt(ms / (double)hidden + 1e-6);
        for (int64_t c = 0; c < hidden; c++) {
            double ref = from_bf16(x[t * hidden + c]) * inv * from_bf16(w[c]);
            double ratio = fabs(from_bf16(y[t * hidden + c]) - ref) / (1e-5 + fabs(ref) / 64);
            if (!(ratio <= worst)) worst = ratio;
        }
    }
    printf("rmsnorm %lldx%-24lld rc %d, worst error %.3f of the tolerance\n", (long long)tokens,
           (long long)hidden, rc, worst);
    free(x);
    free(w);
    free(y);
    return rc != 0 || !(worst <= 1.0);
}
#endif

int main(void)
{
    int bad = 0;
#ifdef RMSNORM
    bad |= check_rmsnorm(3, 1000);
    bad |= check_rmsnorm(64, 1024);
#endif
    bad |= check("decode 16:8, B=1, L=300", 1, 16, 8, 1, 300);
    bad |= check("decode 40:8, B=2, L=77", 2, 40, 8, 1, 77);
    bad |= check("decode 16:8, B=3, L=1000", 3, 16, 8, 1, 1000);
    bad |= check("prefill 16:8, S=50", 1, 16, 8, 50, 50);
    bad |= check("chunked prefill 40:8, 9 on 123", 1, 40, 8, 9, 123);
    bad |= check("one key", 1, 16, 8, 1, 1);
    /* A layout the kernels do not take is refused, not misread. */
    int64_t syms[6] = {1, 16, 8, 1, 64, 128};
    int64_t odd[4] = {16 * 128, 128, 128, 2}; /* every other element */
    const int64_t *strides[4] = {odd, NULL, NULL, NULL};
    void *none[4] = {NULL, NULL, NULL, NULL};
    if (ENTRY(none, syms, strides, NULL) != -2) {
        printf("strided q was not refused\n");
        bad = 1;
    }
    const char *name = CAT(ENTRY, _scenario_name)(CAT(ENTRY, _scenario)(syms));
    if (!name || strncmp(name, "decode", 6) != 0) {
        printf("a decode call went to scenario %s\n", name ? name : "(none)");
        bad = 1;
    }
    printf(bad ? "FAILED\n" : "ok\n");
    return bad;
}
