/* Language-model calls in the store, and the lineage queries prompts need. */
#include "store/store_internal.h"
#include "util/buf.h"

#include <stdlib.h>
#include <time.h>

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

int kv_store_insert_llm_call(kv_store *s, const kv_llm_call_record *r, int64_t program_id)
{
    static const char sql[] =
        "INSERT INTO llm_calls (program_id, iteration, model, endpoint, system_prompt, "
        "user_prompt, reply, prompt_tokens, completion_tokens, cost_usd, latency_s, attempts, "
        "http_status, outcome, error, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return kv_store_db_fail(s, "insert llm call");
    if (program_id > 0)
        sqlite3_bind_int64(st, 1, program_id);
    else
        sqlite3_bind_null(st, 1);
    sqlite3_bind_int64(st, 2, r->iteration);
    bind_text_or_null(st, 3, r->model);
    bind_text_or_null(st, 4, r->endpoint);
    bind_text_or_null(st, 5, r->system_prompt);
    bind_text_or_null(st, 6, r->user_prompt);
    bind_text_or_null(st, 7, r->reply);
    sqlite3_bind_int64(st, 8, r->prompt_tokens);
    sqlite3_bind_int64(st, 9, r->completion_tokens);
    sqlite3_bind_double(st, 10, r->cost_usd);
    sqlite3_bind_double(st, 11, r->latency_s);
    sqlite3_bind_int(st, 12, r->attempts);
    sqlite3_bind_int64(st, 13, r->http_status);
    bind_text_or_null(st, 14, r->outcome);
    bind_text_or_null(st, 15, r->error);
    sqlite3_bind_double(st, 16, (double)time(NULL));
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : kv_store_db_fail(s, "insert llm call");
    sqlite3_finalize(st);
    return rc;
}

int kv_store_recent_children(kv_store *s, int64_t parent_id, int limit, kv_program ***out)
{
    *out = NULL;
    if (limit <= 0) return 0;
    sqlite3_stmt *st = NULL;
    /* The newest LIMIT, then oldest first. */
    static const char sql[] = "SELECT * FROM (SELECT " KV_PROGRAM_COLUMNS(
        "NULL") " FROM programs WHERE parent_id = ? AND status != 'duplicate' AND is_migrant = 0 "
                "ORDER BY id DESC LIMIT ?) ORDER BY id";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return kv_store_db_fail(s, "recent children");
    sqlite3_bind_int64(st, 1, parent_id);
    sqlite3_bind_int(st, 2, limit);
    kv_program **list = kv_calloc((size_t)limit, sizeof *list);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < limit) {
        kv_program *p = kv_store_read_program(s, st);
        if (!p) break;
        list[n++] = p;
    }
    int failed = rc != SQLITE_ROW && rc != SQLITE_DONE;
    sqlite3_finalize(st);
    if (failed || (rc == SQLITE_ROW && n < limit)) {
        for (int i = 0; i < n; i++)
            kv_program_free(list[i]);
        free(list);
        return failed ? kv_store_db_fail(s, "recent children") : -1;
    }
    *out = list;
    return n;
}

int kv_store_llm_totals(kv_store *s, double *cost_usd, int64_t *prompt_tokens,
                        int64_t *completion_tokens, int64_t *calls)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT coalesce(sum(cost_usd),0), coalesce(sum(prompt_tokens),0), "
                           "coalesce(sum(completion_tokens),0), count(*) FROM llm_calls",
                           -1, &st, NULL) != SQLITE_OK)
        return kv_store_db_fail(s, "llm totals");
    int rc = -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *cost_usd = sqlite3_column_double(st, 0);
        *prompt_tokens = sqlite3_column_int64(st, 1);
        *completion_tokens = sqlite3_column_int64(st, 2);
        *calls = sqlite3_column_int64(st, 3);
        rc = 0;
    } else {
        kv_store_db_fail(s, "llm totals");
    }
    sqlite3_finalize(st);
    return rc;
}
