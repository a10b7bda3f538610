/* A fault-injecting SQLite VFS for tests, as SQLite tests itself: it wraps
 * the default VFS and makes the Nth write operation of the process (xWrite,
 * xTruncate, xSync, on any file: database, WAL, journal) fail with a
 * chosen error, once or from then on. Linked only into test binaries
 * (kevolve_faults: the kevolve command with this layer), never into
 * kevolve. Set by the environment, read when the program starts:
 *
 *   KV_FAULT_AT=N        fail the Nth write operation (1-based); 0 or unset: none
 *   KV_FAULT_KIND=full   SQLITE_FULL (disk full); "io": SQLITE_IOERR_WRITE and kin
 *   KV_FAULT_ONCE=1      fail that one operation only (default: it and every later
 *                        one, as a full disk does)
 *   KV_FAULT_COUNT=FILE  at exit, write the number of write operations seen to FILE
 */
#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sqlite3_vfs *g_real;
static sqlite3_vfs g_vfs;
static long g_ops, g_fail_at;
static int g_once, g_full;
static const char *g_count_file;

typedef struct fault_file {
    sqlite3_file base;
    sqlite3_file *real; /* follows this struct in the same allocation */
} fault_file;

#define REAL(f) (((fault_file *)(f))->real)

/* Counts one write operation; returns the error to inject (ERR_IO or
 * SQLITE_FULL), or SQLITE_OK. */
static int inject(int err_io)
{
    long n = ++g_ops;
    if (g_fail_at <= 0 || n < g_fail_at || (g_once && n != g_fail_at)) return SQLITE_OK;
    return g_full ? SQLITE_FULL : err_io;
}

static int f_close(sqlite3_file *f)
{
    int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
    return rc;
}
static int f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
    return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}
static int f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
    int rc = inject(SQLITE_IOERR_WRITE);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}
static int f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    int rc = inject(SQLITE_IOERR_TRUNCATE);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int f_sync(sqlite3_file *f, int flags)
{
    int rc = inject(SQLITE_IOERR_FSYNC);
    /* A sync cannot fail for lack of room; an injected "full" is an I/O error here. */
    if (rc == SQLITE_FULL) rc = SQLITE_IOERR_FSYNC;
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int f_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}
static int f_lock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int f_unlock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int f_check_lock(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int f_fcntl(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int f_sector(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int f_caps(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int f_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **pp)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, extend, pp);
}
static int f_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}
static void f_shm_barrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int f_shm_unmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int f_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp)
{
    return REAL(f)->pMethods->xFetch(REAL(f), off, amt, pp);
}
static int f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods g_methods = {
    3,          f_close,       f_read,       f_write, f_truncate, f_sync, f_size,
    f_lock,     f_unlock,      f_check_lock, f_fcntl, f_sector,   f_caps, f_shm_map,
    f_shm_lock, f_shm_barrier, f_shm_unmap,  f_fetch, f_unfetch,
};

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
    (void)vfs;
    fault_file *ff = (fault_file *)f;
    ff->real = (sqlite3_file *)(ff + 1);
    memset(ff->real, 0, (size_t)g_real->szOsFile);
    int rc = g_real->xOpen(g_real, name, ff->real, flags, out_flags);
    /* Methods only when the real file opened: SQLite calls xClose then. */
    f->pMethods = ff->real->pMethods ? &g_methods : NULL;
    return rc;
}
static int v_delete(sqlite3_vfs *v, const char *name, int sync)
{
    (void)v;
    return g_real->xDelete(g_real, name, sync);
}
static int v_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return g_real->xAccess(g_real, name, flags, out);
}
static int v_full(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return g_real->xFullPathname(g_real, name, n, out);
}
static void *v_dlopen(sqlite3_vfs *v, const char *name)
{
    (void)v;
    return g_real->xDlOpen(g_real, name);
}
static void v_dlerror(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    g_real->xDlError(g_real, n, out);
}
static void (*v_dlsym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
    (void)v;
    return g_real->xDlSym(g_real, h, sym);
}
static void v_dlclose(sqlite3_vfs *v, void *h)
{
    (void)v;
    g_real->xDlClose(g_real, h);
}
static int v_random(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return g_real->xRandomness(g_real, n, out);
}
static int v_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return g_real->xSleep(g_real, us);
}
static int v_time(sqlite3_vfs *v, double *out)
{
    (void)v;
    return g_real->xCurrentTime(g_real, out);
}
static int v_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return g_real->xGetLastError ? g_real->xGetLastError(g_real, n, out) : 0;
}
static int v_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return g_real->xCurrentTimeInt64(g_real, out);
}

static void write_count(void)
{
    FILE *f = fopen(g_count_file, "w");
    if (!f) return;
    fprintf(f, "%ld\n", g_ops);
    fclose(f);
}

/* Before main: the layer becomes the default VFS of the process. */
__attribute__((constructor)) static void fault_vfs_install(void)
{
    const char *at = getenv("KV_FAULT_AT");
    const char *kind = getenv("KV_FAULT_KIND");
    const char *once = getenv("KV_FAULT_ONCE");
    g_count_file = getenv("KV_FAULT_COUNT");
    g_fail_at = at ? atol(at) : 0;
    g_full = !kind || strcmp(kind, "io") != 0;
    g_once = once && strcmp(once, "1") == 0;
    if (sqlite3_initialize() != SQLITE_OK) return;
    g_real = sqlite3_vfs_find(NULL);
    if (!g_real) return;
    g_vfs = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sizeof(fault_file) + g_real->szOsFile,
        .mxPathname = g_real->mxPathname,
        .zName = "kv-fault",
        .xOpen = v_open,
        .xDelete = v_delete,
        .xAccess = v_access,
        .xFullPathname = v_full,
        .xDlOpen = v_dlopen,
        .xDlError = v_dlerror,
        .xDlSym = v_dlsym,
        .xDlClose = v_dlclose,
        .xRandomness = v_random,
        .xSleep = v_sleep,
        .xCurrentTime = v_time,
        .xGetLastError = v_last_error,
        .xCurrentTimeInt64 = v_time64,
    };
    sqlite3_vfs_register(&g_vfs, 1);
    if (g_count_file) atexit(write_count);
}
