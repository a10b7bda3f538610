/* What a run shows while it goes: a one-line progress display rewritten in
 * place on a terminal, plain log lines otherwise. */
#ifndef KV_ENGINE_PROGRESS_H
#define KV_ENGINE_PROGRESS_H

#include "engine/controller.h"

/* Refreshes the display (at most a few times a second unless FINAL). */
void kv_progress_update(kv_controller *c, int final);
/* Reports a new best program. */
void kv_progress_new_best(kv_controller *c, const kv_program *p);

#endif
