/* The store's schema and its migrations (internal to src/store/). The schema
 * is a list of migrations, one per schema version; a new table or column is
 * a new migration appended to the list in schema.c, never an edit of an old
 * one, so every existing run file can be brought up to date. */
#ifndef KV_STORE_SCHEMA_H
#define KV_STORE_SCHEMA_H

#include <sqlite3.h>

/* The schema version this build creates, reads and writes. */
int kv_schema_version(void);

/* Applies every migration after version FROM (0: an empty database) up to
 * kv_schema_version(), and records the new version in meta.schema_version.
 * The caller holds a write transaction and commits or rolls it back.
 * Returns 0, or -1 with a malloc'd message in *err. */
int kv_schema_migrate(sqlite3 *db, int from, char **err);

/* For a read-only connection to a store at version FROM: makes it read like
 * this build's version without writing the file (temporary tables built
 * from what it holds), where the versions between allow it. Returns 0, or
 * -1 with a malloc'd message in *err (too old: open it read-write once). */
int kv_schema_read_shim(sqlite3 *db, int from, char **err);

#endif
