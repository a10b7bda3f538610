/* File-system helpers: whole-file reads and atomic writes, directories, paths. */
#ifndef KV_UTIL_FS_H
#define KV_UTIL_FS_H

#include <stddef.h>

/* Reads the whole file into a new NUL-terminated string (length in *len when
 * len is not NULL). Returns NULL and sets errno on failure. */
char *kv_read_file(const char *path, size_t *len);
/* Writes DATA to PATH through a temporary file and rename, so readers never
 * see half a file. Returns 0 or -1 (errno set). */
int kv_write_file(const char *path, const void *data, size_t len);
/* Reads the program at PATH (a new NUL-terminated string), or returns NULL
 * with *ERR (malloc'd) saying why: it cannot be read, or it holds a NUL
 * byte, whose place it names. A C string would end at the NUL and the
 * program be judged on its first part alone. */
char *kv_read_source(const char *path, char **err);
/* The errno of the last kv_write_file of this thread that failed because
 * of the file system (ENOSPC, EDQUOT, EIO, EROFS, EFBIG; its path in *PATH,
 * which may be NULL), or 0: so that a run that stops after such a failure
 * can say "disk full" rather than only "failed". */
int kv_fs_write_fault(const char **path);
void kv_fs_clear_write_fault(void);
/* mkdir -p. Returns 0 or -1 (errno set). */
int kv_mkdir_p(const char *path, int mode);
/* 1 when PATH exists and is a directory / a regular file. */
int kv_is_dir(const char *path);
int kv_is_file(const char *path);
/* New string "dir/name"; NAME is returned as a copy when absolute or DIR is NULL/empty. */
char *kv_path_join(const char *dir, const char *name);
/* New string with the directory part of PATH ("." when none). */
char *kv_path_dirname(const char *path);
/* New string holding the last component of PATH. */
char *kv_path_basename(const char *path);
/* New absolute path of PATH (it need not exist; its directory should). */
char *kv_path_absolute(const char *path);
/* Removes a directory tree (rm -rf). Returns 0 or -1. */
int kv_remove_tree(const char *path);
/* Where compiled kernels are kept: $KEVOLVE_CACHE_DIR, else
 * ~/.cache/kevolve/kernels (malloc'd). Resolved by whoever builds an
 * evaluation job, which carries it. */
char *kv_cache_dir_default(void);

#endif
