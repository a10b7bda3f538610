/* Benchmark: how often crossover makes a child out of a run's programs.
 * For every ordered pair of evaluated programs in RUN_DB (status ok) it
 * calls kv_mutate_crossover with SEEDS seeds and counts the calls that
 * returned a child, and of those the children whose source is not already
 * in the store (a combination the run has not evaluated). When crossover
 * returns no child, the controller falls back to another mutator, so this
 * is the share of crossover draws that really cross.
 *
 *   crossover_yield RUN_DB [seeds (4)] */
#include "mutate/mutator.h"
#include "util/rng.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: crossover_yield RUN_DB [seeds]\n");
        return 2;
    }
    int seeds = argc > 2 ? atoi(argv[2]) : 4;
    sqlite3 *db;
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "crossover_yield: cannot open %s: %s\n", argv[1], sqlite3_errmsg(db));
        return 1;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "select distinct source from programs where status = 'ok'", -1, &st,
                           NULL) != SQLITE_OK) {
        fprintf(stderr, "crossover_yield: %s\n", sqlite3_errmsg(db));
        return 1;
    }
    char **src = NULL;
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        src = realloc(src, (n + 1) * sizeof *src);
        src[n++] = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    long calls = 0, children = 0, fresh = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            if (i == j) continue;
            for (int s = 0; s < seeds; s++) {
                kv_rng rng;
                kv_rng_seed(&rng, (uint64_t)(i * n + j) * 1000 + (uint64_t)s);
                kv_mutation m;
                char *err = NULL;
                calls++;
                if (kv_mutate_crossover(src[i], src[j], &rng, &m, &err) != 0) {
                    free(err);
                    continue;
                }
                children++;
                int known = 0;
                for (size_t k = 0; k < n && !known; k++)
                    known = strcmp(m.source, src[k]) == 0;
                fresh += !known;
                kv_mutation_free(&m);
            }
        }
    printf("%zu distinct programs, %ld crossover calls: %ld children (%.1f%%), %ld of them "
           "not in the store (%.1f%% of calls)\n",
           n, calls, children, 100.0 * (double)children / (double)calls, fresh,
           100.0 * (double)fresh / (double)calls);
    for (size_t i = 0; i < n; i++)
        free(src[i]);
    free(src);
    return 0;
}
