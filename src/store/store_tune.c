/* The tune children of a lineage (see store_tune.h): one recursive query up
 * the parent links, joined with each ancestor's tune children and the
 * artifact hashes of both sides. */
#include "store/store_tune.h"
#include "store/store_internal.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>

/* A text column of ST, malloc'd, or NULL when NULL. */
static char *column_text(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? kv_strdup((const char *)t) : NULL;
}

static double column_real(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

int kv_store_tune_history(kv_store *s, int64_t program_id, kv_tune_obs **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    static const char sql[] =
        "WITH RECURSIVE anc(id, depth) AS ("
        " SELECT ?1, 0"
        " UNION ALL"
        " SELECT p.parent_id, anc.depth + 1 FROM programs p JOIN anc ON p.id = anc.id"
        " WHERE p.parent_id IS NOT NULL AND anc.depth + 1 < ?2)"
        " SELECT c.id, c.change_summary, c.status, c.fitness, par.fitness,"
        " COALESCE((SELECT value FROM artifacts WHERE program_id = c.id AND name = "
        "'artifact_hash'),"
        "  (SELECT value FROM artifacts WHERE program_id = c.id"
        "   AND name = 'duplicate_of_artifact')),"
        " (SELECT value FROM artifacts WHERE program_id = par.id AND name = 'artifact_hash'),"
        " anc.depth"
        " FROM anc JOIN programs par ON par.id = anc.id JOIN programs c ON c.parent_id = anc.id"
        " WHERE c.mutator = 'tune' ORDER BY c.id";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return kv_store_db_fail(s, "tune history");
    sqlite3_bind_int64(st, 1, program_id);
    sqlite3_bind_int(st, 2, KV_TUNE_HISTORY_DEPTH);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        kv_status status;
        const unsigned char *name = sqlite3_column_text(st, 2);
        if (!name || kv_status_parse((const char *)name, &status) != 0) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            *out = kv_realloc(*out, cap * sizeof **out);
        }
        kv_tune_obs *o = &(*out)[(*n)++];
        o->id = sqlite3_column_int64(st, 0);
        o->summary = column_text(st, 1);
        o->status = status;
        o->fitness = column_real(st, 3);
        o->parent_fitness = column_real(st, 4);
        o->artifact = column_text(st, 5);
        o->parent_artifact = column_text(st, 6);
        o->depth = sqlite3_column_int(st, 7);
    }
    int result = rc == SQLITE_DONE ? 0 : kv_store_db_fail(s, "tune history");
    sqlite3_finalize(st);
    if (result != 0) {
        kv_tune_obs_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return result;
}

void kv_tune_obs_free(kv_tune_obs *obs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(obs[i].summary);
        free(obs[i].artifact);
        free(obs[i].parent_artifact);
    }
    free(obs);
}
