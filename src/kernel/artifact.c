/* Artifact hashes and the run's verdicts by artifact (see artifact.h). */
#include "kernel/artifact.h"
#include "runner/sandbox.h"
#include "kernel/tool.h"
#include "util/buf.h"
#include "util/eval_job.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int hash_sections(const char *text, size_t len, int cubin, kv_buf *b);

/* Hashes into B the machine code in a CUDA fat binary: every ELF (cubin) it
 * holds, but its debug sections, whose line tables name the source file and
 * its size and time. A compressed entry is hashed whole. */
static void hash_fatbin(const char *fb, size_t len, kv_buf *b)
{
    int found = 0;
    for (size_t i = 0; i + sizeof(Elf64_Ehdr) <= len; i++) {
        if (memcmp(fb + i, ELFMAG, SELFMAG) != 0 || fb[i + EI_CLASS] != ELFCLASS64) continue;
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)(fb + i);
        size_t end = eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr);
        if (eh->e_shentsize != sizeof(Elf64_Shdr) || end > len - i) continue;
        if (hash_sections(fb + i, len - i, 1, b) == 0) {
            found = 1;
            i += end - 1;
        }
    }
    if (!found) {
        char hex[17];
        kv_hash_hex(kv_hash64(fb, len), hex);
        kv_buf_puts(b, hex);
    }
}

/* 1 when NAME is a cubin's debug information or its relocations
 * (".rela.debug_line"): both move with every line above the code, so a
 * deleted line that the preprocessor drops would make a new artifact of
 * the same machine code (gi's deletions in an `#if 0` part were judged
 * again as new programs on an H200, bench/NOTES.md, 2026-12-02). */
static int is_debug(const char *name)
{
    if (kv_starts_with(name, ".rela"))
        name += 5;
    else if (kv_starts_with(name, ".rel"))
        name += 4;
    return kv_starts_with(name, ".debug") || kv_starts_with(name, ".nv_debug");
}

/* 1 when NAME is a host section whose bytes are addresses of the layout:
 * the unwind tables, and the fat binary's wrapper (the fat binary itself is
 * hashed). The fat binary's header names the source's path, so a path one
 * character longer (a process id of more digits) moved everything after it
 * by 8 bytes: another hash of the same machine code (bench/NOTES.md,
 * 2026-12-02, commit 827d61f). */
static int is_layout(const char *name)
{
    return strcmp(name, ".eh_frame") == 0 || strcmp(name, ".eh_frame_hdr") == 0 ||
           strcmp(name, ".nvFatBinSegment") == 0;
}

/* ADDR as "SECTION+OFFSET" of the loaded section holding it (or as itself,
 * outside them), into OUT. */
static void place_of(const char *text, size_t len, const Elf64_Shdr *sh, int n,
                     const Elf64_Shdr *names, uint64_t addr, char *out, size_t cap)
{
    for (int i = 0; i < n; i++) {
        const Elf64_Shdr *s = &sh[i];
        if (!(s->sh_flags & SHF_ALLOC) || addr < s->sh_addr || addr >= s->sh_addr + s->sh_size)
            continue;
        const char *name =
            names->sh_offset + s->sh_name < len ? text + names->sh_offset + s->sh_name : "";
        /* Within the fat binary, where its parts lie follows its header. */
        if (strcmp(name, ".nv_fatbin") == 0)
            snprintf(out, cap, "%s", name);
        else
            snprintf(out, cap, "%.40s+%llu", name, (unsigned long long)(addr - s->sh_addr));
        return;
    }
    snprintf(out, cap, "%llu", (unsigned long long)addr);
}

/* Hashes into B the relocations of section S (SHT_RELA), each place and
 * addend as a section and an offset in it, so that they say what points
 * where whatever the layout. */
static void hash_relocations(const char *text, size_t len, const Elf64_Shdr *sh, int n,
                             const Elf64_Shdr *names, const Elf64_Shdr *s, kv_buf *b)
{
    size_t count = s->sh_size / sizeof(Elf64_Rela);
    kv_buf all = KV_BUF_INIT;
    for (size_t k = 0; k < count; k++) {
        Elf64_Rela r;
        memcpy(&r, text + s->sh_offset + k * sizeof r, sizeof r);
        char at[64], to[64];
        place_of(text, len, sh, n, names, r.r_offset, at, sizeof at);
        place_of(text, len, sh, n, names, (uint64_t)r.r_addend, to, sizeof to);
        kv_buf_printf(&all, "%llu %llu %s %s;", (unsigned long long)ELF64_R_TYPE(r.r_info),
                      (unsigned long long)ELF64_R_SYM(r.r_info), at, to);
    }
    char hex[17];
    kv_hash_hex(kv_hash64(all.data ? all.data : "", all.len), hex);
    kv_buf_puts(b, hex);
    kv_buf_free(&all);
}

/* Hashes into B the contents of the loaded sections of the ELF file TEXT
 * (LEN bytes), but notes, with CUDA's fat binary by its machine code alone;
 * CUBIN: TEXT is a cubin, whose sections count but for debug information. */
static int hash_sections(const char *text, size_t len, int cubin, kv_buf *b)
{
    if (len < sizeof(Elf64_Ehdr) || memcmp(text, ELFMAG, SELFMAG) != 0 ||
        text[EI_CLASS] != ELFCLASS64)
        return -1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)text;
    if (eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len ||
        eh->e_shstrndx >= eh->e_shnum)
        return -1;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(text + eh->e_shoff);
    const Elf64_Shdr *names = &sh[eh->e_shstrndx];
    for (int i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *s = &sh[i];
        if (s->sh_type == SHT_NOTE || s->sh_type == SHT_NOBITS || s->sh_type == SHT_NULL) continue;
        if (!cubin && !(s->sh_flags & SHF_ALLOC)) continue;
        if (s->sh_offset > len || s->sh_size > len - s->sh_offset) return -1;
        const char *name =
            names->sh_offset + s->sh_name < len ? text + names->sh_offset + s->sh_name : "";
        if (cubin &&
            (is_debug(name) || strcmp(name, ".strtab") == 0 || strcmp(name, ".symtab") == 0))
            continue;
        if (!cubin && strcmp(name, ".nv_fatbin") == 0) {
            hash_fatbin(text + s->sh_offset, s->sh_size, b);
            continue;
        }
        if (!cubin && is_layout(name)) continue;
        if (!cubin && s->sh_type == SHT_RELA) {
            kv_buf_puts(b, name);
            hash_relocations(text, len, sh, eh->e_shnum, names, s, b);
            continue;
        }
        char head[96];
        snprintf(head, sizeof head, "%.40s %llu:", name, (unsigned long long)s->sh_size);
        kv_buf_puts(b, head);
        char hex[17];
        kv_hash_hex(kv_hash64(text + s->sh_offset, s->sh_size), hex);
        kv_buf_puts(b, hex);
    }
    return 0;
}

/* The output of ARGV (a tool), or NULL with *ERR. */
static char *tool_output(char **argv, char **err)
{
    char *out = NULL;
    int rc = kv_tool_run(argv, 120, &out);
    if (rc != 0) {
        *err = kv_asprintf("%s failed (%d): %.300s", argv[0], rc, out ? out : "");
        free(out);
        return NULL;
    }
    return out;
}

char *kv_artifact_hash(const kv_backend *backend, const kv_compiled *c, char **err)
{
    size_t len = 0;
    char *so = kv_read_file(c->lib_path, &len);
    if (!so) {
        *err = kv_asprintf("cannot read %s: %s", c->lib_path, strerror(errno));
        return NULL;
    }
    kv_buf b = KV_BUF_INIT;
    int rc = hash_sections(so, len, 0, &b);
    free(so);
    if (rc != 0) {
        *err = kv_asprintf("%s is not a 64-bit ELF shared object", c->lib_path);
        kv_buf_free(&b);
        return NULL;
    }
    char *extra = NULL;
    int device_code = kv_backend_has(backend, KV_CAP_DEVICE_CODE) && c->device_source;
    if (device_code) {
        /* The device code after the preprocessor: what the driver builds. */
        char *path = kv_asprintf("%s.cl", c->lib_path);
        if (!kv_is_file(path)) kv_write_file(path, c->device_source, strlen(c->device_source));
        char *argv[] = {
            "cc", "-E", "-P", "-x", "c", "-D__OPENCL_VERSION__=120", "-D__OPENCL_C_VERSION__=120",
            path, NULL};
        extra = tool_output(argv, err);
        free(path);
    }
    if (device_code && !extra) {
        kv_buf_free(&b);
        return NULL;
    }
    if (extra) {
        /* Whitespace does not change code. */
        for (const char *p = extra; *p; p++)
            if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') kv_buf_putc(&b, *p);
        free(extra);
    }
    char hex[17];
    kv_hash_hex(kv_hash64(b.data ? b.data : "", b.len), hex);
    kv_buf_free(&b);
    return kv_strdup(hex);
}

/* The file that keeps KEY's verdict for HASH in this run, or NULL. Kept only
 * where the candidate cannot write it (Landlock). */
static char *verdict_path(const char *run, const char *key, const char *hash)
{
    if (!run || !*run || kv_landlock_abi() <= 0) return NULL;
    return kv_asprintf("%s/" KV_RUN_VERDICTS_DIR "/%s-%s.json", run, key, hash);
}

json_t *kv_artifact_verdict_load(const char *run_dir, const char *key, const char *hash)
{
    char *path = verdict_path(run_dir, key, hash);
    char *text = path ? kv_read_file(path, NULL) : NULL;
    json_t *v = text ? kv_json_loads(text) : NULL;
    free(text);
    free(path);
    if (v && !json_is_object(json_object_get(v, "metrics"))) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

void kv_artifact_verdict_save(const char *run_dir, const char *key, const char *hash,
                              const json_t *verdict)
{
    char *path = verdict_path(run_dir, key, hash);
    if (!path) return;
    char *dir = kv_path_dirname(path);
    kv_mkdir_p(dir, 0755);
    char *tmp = kv_asprintf("%s.%d.tmp", path, (int)getpid());
    char *text = json_dumps(verdict, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (text && kv_write_file(tmp, text, strlen(text)) == 0 && rename(tmp, path) == 0) {
        /* kept */
    } else {
        unlink(tmp);
    }
    free(text);
    free(tmp);
    free(dir);
    free(path);
}
