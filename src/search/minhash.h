/* Diversity signatures: a bottom-k MinHash sketch of a program's token
 * 3-grams, computed once per program, and the Jaccard similarity estimated
 * from two sketches in O(k). Used for the "diversity" feature dimension. */
#ifndef KV_SEARCH_MINHASH_H
#define KV_SEARCH_MINHASH_H

#include <stddef.h>
#include <stdint.h>

#define KV_MINHASH_K 64

/* The KV_MINHASH_K smallest distinct shingle hashes, ascending (n of them;
 * fewer when the program has fewer distinct shingles). */
typedef struct kv_minhash {
    uint64_t h[KV_MINHASH_K];
    unsigned n;
} kv_minhash;

/* Sketch of SOURCE (NULL counts as empty). Tokens are runs of letters,
 * digits and '_' or single other non-space characters; shingles are runs of
 * 3 tokens (a shorter program gives one shingle of all its tokens). */
void kv_minhash_compute(const char *source, kv_minhash *out);
/* Estimated Jaccard similarity of the two shingle sets, in [0, 1]. Two empty
 * sketches are identical (1); one empty and one not share nothing (0). */
double kv_minhash_jaccard(const kv_minhash *a, const kv_minhash *b);

#endif
