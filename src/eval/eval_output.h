/* Internal to src/eval: reading what an evaluator printed. Split from
 * evaluator.c so that the parsing rules can be tested on plain strings. */
#ifndef KV_EVAL_EVAL_OUTPUT_H
#define KV_EVAL_EVAL_OUTPUT_H

#include "store/program.h"

#include <jansson.h>
#include <stddef.h>

/* Outcomes of kv_eval_parse_output_ex. */
enum {
    KV_EVAL_OUTPUT_OK = 0,     /* metrics (and artifacts) parsed */
    KV_EVAL_OUTPUT_BAD = -1,   /* not JSON, or not an object: a crash, worth a retry */
    KV_EVAL_OUTPUT_ERROR = -2, /* the evaluator reported an "error": a verdict, no retry */
};

/* Parses TEXT (an evaluator's stdout) into *METRICS and *ARTIFACTS (new
 * references, both objects; artifacts may be empty). NaN, Infinity and
 * -Infinity tokens (Python's json.dumps writes them) and numbers beyond a
 * double's range (1e999) become null. When the
 * whole text is not JSON, the last line starting with '{' up to the end is
 * tried, so that progress lines printed before the result do no harm.
 * Returns KV_EVAL_OUTPUT_OK; KV_EVAL_OUTPUT_BAD with *REASON ("evaluator
 * output is not JSON: <first 200 chars>") and NULL objects; or
 * KV_EVAL_OUTPUT_ERROR with *REASON the evaluator's message and the metrics
 * and artifacts it gave. *REASON is malloc'd, NULL on OK. */
int kv_eval_parse_output_ex(const char *text, json_t **metrics, json_t **artifacts, char **reason);

/* kv_eval_parse_output_ex on the LEN bytes of TEXT an evaluator printed,
 * of which DROPPED more were cut beyond the cap of CAP bytes. When the text
 * cannot be read, *REASON says why precisely: "over the 4 MiB cap" (when
 * bytes were dropped), "not valid UTF-8 (byte 0xff at offset N)", "holds a
 * NUL byte at offset N", rather than "not JSON". */
int kv_eval_parse_output_full(const char *text, size_t len, size_t dropped, size_t cap,
                              json_t **metrics, json_t **artifacts, char **reason);

/* The score that gates cascade stages: combined_score when present (NAN
 * when it is not a finite number), else the mean of the finite numeric
 * metrics, NAN when there are none. NAN never passes a threshold. */
double kv_eval_score(const json_t *metrics);

/* The kernel harness's results per scenario in ARTIFACTS (its "scenarios",
 * each timed one a row; "task", "backend", "device") into OUT, screened
 * when METRICS say the screen stopped the program. OUT stays empty for
 * other evaluators. */
void kv_eval_scenario_rows(const json_t *artifacts, const json_t *metrics,
                           kv_scenario_results *out);

/* A malloc'd copy of the LEN bytes at S that jansson accepts as a string:
 * invalid UTF-8 and NUL bytes become '?'. */
char *kv_eval_clean_text(const char *s, size_t len);

#endif
