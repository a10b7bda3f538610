/* Conditions of tune parameters (`kevolve: tune 16 32 when MMA_DECODE`):
 * parsed once against the program's other parameters, so a typo is an
 * error that names its line, then evaluated on a program's current values
 * to decide whether a parameter means something there. Grammar (see
 * tune_parse.c): clauses joined by `&&`, alternatives by `||`; a clause is
 * NAME, !NAME or NAME OP VALUE (OP: == != < <= > >=). */
#include "mutate/tune_internal.h"
#include "util/buf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Token kinds of a condition. */
typedef enum cond_tok { TOK_END = 0, TOK_WORD, TOK_AND, TOK_OR, TOK_NOT, TOK_OP, TOK_BAD } cond_tok;

typedef struct lexer {
    const char *s;
    size_t pos;
    size_t tb, te; /* the last token's text */
    tune_op op;    /* for TOK_OP */
} lexer;

/* Reads the next token of L. */
static cond_tok next(lexer *l)
{
    const char *s = l->s;
    while (s[l->pos] && isspace((unsigned char)s[l->pos]))
        l->pos++;
    l->tb = l->pos;
    char c = s[l->pos];
    if (!c) return TOK_END;
    char d = s[l->pos + 1];
    static const struct {
        const char *text;
        cond_tok tok;
        tune_op op;
    } ops[] = {
        {"&&", TOK_AND, TUNE_OP_TRUE}, {"||", TOK_OR, TUNE_OP_TRUE}, {"==", TOK_OP, TUNE_OP_EQ},
        {"!=", TOK_OP, TUNE_OP_NE},    {"<=", TOK_OP, TUNE_OP_LE},   {">=", TOK_OP, TUNE_OP_GE},
        {"<", TOK_OP, TUNE_OP_LT},     {">", TOK_OP, TUNE_OP_GT},    {"!", TOK_NOT, TUNE_OP_FALSE}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        size_t n = strlen(ops[i].text);
        if (c == ops[i].text[0] && (n == 1 || d == ops[i].text[1])) {
            l->pos += n;
            l->te = l->pos;
            l->op = ops[i].op;
            return ops[i].tok;
        }
    }
    if (c == '&' || c == '|' || c == '=') {
        l->pos++;
        l->te = l->pos;
        return TOK_BAD;
    }
    if (c == '"' || c == '\'') {
        l->pos++;
        while (s[l->pos] && s[l->pos] != c)
            l->pos++;
        if (!s[l->pos]) {
            l->te = l->pos;
            return TOK_BAD;
        }
        l->pos++;
        l->te = l->pos;
        return TOK_WORD;
    }
    while (s[l->pos] && !isspace((unsigned char)s[l->pos]) && !strchr("&|=!<>\"'", s[l->pos]))
        l->pos++;
    l->te = l->pos;
    return TOK_WORD;
}

/* Index of the parameter of S named NAME (LEN bytes). Returns 0 with *OUT,
 * 1 when none is, 2 when several are. */
static int find_param(const tune_set *s, const char *name, size_t len, size_t *out)
{
    int found = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (strlen(s->p[i].name) != len || memcmp(s->p[i].name, name, len) != 0) continue;
        if (found) return 2;
        *out = i;
        found = 1;
    }
    return found ? 0 : 1;
}

/* Adds a clause to P. */
static tune_clause *add_clause(tune_param *p)
{
    p->clause = kv_realloc(p->clause, (p->nclause + 1) * sizeof *p->clause);
    tune_clause *c = &p->clause[p->nclause++];
    memset(c, 0, sizeof *c);
    return c;
}

/* Resolves and checks clause C of parameter SELF in S; sets *why. */
static int check_clause(const tune_set *s, size_t self, tune_clause *c, char **why)
{
    size_t len = strlen(c->name);
    int r = find_param(s, c->name, len, &c->param);
    if (r == 1) {
        *why = kv_asprintf("no tune parameter named %s", c->name);
        return -1;
    }
    if (r == 2) {
        *why = kv_asprintf("%s names more than one tune parameter", c->name);
        return -1;
    }
    if (c->param == self) {
        *why = kv_asprintf("%s refers to the parameter itself", c->name);
        return -1;
    }
    const tune_param *q = &s->p[c->param];
    if (c->op == TUNE_OP_EQ || c->op == TUNE_OP_NE) {
        for (size_t k = 0; k < q->nchoice; k++)
            if (tune_same_value(c->value, strlen(c->value), q->choice[k])) return 0;
        *why = kv_asprintf("%s is not one of %s's values (line %d)", c->value, c->name, q->line);
        return -1;
    }
    if (c->op >= TUNE_OP_LT) {
        if (tune_number(c->value, strlen(c->value), &c->num) != 0) {
            *why = kv_asprintf("%s: a number is needed after an ordering operator", c->value);
            return -1;
        }
        double x;
        for (size_t k = 0; k < q->nchoice; k++)
            if (tune_number(q->choice[k], strlen(q->choice[k]), &x) != 0) {
                *why = kv_asprintf("%s has a value that is not a number (%s, line %d)", c->name,
                                   q->choice[k], q->line);
                return -1;
            }
    }
    return 0;
}

int tune_cond_parse(tune_set *s, size_t i, char **err)
{
    tune_param *p = &s->p[i];
    lexer l = {.s = p->when};
    char *why = NULL;
    int or_before = 0;
    for (;;) {
        cond_tok t = next(&l);
        int negate = 0;
        if (t == TOK_NOT) {
            negate = 1;
            t = next(&l);
        }
        if (t != TOK_WORD) {
            why = kv_asprintf("expected a parameter name at \"%s\"", p->when + l.tb);
            break;
        }
        tune_clause *c = add_clause(p);
        c->name = kv_strndup(p->when + l.tb, l.te - l.tb);
        c->or_before = or_before;
        c->op = negate ? TUNE_OP_FALSE : TUNE_OP_TRUE;
        t = next(&l);
        if (t == TOK_OP) {
            if (negate) {
                why = kv_asprintf("`!` applies to a name alone, not to a comparison");
                break;
            }
            c->op = l.op;
            if (next(&l) != TOK_WORD) {
                why = kv_asprintf("expected a value after the operator at \"%s\"", p->when + l.tb);
                break;
            }
            c->value = kv_strndup(p->when + l.tb, l.te - l.tb);
            t = next(&l);
        }
        if (check_clause(s, i, c, &why) != 0) break;
        if (t == TOK_END) break;
        if (t != TOK_AND && t != TOK_OR) {
            why = kv_asprintf("expected &&, || or the end at \"%s\"", p->when + l.tb);
            break;
        }
        or_before = t == TOK_OR;
    }
    if (!why) return 0;
    *err = kv_asprintf("line %d: kevolve: tune: when %s: %s", p->line, p->when, why);
    free(why);
    return -1;
}

/* 1 when VALUE (LEN bytes) counts as true. */
static int truthy(const char *v, size_t len)
{
    static const char *const no[] = {"false", "False", "FALSE", "None", "nil", "\"\"", "''"};
    double x;
    if (tune_number(v, len, &x) == 0) return x != 0;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (strlen(no[i]) == len && memcmp(v, no[i], len) == 0) return 0;
    return 1;
}

/* 1 when clause C holds for SRC's values. */
static int clause_holds(const char *src, const tune_set *s, const tune_clause *c)
{
    const tune_param *q = &s->p[c->param];
    const char *v = src + q->off;
    double x;
    switch (c->op) {
    case TUNE_OP_TRUE:
        return truthy(v, q->len);
    case TUNE_OP_FALSE:
        return !truthy(v, q->len);
    case TUNE_OP_EQ:
        return tune_same_value(v, q->len, c->value);
    case TUNE_OP_NE:
        return !tune_same_value(v, q->len, c->value);
    default:
        /* An edited value that is no longer a number satisfies no ordering. */
        if (tune_number(v, q->len, &x) != 0) return 0;
        return c->op == TUNE_OP_LT   ? x < c->num
               : c->op == TUNE_OP_LE ? x <= c->num
               : c->op == TUNE_OP_GT ? x > c->num
                                     : x >= c->num;
    }
}

int tune_cond_holds(const char *src, const tune_set *s, size_t i)
{
    const tune_param *p = &s->p[i];
    if (p->nclause == 0) return 1;
    int any = 0, all = 1;
    for (size_t k = 0; k < p->nclause; k++) {
        if (p->clause[k].or_before) {
            any |= all;
            all = 1;
        }
        all = all && clause_holds(src, s, &p->clause[k]);
    }
    return any | all;
}
