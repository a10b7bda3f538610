/* Logging: a small leveled logger writing to stderr and a run's log file. */
#include "util/log.h"
#include "util/clock.h"

#include <stdio.h>
#include <strings.h>

static kv_log_level g_level = KV_LOG_INFO;
static FILE *g_file;
static int g_quiet;

void kv_log_set_level(kv_log_level level)
{
    g_level = level;
}

kv_log_level kv_log_get_level(void)
{
    return g_level;
}

void kv_log_set_quiet(int quiet)
{
    g_quiet = quiet;
}

int kv_log_parse_level(const char *name, kv_log_level *out)
{
    static const struct {
        const char *name;
        kv_log_level level;
    } names[] = {{"debug", KV_LOG_DEBUG}, {"info", KV_LOG_INFO},   {"warning", KV_LOG_WARN},
                 {"warn", KV_LOG_WARN},   {"error", KV_LOG_ERROR}, {"critical", KV_LOG_ERROR},
                 {"off", KV_LOG_OFF}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(name, names[i].name) == 0) {
            *out = names[i].level;
            return 0;
        }
    }
    return -1;
}

int kv_log_open_file(const char *path)
{
    if (g_file) {
        fclose(g_file);
        g_file = NULL;
    }
    if (!path) return 0;
    g_file = fopen(path, "a");
    return g_file ? 0 : -1;
}

static const char *level_name(kv_log_level level)
{
    switch (level) {
    case KV_LOG_DEBUG:
        return "debug";
    case KV_LOG_INFO:
        return "info";
    case KV_LOG_WARN:
        return "warning";
    case KV_LOG_ERROR:
        return "error";
    default:
        return "";
    }
}

void kv_vlog(kv_log_level level, const char *fmt, va_list ap)
{
    if (level >= KV_LOG_OFF) return;
    if (g_file) {
        va_list copy;
        va_copy(copy, ap);
        char stamp[KV_UTC_STAMP_SIZE];
        kv_utc_stamp(stamp);
        fprintf(g_file, "%s %s: ", stamp, level_name(level));
        vfprintf(g_file, fmt, copy);
        fputc('\n', g_file);
        fflush(g_file);
        va_end(copy);
    }
    if (level < g_level || (g_quiet && level < KV_LOG_ERROR)) return;
    fprintf(stderr, "kevolve: %s: ", level_name(level));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void kv_log(kv_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kv_vlog(level, fmt, ap);
    va_end(ap);
}
