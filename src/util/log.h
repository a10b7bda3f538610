/* Logging: leveled messages to stderr and, optionally, to a log file.
 * One global logger; not thread-safe beyond what stdio gives (kevolve's
 * controller is single-threaded; workers are separate processes). */
#ifndef KV_UTIL_LOG_H
#define KV_UTIL_LOG_H

#include <stdarg.h>

typedef enum { KV_LOG_DEBUG = 0, KV_LOG_INFO, KV_LOG_WARN, KV_LOG_ERROR, KV_LOG_OFF } kv_log_level;

/* Sets the lowest level printed on stderr (default INFO). */
void kv_log_set_level(kv_log_level level);
kv_log_level kv_log_get_level(void);
/* Parses "debug", "info", "warning"/"warn", "error" (case-insensitive). Returns 0 on success. */
int kv_log_parse_level(const char *name, kv_log_level *out);
/* Also appends every message (all levels) to PATH; NULL closes the file. Returns 0 or -1. */
int kv_log_open_file(const char *path);
/* When set, stderr output is suppressed below ERROR (file logging goes on). */
void kv_log_set_quiet(int quiet);

void kv_log(kv_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kv_vlog(kv_log_level level, const char *fmt, va_list ap);

#define kv_debug(...) kv_log(KV_LOG_DEBUG, __VA_ARGS__)
#define kv_info(...) kv_log(KV_LOG_INFO, __VA_ARGS__)
#define kv_warn(...) kv_log(KV_LOG_WARN, __VA_ARGS__)
#define kv_error(...) kv_log(KV_LOG_ERROR, __VA_ARGS__)

#endif
