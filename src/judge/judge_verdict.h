/* Why a child failed, as the judge found it: a reason code ("wrong_result",
 * "crash: SIGSEGV", "harness_error", ...) and its detail, set once, by the
 * first failure. Every step of the judge that can fail returns 0, or
 * KV_JUDGE_FAILED once the trial's verdict is set; its caller releases
 * what it took and returns KV_JUDGE_FAILED on, up to the child's end
 * (judge_child.c), which reports the verdict. A later failure (one met
 * while unwinding) never replaces the first. KV_MUST_CHECK makes a caller
 * that drops such a return fail to build. */
#ifndef KV_JUDGE_JUDGE_VERDICT_H
#define KV_JUDGE_JUDGE_VERDICT_H

#include <stdarg.h>

#define KV_JUDGE_FAILED (-1)
#define KV_MUST_CHECK __attribute__((warn_unused_result))

typedef struct kv_verdict {
    char code[64]; /* "" while the child has not failed */
    char *detail;  /* malloc'd, NULL while unset */
} kv_verdict;

/* Sets V to CODE and the formatted detail, unless it is set already.
 * Returns KV_JUDGE_FAILED either way. */
KV_MUST_CHECK int kv_verdict_set(kv_verdict *v, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
KV_MUST_CHECK int kv_verdict_vset(kv_verdict *v, const char *code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* 1 once V is set. */
int kv_verdict_is_set(const kv_verdict *v);
/* V unset again, its detail freed. */
void kv_verdict_clear(kv_verdict *v);

#endif
