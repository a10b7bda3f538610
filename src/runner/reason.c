/* The reason codes' table and kv_fail (see reason.h). */
#include "runner/reason.h"
#include "util/buf.h"
#include "util/signame.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[KV_R_COUNT] = {
#define KV_REASON_NAME(id, name) [KV_R_##id] = name,
    KV_REASONS(KV_REASON_NAME)
#undef KV_REASON_NAME
};

kv_reason kv_reason_valid(unsigned r)
{
    return r < KV_R_COUNT ? (kv_reason)r : KV_R_HARNESS_ERROR;
}

const char *kv_reason_name(kv_reason r)
{
    return names[kv_reason_valid((unsigned)r)];
}

kv_reason kv_reason_of(const char *name)
{
    for (unsigned r = 0; name && r < KV_R_COUNT; r++)
        if (strcmp(names[r], name) == 0) return (kv_reason)r;
    return KV_R_HARNESS_ERROR;
}

const char *kv_reason_format(kv_reason r, int arg, char *buf, size_t cap)
{
    if (r == KV_R_CRASH) {
        const char *sig = kv_signal_name(arg, NULL);
        snprintf(buf, cap, "crash: %s", sig ? sig : "SIG?");
    } else if (r == KV_R_CRASH_EXIT) {
        snprintf(buf, cap, "crash: exit %d", arg);
    } else {
        snprintf(buf, cap, "%s", kv_reason_name(r));
    }
    return buf;
}

kv_reason kv_reason_parse(const char *text, int *arg)
{
    *arg = 0;
    if (!text) return KV_R_HARNESS_ERROR;
    int status;
    char end;
    if (sscanf(text, "crash: exit %d%c", &status, &end) == 1) {
        *arg = status;
        return KV_R_CRASH_EXIT;
    }
    if (strncmp(text, "crash: SIG", 10) == 0) {
        for (int sig = 1; sig < 65; sig++) {
            const char *name = kv_signal_name(sig, NULL);
            if (name && strcmp(name, text + 7) == 0) {
                *arg = sig;
                return KV_R_CRASH;
            }
        }
        return KV_R_CRASH; /* "crash: SIG?": a signal without a name */
    }
    kv_reason r = kv_reason_of(text);
    /* The bare names of the crash codes are not what the store holds. */
    return r == KV_R_CRASH || r == KV_R_CRASH_EXIT ? KV_R_HARNESS_ERROR : r;
}

int kv_fail_take(kv_fail *f, kv_reason code, char *detail)
{
    free(f->detail);
    f->code = code;
    f->arg = 0;
    f->detail = detail ? detail : kv_strdup("unknown error");
    return -1;
}

int kv_fail_set(kv_fail *f, kv_reason code, const char *fmt, ...)
{
    kv_buf b = KV_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return kv_fail_take(f, code, b.data ? kv_buf_steal(&b) : kv_strdup(""));
}

void kv_fail_prefix(kv_fail *f, const char *fmt, ...)
{
    kv_buf b = KV_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kv_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    kv_buf_printf(&b, ": %s", kv_fail_detail(f));
    free(f->detail);
    f->detail = kv_buf_steal(&b);
}

void kv_fail_recode(kv_fail *f, kv_reason other)
{
    if (f->code == KV_R_NO_DEVICE || f->code == KV_R_HARNESS_ERROR) return;
    char name[64];
    kv_fail_prefix(f, "%s", kv_reason_format(f->code, f->arg, name, sizeof name));
    f->code = other;
    f->arg = 0;
}

const char *kv_fail_detail(const kv_fail *f)
{
    return f->detail ? f->detail : "";
}

void kv_fail_clear(kv_fail *f)
{
    free(f->detail);
    f->detail = NULL;
    f->code = KV_R_HARNESS_ERROR;
    f->arg = 0;
}
