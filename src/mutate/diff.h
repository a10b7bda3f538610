/* Turning a model's reply into a child program.
 *
 * Diff mode: the reply holds SEARCH/REPLACE blocks
 *     <<<<<<< SEARCH
 *     lines of the current program
 *     =======
 *     the lines that replace them
 *     >>>>>>> REPLACE
 * applied in order, each to the result of the ones before. A SEARCH text is
 * matched line by line, exactly first, then with each line's leading and
 * trailing whitespace ignored; it must match exactly one place (more is
 * ambiguous, none is "not found").
 * Full-rewrite mode: the program is a fenced code block (```lang ... ```);
 * the block in the requested language wins, the longest when several.
 *
 * The child is then checked: it must differ from the parent, fit in
 * max_code_length, and change nothing outside the EVOLVE-BLOCKs. Every
 * rejection comes with a reason meant for the next prompt. */
#ifndef KV_MUTATE_DIFF_H
#define KV_MUTATE_DIFF_H

#include <stddef.h>

typedef struct kv_diff_block {
    char *search;  /* lines to find, '\n'-separated, without a final newline */
    char *replace; /* lines that replace them (may be "") */
} kv_diff_block;

/* Parses the SEARCH/REPLACE blocks of REPLY. Returns the count (0 when
 * none) with a malloc'd array in *blocks (free with kv_diff_blocks_free), or
 * -1 with a malloc'd reason in *reason for a block left open ("SEARCH block 2
 * has no ======= line"). */
int kv_diff_parse(const char *reply, kv_diff_block **blocks, char **reason);
void kv_diff_blocks_free(kv_diff_block *blocks, size_t n);

/* Applies BLOCKS[0..N) to SRC in order. Returns 0 with a malloc'd child in
 * *out (and, when TOLERANT_USED is not NULL, the count of blocks that needed
 * the whitespace-tolerant match), or 1 with a malloc'd reason in *reason
 * ("SEARCH block 2 not found", "SEARCH block 1 matches 3 places (lines 4, 9,
 * 20); include more context", "SEARCH block 3 is empty"). */
int kv_diff_apply(const char *src, const kv_diff_block *blocks, size_t n, char **out,
                  int *tolerant_used, char **reason);

/* The code of the fenced block of REPLY in LANGUAGE (case-insensitive, with
 * the usual aliases: py, c++/cpp, cu/cuda, ...), the longest such; else the
 * longest fenced block. Returns a malloc'd string, or NULL when REPLY has no
 * fenced block. */
char *kv_diff_extract_code(const char *reply, const char *language);

typedef struct kv_reply_options {
    int diff_mode;        /* 1: SEARCH/REPLACE blocks; 0: full rewrite */
    const char *language; /* for fenced blocks; may be NULL */
    int max_code_length;  /* characters; <= 0: no limit */
    /* When summary_max_lines > 0, a diff child's summary goes on with what
     * each block changed (kv_diff_summary); else it is one line. */
    int summary_max_line_len;
    int summary_max_lines;
} kv_reply_options;

/* What BLOCKS[0..N) change, as OpenEvolve summarises a diff: "Change 1: 'a'
 * to 'b'" for one-line blocks, else "Change 1: Replace:" with the SEARCH
 * lines, "with:" and the REPLACE lines, two spaces in, each cut to
 * MAX_LINE_LEN characters, at most MAX_LINES of each shown. Malloc'd. */
char *kv_diff_summary(const kv_diff_block *blocks, size_t n, int max_line_len, int max_lines);

/* The whole path from a reply to an accepted child of PARENT. Returns 0
 * with a malloc'd child in *child and a malloc'd *summary ("diff: 2
 * SEARCH/REPLACE blocks", then what they change (see summary_max_lines), or
 * "full rewrite"), 1 when the reply is rejected
 * (malloc'd *reason: no blocks, not found, ambiguous, no fenced block, empty
 * edit, too long, outside the EVOLVE-BLOCKs), or -1 when PARENT's own
 * EVOLVE-BLOCK markers are malformed (reason set). */
int kv_reply_to_child(const char *parent, const char *reply, const kv_reply_options *opt,
                      char **child, char **summary, char **reason);

#endif
