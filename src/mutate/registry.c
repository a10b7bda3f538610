/* The table of mutators and the live set of a run (see registry.h). A new
 * mutator is one file defining a kv_mutator_def and one line in MUTATORS
 * below; everything else (the ensemble, the default mix, the messages that
 * list the built-ins) reads the table. */
#include "mutate/registry.h"
#include "util/buf.h"
#include "util/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The table, one line per mutator: X(the kv_mutator_def of its file). The
 * line both declares it and lists it, so no header has to name it. The
 * order is the default mix's draw order: keep it, or seeded runs change. */
#define MUTATORS(X)                                                                                \
    X(kv_mutator_tune_def)                                                                         \
    X(kv_mutator_gi_def)                                                                           \
    X(kv_mutator_crossover_def)                                                                    \
    X(kv_mutator_llm_def)                                                                          \
    EXTRA_MUTATOR(X)

/* A test build of kevolve (tests/CMakeLists.txt: kevolve_extra_mutator)
 * compiles this file again with KV_EXTRA_MUTATOR naming one more
 * kv_mutator_def, to prove that one file and one line are all a mutator
 * takes. A define rather than a registration call: the table stays a
 * constant that no code path can change at run time, and kevolve itself
 * never sets it. */
#ifdef KV_EXTRA_MUTATOR
#define EXTRA_MUTATOR(X) X(KV_EXTRA_MUTATOR)
#else
#define EXTRA_MUTATOR(X)
#endif

#define DECLARE(def) extern const kv_mutator_def def;
#define ENTRY(def) &def,
MUTATORS(DECLARE)
static const kv_mutator_def *const table[] = {MUTATORS(ENTRY)};
#define N_TABLE (sizeof table / sizeof table[0])

/* 1 when DEF is a built-in: an arm reaches it as "builtin:NAME". */
static int is_builtin(const kv_mutator_def *def)
{
    return !(def->needs & KV_MUTATOR_NEEDS_LLM);
}

const kv_mutator_def *kv_mutator_at(size_t i)
{
    return i < N_TABLE ? table[i] : NULL;
}

const kv_mutator_def *kv_mutator_for_arm(const char *arm)
{
    if (!arm) return NULL;
    const char *name = kv_starts_with(arm, "builtin:") ? arm + strlen("builtin:") : arm;
    for (size_t i = 0; i < N_TABLE; i++)
        if (is_builtin(table[i]) && strcmp(table[i]->name, name) == 0) return table[i];
    return name == arm ? &kv_mutator_llm_def : NULL;
}

char *kv_mutator_builtin_names(void)
{
    kv_buf b = KV_BUF_INIT;
    for (size_t i = 0; i < N_TABLE; i++)
        if (is_builtin(table[i]))
            kv_buf_printf(&b, "%sbuiltin:%s", b.len ? ", " : "", table[i]->name);
    return kv_buf_steal(&b);
}

kv_model_config *kv_mutator_default_arms(size_t *n)
{
    kv_model_config *arms = kv_calloc(N_TABLE, sizeof *arms);
    *n = 0;
    for (size_t i = 0; i < N_TABLE; i++) {
        if (!is_builtin(table[i]) || !(table[i]->default_weight > 0)) continue;
        kv_model_config *a = &arms[(*n)++];
        kv_config_model_init(a);
        a->name = kv_asprintf("builtin:%s", table[i]->name);
        a->weight = table[i]->default_weight;
    }
    return arms;
}

void kv_mutation_result_clear(kv_mutation_result *r)
{
    if (!r) return;
    free(r->source);
    free(r->summary);
    free(r->mutator);
    free(r->reason);
    kv_llm_trace_free(r->trace);
    memset(r, 0, sizeof *r);
}

/* One live mutator. */
typedef struct instance {
    const kv_mutator_def *def;
    void *state;
} instance;

struct kv_mutators {
    instance live[N_TABLE]; /* by table position; def NULL when not used */
    size_t *arm_to;         /* arm -> table position, N_TABLE when none */
    size_t n_arms;
    size_t next_poll; /* round robin over the asynchronous ones */
};

/* Position of DEF in the table. */
static size_t position(const kv_mutator_def *def)
{
    for (size_t i = 0; i < N_TABLE; i++)
        if (table[i] == def) return i;
    return N_TABLE;
}

kv_mutators *kv_mutators_new(const kv_mutator_env *env, const kv_model_config *models, size_t n,
                             char **err)
{
    *err = NULL;
    kv_mutators *m = kv_calloc(1, sizeof *m);
    m->n_arms = n;
    m->arm_to = kv_calloc(n ? n : 1, sizeof *m->arm_to);
    for (size_t a = 0; a < n; a++) {
        m->arm_to[a] = N_TABLE;
        if (!(models[a].weight > 0)) continue;
        const kv_mutator_def *def = kv_mutator_for_arm(models[a].name);
        if (!def) {
            char *known = kv_mutator_builtin_names();
            *err = kv_asprintf("llm.models[%zu]: no mutator named '%s' (known: %s)", a,
                               models[a].name ? models[a].name : "", known);
            free(known);
            kv_mutators_free(m);
            return NULL;
        }
        size_t pos = position(def);
        m->arm_to[a] = pos;
        if (m->live[pos].def) continue;
        if ((def->needs & KV_MUTATOR_NEEDS_LLM) && (!env->llm || !env->templates)) {
            *err = kv_asprintf("llm.models[%zu] '%s': the language-model mutator has no client", a,
                               models[a].name);
            kv_mutators_free(m);
            return NULL;
        }
        void *state = NULL;
        if (def->init && def->init(env, &state, err) != 0) {
            if (!*err) *err = kv_asprintf("mutator %s: cannot start", def->name);
            kv_mutators_free(m);
            return NULL;
        }
        m->live[pos] = (instance){def, state};
    }
    return m;
}

void kv_mutators_free(kv_mutators *m)
{
    if (!m) return;
    for (size_t i = 0; i < N_TABLE; i++)
        if (m->live[i].def && m->live[i].def->free) m->live[i].def->free(m->live[i].state);
    free(m->arm_to);
    free(m);
}

const kv_mutator_def *kv_mutators_def(const kv_mutators *m, size_t arm)
{
    if (arm >= m->n_arms || m->arm_to[arm] >= N_TABLE) return NULL;
    return m->live[m->arm_to[arm]].def;
}

int kv_mutators_start(kv_mutators *m, const kv_mutation_request *req, kv_mutation_result *out,
                      char **err)
{
    memset(out, 0, sizeof *out);
    *err = NULL;
    const kv_mutator_def *def = kv_mutators_def(m, req->arm);
    if (!def) {
        *err = kv_asprintf("arm %zu has no mutator", req->arm);
        return -1;
    }
    instance *in = &m->live[m->arm_to[req->arm]];
    int rc = def->start(in->state, req, out, err);
    if (rc == 0) {
        out->ticket = req->ticket;
        out->arm = req->arm;
    }
    return rc;
}

int kv_mutators_poll(kv_mutators *m, int timeout_ms, kv_mutation_result *out, char **err)
{
    memset(out, 0, sizeof *out);
    *err = NULL;
    size_t busy = 0;
    for (size_t i = 0; i < N_TABLE; i++) {
        const instance *in = &m->live[i];
        if (in->def && in->def->poll && in->def->pending && in->def->pending(in->state)) busy++;
    }
    if (busy == 0) return 0;
    /* One waits (when only one is busy, the common case); several share the
     * time in slices. */
    double deadline = kv_now_s() + (timeout_ms > 0 ? timeout_ms : 0) / 1000.0;
    for (;;) {
        for (size_t k = 0; k < N_TABLE; k++) {
            size_t i = (m->next_poll + k) % N_TABLE;
            instance *in = &m->live[i];
            if (!in->def || !in->def->poll || !in->def->pending || !in->def->pending(in->state))
                continue;
            double left = deadline - kv_now_s();
            int wait = busy == 1 && left > 0 ? (int)(left * 1000.0) : 0;
            int rc = in->def->poll(in->state, wait, out, err);
            if (rc != 0) {
                m->next_poll = (i + 1) % N_TABLE;
                return rc;
            }
        }
        if (busy == 1 || kv_now_s() >= deadline) return 0;
        struct timespec slice = {0, 5 * 1000000L};
        nanosleep(&slice, NULL);
    }
}

size_t kv_mutators_pending(const kv_mutators *m)
{
    size_t n = 0;
    for (size_t i = 0; i < N_TABLE; i++) {
        const instance *in = &m->live[i];
        if (in->def && in->def->pending) n += in->def->pending(in->state);
    }
    return n;
}
