/* What a resumed run runs with: its stored config, or the corrections a
 * resume takes (a new config file, the endpoint and models of the command
 * line, the environment of the config's ${VAR}s) where they do not change
 * what the run searched; and the record of each change in the run's
 * manifest. */
#ifndef KV_ENGINE_RESUME_CONFIG_H
#define KV_ENGINE_RESUME_CONFIG_H

#include "config/config.h"
#include "store/store.h"

#include <kevolve/kevolve.h>

/* Fills CFG (freed or never filled) with what the run resumes with (O may
 * be NULL: the stored config, with its ${VAR}s read again) and PREV
 * (initialised by the caller) with what it ran with until now. Refuses, naming the keys, a change
 * of a key that is not kv_config_key_resumable. Returns 0, or -1 with ERR filled (both configs
 * freeable either way). */
int kv_resume_load_config(kv_store *s, const kv_run_options *o, kv_config *cfg, kv_config *prev,
                          kv_config_error *err);

/* Records what changed from PREV to CFG (logged, appended to meta
 * config_changes with the time and the new file, config_effective
 * rewritten, and the new file, endpoint and models of O kept for the next
 * resume), in one transaction. Nothing when nothing changed and O gave
 * nothing. Returns 0 or -1 (the store's fault set). */
int kv_resume_record(kv_store *s, const kv_run_options *o, const kv_config *prev,
                     const kv_config *cfg);

#endif
