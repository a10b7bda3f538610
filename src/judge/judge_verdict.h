/* Why a child failed, as the judge found it: a reason code
 * (runner/reason.h: KV_R_WRONG_RESULT, KV_R_CRASH with its signal,
 * KV_R_HARNESS_ERROR, ...) and its detail, set once, by the first failure. Every step of the judge
 * that can fail returns 0, or KV_JUDGE_FAILED once the trial's verdict is set; its caller releases
 * what it took and returns KV_JUDGE_FAILED on, up to the child's end
 * (judge_child.c), which reports the verdict. A later failure (one met
 * while unwinding) never replaces the first. KV_MUST_CHECK makes a caller
 * that drops such a return fail to build. */
#ifndef KV_JUDGE_JUDGE_VERDICT_H
#define KV_JUDGE_JUDGE_VERDICT_H

#include "runner/reason.h"

#include <stdarg.h>

#define KV_JUDGE_FAILED (-1)
#define KV_MUST_CHECK __attribute__((warn_unused_result))

typedef struct kv_verdict {
    kv_reason code;
    int arg;      /* KV_R_CRASH: the signal; KV_R_CRASH_EXIT: the exit status; else 0 */
    char *detail; /* malloc'd; NULL while the child has not failed */
} kv_verdict;

/* Sets V to CODE and the formatted detail, unless it is set already.
 * Returns KV_JUDGE_FAILED either way. */
KV_MUST_CHECK int kv_verdict_set(kv_verdict *v, kv_reason code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with CODE's variable part ARG (a crash's signal or status). */
KV_MUST_CHECK int kv_verdict_vset(kv_verdict *v, kv_reason code, int arg, const char *fmt,
                                  va_list ap) __attribute__((format(printf, 4, 0)));
/* 1 once V is set. */
int kv_verdict_is_set(const kv_verdict *v);
/* V unset again, its detail freed. */
void kv_verdict_clear(kv_verdict *v);

#endif
