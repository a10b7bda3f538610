/* Private to src/config: the key table (every config key, documented once)
 * and the generic field operations the loader, the defaults, the dump and
 * the free walk share. A key's storage is found by offset, so adding a key
 * is one table line plus its struct field. */
#ifndef KV_CONFIG_KEYS_H
#define KV_CONFIG_KEYS_H

#include "config/config.h"
#include "util/buf.h"

#include <stddef.h>

typedef enum {
    KV_KEY_INT,     /* int */
    KV_KEY_INT64,   /* int64_t */
    KV_KEY_LONG,    /* long */
    KV_KEY_DOUBLE,  /* double; NAN means unset where the default is "nan" */
    KV_KEY_BOOL,    /* int 0/1 */
    KV_KEY_TRIBOOL, /* int -1 (unset)/0/1 */
    KV_KEY_STRING,  /* char *, NULL when unset */
    KV_KEY_PATH,    /* char *, made absolute against the config file's folder */
    KV_KEY_STRINGS, /* char ** with a size_t count at aux */
    KV_KEY_DOUBLES, /* double * with a size_t count at aux */
    KV_KEY_BINS,    /* int * per feature dimension; aux: the dimension count */
    KV_KEY_MODELS,  /* kv_model_config * with a size_t count at aux */
    KV_KEY_JSON,    /* json_t * (a YAML mapping), NULL when unset */
    KV_KEY_IGNORED  /* accepted, warned about with the note, not stored */
} kv_key_type;

/* Section names of the table. KV_SECTION_MODEL holds the keys of one entry of
 * llm.models / llm.evaluator_models (offsets into kv_model_config). */
#define KV_SECTION_TOP ""
#define KV_SECTION_MODEL "model"

#define KV_KEY_SECRET 1u      /* dumped as "***" when set */
#define KV_KEY_WARN_ALWAYS 2u /* its note is warned whatever the value, false and null too */
#define KV_KEY_PATHS 4u       /* KV_KEY_STRINGS of paths, made absolute like KV_KEY_PATH */
#define KV_KEY_SCALAR_LIST 8u /* KV_KEY_STRINGS that also takes one scalar as a list of one */
#define KV_KEY_RESUMABLE 16u  /* a resumed run may change it (kv_config_key_resumable) */

typedef struct kv_key {
    const char *section; /* KV_SECTION_TOP, "llm", "prompt", "database", "evaluator", or model */
    const char *name;
    kv_key_type type;
    size_t off;           /* field offset in kv_config (kv_model_config for model keys) */
    size_t aux;           /* offset of the has_ flag (scalars) or the count (lists); 0: none */
    const char *def;      /* default as text ("10", "true", "a,b" for lists); NULL: empty/unset */
    const char *shown;    /* default as the docs show it, when def alone would mislead */
    const char *doc;      /* one line */
    const char *note;     /* when set: warned (with this text) when the key is given, non-null,
                             non-false */
    const char *alias_of; /* "section.name": the value goes there unless that key is given */
    unsigned flags;
} kv_key;

extern const kv_key kv_config_key_table[];
extern const size_t kv_config_key_count;
/* Sections with their own mapping in a config file, in dump order; NULL-terminated. */
extern const char *const kv_config_sections[];

/* The key NAME of SECTION, or NULL. */
const kv_key *kv_config_key_find(const char *section, const char *name);
/* Same for "section.name" (or "name" for the top level). */
const kv_key *kv_config_key_find_dotted(const char *dotted);
/* The known name of SECTION nearest NAME by edit distance (the top level also
 * offers section names). Never NULL for a section with keys. */
const char *kv_config_key_nearest(const char *section, const char *name, size_t *distance);
/* 1 when a resumed run may take a new value of K (kevolve resume --config):
 * the keys of llm (but its random_seed), of prompt and of a model entry,
 * and the keys flagged KV_KEY_RESUMABLE (how long, how fast, how much is
 * kept, what is logged). The others define what the run searched. */
int kv_config_key_resumable(const kv_key *k);
/* 1 when NAME is one of kv_config_sections. */
int kv_config_is_section(const char *name);
/* "an integer", "a number", ...: what a key of type T expects. */
const char *kv_config_type_expect(kv_key_type t);

/* Field operations. BASE is the kv_config (or kv_model_config for model keys). */
/* Frees the field's value (not alias or ignored keys) and leaves it zeroed. */
void kv_config_field_free(const kv_key *k, void *base);
/* Frees the field and sets its default; the has_ flag becomes 1 when def is set. */
void kv_config_field_default(const kv_key *k, void *base);
/* Defaults of every field of a model entry. */
void kv_config_model_init(kv_model_config *m);
/* Builds llm.models from primary_model/secondary_model when models is empty. */
void kv_config_models_from_shorthand(kv_llm_config *l);
void kv_config_model_free(kv_model_config *m);

/* Expands ${VAR} and ${VAR:-default} (default also when VAR is empty) from the
 * environment; "$${" gives a literal "${". Returns a new string, or NULL with
 * *problem set to a new message ("environment variable X is not set"). */
char *kv_config_expand_env(const char *s, char **problem);
/* The same, but when MISSING is not NULL an unset VAR (with no default)
 * expands to nothing and its name goes to *MISSING (the first one;
 * malloc'd, NULL when none). */
char *kv_config_expand_env_ex(const char *s, char **problem, char **missing);

/* Appends S to B as a YAML double-quoted scalar; with ESCAPE_VARS, "${" is
 * written "$${" so that loading it back does not expand it. */
void kv_config_yaml_quote(kv_buf *b, const char *s, int escape_vars);
/* Appends the shortest text of X that reads back to X, always with a '.' or
 * an exponent ("60.0"), ".inf"/"-.inf"/".nan" for the non-finite. */
void kv_config_yaml_double(kv_buf *b, double x);

/* kv_config_validate that also returns the dotted key at fault (KEY, KEYSZ). */
int kv_config_validate_key(const kv_config *c, kv_config_error *err, char *key, size_t keysz);
/* Adds a warning to c->warnings and logs it (printf format). */
void kv_config_warn(kv_config *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Pointer to the field of K in BASE. */
#define KV_FIELD(base, off, type) ((type *)(void *)((char *)(base) + (off)))

#endif
