/* LLM feedback (evaluator.use_llm_feedback): one of llm.evaluator_models
 * grades each evaluated child; the grades become metrics and blend into
 * combined_score. The feedback holds the children waiting for their grade
 * and hands each back, graded, for the controller to commit: it sees the
 * config, the LLM client and the templates, never the controller. */
#ifndef KV_ENGINE_LLM_FEEDBACK_H
#define KV_ENGINE_LLM_FEEDBACK_H

#include "config/config.h"
#include "engine/origin.h"
#include "llm/client.h"
#include "llm/trace.h"
#include "mutate/prompt.h"
#include "store/program.h"

#include <stddef.h>
#include <stdint.h>

/* An evaluated child waiting for its grade. */
typedef struct kv_grading {
    int64_t ticket;
    kv_program *child;
    kv_llm_trace *origin_trace; /* the call that made CHILD, or NULL */
    kv_origin origin;
    char *system_prompt, *user_prompt; /* redacted, for the store */
} kv_grading;

/* A child to commit: graded (FEEDBACK the grading call) or not gradable
 * (FEEDBACK NULL, the reason in its artifacts); every pointer the
 * receiver's. */
typedef struct kv_graded {
    kv_program *child;
    kv_llm_trace *trace, *feedback;
    kv_origin origin;
} kv_graded;

typedef struct kv_feedback {
    const kv_config *cfg;                 /* borrowed */
    kv_llm_client *llm;                   /* borrowed: the LLM mutator's client */
    const kv_prompt_templates *templates; /* borrowed */
    uint64_t seed;
    kv_grading *gradings;
    size_t n_gradings, cap_gradings;
} kv_feedback;

/* Readies F over the run's config, client and templates (borrowed). */
void kv_feedback_init(kv_feedback *f, const kv_config *cfg, kv_llm_client *llm,
                      const kv_prompt_templates *templates, uint64_t seed);
/* Frees the gradings still waiting (their children unstored). */
void kv_feedback_free(kv_feedback *f);
/* Asks for the grade of CHILD (taken, with TRACE). Returns 0 when it waits
 * for the reply, 1 when no grade is to be had (the budget is spent): *NOW
 * is then the child to commit as it is. */
int kv_feedback_start(kv_feedback *f, kv_program *child, kv_llm_trace *trace, kv_origin origin,
                      kv_graded *now);
/* One grading that finished within TIMEOUT_MS, its grades merged into its
 * child's metrics: 1 with *DONE, 0 when none finished, -1 when the client
 * failed (logged). */
int kv_feedback_next(kv_feedback *f, int timeout_ms, kv_graded *done);

#endif
