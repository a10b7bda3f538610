/* JSON helpers on top of jansson. */
#ifndef KV_UTIL_JSON_H
#define KV_UTIL_JSON_H

#include <jansson.h>

/* Compact JSON text of V (malloc'd; "null" for NULL). */
char *kv_json_dumps(const json_t *v);
/* Parses TEXT; NULL when it is not JSON (or TEXT is NULL). */
json_t *kv_json_loads(const char *text);
/* Number V as double, NAN when not a number. */
double kv_json_number(const json_t *v);

#endif
