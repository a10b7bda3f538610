/* Template stochasticity, as OpenEvolve does it: for each placeholder of
 * prompt.template_variations found in the user template, one of its
 * phrasings is drawn and replaces every "{placeholder}" there, before the
 * template is filled. The draw comes from a seed the caller derives from the
 * run's seed, so a run stays reproducible. */
#include "mutate/prompt.h"
#include "util/buf.h"
#include "util/rng.h"

#include <stdlib.h>
#include <string.h>

/* TEXT with every occurrence of NEEDLE replaced by WITH (malloc'd). */
static char *replace_all(const char *text, const char *needle, const char *with)
{
    kv_buf b = KV_BUF_INIT;
    size_t n = strlen(needle);
    for (const char *p = text;;) {
        const char *hit = strstr(p, needle);
        if (!hit) {
            kv_buf_puts(&b, p);
            break;
        }
        kv_buf_append(&b, p, (size_t)(hit - p));
        kv_buf_puts(&b, with);
        p = hit + n;
    }
    return kv_buf_steal(&b);
}

char *kv_prompt_vary(const char *tpl, const json_t *variations, uint64_t seed)
{
    char *out = kv_strdup(tpl ? tpl : "");
    if (!json_is_object(variations)) return out;
    kv_rng rng;
    kv_rng_seed(&rng, seed);
    const char *key;
    json_t *list;
    json_object_foreach((json_t *)variations, key, list)
    {
        size_t n = json_array_size(list);
        if (n == 0) continue;
        char *needle = kv_asprintf("{%s}", key);
        if (strstr(out, needle)) {
            const char *phrase = json_string_value(json_array_get(list, kv_rng_below(&rng, n)));
            char *next = replace_all(out, needle, phrase ? phrase : "");
            free(out);
            out = next;
        }
        free(needle);
    }
    return out;
}
