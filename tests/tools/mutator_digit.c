/* builtin:digit, a mutator added the way any new one is: this file, and one
 * line in the table of src/mutate/registry.c (for this test build, through
 * KV_EXTRA_MUTATOR; tests/CMakeLists.txt, kevolve_extra_mutator). Nothing
 * else names it: test_mutator_added.sh runs an evolution with it. Linked
 * only into that test build, never into kevolve.
 *
 * It changes one digit of the parent's mutable text to another digit, and
 * answers at once. */
#include "mutate/blocks.h"
#include "mutate/registry.h"
#include "util/buf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* 1 when byte OFF of the text lies in a block of B (all of it without
 * markers). */
static int in_block(const kv_blocks *b, size_t off)
{
    if (b->whole_file) return 1;
    for (size_t i = 0; i < b->n; i++)
        if (off >= b->blocks[i].start && off < b->blocks[i].end) return 1;
    return 0;
}

static int digit_start(void *state, const kv_mutation_request *req, kv_mutation_result *out,
                       char **err)
{
    (void)state;
    (void)err;
    out->mutator = kv_strdup("digit");
    const char *src = req->parent ? req->parent->source : NULL;
    kv_blocks b = {0};
    char *why = NULL;
    if (!src || kv_blocks_find(src, &b, &why) != 0) {
        out->status = KV_MUTATION_UNCHANGED;
        out->reason_code = "mutator_error";
        out->reason = kv_asprintf("digit: %s", why ? why : "no parent program");
        free(why);
        return 0;
    }
    size_t n = 0, len = strlen(src);
    for (size_t i = 0; i < len; i++)
        n += isdigit((unsigned char)src[i]) && in_block(&b, i);
    if (n == 0) {
        kv_blocks_free(&b);
        out->status = KV_MUTATION_UNCHANGED;
        out->reason_code = "no_change";
        out->reason = kv_strdup("digit: no digit in the mutable text");
        return 0;
    }
    size_t pick = kv_rng_below(req->rng, n);
    char *child = kv_strdup(src);
    int line = 1;
    for (size_t i = 0; i < len; i++) {
        line += src[i] == '\n';
        if (!isdigit((unsigned char)src[i]) || !in_block(&b, i) || pick-- > 0) continue;
        char was = child[i]; /* to any of the nine other digits */
        child[i] = (char)('0' + (was - '0' + 1 + (int)kv_rng_below(req->rng, 9)) % 10);
        out->summary = kv_asprintf("digit: %c -> %c (line %d)", was, child[i], line);
        break;
    }
    kv_blocks_free(&b);
    out->status = KV_MUTATION_CHILD;
    out->source = child;
    return 0;
}

const kv_mutator_def kv_mutator_digit_def = {
    .name = "digit",
    .start = digit_start,
};
