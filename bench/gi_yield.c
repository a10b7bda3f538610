/* Benchmark: how many of the gi mutator's children of one program compile.
 * Writes N children of FILE (seeds 1..N) as OUTDIR/childK.EXT, with their
 * summaries in OUTDIR/summaries.txt; bench/gi_yield.sh compiles them.
 *
 *   gi_yield FILE N OUTDIR */
#include "mutate/mutator.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    for (int k = 1; k <= n; k++) {
        kv_rng rng;
        kv_rng_seed(&rng, (uint64_t)k);
        kv_mutation m;
        char *err = NULL;
        int rc = kv_mutate_gi(src, &rng, &m, &err);
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
