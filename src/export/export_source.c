/* The library's one source and its header (see export.h): each chosen
 * program as a variant under names of its own (export_text.h), then the
 * scenario table, the dispatcher by shape (kv_launch: the file is a
 * candidate of the task) and the entry point for users, in the backend's
 * language: C, OpenCL C with its C host, or CUDA C++. */
#include "export/export_internal.h"
#include "export/export_text.h"
#include "util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char kvx_rule[] =
    "A call goes to the scenario of its kind (the task's kind_of rule on its shape; every "
    "scenario when none is of that kind) nearest to its shape: the one with the least sum, over "
    "the shape's symbols, of |log2(x) - log2(s)| (x the call's value, s the scenario's, 0 and 1 "
    "counted as 1), the first in the task's order among equals. The scenario's program computes "
    "the call; every program is correct at every shape (each passed the task's held-out shapes).";

/* The language of backend B's sources, from what it can do. */
enum lang { LANG_C, LANG_OPENCL, LANG_CUDA };
static enum lang lang_of(const kv_backend *b)
{
    if (b->toolchain == KV_TOOLCHAIN_NVCC) return LANG_CUDA;
    return kv_backend_has(b, KV_CAP_DEVICE_CODE) ? LANG_OPENCL : LANG_C;
}

/* "_TASK_kxN": the suffix of variant N's names. The task's name keeps two
 * exports' variants apart where their sources are compiled into one
 * program; in a shared object they are hidden besides (see kvx_source). */
static void suffix_of(const kvx_plan *p, int n, char buf[96])
{
    snprintf(buf, 96, "_%s_kx%d", p->task->name, n);
}

/* Appends variant N of C source TEXT (includes lifted into INCLUDES). */
static void c_variant(const kvx_plan *p, kv_buf *out, kv_buf *includes, const char *text, int n,
                      const kv_names *strings)
{
    char *body = kv_text_hoist_includes(text, includes);
    kv_names names = {0};
    kv_text_collect(body, 0, &names, NULL);
    char suffix[96];
    suffix_of(p, n, suffix);
    char *renamed = kv_text_rename(body, &names, suffix, strings);
    kv_buf_printf(out, "\n/* ---- variant %d ---- */\n%s\n", n, renamed);
    free(renamed);
    free(body);
    kv_names_free(&names);
}

/* Appends variant N of CUDA source TEXT: its macros renamed, the rest in
 * namespace kvx_TASK_vN, kv_launch without C linkage. */
static void cuda_variant(const kvx_plan *p, kv_buf *out, kv_buf *includes, const char *text, int n)
{
    char *body = kv_text_hoist_includes(text, includes);
    kv_names macros = {0};
    kv_text_collect(body, 1, &macros, NULL);
    char suffix[96];
    suffix_of(p, n, suffix);
    char *renamed = kv_text_rename(body, &macros, suffix, NULL);
    /* extern "C" gives one name to every variant's kv_launch: the namespace
     * is what keeps them apart. */
    kv_buf plain = KV_BUF_INIT;
    for (const char *at = renamed; *at;) {
        const char *hit = strstr(at, "extern \"C\"");
        if (!hit) {
            kv_buf_puts(&plain, at);
            break;
        }
        kv_buf_append(&plain, at, (size_t)(hit - at));
        at = hit + strlen("extern \"C\"");
    }
    kv_buf_printf(out,
                  "\n/* ---- variant %d ---- */\nnamespace kvx_%s_v%d {\n%s\n} // namespace "
                  "kvx_%s_v%d\n",
                  n, p->task->name, n, plain.data ? plain.data : "", p->task->name, n);
    kv_buf_free(&plain);
    free(renamed);
    free(body);
    kv_names_free(&macros);
}

/* The scenario table and the choice of a scenario for a shape. */
static void scenario_table(kv_buf *b, const kvx_plan *p, enum lang lang)
{
    const kv_task *t = p->task;
    const char *ext_c = lang == LANG_CUDA ? "extern \"C\" KVX_API " : "KVX_API ";
    kv_buf_printf(b,
                  "\n/* ---- the dispatcher ---- */\n"
                  "typedef struct kvx_scenario {\n"
                  "    const char *name, *kind;\n"
                  "    int64_t syms[%d];\n"
                  "    double log2s[%d]; /* of syms, 0 and 1 as 1 */\n"
                  "    int variant;      /* whose program serves it */\n"
                  "} kvx_scenario;\n\n"
                  "static const kvx_scenario kvx_scenarios[] = {\n",
                  t->num_syms, t->num_syms);
    for (size_t i = 0; i < p->n_choices; i++) {
        const kvx_choice *c = &p->choices[i];
        const char *tags = c->shape->tags ? c->shape->tags : "";
        kv_buf_printf(b, "    {\"%s\", \"%.*s\", {", c->shape->name, (int)strcspn(tags, ","), tags);
        for (int k = 0; k < t->num_syms; k++)
            kv_buf_printf(b, "%s%lld", k ? ", " : "", (long long)c->shape->syms[k]);
        kv_buf_puts(b, "}, {");
        for (int k = 0; k < t->num_syms; k++) {
            int64_t x = c->shape->syms[k];
            kv_buf_printf(b, "%s%.17g", k ? ", " : "", log2((double)(x > 1 ? x : 1)));
        }
        kv_buf_printf(b, "}, %d},\n", p->choices[c->served].variant);
    }
    kv_buf_printf(
        b,
        "};\n#define KVX_NSCEN ((int)(sizeof kvx_scenarios / sizeof kvx_scenarios[0]))\n\n"
        "/* The kind of call a shape is (the task's kind_of). */\n"
        "static const char *kvx_kind(const int64_t *s)\n{\n"
        "    (void)s;\n    return %s;\n}\n\n",
        t->kind_of ? t->kind_of : "\"\"");
    /* The rule costs about a microsecond on the host: a call of the shape
     * of the thread's last call takes that one's answer. */
    kv_buf_printf(
        b,
        "%sint %s_scenario(const int64_t *s)\n{\n"
        "    static %s int64_t last[%d];\n    static %s int last_answer = -1;\n"
        "    if (last_answer >= 0 && memcmp(last, s, sizeof last) == 0) return last_answer;\n"
        "    const char *kind = kvx_kind(s);\n    double logs[%d];\n"
        "    for (int k = 0; k < %d; k++)\n"
        "        logs[k] = log2((double)(s[k] > 1 ? s[k] : 1));\n"
        "    int best = -1;\n    double best_d = 0;\n"
        "    for (int pass = 0; pass < 2 && best < 0; pass++)\n"
        "        for (int i = 0; i < KVX_NSCEN; i++) {\n"
        "            if (pass == 0 && strcmp(kvx_scenarios[i].kind, kind) != 0) continue;\n"
        "            double d = 0;\n"
        "            for (int k = 0; k < %d; k++)\n"
        "                d += fabs(logs[k] - kvx_scenarios[i].log2s[k]);\n"
        "            if (best < 0 || d < best_d) {\n                best = i;\n"
        "                best_d = d;\n            }\n        }\n"
        "    memcpy(last, s, sizeof last);\n    last_answer = best;\n"
        "    return best;\n}\n\n"
        "%sconst char *%s_scenario_name(int i)\n{\n"
        "    return i >= 0 && i < KVX_NSCEN ? kvx_scenarios[i].name : NULL;\n}\n",
        ext_c, kvx_entry(p), lang == LANG_CUDA ? "thread_local" : "_Thread_local", t->num_syms,
        lang == LANG_CUDA ? "thread_local" : "_Thread_local", t->num_syms, t->num_syms, t->num_syms,
        ext_c, kvx_entry(p));
}

/* kvx_dispatch: the chosen variant's kv_launch. kv_launch itself is there
 * for the harness that judges the file as a candidate of the task: weak, so
 * that two exports' sources link into one program, and never called from
 * here, so that another library's kv_launch cannot stand in for it. */
static void dispatcher(kv_buf *b, const kvx_plan *p, enum lang lang)
{
    kv_buf_printf(b,
                  "\nstatic int kvx_dispatch(const kv_launch_args *a)\n{\n"
                  "    switch (kvx_scenarios[%s_scenario(a->syms)].variant) {\n",
                  kvx_entry(p));
    for (size_t v = 0; v < p->n_variants; v++)
        if (lang == LANG_CUDA)
            kv_buf_printf(b, "    case %zu:\n        return kvx_%s_v%zu::kv_launch(a);\n", v,
                          p->task->name, v);
        else
            kv_buf_printf(b, "    case %zu:\n        return kv_launch_%s_kx%zu(a);\n", v,
                          p->task->name, v);
    kv_buf_printf(b,
                  "    }\n    return -1;\n}\n\n"
                  "/* The task's entry, for the harness that judges this file (weak: see\n"
                  " * kvx_dispatch). Callers use %s. */\n"
                  "%s__attribute__((weak)) KVX_API int kv_launch(const kv_launch_args *a)\n{\n"
                  "    return kvx_dispatch(a);\n}\n",
                  kvx_entry(p), lang == LANG_CUDA ? "extern \"C\" " : "");
}

/* kvx_dense: 1 when STRIDES (elements; NULL, or NULL per tensor: dense)
 * describe each tensor as dense and row-major. */
static void dense_check(kv_buf *b, const kvx_plan *p)
{
    const kv_task *t = p->task;
    kv_buf_puts(b, "\nstatic int kvx_dense(const int64_t *s, const int64_t *const *strides)\n{\n"
                   "    if (!strides) return 1;\n");
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        kv_buf_printf(b, "    if (strides[%d]) {\n        int64_t want = 1;\n", i);
        for (int d = ts->rank - 1; d >= 0; d--)
            kv_buf_printf(b,
                          "        if (s[%d] > 1 && strides[%d][%d] != want) return 0;\n"
                          "        want *= s[%d];\n",
                          ts->shape[d], i, d, ts->shape[d]);
        kv_buf_puts(b, "    }\n");
    }
    kv_buf_puts(b, "    return 1;\n}\n");
}

/* The entry point of C and CUDA: the caller's pointers and stream. */
static void entry_plain(kv_buf *b, const kvx_plan *p, enum lang lang)
{
    kv_buf_printf(b,
                  "\n%sKVX_API int %s(void *const *tensors, const int64_t *syms, "
                  "const int64_t *const *strides, void *stream)\n{\n"
                  "    if (!kvx_dense(syms, strides)) return -2;\n"
                  "    kv_launch_args a;\n    memset(&a, 0, sizeof a);\n"
                  "    a.abi_version = KV_TASK_ABI_VERSION;\n    a.num_tensors = %d;\n"
                  "    for (int i = 0; i < %d; i++)\n        a.tensors[i] = tensors[i];\n"
                  "    a.num_syms = %d;\n"
                  "    for (int i = 0; i < %d; i++)\n        a.syms[i] = syms[i];\n"
                  "    a.stream = stream;\n    return kvx_dispatch(&a) == 0 ? 0 : -1;\n}\n",
                  lang == LANG_CUDA ? "extern \"C\" " : "", kvx_entry(p), p->task->num_tensors,
                  p->task->num_tensors, p->task->num_syms, p->task->num_syms);
}

/* The entry point of OpenCL: it builds the device code (DEVICE) for the
 * queue's context once and hands the variants their kernels by name. */
static void entry_opencl(kv_buf *b, const kvx_plan *p, const char *device)
{
    kv_buf_puts(b, "\n/* The device code, built for each context the entry point meets. */\n"
                   "static const char kvx_device_source[] =\n    ");
    kv_text_c_string(b, device);
    kv_buf_printf(
        b,
        ";\n\n"
        "typedef struct kvx_cl {\n"
        "    cl_context ctx;\n    cl_device_id dev;\n    cl_program prog;\n"
        "    char names[32][64];\n    cl_kernel kernels[32];\n    int n;\n} kvx_cl;\n\n"
        "static kvx_cl kvx_built[8];\nstatic int kvx_n_built;\n"
        "static pthread_mutex_t kvx_lock = PTHREAD_MUTEX_INITIALIZER;\n\n"
        "static void *kvx_cl_kernel(const kv_launch_args *a, const char *name)\n{\n"
        "    kvx_cl *c = (kvx_cl *)a->harness;\n    void *k = NULL;\n"
        "    pthread_mutex_lock(&kvx_lock);\n"
        "    for (int i = 0; i < c->n && !k; i++)\n"
        "        if (strcmp(c->names[i], name) == 0) k = c->kernels[i];\n"
        "    if (!k && c->n < 32 && strlen(name) < 64) {\n"
        "        cl_int e;\n        cl_kernel made = clCreateKernel(c->prog, name, &e);\n"
        "        if (made) {\n            strcpy(c->names[c->n], name);\n"
        "            c->kernels[c->n++] = made;\n            k = made;\n        }\n    }\n"
        "    pthread_mutex_unlock(&kvx_lock);\n    return k;\n}\n\n"
        "/* The program of QUEUE's context, built at its first use; NULL when it\n"
        " * cannot be built. */\n"
        "static kvx_cl *kvx_program(cl_command_queue queue)\n{\n"
        "    cl_context ctx;\n    cl_device_id dev;\n"
        "    if (clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL) != "
        "CL_SUCCESS ||\n"
        "        clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) != "
        "CL_SUCCESS)\n        return NULL;\n"
        "    kvx_cl *c = NULL;\n    pthread_mutex_lock(&kvx_lock);\n"
        "    for (int i = 0; i < kvx_n_built && !c; i++)\n"
        "        if (kvx_built[i].ctx == ctx && kvx_built[i].dev == dev) c = &kvx_built[i];\n"
        "    if (!c && kvx_n_built < 8) {\n"
        "        const char *src = kvx_device_source;\n        cl_int e;\n"
        "        cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);\n"
        "        if (prog && clBuildProgram(prog, 1, &dev, \"\", NULL, NULL) == CL_SUCCESS) {\n"
        "            c = &kvx_built[kvx_n_built++];\n            memset(c, 0, sizeof *c);\n"
        "            c->ctx = ctx;\n            c->dev = dev;\n            c->prog = prog;\n"
        "        } else if (prog) {\n            clReleaseProgram(prog);\n        }\n    }\n"
        "    pthread_mutex_unlock(&kvx_lock);\n    return c;\n}\n\n"
        "KVX_API int %s(void *const *tensors, const int64_t *syms, const int64_t *const *strides, "
        "void *queue)\n{\n"
        "    if (!kvx_dense(syms, strides)) return -2;\n"
        "    kvx_cl *c = kvx_program((cl_command_queue)queue);\n    if (!c) return -3;\n"
        "    kv_launch_args a;\n    memset(&a, 0, sizeof a);\n"
        "    a.abi_version = KV_TASK_ABI_VERSION;\n    a.num_tensors = %d;\n"
        "    for (int i = 0; i < %d; i++)\n        a.tensors[i] = tensors[i];\n"
        "    a.num_syms = %d;\n"
        "    for (int i = 0; i < %d; i++)\n        a.syms[i] = syms[i];\n"
        "    a.stream = queue;\n    a.context = c->ctx;\n    a.device = c->dev;\n"
        "    a.cl_kernel = kvx_cl_kernel;\n    a.harness = c;\n"
        "    return kvx_dispatch(&a) == 0 ? 0 : -1;\n}\n",
        kvx_entry(p), p->task->num_tensors, p->task->num_tensors, p->task->num_syms,
        p->task->num_syms);
}

/* The file's opening comment: what it is and where it came from. */
static void opening(kv_buf *b, const kvx_plan *p)
{
    kv_buf_printf(b,
                  "/* Exported by kevolve: the fastest correct program of a run for each "
                  "scenario of\n * task %s (backend %s), one variant each, and a dispatcher "
                  "by shape. See\n * %s.h for the entry point and manifest.json for where each "
                  "variant came from.\n *\n",
                  p->task->name, p->backend->name, kvx_entry(p));
    for (size_t i = 0; i < p->n_choices; i++) {
        const kvx_choice *c = &p->choices[i];
        int v = p->choices[c->served].variant;
        kv_buf_printf(b, " *   %-28s variant %d (program %lld)%s\n", c->shape->name, v,
                      (long long)p->variants[v].program_id,
                      c->variant < 0 ? ", not timed in the run: the nearest's" : "");
    }
    kv_buf_puts(b, " */\n");
}

char *kvx_source(const kvx_plan *p, char **err)
{
    enum lang lang = lang_of(p->backend);
    kv_buf includes = KV_BUF_INIT, body = KV_BUF_INIT, out = KV_BUF_INIT, device = KV_BUF_INIT;
    kv_buf_puts(&includes, "#include <kevolve/task.h>\n");
    for (size_t v = 0; v < p->n_variants; v++) {
        const char *text = p->variants[v].source;
        if (lang == LANG_CUDA) {
            cuda_variant(p, &body, &includes, text, (int)v);
        } else if (lang == LANG_C) {
            c_variant(p, &body, &includes, text, (int)v, NULL);
        } else {
            char *prefix, *dev, *host;
            if (kv_text_split_opencl(text, &prefix, &dev, &host, err) != 0) {
                char *e = *err;
                *err = kv_asprintf("program %lld: %s", (long long)p->variants[v].program_id, e);
                free(e);
                kv_buf_free(&includes);
                kv_buf_free(&body);
                return NULL;
            }
            /* Both halves see the prefix; the names of both get the same
             * suffix, and the host's strings naming a kernel too. */
            /* The device code includes nothing: the prefix's includes are the host's. */
            kv_buf dropped = KV_BUF_INIT;
            char *joined = kv_asprintf("%s\n%s", prefix, dev);
            char *dev_text = kv_text_hoist_includes(joined, &dropped);
            free(joined);
            kv_buf_free(&dropped);
            char *host_text = kv_asprintf("%s\n%s", prefix, host);
            kv_names names = {0}, kernels = {0};
            kv_text_collect(dev_text, 0, &names, &kernels);
            char *host_body = kv_text_hoist_includes(host_text, &includes);
            kv_text_collect(host_body, 0, &names, NULL);
            char suffix[96];
            suffix_of(p, (int)v, suffix);
            char *d = kv_text_rename(dev_text, &names, suffix, NULL);
            char *h = kv_text_rename(host_body, &names, suffix, &kernels);
            kv_buf_printf(&device, "\n/* ---- variant %zu ---- */\n%s\n", v, d);
            kv_buf_printf(&body, "\n/* ---- variant %zu ---- */\n%s\n", v, h);
            free(d);
            free(h);
            free(host_body);
            free(dev_text);
            free(host_text);
            free(prefix);
            free(dev);
            free(host);
            kv_names_free(&names);
            kv_names_free(&kernels);
        }
    }
    opening(&out, p);
    if (lang == LANG_OPENCL)
        kv_buf_printf(&out, "#ifdef __OPENCL_VERSION__\n%s\n#else\n", device.data);
    kv_buf_puts(&out, includes.data);
    kv_buf_puts(&out, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n");
    if (lang == LANG_OPENCL) kv_buf_puts(&out, "#include <CL/cl.h>\n#include <pthread.h>\n");
    /* After the includes: what they declare keeps its own visibility. */
    kv_buf_puts(&out, "\n/* Every name below is private to this library (hidden) but the entry\n"
                      " * points (KVX_API): several exports link into one program. */\n"
                      "#pragma GCC visibility push(hidden)\n"
                      "#define KVX_API __attribute__((visibility(\"default\")))\n");
    kv_buf_puts(&out, body.data ? body.data : "");
    scenario_table(&out, p, lang);
    dispatcher(&out, p, lang);
    dense_check(&out, p);
    if (lang == LANG_OPENCL)
        entry_opencl(&out, p, device.data);
    else
        entry_plain(&out, p, lang);
    kv_buf_puts(&out, "\n#pragma GCC visibility pop\n");
    if (lang == LANG_OPENCL) kv_buf_puts(&out, "#endif\n");
    kv_buf_free(&includes);
    kv_buf_free(&body);
    kv_buf_free(&device);
    return kv_buf_steal(&out);
}

/* Appends TEXT to a comment, " * " opening each line, words wrapped at 76
 * columns. */
static void comment_wrapped(kv_buf *b, const char *text)
{
    int col = 0;
    for (const char *w = text; *w;) {
        while (*w == ' ')
            w++;
        size_t n = strcspn(w, " ");
        if (!n) break;
        if (col && col + 1 + (int)n > 76) {
            kv_buf_puts(b, "\n");
            col = 0;
        }
        kv_buf_printf(b, "%s%.*s", col ? " " : " * ", (int)n, w);
        col += (int)n + (col ? 1 : 3);
        w += n;
    }
    if (col) kv_buf_puts(b, "\n");
}

char *kvx_header(const kvx_plan *p)
{
    const kv_task *t = p->task;
    enum lang lang = lang_of(p->backend);
    kv_buf b = KV_BUF_INIT;
    kv_buf_printf(&b,
                  "/* %s.h: task %s, exported by kevolve for the %s backend.\n *\n"
                  " * %s\n *\n * Tensors (in this order, %s):\n",
                  kvx_entry(p), t->name, p->backend->name, t->description,
                  lang == LANG_CUDA     ? "device pointers"
                  : lang == LANG_OPENCL ? "cl_mem buffers"
                                        : "host pointers");
    static const char *const dtypes[] = {"f32", "f16", "bf16", "i32"};
    for (int i = 0; i < t->num_tensors; i++) {
        const kv_tensor_spec *ts = &t->tensors[i];
        kv_buf_printf(&b, " *   %d  %-4s %s %-6s [", i, ts->name, ts->role == KV_IN ? "in " : "out",
                      dtypes[ts->dtype]);
        for (int d = 0; d < ts->rank; d++)
            kv_buf_printf(&b, "%s%s", d ? ", " : "", t->syms[ts->shape[d]]);
        kv_buf_puts(&b, "]\n");
    }
    kv_buf_puts(&b, " * Symbols (in this order): ");
    for (int k = 0; k < t->num_syms; k++)
        kv_buf_printf(&b, "%s%s", k ? ", " : "", t->syms[k]);
    kv_buf_puts(&b, ".\n");
    if (t->maths) {
        kv_buf_puts(&b, " *\n * What it computes:\n");
        comment_wrapped(&b, t->maths);
    }
    kv_buf_printf(
        &b,
        " *\n"
        " * Strides: in elements, one array per tensor (rank entries, outermost\n"
        " * first); NULL (or a NULL entry) means dense and row-major. The kernels\n"
        " * read dense row-major tensors only: other strides are refused (-2);\n"
        " * make them contiguous first.\n *\n"
        " * Returns 0, -1 when the kernel failed (a launch error), -2 for strides\n"
        " * it does not take%s. %s\n *\n"
        " * Which program computes a call: %s\n"
        " * %s_scenario gives the scenario a shape goes to (-1: none),\n"
        " * %s_scenario_name its name. */\n"
        "#ifndef KEVOLVE_EXPORT_%s_H\n#define KEVOLVE_EXPORT_%s_H\n\n#include <stdint.h>\n\n"
        "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
        "int %s(void *const *tensors, const int64_t *syms, const int64_t *const *strides,\n"
        "       void *%s);\n"
        "int %s_scenario(const int64_t *syms);\n"
        "const char *%s_scenario_name(int scenario);\n\n"
        "#ifdef __cplusplus\n}\n#endif\n\n#endif\n",
        lang == LANG_OPENCL ? ", -3 when the device code does not build for the queue's device"
                            : "",
        lang == LANG_CUDA     ? "Work is queued on STREAM (a cudaStream_t; NULL: the default\n"
                                " * stream); it has not ended when the call returns."
        : lang == LANG_OPENCL ? "Work is enqueued on QUEUE (a cl_command_queue, in order); the\n"
                                " * device code is built once per context. Not for concurrent\n"
                                " * first calls of one context from several threads."
                              : "Work is done when the call returns (STREAM is unused: NULL).",
        kvx_rule, kvx_entry(p), kvx_entry(p), t->name, t->name, kvx_entry(p),
        lang == LANG_OPENCL ? "queue" : "stream", kvx_entry(p), kvx_entry(p));
    return kv_buf_steal(&b);
}
