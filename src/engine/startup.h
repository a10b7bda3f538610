/* Start-up checks: what can be known wrong about a run before it spends
 * anything, said before it runs (exit 2), rather than a run that goes on
 * and silently does nothing useful. The config alone is validated in
 * src/config; these need the initial program, or its first evaluation. */
#ifndef KV_ENGINE_STARTUP_H
#define KV_ENGINE_STARTUP_H

#include "config/config.h"

#include <jansson.h>

/* Checks the initial program SOURCE (read from PATH) against CFG: a program
 * over max_code_length would have every child rejected. Returns 0, or -1
 * with a malloc'd message in *ERR. */
int kv_startup_check(const kv_config *cfg, const char *path, const char *source, char **err);

/* After the first evaluation: every feature dimension must be built in
 * (complexity, diversity, score) or a numeric metric the evaluator reported
 * in METRICS; an unknown one would put every program in bin 0. Returns 0,
 * or -1 with a malloc'd message naming the unknown dimension and the
 * metrics that exist. */
int kv_startup_check_features(const kv_config *cfg, const json_t *metrics, char **err);

#endif
