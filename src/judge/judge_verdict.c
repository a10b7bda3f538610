/* A child's verdict, set once (see judge_verdict.h). */
#include "judge/judge_verdict.h"
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>

int kv_verdict_vset(kv_verdict *v, kv_reason code, int arg, const char *fmt, va_list ap)
{
    if (kv_verdict_is_set(v)) return KV_JUDGE_FAILED;
    kv_buf b = KV_BUF_INIT;
    kv_buf_vprintf(&b, fmt, ap);
    v->code = kv_reason_valid(code);
    v->arg = arg;
    v->detail = b.data ? kv_buf_steal(&b) : kv_strdup("");
    return KV_JUDGE_FAILED;
}

int kv_verdict_set(kv_verdict *v, kv_reason code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = kv_verdict_vset(v, code, 0, fmt, ap);
    va_end(ap);
    return rc;
}

int kv_verdict_is_set(const kv_verdict *v)
{
    return v->detail != NULL;
}

void kv_verdict_clear(kv_verdict *v)
{
    free(v->detail);
    v->detail = NULL;
    v->code = KV_R_HARNESS_ERROR;
    v->arg = 0;
}
