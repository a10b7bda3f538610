/* Benchmark: how many of the gi mutator's children of one program compile.
 * Writes N children of FILE (seeds 1..N) as OUTDIR/childK.EXT, with their
 * summaries in OUTDIR/summaries.txt; bench/gi_yield.sh compiles them.
 * With "crossover", each child is a crossover of two variants of FILE
 * (each made by two gi and two tune edits), written beside it as
 * OUTDIR/parentaK.EXT and OUTDIR/parentbK.EXT: what crossover makes of
 * two variants of one design, as a run's islands hold them.
 *
 *   gi_yield FILE N OUTDIR [crossover] */
#include "mutate/mutator.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A variant of SRC made by two gi and two tune edits from SEED. */
static char *variant(const char *src, uint64_t seed)
{
    char *cur = kv_strdup(src);
    kv_rng rng;
    kv_rng_seed(&rng, seed ^ 0x9e3779b97f4a7c15u);
    for (int step = 0; step < 4; step++) {
        kv_mutation m;
        char *err = NULL;
        int rc = step % 2 ? kv_mutate_tune(cur, &rng, &m, &err) : kv_mutate_gi(cur, &rng, &m, &err);
        free(err);
        if (rc == 0) {
            free(cur);
            cur = m.source;
            m.source = NULL;
            kv_mutation_free(&m);
        }
    }
    return cur;
}

static int write_or_say(const char *dir, const char *name, int k, const char *ext, const char *text)
{
    char *path = kv_asprintf("%s/%s%d%s", dir, name, k, ext);
    int rc = kv_write_file(path, text, strlen(text));
    if (rc != 0) fprintf(stderr, "gi_yield: cannot write %s\n", path);
    free(path);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gi_yield FILE N OUTDIR\n");
        return 2;
    }
    char *src = kv_read_file(argv[1], NULL);
    if (!src) {
        fprintf(stderr, "gi_yield: cannot read %s\n", argv[1]);
        return 1;
    }
    const char *dot = strrchr(argv[1], '.');
    int n = atoi(argv[2]), made = 0;
    char *sums = kv_asprintf("%s/summaries.txt", argv[3]);
    FILE *f = fopen(sums, "w");
    if (!f) {
        fprintf(stderr, "gi_yield: cannot write %s\n", sums);
        return 1;
    }
    int cross = argc > 4 && strcmp(argv[4], "crossover") == 0;
    for (int k = 1; k <= n; k++) {
        kv_rng rng;
        kv_rng_seed(&rng, (uint64_t)k);
        kv_mutation m;
        char *err = NULL;
        char *pa = cross ? variant(src, 2 * (uint64_t)k) : NULL,
             *pb = cross ? variant(src, 2 * (uint64_t)k + 1) : NULL;
        int rc =
            cross ? kv_mutate_crossover(pa, pb, &rng, &m, &err) : kv_mutate_gi(src, &rng, &m, &err);
        if (rc == 0 && cross &&
            (write_or_say(argv[3], "parenta", k, dot ? dot : "", pa) != 0 ||
             write_or_say(argv[3], "parentb", k, dot ? dot : "", pb) != 0))
            return 1;
        free(pa);
        free(pb);
        if (rc != 0) {
            fprintf(f, "%d none%s%s\n", k, err ? ": " : "", err ? err : "");
            free(err);
            continue;
        }
        char *path = kv_asprintf("%s/child%d%s", argv[3], k, dot ? dot : "");
        if (kv_write_file(path, m.source, strlen(m.source)) != 0) {
            fprintf(stderr, "gi_yield: cannot write %s\n", path);
            return 1;
        }
        fprintf(f, "%d %s\n", k, m.summary);
        made++;
        free(path);
        kv_mutation_free(&m);
    }
    fclose(f);
    printf("%d children of %d draws\n", made, n);
    free(sums);
    free(src);
    return 0;
}
