/* The device-slot channel: the small protocol between the evaluator
 * (src/eval, which hands out devices) and a kernel job's side of it (the
 * worker, src/kernel, and the judge that holds the device for it,
 * src/judge), both sides of it in one place. It stays in util/: the two
 * sides live in modules that may not see each other (eval is not below the
 * kernel harness, nor the harness below eval), and util is the one module
 * every one of them sees; a module of its own would be a target for one
 * file and six messages. */
#ifndef KV_UTIL_SLOT_CHANNEL_H
#define KV_UTIL_SLOT_CHANNEL_H

/* The device-slot channel between the evaluator and a worker (a socket
 * pair handed to the worker). The worker first learns which device will be
 * its own (a bind, answered at once) and prepares there; it asks for the
 * device when its device work is about to start, says when it holds it
 * (after taking the device's lock, which another process may hold) and
 * when it is done; the evaluator answers the ask with the device and stops
 * the job's clock from the ask to the hold, so that waiting for the device
 * is never charged to the candidate. */
#define KV_SLOT_ASK 'a'   /* worker: give me a device */
#define KV_SLOT_HOLD 'h'  /* worker: I hold it (its lock taken) */
#define KV_SLOT_FREE 'f'  /* worker: done with it */
#define KV_SLOT_GRANT 'g' /* evaluator: followed by the device as 4 bytes */
#define KV_SLOT_BIND 'b'  /* worker: which device will be mine? (answered at once) */
#define KV_SLOT_BOUND 'B' /* evaluator: followed by that device as 4 bytes */

/* In the worker: asks for a device on FD and waits for the answer.
 * Returns the device, or -1 with *ERR (the evaluator went away). */
int kv_slot_ask(int fd, char **err);
/* In the worker: asks on FD which device its ask will be granted (it
 * prepares there meanwhile: contexts, its runner). Returns the device, or
 * -1 with *ERR. */
int kv_slot_bind(int fd, char **err);
/* The grant of an ask sent earlier (kv_slot_tell with KV_SLOT_ASK): the
 * device, or -1 with *ERR. */
int kv_slot_await(int fd, char **err);
/* In the worker: sends MSG (KV_SLOT_HOLD or KV_SLOT_FREE); 0 or -1. */
int kv_slot_tell(int fd, char msg);
/* In the evaluator: answers on FD with REPLY (KV_SLOT_GRANT or
 * KV_SLOT_BOUND) and DEVICE. Returns 0, or -1 when the worker's end is
 * gone or full. */
int kv_slot_answer(int fd, char reply, int device);

#endif
