/* The task's tensors as the export describes them to its users: the
 * manifest's "signature" (symbols, and per tensor its name, dtype, role
 * and shape as indices into the symbols) and, for the generic PyTorch
 * operator (src/export/torch/generic_op.cpp), the same as a C++ header
 * (spec.h) with the operator's schema. */
#include "export/export_internal.h"
#include "util/buf.h"

#include <ctype.h>
#include <string.h>

static const char *const dtype_names[KV_DTYPE_COUNT] = {
    [KV_F32] = "f32", [KV_F16] = "f16", [KV_BF16] = "bf16", [KV_I32] = "i32"};
static const char *const dtype_enums[KV_DTYPE_COUNT] = {
    [KV_F32] = "KV_F32", [KV_F16] = "KV_F16", [KV_BF16] = "KV_BF16", [KV_I32] = "KV_I32"};

static const char *role_name(kv_tensor_role r)
{
    return r == KV_IN ? "in" : r == KV_OUT ? "out" : "inout";
}

static const char *role_enum(kv_tensor_role r)
{
    return r == KV_IN ? "KV_IN" : r == KV_OUT ? "KV_OUT" : "KV_INOUT";
}

/* The operator's schema: TASK(Tensor x, Tensor(a!) q, ...) -> Tensor,
 * (Tensor, Tensor) or () by the number of outputs. */
static void schema(const kv_task *t, kv_buf *b)
{
    kv_buf_printf(b, "%s(", t->name);
    int n = 0, outs = 0;
    char alias = 'a';
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (ts->role == KV_OUT) {
            outs++;
            continue;
        }
        if (ts->role == KV_INOUT)
            kv_buf_printf(b, "%sTensor(%c!) %s", n++ ? ", " : "", alias++, ts->name);
        else
            kv_buf_printf(b, "%sTensor %s", n++ ? ", " : "", ts->name);
    }
    kv_buf_puts(b, ") -> ");
    if (outs == 1) {
        kv_buf_puts(b, "Tensor");
        return;
    }
    kv_buf_puts(b, "(");
    for (int i = 0; i < outs; i++)
        kv_buf_puts(b, i ? ", Tensor" : "Tensor");
    kv_buf_puts(b, ")");
}

json_t *kvx_signature(const kv_task *t)
{
    json_t *syms = json_array(), *tensors = json_array();
    for (int s = 0; s < t->num_syms; s++)
        json_array_append_new(syms, json_string(t->syms[s]));
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        json_t *shape = json_array();
        for (int d = 0; d < ts->rank; d++)
            json_array_append_new(shape, json_integer(ts->shape[d]));
        json_array_append_new(tensors, json_pack("{s:s,s:s,s:s,s:o}", "name", ts->name, "dtype",
                                                 dtype_names[ts->dtype], "role",
                                                 role_name(ts->role), "shape", shape));
    }
    kv_buf b = KV_BUF_INIT;
    schema(t, &b);
    json_t *sig = json_pack("{s:s,s:o,s:o}", "schema", b.data, "syms", syms, "tensors", tensors);
    kv_buf_free(&b);
    json_t *derived = json_object();
    for (int s = 0; s < t->num_syms; s++)
        if (t->derived[s]) json_object_set_new(derived, t->syms[s], json_string(t->derived[s]));
    json_object_set_new(sig, "derived", derived);
    return sig;
}

/* 1 when S is a C identifier (a schema's argument name). */
static int identifier(const char *s)
{
    if (!*s || isdigit((unsigned char)*s)) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return 0;
    return 1;
}

int kvx_generic_ok(const kv_task *t, char **err)
{
    if (!identifier(t->name)) {
        *err = kv_asprintf("--torch: the task's name %s is not an operator name", t->name);
        return 0;
    }
    int outs = 0, seen[KV_MAX_SYMS] = {0};
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        if (!identifier(ts->name) || ts->dtype < 0 || ts->dtype >= KV_DTYPE_COUNT) {
            *err = kv_asprintf("--torch: %s's tensor %s is not one an operator can take (its name "
                               "or its dtype)",
                               t->name, ts->name);
            return 0;
        }
        outs += ts->role == KV_OUT;
        for (int d = 0; ts->role != KV_OUT && d < ts->rank; d++)
            seen[ts->shape[d]] = 1;
    }
    for (int s = 0; s < t->num_syms; s++)
        if (!seen[s] && !t->derived[s]) {
            *err = kv_asprintf("--torch: %s's symbol %s is in no input's shape, so the operator "
                               "cannot tell its value from its arguments",
                               t->name, t->syms[s]);
            return 0;
        }
    if (outs == t->num_tensors) {
        *err = kv_asprintf("--torch: %s has no input", t->name);
        return 0;
    }
    return 1;
}

char *kvx_spec_header(const kv_task *t)
{
    kv_buf b = KV_BUF_INIT;
    kv_buf_printf(&b,
                  "/* Task %s's tensors, for op.cpp (written by kevolve export). */\n"
                  "#define KVX_OP_NAME \"%s\"\n#define KVX_SCHEMA \"",
                  t->name, t->name);
    schema(t, &b);
    kv_buf_printf(&b, "\"\n#define KVX_NSYMS %d\n#define KVX_NTENSORS %d\n", t->num_syms,
                  t->num_tensors);
    /* The symbols no input's shape holds, from the others (kv_task's derived). */
    kv_buf_puts(&b, "#define KVX_DERIVE(s) \\\n    do { \\\n");
    for (int s = 0; s < t->num_syms; s++)
        if (t->derived[s]) kv_buf_printf(&b, "        s[%d] = (%s); \\\n", s, t->derived[s]);
    kv_buf_puts(&b, "    } while (0)\n\n");
    kv_buf_puts(&b, "static const char *const kvx_sym_names[KVX_NSYMS] = {");
    for (int s = 0; s < t->num_syms; s++)
        kv_buf_printf(&b, "%s\"%s\"", s ? ", " : "", t->syms[s]);
    kv_buf_puts(&b, "};\n\nstruct kvx_tensor {\n    const char *name;\n    kv_dtype dtype;\n"
                    "    kv_tensor_role role;\n    int rank;\n    int shape[KV_MAX_RANK];\n};\n\n"
                    "static const struct kvx_tensor kvx_tensors[KVX_NTENSORS] = {\n");
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        kv_buf_printf(&b, "    {\"%s\", %s, %s, %d, {", ts->name, dtype_enums[ts->dtype],
                      role_enum(ts->role), ts->rank);
        for (int d = 0; d < ts->rank; d++)
            kv_buf_printf(&b, "%s%d", d ? ", " : "", ts->shape[d]);
        kv_buf_puts(&b, "}},\n");
    }
    kv_buf_puts(&b, "};\n");
    return kv_buf_steal(&b);
}
