/* The store tests' shared fixture: a fresh folder per test with the store's
 * path inside it, and an open that fails the test on error. Included after
 * cmocka.h, store/store.h and util/fs.h. */
#ifndef KV_TEST_STORE_FIXTURE_H
#define KV_TEST_STORE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

typedef struct fixture {
    char dir[64];
    char *path;
} fixture;

static int setup(void **state)
{
    fixture *f = kv_calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/kv_test_store.XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    f->path = kv_path_join(f->dir, "run.db");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kv_remove_tree(f->dir);
    free(f->path);
    free(f);
    return 0;
}

/* Opens PATH in MODE, failing the test on error. */
static kv_store *open_ok(const char *path, int mode)
{
    kv_store *s = NULL;
    char *err = NULL;
    int rc = kv_store_open(path, mode, &s, &err);
    if (rc != 0) fail_msg("open %s: %s", path, err);
    assert_non_null(s);
    return s;
}

#endif
