/* Internal to the tune mutator (tune.c, tune_parse.c, tune_cond.c,
 * tune_learn.c): the parsed form of a program's `kevolve: tune`
 * annotations. The syntax is described in tune_parse.c and the README. */
#ifndef KV_MUTATE_TUNE_INTERNAL_H
#define KV_MUTATE_TUNE_INTERNAL_H

#include <stddef.h>

/* Operators of a condition clause. */
typedef enum tune_op {
    TUNE_OP_TRUE = 0, /* NAME: its value is not 0, false, False, FALSE, None, nil or "" */
    TUNE_OP_FALSE,    /* !NAME */
    TUNE_OP_EQ,       /* NAME == V */
    TUNE_OP_NE,       /* NAME != V */
    TUNE_OP_LT,       /* NAME < V (numbers) */
    TUNE_OP_LE,
    TUNE_OP_GT,
    TUNE_OP_GE
} tune_op;

/* One clause of a condition: parameter PARAM (an index into the set) OP
 * VALUE. OR_BEFORE is 1 when `||` precedes it: the condition is the OR of
 * runs of clauses joined by `&&`. */
typedef struct tune_clause {
    char *name; /* as written (owned) */
    size_t param;
    tune_op op;
    char *value; /* NULL for TRUE and FALSE (owned) */
    double num;  /* VALUE as a number, for the ordering operators */
    int or_before;
} tune_clause;

typedef struct tune_param {
    char *name;
    int line;      /* 1-based */
    size_t off;    /* value's byte offset in the source */
    size_t len;    /* value's length */
    char **choice; /* malloc'd strings */
    size_t nchoice;
    char *when;          /* the condition's text after `when` (owned), NULL when none */
    tune_clause *clause; /* the condition, NULL/0 when none (owned) */
    size_t nclause;
} tune_param;

typedef struct tune_set {
    tune_param *p;
    size_t n;
} tune_set;

/* All tune parameters in the mutable text of SRC, conditions resolved.
 * Returns 0, or -1 with a malloc'd *err naming the line (malformed markers,
 * values or condition). */
int tune_parse(const char *src, tune_set *out, char **err);
void tune_set_free(tune_set *s);

/* 1 when value text A (LEN bytes) and choice B are the same value: the same
 * text, or numbers that compare equal (0.5 and .5). */
int tune_same_value(const char *a, size_t len, const char *b);
/* Parses TEXT (LEN bytes) as a whole number; 0 with *out, or -1. */
int tune_number(const char *text, size_t len, double *out);
/* Index of the choice of P that SRC's current value equals, or -1. */
long tune_current_index(const char *src, const tune_param *p);

/* Parses the condition of parameter I of S (its `when` text) into clauses,
 * resolving names against S. Returns 0, or -1 with a malloc'd *err. */
int tune_cond_parse(tune_set *s, size_t i, char **err);
/* 1 when parameter I's condition holds for the values in SRC (1 when it
 * has none). */
int tune_cond_holds(const char *src, const tune_set *s, size_t i);

#endif
