/* File-system helpers. */
#define _GNU_SOURCE
#include "util/fs.h"
#include "util/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *kv_read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    /* Say what is wrong with a folder rather than the EIO of a failed read. */
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        errno = EISDIR;
        return NULL;
    }
    kv_buf b = KV_BUF_INIT;
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            kv_buf_free(&b);
            close(fd);
            errno = e;
            return NULL;
        }
        if (kv_buf_append(&b, chunk, (size_t)n) != 0) {
            kv_buf_free(&b);
            close(fd);
            errno = ENOMEM;
            return NULL;
        }
    }
    close(fd);
    if (len) *len = b.len;
    return kv_buf_steal(&b);
}

/* The last write that failed for want of room or of a working disk. */
static _Thread_local int g_fault_errno;
static _Thread_local char g_fault_path[1024];

/* Notes a failed write of PATH with errno E when E is a fault of the file
 * system rather than of the request; leaves errno as it was. */
static void note_fault(const char *path, int e)
{
    if (e == ENOSPC || e == EDQUOT || e == EIO || e == EROFS || e == EFBIG) {
        g_fault_errno = e;
        snprintf(g_fault_path, sizeof g_fault_path, "%s", path);
    }
    errno = e;
}

int kv_fs_write_fault(const char **path)
{
    if (path) *path = g_fault_path;
    return g_fault_errno;
}

void kv_fs_clear_write_fault(void)
{
    g_fault_errno = 0;
    g_fault_path[0] = '\0';
}

int kv_write_file(const char *path, const void *data, size_t len)
{
    char *tmp = kv_asprintf("%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        note_fault(path, errno);
        free(tmp);
        return -1;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            free(tmp);
            note_fault(path, e);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        note_fault(path, e);
        return -1;
    }
    free(tmp);
    return 0;
}

int kv_mkdir_p(const char *path, int mode)
{
    char *copy = kv_strdup(path);
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(copy, (mode_t)mode) != 0 && errno != EEXIST) {
            free(copy);
            return -1;
        }
        *p = '/';
    }
    int rc = mkdir(copy, (mode_t)mode);
    free(copy);
    if (rc != 0 && errno != EEXIST) return -1;
    return kv_is_dir(path) ? 0 : -1;
}

int kv_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int kv_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

char *kv_path_join(const char *dir, const char *name)
{
    if (!dir || !*dir || name[0] == '/') return kv_strdup(name);
    size_t n = strlen(dir);
    return kv_asprintf("%s%s%s", dir, dir[n - 1] == '/' ? "" : "/", name);
}

char *kv_path_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return kv_strdup(".");
    if (slash == path) return kv_strdup("/");
    return kv_strndup(path, (size_t)(slash - path));
}

char *kv_path_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return kv_strdup(slash ? slash + 1 : path);
}

char *kv_path_absolute(const char *path)
{
    char resolved[PATH_MAX];
    if (realpath(path, resolved)) return kv_strdup(resolved);
    if (path[0] == '/') return kv_strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return kv_strdup(path);
    return kv_path_join(cwd, path);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int kv_remove_tree(const char *path)
{
    if (!kv_is_dir(path)) return remove(path) == 0 || errno == ENOENT ? 0 : -1;
    return nftw(path, remove_entry, 32, FTW_DEPTH | FTW_PHYS);
}

char *kv_cache_dir_default(void)
{
    const char *env = getenv("KEVOLVE_CACHE_DIR");
    if (env && *env) return kv_strdup(env);
    const char *home = getenv("HOME");
    if (!home || !*home) home = "/tmp";
    return kv_asprintf("%s/.cache/kevolve/kernels", home);
}

char *kv_read_source(const char *path, char **err)
{
    size_t n = 0;
    char *text = kv_read_file(path, &n);
    if (!text) {
        *err = kv_asprintf("cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    const char *nul = memchr(text, 0, n);
    if (nul) {
        size_t at = (size_t)(nul - text), line = 1;
        for (size_t i = 0; i < at; i++)
            line += text[i] == '\n';
        *err = kv_asprintf("%s holds a NUL byte (byte %zu, line %zu): a program is text; is it "
                           "a binary file?",
                           path, at, line);
        free(text);
        return NULL;
    }
    return text;
}
