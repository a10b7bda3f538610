/* JSON helpers on top of jansson. */
#include "util/json.h"
#include "util/buf.h"

#include <math.h>

char *kv_json_dumps(const json_t *v)
{
    if (!v) return kv_strdup("null");
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    return s ? s : kv_strdup("null");
}

json_t *kv_json_loads(const char *text)
{
    if (!text) return NULL;
    json_error_t e;
    return json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
}

double kv_json_number(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}
