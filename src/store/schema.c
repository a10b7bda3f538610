/* The store's schema as a list of migrations. Migration N takes a store from
 * schema version N-1 to N. To add a table, index or column: append a
 * migration to `migrations` (never edit a released one); kv_store_open runs
 * the missing ones when it opens an older store read-write.
 *
 * Conventions: JSON is kept as compact text (columns named for what they
 * hold: metrics, features, data, ...); a missing lineage link (parent,
 * migration source) is NULL, not 0; code_hash is 16 lowercase hex digits
 * (SQLite integers are signed, the hash is not); fitness NULL means NaN.
 * Lineage columns carry no foreign key on purpose: a dangling link must
 * never cost the record of an evaluated program. Rows that belong to a
 * program (evaluations, artifacts) do reference it. */
#include "store/schema.h"
#include "util/buf.h"

#include <stddef.h>
#include <stdlib.h>

/* Version 1: programs with their evaluations and artifacts, events, meta.
 * application_id 0x6b65766f ("kevo") marks the file for tools like file(1). */
static const char *const schema_v1[] = {
    "PRAGMA application_id = 1801811567",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE programs ("
    " id INTEGER PRIMARY KEY,"
    " parent_id INTEGER,"       /* NULL for an initial program */
    " other_parent_id INTEGER," /* second parent of a crossover, else NULL */
    " island INTEGER NOT NULL,"
    " generation INTEGER NOT NULL,"
    " iteration INTEGER NOT NULL,"
    " source TEXT,"
    " mutator TEXT,"
    " change_summary TEXT,"
    " metrics TEXT,"         /* JSON object */
    " features TEXT,"        /* JSON object: dimension -> bin */
    " fitness REAL,"         /* NULL when NaN */
    " status TEXT NOT NULL," /* kv_status_name() */
    " status_reason TEXT,"
    " is_migrant INTEGER NOT NULL DEFAULT 0,"
    " migrated_from INTEGER,"   /* NULL unless a migrant */
    " code_hash TEXT NOT NULL," /* 16 hex digits */
    " created_at REAL,"
    " eval_seconds REAL)",
    "CREATE INDEX programs_code_hash ON programs(code_hash)",
    "CREATE INDEX programs_fitness ON programs(fitness)",
    "CREATE INDEX programs_status ON programs(status)",
    "CREATE INDEX programs_parent ON programs(parent_id)",
    "CREATE INDEX programs_island ON programs(island)",
    "CREATE INDEX programs_iteration ON programs(iteration)",
    /* One row per cascade stage. Keys of a stage object other than these
     * columns (or of another JSON type) are kept in extra (JSON object). */
    "CREATE TABLE evaluations ("
    " id INTEGER PRIMARY KEY,"
    " program_id INTEGER NOT NULL REFERENCES programs(id) ON DELETE CASCADE,"
    " stage INTEGER NOT NULL,"
    " status TEXT,"
    " metrics TEXT," /* JSON */
    " seconds REAL,"
    " reason TEXT,"
    " extra TEXT)",
    "CREATE INDEX evaluations_program ON evaluations(program_id)",
    /* The UNIQUE index also serves lookups by program_id. */
    "CREATE TABLE artifacts ("
    " id INTEGER PRIMARY KEY,"
    " program_id INTEGER NOT NULL REFERENCES programs(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL,"
    " value TEXT,"
    " is_json INTEGER NOT NULL," /* 0: value is the string; 1: value is JSON text */
    " UNIQUE (program_id, name))",
    "CREATE TABLE events ("
    " id INTEGER PRIMARY KEY,"
    " time REAL NOT NULL," /* unix time, seconds */
    " kind TEXT NOT NULL,"
    " data TEXT)", /* JSON, or NULL */
    /* One row per language-model call: the prompt (secrets redacted), the
     * reply, usage and outcome, and the child it produced (NULL when none). */
    "CREATE TABLE llm_calls ("
    " id INTEGER PRIMARY KEY,"
    " program_id INTEGER REFERENCES programs(id) ON DELETE SET NULL,"
    " iteration INTEGER,"
    " model TEXT,"
    " endpoint TEXT,"
    " system_prompt TEXT,"
    " user_prompt TEXT,"
    " reply TEXT,"
    " prompt_tokens INTEGER,"
    " completion_tokens INTEGER,"
    " cost_usd REAL,"
    " latency_s REAL,"
    " attempts INTEGER,"
    " http_status INTEGER,"
    " outcome TEXT," /* "child", "rejected: ...", "error: ..." */
    " error TEXT,"
    " created_at REAL)",
    "CREATE INDEX llm_calls_program ON llm_calls(program_id)",
    NULL,
};

/* Version 2: failures and duplicates say why in a short code, a duplicate
 * points at the program it repeats, and the mutators' statistics (the
 * bandit that chooses among them) survive a resume. */
static const char *const schema_v2[] = {
    /* A short code for why a program is not ok: the kernel harness's
     * artifacts.reason ("compile_error", "wrong_result", ...) or the
     * controller's own ("evaluator_crash", "non_finite_fitness", ...);
     * NULL when ok. status_reason keeps the long text. */
    "ALTER TABLE programs ADD COLUMN reason_code TEXT",
    /* The program a duplicate repeats (same code, or same compiled artifact). */
    "ALTER TABLE programs ADD COLUMN duplicate_of INTEGER",
    "CREATE INDEX programs_reason ON programs(status, reason_code)",
    /* Compiled artifacts by hash: a child whose artifact was judged already
     * is a duplicate of the program that carries it. */
    "CREATE INDEX artifacts_artifact_hash ON artifacts(value) WHERE name = 'artifact_hash'",
    /* One row per mutator arm (builtin:tune, a model name, ...): how often the
     * bandit drew it and what its children gave (see src/mutate/bandit.h). */
    "CREATE TABLE mutator_stats ("
    " arm TEXT PRIMARY KEY,"
    " draws INTEGER NOT NULL DEFAULT 0,"     /* children (or failed calls) with a known outcome */
    " successes INTEGER NOT NULL DEFAULT 0," /* children that beat their parent */
    " failures INTEGER NOT NULL DEFAULT 0,"  /* children failed, timed out or rejected; failed calls
                                              */
    " reward_sum REAL NOT NULL DEFAULT 0,"   /* sum of fitness gain per second of evaluation */
    " weight REAL,"                          /* the arm's share of the next draws */
    " updated_at REAL)",                     /* unix time, seconds */
    NULL,
};

/* Version 3: a kernel program's results per scenario as rows (written
 * with the program, in its transaction), which screening, status, the
 * dashboard and the export read; older stores get them from the harness's
 * "scenarios" artifact. CREATE says where the rows go (the shim of a
 * read-only connection makes them a temporary table), PROGRAM_REF how they
 * name their program. */
#define SCENARIO_TABLE(create, program_ref)                                                        \
    create " scenario_results ("                                                                   \
           " program_id INTEGER NOT NULL" program_ref ","                                          \
           " scenario TEXT NOT NULL,"                                                              \
           " task TEXT,"                                                                           \
           " backend TEXT,"                                                                        \
           " device TEXT,"          /* the device's name */                                        \
           " device_index INTEGER," /* the backend's numbering */                                  \
           " kind TEXT,"            /* the scenario's first tag: decode, prefill, ... */           \
           " weight REAL,"                                                                         \
           " median_us REAL,"                                                                      \
           " iqr_us REAL,"                                                                         \
           " baseline_us REAL," /* the task's baseline, on the same device */                      \
           " speedup REAL,"                                                                        \
           " roofline_fraction REAL,"                                                              \
           " max_abs_err REAL,"                                                                    \
           " tol_ratio REAL,"                                                                      \
           " screened INTEGER NOT NULL DEFAULT 0," /* the screen stopped the program here */       \
           " energy_j REAL,"                       /* per call, where a counter measured it */     \
           " PRIMARY KEY (program_id, scenario))"
/* The rows of programs stored before: from each program's harness
 * artifacts (a duplicate repeats another's verdict: no rows). */
#define SCENARIO_BACKFILL                                                                          \
    "WITH kept AS MATERIALIZED (SELECT program_id, value FROM artifacts"                           \
    " WHERE name = 'scenarios' AND is_json = 1 AND json_valid(value)"                              \
    " AND json_type(value) = 'array')"                                                             \
    " INSERT OR IGNORE INTO scenario_results (program_id, scenario, task, backend, device,"        \
    " device_index, kind, weight, median_us, iqr_us, baseline_us, speedup, roofline_fraction,"     \
    " max_abs_err, tol_ratio, screened)"                                                           \
    " SELECT a.program_id, json_extract(e.value, '$.name'),"                                       \
    " (SELECT value FROM artifacts WHERE program_id = a.program_id AND name = 'task'),"            \
    " (SELECT value FROM artifacts WHERE program_id = a.program_id AND name = 'backend'),"         \
    " (SELECT json_extract(value, '$.name') FROM artifacts"                                        \
    "  WHERE program_id = a.program_id AND name = 'device' AND is_json = 1),"                      \
    " (SELECT json_extract(value, '$.index') FROM artifacts"                                       \
    "  WHERE program_id = a.program_id AND name = 'device' AND is_json = 1),"                      \
    " CASE WHEN instr(ifnull(json_extract(e.value, '$.tags'), ''), ',') > 0"                       \
    "  THEN substr(json_extract(e.value, '$.tags'), 1,"                                            \
    "   instr(json_extract(e.value, '$.tags'), ',') - 1)"                                          \
    "  ELSE json_extract(e.value, '$.tags') END,"                                                  \
    " json_extract(e.value, '$.weight'), json_extract(e.value, '$.median_us'),"                    \
    " json_extract(e.value, '$.iqr_us'), json_extract(e.value, '$.baseline_median_us'),"           \
    " json_extract(e.value, '$.speedup'), json_extract(e.value, '$.roofline_fraction'),"           \
    " json_extract(e.value, '$.max_abs_err'), json_extract(e.value, '$.tol_ratio'),"               \
    " ifnull(json_extract(p.metrics, '$.screened_out'), 0)"                                        \
    " FROM kept a JOIN programs p ON p.id = a.program_id, json_each(a.value) e"                    \
    " WHERE p.status != 'duplicate' AND json_extract(e.value, '$.median_us') IS NOT NULL"

static const char *const schema_v3[] = {
    SCENARIO_TABLE("CREATE TABLE", " REFERENCES programs(id) ON DELETE CASCADE"),
    "CREATE INDEX scenario_results_scenario ON scenario_results(scenario, speedup)",
    SCENARIO_BACKFILL,
    NULL,
};

/* What a read-only connection to a version-2 store adds in its own
 * temporary schema, so that it reads like version 3 without a write. */
static const char *const shim_v3[] = {
    SCENARIO_TABLE("CREATE TEMP TABLE", ""), /* a temporary table cannot reference main's */
    SCENARIO_BACKFILL,
    NULL,
};

/* migrations[i] takes the schema from version i to i + 1. */
static const char *const *const migrations[] = {
    schema_v1,
    schema_v2,
    schema_v3,
};

#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

int kv_schema_version(void)
{
    return SCHEMA_VERSION;
}

/* Runs one statement; returns 0, or -1 with *err set. */
static int exec(sqlite3 *db, const char *sql, int version, char **err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
    *err = kv_asprintf("schema migration to version %d failed: %s (in: %.60s)", version,
                       msg ? msg : sqlite3_errmsg(db), sql);
    sqlite3_free(msg);
    return -1;
}

int kv_schema_migrate(sqlite3 *db, int from, char **err)
{
    if (from < 0 || from > SCHEMA_VERSION) {
        *err = kv_asprintf("cannot migrate from schema version %d (this build knows 0..%d)", from,
                           SCHEMA_VERSION);
        return -1;
    }
    for (int v = from; v < SCHEMA_VERSION; v++) {
        for (const char *const *sql = migrations[v]; *sql; sql++) {
            if (exec(db, *sql, v + 1, err) != 0) return -1;
        }
    }
    char *set = kv_asprintf("INSERT INTO meta(key, value) VALUES('schema_version', '%d')"
                            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                            SCHEMA_VERSION);
    int rc = exec(db, set, SCHEMA_VERSION, err);
    free(set);
    return rc;
}

int kv_schema_read_shim(sqlite3 *db, int from, char **err)
{
    if (from == SCHEMA_VERSION) return 0;
    if (from != 2) {
        *err = kv_asprintf("schema version %d is older than this kevolve's %d; open it"
                           " read-write once (e.g. kevolve resume) to upgrade it",
                           from, SCHEMA_VERSION);
        return -1;
    }
    for (const char *const *sql = shim_v3; *sql; sql++)
        if (exec(db, *sql, SCHEMA_VERSION, err) != 0) return -1;
    return 0;
}
