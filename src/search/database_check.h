/* The population's written invariants (search/database_internal.h), checked:
 * for tests, which call it after every change to a database, and for
 * debugging. Costs a walk over the whole population. */
#ifndef KV_SEARCH_DATABASE_CHECK_H
#define KV_SEARCH_DATABASE_CHECK_H

#include "search/database.h"

/* Checks every invariant of DB. Returns 0, or -1 with a malloc'd text naming
 * the first one broken (and the program) in *ERR. */
int kv_database_check(const kv_database *db, char **err);

#endif
