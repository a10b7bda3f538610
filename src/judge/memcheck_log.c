/* Reading compute-sanitizer's memcheck report (see memcheck_log.h). */
#include "judge/memcheck_log.h"
#include "util/buf.h"

#include <string.h>

char *kv_memcheck_first_error(const char *log)
{
    if (!log) return NULL;
    const char *first = strstr(log, "========= Invalid");
    if (!first) first = strstr(log, "========= Program hit");
    const char *summary = strstr(log, "ERROR SUMMARY:");
    if (!first && summary && !strstr(summary, "ERROR SUMMARY: 0 errors")) first = summary;
    /* At most 300 bytes, never past the log's end. */
    return first ? kv_strndup(first, strnlen(first, 300)) : NULL;
}
